// The merge-shard task and day unique records: a previous generation whose
// manifest does not promise them (unique hours, no day unique records: built
// before they existed) is read in full once, so the next generation has the
// union of its hours for every day, old and new, and says so; a previous
// generation that promises them is merged into, its day records united with
// the new hours' (late visitors to an old day included). Span records
// likewise. Expected sketches are built by adding every visitor of the day
// (or span) to one sketch.
#include <gtest/gtest.h>

#include <fmt/format.h>

#include "clickatron/file_util.h"
#include "clickatron/manifest.h"
#include "clickatron/shard.h"
#include "clickatron/unique_sketch.h"
#include "merge_shard_task.h"
#include "rebuild_cluster_fixture.h"
#include "task_dir.h"
#include "testutil/testutil.h"

// A namespace of this file's own: its names beside those of the other files
// compiled with it in one unity file (tests/CMakeLists.txt).
namespace clickatron::rebuild::merge_shard_uniques_test {
namespace {

// The text of a sketch of the visitors numbered `visitors`, each added.
std::string VisitorsOf(std::initializer_list<uint64_t> visitors) {
  UniqueSketch s;
  for (uint64_t v : visitors) s.Add(HashVisitor(fmt::format("visitor-{}", v)));
  return s.ToText();
}
// Of visitors a..b-1.
std::string Visitors(uint64_t a, uint64_t b) {
  UniqueSketch s;
  for (uint64_t v = a; v < b; ++v) s.Add(HashVisitor(fmt::format("visitor-{}", v)));
  return s.ToText();
}

// The span records of `prefix` for a record whose days all lie in each span
// holding `day` (levels 1..kMaxSpanLevel), every one holding `sketch`.
std::vector<std::string> SpanLines(const std::string& prefix, int64_t day, const std::string& sketch) {
  std::vector<std::string> lines;
  for (int level = 1; level <= kMaxSpanLevel; ++level) {
    lines.push_back(prefix + *SpanCode(SpanHolding(day, level)) + "," + sketch);
  }
  return lines;
}

// Archive order: whole lines, bytewise.
std::vector<std::string> Sorted(std::vector<std::string> lines) {
  std::sort(lines.begin(), lines.end());
  return lines;
}

std::string JoinLines(const std::vector<std::string>& lines) {
  std::string text;
  for (const std::string& line : lines) text += line + "\n";
  return text;
}

class UniqueDayRecordsMerge : public ::testing::Test {
 protected:
  // Generation 1 of one shard: `lines` with a manifest whose promises are
  // the arguments.
  // Its format: 2 when it promises day unique records (as the rebuild
  // writes them), else 1, unless `format` says otherwise.
  void WritePrevious(const std::vector<std::string>& lines, bool uniques_every_day, int format = 0) {
    manifest_.format = format != 0 ? format : uniques_every_day ? kArchiveFormat : 1;
    const std::string text = JoinLines(lines);
    previous_ = dir_ / "gen-1.csv";
    ASSERT_TRUE(WriteFileAtomically(previous_, text).ok());
    manifest_.generation = 1;
    manifest_.shard = 0;
    manifest_.shard_count = 1;
    manifest_.last_day = "2024-10-04";
    manifest_.day_subtotals = true;
    manifest_.day_subtotals_every_day = true;
    manifest_.day_uniques_every_day = uniques_every_day;
    DescribeArchiveData(text, &manifest_);
    ASSERT_TRUE(WriteManifestAtomically(ManifestPathFor(previous_), manifest_).ok());
  }

  // Generation 2 from the previous file and `new_lines`; its file's lines.
  std::vector<std::string> Merge(const std::vector<std::string>& new_lines, Manifest* written) {
    const std::string input = dir_ / "new.csv";
    EXPECT_TRUE(WriteFileAtomically(input, JoinLines(new_lines)).ok());
    const TaskPaths task{dir_ / "task"};
    MergeShardSpec spec;
    spec.generation = 2;
    spec.last_day = "2024-10-05";
    spec.created = "2024-10-06T00:10:00Z";
    spec.previous_file = previous_;
    spec.previous_manifest = manifest_;
    spec.inputs = {input};
    EXPECT_TRUE(WriteTaskSpec(task, spec.ToJson()).ok());
    const Status st = RunTaskDir(task, ClusterConfig{}, TaskResources{});
    EXPECT_TRUE(st.ok()) << st.ToString();
    const std::string out = MergeShardOutput(task, 0);
    auto m = ReadManifest(ManifestPathFor(out));
    EXPECT_TRUE(m.ok());
    if (m.ok()) *written = *m;
    return FileLines(out);
  }

