// Sharding: the fast shard key agrees with the core's, and a split puts every
// line in its shard's file, each file sorted.
#include "split.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <random>

#include "clickatron/file_util.h"
#include "clickatron/key_codec.h"
#include "clickatron/shard.h"
#include "testutil/testutil.h"

// A namespace of this file's own: its names beside those of the other files
// compiled with it in one unity file (tests/CMakeLists.txt).
namespace clickatron::rebuild::split_test {
namespace {

using clickatron::testing::TempDir;

std::vector<std::string> SampleLines() {
  std::vector<std::string> lines;
  for (int i = 0; i < 3000; ++i) {
    const std::string tkey = "key" + std::to_string(i);
    lines.push_back("u|" + tkey + ",c41l:" + std::to_string(i + 1));
    lines.push_back("c.u|" + tkey + ".c41l,US:1");
    lines.push_back("ref.x_y|" + tkey + ".c3p1,h0aMB8AuNw4=:2");
    const std::string value = "http://example.com/" + std::to_string(i);
    lines.push_back("l|" + Hash12(value) + "," + value);
  }
  lines.push_back("u|h0aMB8AuNw4=,c41l:1");
  std::sort(lines.begin(), lines.end());
  return lines;
}

std::vector<std::string> ReadLines(const std::string& path) {
  auto text = ReadFileToString(path);
  EXPECT_TRUE(text.ok()) << path;
  std::vector<std::string> lines;
  size_t start = 0;
  while (text.ok() && start < text->size()) {
    const size_t nl = text->find('\n', start);
    lines.push_back(text->substr(start, nl - start));
    start = nl + 1;
  }
  return lines;
}

TEST(Split, ShardKeyAgreesWithCore) {
  for (const std::string& line : SampleLines()) {
    Result<std::string_view> core = ShardKeyOfArchiveKey(line);
    ASSERT_TRUE(core.ok()) << line;
    EXPECT_EQ(ShardKeyOfValidArchiveLine(line), *core) << line;
  }
  EXPECT_EQ(ShardKeyOfValidArchiveLine("c.u|jehiah.c41l,US:4"), "u|jehiah");
  EXPECT_EQ(ShardKeyOfValidArchiveLine("u|jehiah,c41l:5"), "u|jehiah");
  EXPECT_EQ(ShardKeyOfValidArchiveLine("l|h0aMB8AuNw4=,http://www.facebook.com/"), "h0aMB8AuNw4=");
  // Unique records go to their counters' shard: readers look for them there.
  for (const std::string line : {"~u|jehiah.c41l,e", "~c.u|jehiah.c41l,US:e"}) {
    Result<std::string_view> core = ShardKeyOfArchiveKey(line);
    ASSERT_TRUE(core.ok()) << line;
    EXPECT_EQ(*core, "u|jehiah");
    EXPECT_EQ(ShardKeyOfValidArchiveLine(line), *core) << line;
  }
}

TEST(Split, EveryLineInItsShardFileAndFilesSorted) {
  TempDir tmp;
  const auto lines = SampleLines();
  {
    auto writer = LineWriter::Create(tmp / "all.csv");
    ASSERT_TRUE(writer.ok());
    for (const auto& line : lines) ASSERT_TRUE((*writer)->Put(line).ok());
    ASSERT_TRUE((*writer)->Finish().ok());
  }
  const uint32_t shards = 3;
  std::vector<std::string> paths;
  for (uint32_t s = 0; s < shards; ++s) paths.push_back(tmp / ("shard-" + std::to_string(s) + ".csv"));
  ASSERT_TRUE(SplitSortedFile(tmp / "all.csv", shards, paths).ok());
  size_t total = 0;
  for (uint32_t s = 0; s < shards; ++s) {
    const auto part = ReadLines(paths[s]);
    EXPECT_GT(part.size(), 0u);
    EXPECT_TRUE(std::is_sorted(part.begin(), part.end())) << "shard " << s;
    for (const std::string& line : part) {
      // The core's rule, computed independently of the splitter.
      EXPECT_EQ(ShardOf(*ShardKeyOfArchiveKey(line), shards), s) << line;
    }
    total += part.size();
  }
  EXPECT_EQ(total, lines.size());
}

TEST(Split, ShardFilterPassesOnlyItsShard) {
  const auto lines = SampleLines();
  VectorLineSource source(lines);
  ShardFilter filter(&source, 1, 2);
  std::vector<std::string> got;
  std::string_view line;
  while (filter.Next(&line)) got.emplace_back(line);
  std::vector<std::string> expected;
  for (const auto& l : lines) {
    if (ShardOf(*ShardKeyOfArchiveKey(l), 2) == 1) expected.push_back(l);
  }
  EXPECT_EQ(got, expected);
}

TEST(Split, ShardFileWriterDescribesLikeTheCore) {
  TempDir tmp;
  const auto lines = SampleLines();
  auto writer = ShardFileWriter::Create(tmp / "shard.csv");
  ASSERT_TRUE(writer.ok());
  for (const auto& line : lines) ASSERT_TRUE((*writer)->Put(line).ok());
  ASSERT_TRUE((*writer)->Finish().ok());
  Manifest ours, core;
  (*writer)->Describe(&ours);
  auto data = ReadFileToString(tmp / "shard.csv");
  ASSERT_TRUE(data.ok());
  DescribeArchiveData(*data, &core);
  EXPECT_EQ(ours.records, core.records);
  EXPECT_EQ(ours.bytes, core.bytes);
  EXPECT_EQ(ours.crc32, core.crc32);
  EXPECT_EQ(ours.first_key, core.first_key);
  EXPECT_EQ(ours.last_key, core.last_key);
  EXPECT_EQ(ours.records, lines.size());
}

}  // namespace
}  // namespace clickatron::rebuild::split_test
