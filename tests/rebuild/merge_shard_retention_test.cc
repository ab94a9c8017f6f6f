// The merge-shard task's retention checks: the boundaries it is given were
// planned on the rebuild host; a task host whose tzdata cuts the zone's days
// elsewhere refuses them instead of rolling a day across one.
#include <gtest/gtest.h>

#include <tuple>
#include <vector>

#include <fmt/format.h>

#include "clickatron/file_util.h"
#include "clickatron/manifest.h"
#include "clickatron/ymdh.h"
#include "merge_shard_task.h"
#include "task_dir.h"
#include "testutil/testutil.h"

namespace clickatron::rebuild::merge_shard_retention_test {
namespace {

TEST(MergeShardRetention, ABoundaryThatIsNoDayStartHereIsRefused) {
  testing::TempDir dir;
  const int64_t day = *ParseDate("2024-10-04");
  const std::string input = dir / "new.csv";
  ASSERT_TRUE(WriteFileAtomically(input, "u|a," + *YmdhFromUnix(day * kSecondsPerDay) + ":1\n").ok());
  for (const auto& [zone, hourly_from, refused] :
       std::vector<std::tuple<std::string, int64_t, bool>>{{"UTC", day * kSecondsPerDay + kSecondsPerHour, true},
                                                           {"+9", day * kSecondsPerDay, true},
                                                           {"+9", day * kSecondsPerDay - 9 * kSecondsPerHour, false},
                                                           {"UTC", day * kSecondsPerDay, false}}) {
    const TaskPaths task{dir / fmt::format("task-{}-{}", zone, hourly_from)};
    MergeShardSpec spec;
    spec.generation = 1;
    spec.last_day = "2024-10-04";
    spec.created = "2024-10-05T00:10:00Z";
    spec.inputs = {input};
    spec.retention.push_back(AppliedRetention{.ns = "u", .zone = zone, .hourly_from = hourly_from, .kept_from = {}});
    ASSERT_TRUE(WriteTaskSpec(task, spec.ToJson()).ok());
    const Status st = RunTaskDir(task, ClusterConfig{}, TaskResources{});
    if (refused) {
      EXPECT_FALSE(st.ok()) << zone << " " << hourly_from;
      EXPECT_NE(st.ToString().find("TZDATA_DIFFERS"), std::string::npos) << st.ToString();
    } else {
      EXPECT_TRUE(st.ok()) << zone << " " << hourly_from << ": " << st.ToString();
    }
  }
}

// A boundary the previous generation already applied is not checked again:
// a later tzdata that cuts that day elsewhere must not stop every night.
TEST(MergeShardRetention, ABoundaryThatDidNotMoveIsNotCheckedAgain) {
  testing::TempDir dir;
  const int64_t day = *ParseDate("2024-10-04");
  const int64_t odd = day * kSecondsPerDay + kSecondsPerHour;  // no UTC day starts there
  const std::string previous_text = "u|a," + *YmdhFromUnix(day * kSecondsPerDay - kSecondsPerDay) + ":2\n";
  const std::string previous = dir / "gen-1.csv";
  ASSERT_TRUE(WriteFileAtomically(previous, previous_text).ok());
  Manifest manifest;
  manifest.format = kArchiveFormat;
  manifest.generation = 1;
  manifest.last_day = "2024-10-03";
  manifest.day_subtotals = manifest.day_subtotals_every_day = manifest.day_uniques_every_day = true;
  manifest.retention.push_back(AppliedRetention{.ns = "u", .zone = "UTC", .hourly_from = odd, .kept_from = {}});
  DescribeArchiveData(previous_text, &manifest);
  const std::string input = dir / "new.csv";
  ASSERT_TRUE(WriteFileAtomically(input, "u|a," + *YmdhFromUnix(day * kSecondsPerDay) + ":1\n").ok());
  const TaskPaths task{dir / "task"};
  MergeShardSpec spec;
  spec.generation = 2;
  spec.last_day = "2024-10-04";
  spec.created = "2024-10-05T00:10:00Z";
  spec.previous_file = previous;
  spec.previous_manifest = manifest;
  spec.inputs = {input};
  spec.retention = manifest.retention;
  ASSERT_TRUE(WriteTaskSpec(task, spec.ToJson()).ok());
  const Status st = RunTaskDir(task, ClusterConfig{}, TaskResources{});
  EXPECT_TRUE(st.ok()) << st.ToString();
}

}  // namespace
}  // namespace clickatron::rebuild::merge_shard_retention_test