  testing::TempDir dir_;
  std::string previous_;
  Manifest manifest_;
};

// Days 2024-10-04 (code "oa4": year 24, month 10, day 4) and 2024-10-05 ("oa5"):
// days 20000 and 20001; 20000 is even, so every span longer than a day that
// holds one holds both.
constexpr int64_t kOa4 = 20000;
TEST_F(UniqueDayRecordsMerge, APreviousGenerationWithoutThemGetsThemForEveryDay) {
  WritePrevious(
      {
          "u|k,oa40:1 oa41:1",
          "~c.u|k.oa40,US:" + Visitors(0, 3),
          "~c.u|k.oa41,JP:" + Visitors(5, 6) + " US:" + Visitors(2, 4),
          "~u|k.oa40," + Visitors(0, 3),
          "~u|k.oa41," + Visitors(2, 6),
      },
      /*uniques_every_day=*/false);
  Manifest m;
  const std::vector<std::string> got = Merge(
      {"u|k,oa41:1 oa50:1", "~u|k.oa41," + Visitors(6, 7), "~u|k.oa50," + Visitors(0, 2)}, &m);
  ASSERT_EQ(*DaysFromDayCode("oa4"), kOa4);
  std::vector<std::string> want = {
      "u|k,oa40:1 oa41:2 oa50:1",
      "~c.u|k.oa4,JP:" + Visitors(5, 6) + " US:" + Visitors(0, 4),
      "~c.u|k.oa40,US:" + Visitors(0, 3),
      "~c.u|k.oa41,JP:" + Visitors(5, 6) + " US:" + Visitors(2, 4),
      "~u|k.oa4," + Visitors(0, 7),
      "~u|k.oa40," + Visitors(0, 3),
      "~u|k.oa41," + Visitors(2, 7),
      "~u|k.oa5," + Visitors(0, 2),
      "~u|k.oa50," + Visitors(0, 2),
  };
  for (const std::string& line : SpanLines("~c.u|k.", kOa4, "JP:" + Visitors(5, 6) + " US:" + Visitors(0, 4))) {
    want.push_back(line);
  }
  for (const std::string& line : SpanLines("~u|k.", kOa4, Visitors(0, 7))) want.push_back(line);
  EXPECT_EQ(got, Sorted(want));
  EXPECT_EQ(m.format, kArchiveFormat);
  EXPECT_TRUE(m.day_uniques_every_day);
  EXPECT_TRUE(m.day_subtotals_every_day);
}

TEST_F(UniqueDayRecordsMerge, APreviousGenerationWithThemIsUnitedDayByDay) {
  std::vector<std::string> previous = {
      "u|k,oa40:1 oa41:1",
      "~u|k.oa4," + Visitors(0, 6),
      "~u|k.oa40," + Visitors(0, 3),
      "~u|k.oa41," + Visitors(2, 6),
  };
  for (const std::string& line : SpanLines("~u|k.", kOa4, Visitors(0, 6))) previous.push_back(line);
  WritePrevious(Sorted(previous), /*uniques_every_day=*/true);
  Manifest m;
  // Late visitors to an old hour (one already counted that day, one new),
  // and a new hour of the old day.
  const std::vector<std::string> got = Merge(
      {"u|k,oa41:1 oa42:1", "~u|k.oa41," + Visitors(4, 8), "~u|k.oa42," + Visitors(20, 21)}, &m);
  std::vector<std::string> want = {
      "u|k,oa40:1 oa41:2 oa42:1",
      "~u|k.oa4," + VisitorsOf({0, 1, 2, 3, 4, 5, 6, 7, 20}),
      "~u|k.oa40," + Visitors(0, 3),
      "~u|k.oa41," + Visitors(2, 8),
      "~u|k.oa42," + Visitors(20, 21),
  };
  for (const std::string& line : SpanLines("~u|k.", kOa4, VisitorsOf({0, 1, 2, 3, 4, 5, 6, 7, 20}))) {
    want.push_back(line);
  }
  EXPECT_EQ(got, Sorted(want));
  EXPECT_TRUE(m.day_uniques_every_day);
}

// The upgrade: a file of format 1 that promises every day record (what the
// rebuild wrote before span records) has no spans, so it is read in full once
// and the spans hold its days too, not only the new ones.
TEST_F(UniqueDayRecordsMerge, AFormatOneGenerationWithEveryDayRecordGetsSpansOfAllItsDays) {
  WritePrevious({"u|k,oa40:1", "~u|k.oa4," + Visitors(0, 3), "~u|k.oa40," + Visitors(0, 3)},
                /*uniques_every_day=*/true, /*format=*/1);
  Manifest m;
  const std::vector<std::string> got = Merge({"u|k,oa50:1", "~u|k.oa50," + Visitors(10, 12)}, &m);
  std::vector<std::string> want = {
      "u|k,oa40:1 oa50:1",
      "~u|k.oa4," + Visitors(0, 3),
      "~u|k.oa40," + Visitors(0, 3),
      "~u|k.oa5," + Visitors(10, 12),
      "~u|k.oa50," + Visitors(10, 12),
  };
  for (const std::string& line : SpanLines("~u|k.", kOa4, VisitorsOf({0, 1, 2, 10, 11}))) want.push_back(line);
  EXPECT_EQ(got, Sorted(want));
  EXPECT_EQ(m.format, kArchiveFormat);
}

}  // namespace
}  // namespace clickatron::rebuild::merge_shard_uniques_test
