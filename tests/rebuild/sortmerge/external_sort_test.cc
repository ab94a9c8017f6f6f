// External sort: sorted runs, k-way merge, combining, and the memory bound.
// Expected output comes from std::sort and a std::map oracle (sort_oracle.h).
#include "sortmerge/external_sort.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <filesystem>
#include <map>
#include <random>

#include "clickatron/key_codec.h"
#include "testutil/sort_oracle.h"
#include "testutil/testutil.h"

namespace clickatron::rebuild {
namespace {

using clickatron::testing::TempDir;

// Random one-column archive lines over a small key space, so keys repeat.
std::vector<std::string> RandomLines(size_t n, uint32_t seed, size_t key_space) {
  std::mt19937 rng(seed);
  const char* b32 = "0123456789abcdefghijklmnopqrstuv";
  const std::vector<std::string> values = {"http://a.example/", "http://b.example/x", "caf\xc3\xa9"};
  std::vector<std::string> lines;
  for (size_t i = 0; i < n; ++i) {
    const std::string tkey = "k" + std::to_string(rng() % key_space);
    const std::string hour = std::string("c41") + b32[rng() % 24];
    const int64_t count = 1 + rng() % 50;
    switch (rng() % 7) {
      case 0: {
        const std::string& v = values[rng() % values.size()];
        lines.push_back("l|" + Hash12(v) + "," + v);
        break;
      }
      case 1:
      case 2:
      case 3: lines.push_back("u|" + tkey + "," + hour + ":" + std::to_string(count)); break;
      default:
        lines.push_back("c.u|" + tkey + "." + hour + ",S" + std::to_string(rng() % 30) + ":" +
                        std::to_string(count));
    }
  }
  return lines;
}

std::vector<std::string> RunSorter(const std::vector<std::string>& input, const std::string& temp_dir,
                                   uint64_t memory_bytes, int threads, ExternalSortStats* stats) {
  auto sorter = ExternalSorter::Create(
      {.temp_dir = temp_dir, .memory_bytes = memory_bytes, .threads = threads, .max_fan_in = 128});
  EXPECT_TRUE(sorter.ok()) << sorter.status().ToString();
  if (!sorter.ok()) return {};
  for (const std::string& line : input) {
    Status st = (*sorter)->Add(line);
    EXPECT_TRUE(st.ok()) << st.ToString();
  }
  VectorLineSink out;
  Status st = (*sorter)->Finish(&out);
  EXPECT_TRUE(st.ok()) << st.ToString();
  if (stats != nullptr) *stats = (*sorter)->stats();
  return out.lines;
}

size_t FilesIn(const std::string& dir) {
  if (!std::filesystem::exists(dir)) return 0;
  return static_cast<size_t>(std::distance(std::filesystem::directory_iterator(dir), {}));
}

TEST(ExternalSort, InMemoryWhenItFits) {
  TempDir tmp;
  const auto input = RandomLines(20000, 1, 500);
  ExternalSortStats stats;
  const auto out = RunSorter(input, tmp / "runs", 256u << 20, 2, &stats);
  EXPECT_EQ(out, Oracle(input));
  EXPECT_EQ(stats.runs, 0u);
  EXPECT_EQ(stats.lines_in, input.size());
  EXPECT_EQ(stats.lines_out, out.size());
}

TEST(ExternalSort, TinyMemoryBoundSpillsManyRunsAndMergesInPasses) {
  TempDir tmp;
  const auto input = RandomLines(30000, 2, 3000);
  ExternalSortStats stats;
  // 192 KiB: three chunks of 64 KiB, and a merge fan-in of 2 runs at a time.
  const uint64_t bound = 192u << 10;
  auto sorter = ExternalSorter::Create({.temp_dir = tmp / "runs", .memory_bytes = bound, .threads = 2});
  ASSERT_TRUE(sorter.ok());
  EXPECT_LE((*sorter)->chunk_bytes() * 3, bound);
  for (const std::string& line : input) ASSERT_TRUE((*sorter)->Add(line).ok());
  VectorLineSink out;
  ASSERT_TRUE((*sorter)->Finish(&out).ok());
  stats = (*sorter)->stats();
  EXPECT_EQ(out.lines, Oracle(input));
  EXPECT_GT(stats.runs, 10u);
  EXPECT_GT(stats.merge_passes, 0u);
  sorter->reset();
  EXPECT_EQ(FilesIn(tmp / "runs"), 0u) << "run files must be removed";
}

TEST(ExternalSort, UniqueKeysComeOutInStdSortOrder) {
  TempDir tmp;
  std::mt19937 rng(3);
  std::vector<std::string> input;
  for (int i = 0; i < 20000; ++i) {
    // Keys that are prefixes of one another ("u|a" / "u|a-b" / "u|a.") test
    // that whole-line order and key order agree.
    std::string key = "u|";
    const int len = 1 + static_cast<int>(rng() % 6);
    for (int j = 0; j < len; ++j) key += "ab-~"[rng() % 4];
    input.push_back(key + ",c41" + std::string(1, "0123456789"[rng() % 10]) + ":1");
  }
  std::sort(input.begin(), input.end());
  input.erase(std::unique(input.begin(), input.end(),
                          [](const std::string& a, const std::string& b) {
                            return a.substr(0, a.find(',')) == b.substr(0, b.find(','));
                          }),
              input.end());
  std::vector<std::string> shuffled = input;
  std::shuffle(shuffled.begin(), shuffled.end(), rng);
  const auto out = RunSorter(shuffled, tmp / "runs", 128u << 10, 2, nullptr);
  EXPECT_EQ(out, input);
}

TEST(ExternalSort, ALineLongerThanAChunk) {
  TempDir tmp;
  std::string long_line = "u|big,";
  for (int day = 1; day <= 28; ++day) {
    for (int hour = 0; hour < 24; ++hour) {
      if (long_line.back() != ',') long_line += ' ';
      long_line += std::string("c4") + "0123456789abcdefghijklmnopqrstuv"[day] +
                   "0123456789abcdefghijklmnopqrstuv"[hour] + ":1";
    }
  }
  std::vector<std::string> input = RandomLines(3000, 4, 100);
  input.push_back(long_line);
  input.push_back("u|big,c411:5");  // overlaps an hour of long_line: summed
  const auto out = RunSorter(input, tmp / "runs", 12u << 10, 2, nullptr);  // chunks of 4 KiB
  ASSERT_GT(long_line.size(), 4096u);
  EXPECT_EQ(out, Oracle(input));
}

TEST(ExternalSort, SingleThreadGivesTheSameResult) {
  TempDir tmp;
  const auto input = RandomLines(10000, 5, 800);
  EXPECT_EQ(RunSorter(input, tmp / "a", 64u << 10, 1, nullptr), Oracle(input));
}

}  // namespace
}  // namespace clickatron::rebuild
