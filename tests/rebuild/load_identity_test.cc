// Which bulk loads are the same data: the inputs' content, not their names;
// a cut plain file refused, a gzip file (whole by its trailer) taken as it is.
#include "load_identity.h"

#include <gtest/gtest.h>

#include <sys/stat.h>

#include <string>

#include "clickatron/gzip_file.h"
#include "clickatron/sha256.h"
#include "testutil/testutil.h"

namespace clickatron::rebuild {
namespace {

using testing::TempDir;
using testing::WriteAll;

TEST(LoadIdentityTest, InputsAreNamedBySizeAndContent) {
  TempDir tmp;
  WriteAll(tmp / "a.csv", "u|k.c8a1,3\n");
  auto inputs = IdentifyLoadInputs({tmp / "a.csv"});
  ASSERT_TRUE(inputs.ok()) << inputs.status().ToString();
  ASSERT_EQ(inputs->size(), 1u);
  EXPECT_EQ((*inputs)[0].bytes, 11u);
  EXPECT_EQ((*inputs)[0].sha256, Sha256Hex("u|k.c8a1,3\n"));
}

TEST(LoadIdentityTest, APlainFileWithoutItsLastNewlineIsCut) {
  TempDir tmp;
  WriteAll(tmp / "cut.csv", "u|k.c8a1,3\nu|k.c8a2,1");
  auto inputs = IdentifyLoadInputs({tmp / "cut.csv"});
  ASSERT_FALSE(inputs.ok());
  EXPECT_EQ(inputs.status().reason(), "CUT_FILE") << inputs.status().ToString();
  // Empty files and gzip files (whose trailer says whether they are whole)
  // are not asked for a last newline.
  WriteAll(tmp / "empty.csv", "");
  WriteAll(tmp / "plain.csv", "u|k.c8a1,3\nu|k.c8a2,1");
  ASSERT_TRUE(CompressFileAtomically(tmp / "plain.csv", tmp / "last.csv.gz", 6).ok());
  EXPECT_TRUE(IdentifyLoadInputs({tmp / "empty.csv", tmp / "last.csv.gz"}).ok());
}

TEST(LoadIdentityTest, TheSameContentTwiceInOneLoadIsRefusedUnlessEmptyOrForced) {
  TempDir tmp;
  WriteAll(tmp / "a.csv", "u|k.c8a1,3\n");
  WriteAll(tmp / "b.csv", "u|k.c8a1,3\n");
  auto inputs = IdentifyLoadInputs({tmp / "a.csv", tmp / "b.csv"});
  ASSERT_FALSE(inputs.ok());
  EXPECT_EQ(inputs.status().reason(), "ALREADY_LOADED") << inputs.status().ToString();
  EXPECT_TRUE(IdentifyLoadInputs({tmp / "a.csv", tmp / "b.csv"}, /*force=*/true).ok());
  // Empty files all have one digest, and add nothing.
  WriteAll(tmp / "e1.csv", "");
  WriteAll(tmp / "e2.csv", "");
  EXPECT_TRUE(IdentifyLoadInputs({tmp / "e1.csv", tmp / "e2.csv"}).ok());
}

// A gzip file is named by the lines it holds: the same data compressed
// twice (gzip stamps each header with its time: other bytes), and a file
// beside its gzip form, are one content.
TEST(LoadIdentityTest, AGzipFileIsNamedByItsDecompressedContent) {
  TempDir tmp;
  const std::string lines = "u|k.c8a1,3\nu|k.c8a2,1\n";
  WriteAll(tmp / "a.csv", lines);
  ASSERT_TRUE(CompressFileAtomically(tmp / "a.csv", tmp / "a1.csv.gz", 6).ok());
  ASSERT_TRUE(CompressFileAtomically(tmp / "a.csv", tmp / "a9.csv.gz", 9).ok());  // other bytes
  auto one = IdentifyLoadInputs({tmp / "a1.csv.gz"});
  ASSERT_TRUE(one.ok()) << one.status().ToString();
  EXPECT_EQ((*one)[0].sha256, Sha256Hex(lines));
  EXPECT_NE((*one)[0].bytes, lines.size());  // the size is the file's
  for (const std::vector<std::string>& files : std::vector<std::vector<std::string>>{
           {tmp / "a1.csv.gz", tmp / "a9.csv.gz"}, {tmp / "a.csv", tmp / "a9.csv.gz"}}) {
    auto twice = IdentifyLoadInputs(files);
    ASSERT_FALSE(twice.ok());
    EXPECT_EQ(twice.status().reason(), "ALREADY_LOADED") << twice.status().ToString();
  }
}

// A pipe cannot be read twice (digest, then lines): refused, not loaded as
// nothing under the digest of its data.
TEST(LoadIdentityTest, OnlyRegularFilesAreTaken) {
  TempDir tmp;
  ASSERT_EQ(::mkfifo((tmp / "fifo").c_str(), 0600), 0);
  auto fifo = IdentifyLoadInputs({tmp / "fifo"});
  ASSERT_FALSE(fifo.ok());
  EXPECT_EQ(fifo.status().reason(), "NOT_A_FILE") << fifo.status().ToString();
  auto dir = IdentifyLoadInputs({tmp.path()});
  ASSERT_FALSE(dir.ok());
  EXPECT_EQ(dir.status().reason(), "NOT_A_FILE") << dir.status().ToString();
}

TEST(LoadIdentityTest, PriorLoadsDecideBetweenNewTakenAndRefused) {
  const LoadInput a{"a.csv", 10, "aaaa"}, b{"b.csv", 20, "bbbb"}, c{"c.csv", 30, "cccc"};
  const PriorLoad queued{"load-1", "2024-01-01T00:00:00Z", "realtime", std::nullopt, {a, b}};
  const PriorLoad folded{"load-2", "2024-01-02T00:00:00Z", "realtime", 7, {c}};
  const PriorLoad unrecorded{"load-0", "2023-12-31T00:00:00Z", "realtime", std::nullopt, {}};
  const std::vector<PriorLoad> prior = {unrecorded, queued, folded};

  // The queued load's files, in any order and under other names: that load
  // (with --force too: a rerun of the same command).
  LoadInput b_renamed = b;
  b_renamed.file = "elsewhere/b-copy.csv";
  for (bool force : {false, true}) {
    auto same = MatchPriorLoads({b_renamed, a}, "realtime", prior, force);
    ASSERT_TRUE(same.ok()) << same.status().ToString();
    EXPECT_EQ(*same, std::optional<std::string>("load-1"));
  }

  // Part of a queued load, a folded load's file, or the queued files in
  // another format: refused, naming the load; a new load with --force.
  const std::vector<std::pair<std::vector<LoadInput>, std::string>> refused = {
      {{a}, "realtime"}, {{c}, "realtime"}, {{a, b, LoadInput{"d.csv", 1, "dddd"}}, "realtime"}, {{a, b}, "archive"}};
  for (const auto& [inputs, format] : refused) {
    auto r = MatchPriorLoads(inputs, format, prior);
    ASSERT_FALSE(r.ok());
    EXPECT_EQ(r.status().reason(), "ALREADY_LOADED") << r.status().ToString();
    auto forced = MatchPriorLoads(inputs, format, prior, /*force=*/true);
    ASSERT_TRUE(forced.ok()) << forced.status().ToString();
    EXPECT_FALSE(forced->has_value());
  }
  auto r = MatchPriorLoads({c}, "realtime", prior);
  EXPECT_NE(r.status().message().find("folded into generation 7"), std::string::npos) << r.status().ToString();

  // New content, or an empty file whatever loaded one before: a new load.
  const PriorLoad had_empty{"load-3", "2024-01-03T00:00:00Z", "realtime", 8, {LoadInput{"e.csv", 0, "e3b0"}}};
  for (const LoadInput& in : {LoadInput{"d.csv", 1, "dddd"}, LoadInput{"e2.csv", 0, "e3b0"}}) {
    auto fresh = MatchPriorLoads({in}, "realtime", {queued, folded, had_empty});
    ASSERT_TRUE(fresh.ok()) << fresh.status().ToString();
    EXPECT_FALSE(fresh->has_value());
  }
}

}  // namespace
}  // namespace clickatron::rebuild
