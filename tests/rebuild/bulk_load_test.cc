// What loads that never got their queued.done marker leave behind: the next
// load removes their partial files, keeps the reasons, and names an
// interrupted one as such.
#include "bulk_load.h"

#include <gtest/gtest.h>

#include <filesystem>
#include <string>

#include "clickatron/file_util.h"
#include "testutil/testutil.h"
#include "work_dir.h"

namespace clickatron::rebuild {
namespace bulk_load_test {

using testing::TempDir;
using testing::WriteAll;

TEST(BulkLoadTest, TheNextLoadSweepsWhatInterruptedAndFailedLoadsLeft) {
  TempDir tmp;
  ClusterConfig cluster;
  cluster.rebuild.work_dir = tmp / "work";
  cluster.rebuild.memory_mb = 16;
  cluster.rebuild.threads = 1;
  const WorkDir work(cluster.rebuild.work_dir);
  // A load killed mid-sort: its runs under tmp/, its output being written,
  // no marker and no failed.txt.
  const std::string killed = "load-20261201T000000Z-1";
  ASSERT_TRUE(MakeDirs(work.QueueDir(killed)).ok());
  ASSERT_TRUE(MakeDirs(work.TempDir(killed)).ok());
  WriteAll(work.TempDir(killed) + "/run-000000.csv", std::string(4096, 'x'));
  WriteAll(work.QueueSorted(killed) + ".tmp", "u|k,partial\n");
  // A load that failed: its reason and rejects stay, its sorted output goes.
  const std::string failed = "load-20261201T000001Z-2";
  ASSERT_TRUE(MakeDirs(work.QueueDir(failed)).ok());
  WriteAll(work.QueueDir(failed) + "/failed.txt", "TOO_MANY_BAD_LINES\n");
  WriteAll(work.QueueRejects(failed), "a.csv:1: bad\n");
  WriteAll(work.QueueSorted(failed), "u|k,1\n");

  WriteAll(tmp / "history.csv", "u|k.c8a1,3\n");
  BulkLoadOptions options;
  options.files = {tmp / "history.csv"};
  auto load = QueueBulkLoad(cluster, options);
  ASSERT_TRUE(load.ok()) << load.status().ToString();

  EXPECT_FALSE(std::filesystem::exists(work.TempDir(killed)));
  EXPECT_FALSE(FileExists(work.QueueSorted(killed) + ".tmp"));
  auto reason = ReadFileToString(work.QueueDir(killed) + "/failed.txt");
  ASSERT_TRUE(reason.ok()) << reason.status().ToString();
  EXPECT_EQ(reason->rfind("INTERRUPTED", 0), 0u) << *reason;

  EXPECT_FALSE(FileExists(work.QueueSorted(failed)));
  auto failed_reason = ReadFileToString(work.QueueDir(failed) + "/failed.txt");
  ASSERT_TRUE(failed_reason.ok());
  EXPECT_EQ(*failed_reason, "TOO_MANY_BAD_LINES\n");
  EXPECT_TRUE(FileExists(work.QueueRejects(failed)));

  // The new load is whole and the only one pending.
  EXPECT_TRUE(FileExists(work.QueueDone(load->id)));
  EXPECT_TRUE(FileExists(work.QueueSorted(load->id)));
  auto pending = PendingLoads(work);
  ASSERT_TRUE(pending.ok()) << pending.status().ToString();
  EXPECT_EQ(*pending, std::vector<std::string>{load->id});
}

}  // namespace bulk_load_test
}  // namespace clickatron::rebuild
