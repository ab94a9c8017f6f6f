// What a replica agrees to serve: the manifest checks, the no-file case, the
// optional sortedness check, and old generations outliving a swap.
#include "file_loader.h"

#include <gtest/gtest.h>

#include <cstdio>
#include <ctime>
#include <string>

#include "archive_fixture.h"
#include "clickatron/file_util.h"
#include "clickatron/manifest.h"
#include "clickatron/ymdh.h"
#include "testutil/testutil.h"

namespace clickatron::archive {
namespace {

using testing::kSortdbSample;
using testing::WriteArchive;

class FileLoaderTest : public ::testing::Test {
 protected:
  LoadOptions Options() {
    LoadOptions o;
    o.path = dir_ / "shard-0.csv";
    return o;
  }
  // Rewrites the manifest beside the file with one field changed.
  template <typename Edit>
  void EditManifest(Edit edit) {
    auto m = ReadManifest(ManifestPathFor(Options().path));
    ASSERT_TRUE(m.ok()) << m.status().ToString();
    edit(&*m);
    ASSERT_TRUE(WriteManifestAtomically(ManifestPathFor(Options().path), *m).ok());
  }
  clickatron::testing::TempDir dir_;
};

TEST_F(FileLoaderTest, ServesAFileThatMatchesItsManifest) {
  WriteArchive(Options().path, kSortdbSample, 7, "2012-03-25");
  auto file = LoadSortedFile(Options());
  ASSERT_TRUE(file.ok()) << file.status().ToString();
  EXPECT_TRUE((*file)->has_file());
  EXPECT_EQ((*file)->generation(), 7u);
  EXPECT_EQ((*file)->records(), 14u);  // the sample's line count
  EXPECT_EQ((*file)->last_day(), "2012-03-25");
  EXPECT_EQ((*file)->generation_text(), "7");
  EXPECT_EQ((*file)->Get("u|jehiah.c3hh"), "13");
  EXPECT_EQ((*file)->Get("c.u|jehiah.c3hh"), "DE:1 None:5 US:7");
  EXPECT_EQ((*file)->Get("u|jehiah.c3hi"), std::nullopt);
}

TEST_F(FileLoaderTest, NoFileServesAsEmpty) {
  auto file = LoadSortedFile(Options());
  ASSERT_TRUE(file.ok()) << file.status().ToString();
  EXPECT_FALSE((*file)->has_file());
  EXPECT_EQ((*file)->manifest(), nullptr);
  EXPECT_EQ((*file)->generation(), 0u);
  EXPECT_EQ((*file)->last_day(), "");
  EXPECT_EQ((*file)->Get("u|jehiah.c3hh"), std::nullopt);
  EXPECT_TRUE((*file)->Prefix("").empty());
}

TEST_F(FileLoaderTest, RefusesAFileWithoutManifest) {
  ASSERT_TRUE(WriteFileAtomically(Options().path, kSortdbSample).ok());
  auto file = LoadSortedFile(Options());
  ASSERT_FALSE(file.ok());
  EXPECT_NE(file.status().message().find("no manifest"), std::string::npos) << file.status().message();
}

TEST_F(FileLoaderTest, RefusesABadCrc) {
  WriteArchive(Options().path, kSortdbSample, 1, "2012-03-25");
  std::string corrupt(kSortdbSample);
  corrupt[corrupt.find("13")] = '9';  // same size, lines and keys: only the crc can tell
  ASSERT_TRUE(WriteFileAtomically(Options().path, corrupt).ok());
  auto file = LoadSortedFile(Options());
  ASSERT_FALSE(file.ok());
  EXPECT_EQ(file.status().code(), StatusCode::kCorruption);
  EXPECT_NE(file.status().message().find("crc32"), std::string::npos) << file.status().message();
}

TEST_F(FileLoaderTest, RefusesATruncatedFile) {
  WriteArchive(Options().path, kSortdbSample, 1, "2012-03-25");
  ASSERT_TRUE(WriteFileAtomically(Options().path, kSortdbSample.substr(0, kSortdbSample.size() / 2)).ok());
  auto file = LoadSortedFile(Options());
  ASSERT_FALSE(file.ok());
  EXPECT_NE(file.status().message().find("bytes"), std::string::npos) << file.status().message();
}

TEST_F(FileLoaderTest, RefusesAManifestWithOtherRecordsOrKeys) {
  WriteArchive(Options().path, kSortdbSample, 1, "2012-03-25");
  EditManifest([](Manifest* m) { m->records += 1; });
  auto records = LoadSortedFile(Options());
  ASSERT_FALSE(records.ok());
  EXPECT_NE(records.status().message().find("records"), std::string::npos) << records.status().message();

  WriteArchive(Options().path, kSortdbSample, 1, "2012-03-25");
  EditManifest([](Manifest* m) { m->first_key = "c.u|jehiah.c3h7"; });
  auto first = LoadSortedFile(Options());
  ASSERT_FALSE(first.ok());
  EXPECT_NE(first.status().message().find("first_key"), std::string::npos) << first.status().message();

  WriteArchive(Options().path, kSortdbSample, 1, "2012-03-25");
  EditManifest([](Manifest* m) { m->last_key = "u|jehiah.c3hh"; });
  auto last = LoadSortedFile(Options());
  ASSERT_FALSE(last.ok());
  EXPECT_NE(last.status().message().find("last_key"), std::string::npos) << last.status().message();
}

TEST_F(FileLoaderTest, RefusesAnUnreadableManifest) {
  WriteArchive(Options().path, kSortdbSample, 1, "2012-03-25");
  ASSERT_TRUE(WriteFileAtomically(ManifestPathFor(Options().path), "{not json").ok());
  auto file = LoadSortedFile(Options());
  ASSERT_FALSE(file.ok());
  EXPECT_EQ(file.status().code(), StatusCode::kCorruption);
}

// One bit off in the manifest's last_day ("2012-03-25" -> "2012-03-24" is
// 0x35 -> 0x34) still reads as a manifest: its own checksum refuses it
// (a last_day one day later would hide a day realtime still holds).
TEST_F(FileLoaderTest, RefusesAManifestWhoseFieldsDoNotMatchItsChecksum) {
  WriteArchive(Options().path, kSortdbSample, 1, "2012-03-25");
  auto text = ReadFileToString(ManifestPathFor(Options().path));
  ASSERT_TRUE(text.ok());
  const size_t at = text->find("2012-03-25");
  ASSERT_NE(at, std::string::npos) << *text;
  std::string flipped = *text;
  flipped[at + 9] ^= 0x01;
  ASSERT_TRUE(WriteFileAtomically(ManifestPathFor(Options().path), flipped).ok());
  auto file = LoadSortedFile(Options());
  ASSERT_FALSE(file.ok());
  EXPECT_EQ(file.status().reason(), "MANIFEST_DAMAGED") << file.status().ToString();
  // A manifest written before the checksum existed (none) is still read.
  nlohmann::json old = nlohmann::json::parse(*text);
  ASSERT_TRUE(old.contains("manifest_crc32"));
  old.erase("manifest_crc32");
  ASSERT_TRUE(WriteFileAtomically(ManifestPathFor(Options().path), old.dump(2)).ok());
  auto unchecked = LoadSortedFile(Options());
  ASSERT_TRUE(unchecked.ok()) << unchecked.status().ToString();
  EXPECT_EQ((*unchecked)->last_day(), "2012-03-25");
}

// Under the system clock no manifest says today or later: one that does is
// damaged (here one written before manifests had a checksum) or a clock is
// wrong, and serving it would hide the days realtime holds.
TEST_F(FileLoaderTest, ALastDayOfTodayIsRefusedUnderTheSystemClock) {
  const int64_t today = FloorDiv(static_cast<int64_t>(std::time(nullptr)), kSecondsPerDay);
  LoadOptions options = Options();
  options.refuse_last_day_from_today = true;
  WriteArchive(options.path, kSortdbSample, 1, FormatDate(today - 1));
  ASSERT_TRUE(LoadSortedFile(options).ok());
  WriteArchive(options.path, kSortdbSample, 2, FormatDate(today + 1));  // tomorrow: today would race midnight
  auto ahead = LoadSortedFile(options);
  ASSERT_FALSE(ahead.ok());
  EXPECT_EQ(ahead.status().reason(), "LAST_DAY_AHEAD") << ahead.status().ToString();
  options.refuse_last_day_from_today = false;  // a manual clock replays any days
  EXPECT_TRUE(LoadSortedFile(options).ok());
}

TEST_F(FileLoaderTest, SortednessIsCheckedOnlyWhenAskedFor) {
  // A file whose manifest matches but whose lines are out of order.
  std::string unsorted = "b,1\na,2\nc,3\n";
  WriteArchive(Options().path, unsorted, 3, "");
  EXPECT_TRUE(LoadSortedFile(Options()).ok());
  LoadOptions verify = Options();
  verify.verify_sorted = true;
  auto file = LoadSortedFile(verify);
  ASSERT_FALSE(file.ok());
  EXPECT_NE(file.status().message().find("line 2"), std::string::npos) << file.status().message();
}

TEST_F(FileLoaderTest, TuningOptionsDoNotChangeAnswers) {
  WriteArchive(Options().path, kSortdbSample, 2, "2012-03-25");
  for (std::string how : {"random", "sequential", "normal", "willneed"}) {
    LoadOptions o = Options();
    o.madvise = how;
    o.warmup = true;
    o.verify_sorted = true;
    auto file = LoadSortedFile(o);
    ASSERT_TRUE(file.ok()) << how << ": " << file.status().ToString();
    EXPECT_EQ((*file)->Get("u|jehiah.c3i0"), "7");
  }
}

TEST_F(FileLoaderTest, AnOldGenerationKeepsItsDataAfterTheSwap) {
  std::string first = "k,first\n";
  std::string second = "k,second\nl,2\n";
  WriteArchive(Options().path, first, 1, "2012-03-24");
  auto old_file = LoadSortedFile(Options());
  ASSERT_TRUE(old_file.ok());
  int64_t alive_before = SortedFile::alive_count();
  // The rebuild renames a new file over the path; the old mapping stays valid.
  WriteArchive(Options().path, second, 2, "2012-03-25");
  auto new_file = LoadSortedFile(Options());
  ASSERT_TRUE(new_file.ok());
  EXPECT_EQ(SortedFile::alive_count(), alive_before + 1);
  EXPECT_EQ((*old_file)->Get("k"), "first");
  EXPECT_EQ((*old_file)->generation(), 1u);
  EXPECT_EQ((*new_file)->Get("k"), "second");
  EXPECT_EQ((*new_file)->generation(), 2u);
  // Released with its last reference.
  SortedFilePtr released = std::move(*old_file);
  EXPECT_EQ(SortedFile::alive_count(), alive_before + 1);
  released.reset();
  EXPECT_EQ(SortedFile::alive_count(), alive_before);
}

TEST(LoadOptionsTest, ComeFromTheMemberAndTheArchiveTable) {
  MemberConfig member;
  member.file = "var/archive/shard-3.csv";
  ArchiveConfig archive;
  archive.field_separator = "\t";
  archive.madvise = "willneed";
  archive.mlock = true;
  archive.warmup = true;
  archive.verify_sorted_on_load = true;
  LoadOptions o = LoadOptions::From(member, archive);
  EXPECT_EQ(o.path, "var/archive/shard-3.csv");
  EXPECT_EQ(o.separator, '\t');
  EXPECT_EQ(o.madvise, "willneed");
  EXPECT_TRUE(o.mlock);
  EXPECT_TRUE(o.warmup);
  EXPECT_TRUE(o.verify_sorted);
}

}  // namespace
}  // namespace clickatron::archive
