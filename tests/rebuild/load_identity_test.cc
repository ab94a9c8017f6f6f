// Which bulk loads are the same data: the inputs' content, not their names;
// a cut plain file refused, a gzip file (whole by its trailer) taken as it is.
#include "load_identity.h"

#include <gtest/gtest.h>

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

TEST(LoadIdentityTest, TheSameContentTwiceInOneLoadIsRefused) {
  TempDir tmp;
  WriteAll(tmp / "a.csv", "u|k.c8a1,3\n");
  WriteAll(tmp / "b.csv", "u|k.c8a1,3\n");
  auto inputs = IdentifyLoadInputs({tmp / "a.csv", tmp / "b.csv"});
  ASSERT_FALSE(inputs.ok());
  EXPECT_EQ(inputs.status().reason(), "ALREADY_LOADED") << inputs.status().ToString();
}

TEST(LoadIdentityTest, PriorLoadsDecideBetweenNewTakenAndRefused) {
  const LoadInput a{"a.csv", 10, "aaaa"}, b{"b.csv", 20, "bbbb"}, c{"c.csv", 30, "cccc"};
  const PriorLoad queued{"load-1", "2024-01-01T00:00:00Z", std::nullopt, {a, b}};
  const PriorLoad folded{"load-2", "2024-01-02T00:00:00Z", 7, {c}};
  const PriorLoad unrecorded{"load-0", "2023-12-31T00:00:00Z", std::nullopt, {}};
  const std::vector<PriorLoad> prior = {unrecorded, queued, folded};

  // The queued load's files, in any order and under other names: that load.
  LoadInput b_renamed = b;
  b_renamed.file = "elsewhere/b-copy.csv";
  auto same = MatchPriorLoads({b_renamed, a}, prior);
  ASSERT_TRUE(same.ok()) << same.status().ToString();
  EXPECT_EQ(*same, std::optional<std::string>("load-1"));

  // Part of a queued load, or a folded load's file: refused, naming it.
  for (const auto& inputs : {std::vector<LoadInput>{a}, std::vector<LoadInput>{c},
                             std::vector<LoadInput>{a, b, LoadInput{"d.csv", 1, "dddd"}}}) {
    auto r = MatchPriorLoads(inputs, prior);
    ASSERT_FALSE(r.ok());
    EXPECT_EQ(r.status().reason(), "ALREADY_LOADED") << r.status().ToString();
  }
  auto r = MatchPriorLoads({c}, prior);
  EXPECT_NE(r.status().message().find("folded into generation 7"), std::string::npos) << r.status().ToString();

  // New content: a new load.
  auto fresh = MatchPriorLoads({LoadInput{"d.csv", 1, "dddd"}}, prior);
  ASSERT_TRUE(fresh.ok()) << fresh.status().ToString();
  EXPECT_FALSE(fresh->has_value());
}

}  // namespace
}  // namespace clickatron::rebuild
