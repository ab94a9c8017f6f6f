// Backup copies of old generations are pruned to the newest `keep`.
#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>

#include "backup.h"
#include "clickatron/file_util.h"
#include "testutil/testutil.h"

namespace clickatron::rebuild {
namespace {

void MakeBackup(const std::string& root, uint64_t g) {
  ASSERT_TRUE(MakeDirs(BackupDir(root, g)).ok());
  std::ofstream(BackupDir(root, g) + "/shard-0.csv.gz") << "x";
}

TEST(BackupTest, PruneKeepsTheNewestGenerations) {
  clickatron::testing::TempDir dir;
  const std::string root = dir.path() + "/backup";
  for (uint64_t g = 1; g <= 6; ++g) MakeBackup(root, g);
  ASSERT_TRUE(MakeDirs(root + "/gen-x").ok());        // not ours: left alone
  ASSERT_TRUE(MakeDirs(root + "/notes").ok());
  std::ofstream(root + "/gen-2.txt") << "a file, not a generation";

  auto removed = PruneBackups(root, 6, 3);
  ASSERT_TRUE(removed.ok()) << removed.status().ToString();
  EXPECT_EQ(*removed, (std::vector<uint64_t>{1, 2, 3}));
  for (uint64_t g = 1; g <= 6; ++g) EXPECT_EQ(FileExists(BackupDir(root, g)), g >= 4) << g;
  EXPECT_TRUE(FileExists(root + "/gen-x"));
  EXPECT_TRUE(FileExists(root + "/notes"));
  EXPECT_TRUE(FileExists(root + "/gen-2.txt"));

  // Run again: nothing more to remove.
  removed = PruneBackups(root, 6, 3);
  ASSERT_TRUE(removed.ok());
  EXPECT_TRUE(removed->empty());
}

TEST(BackupTest, KeepZeroOrFewGenerationsRemovesNothing) {
  clickatron::testing::TempDir dir;
  const std::string root = dir.path() + "/backup";
  for (uint64_t g = 1; g <= 3; ++g) MakeBackup(root, g);
  auto removed = PruneBackups(root, 3, 0);  // 0: keep all
  ASSERT_TRUE(removed.ok());
  EXPECT_TRUE(removed->empty());
  removed = PruneBackups(root, 3, 5);  // fewer than keep
  ASSERT_TRUE(removed.ok());
  EXPECT_TRUE(removed->empty());
  removed = PruneBackups(dir.path() + "/absent", 9, 2);  // no backup dir yet
  ASSERT_TRUE(removed.ok());
  for (uint64_t g = 1; g <= 3; ++g) EXPECT_TRUE(FileExists(BackupDir(root, g)));
}

}  // namespace
}  // namespace clickatron::rebuild
