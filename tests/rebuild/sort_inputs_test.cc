// SortInputs converts line files on several threads: the sorted output and
// the reject file (FILE:LINE: reason, in file order) must not depend on the
// thread count or the memory bound, and must be what the core's conversion
// and a std::map of sums give. Also the producer mode of ExternalSorter.
#include "sort_inputs.h"

#include <gtest/gtest.h>

#include <fstream>
#include <map>
#include <random>
#include <sstream>
#include <thread>

#include "clickatron/convert.h"
#include "clickatron/file_util.h"
#include "sortmerge/external_sort.h"
#include "sortmerge/progress.h"
#include "testutil/sort_oracle.h"
#include "testutil/testutil.h"

namespace clickatron::rebuild {
namespace {

using clickatron::testing::TempDir;
using clickatron::testing::ReadAll;

// Sums per key and column of one-column archive lines, as sorted lines.
std::string SumOracle(const std::vector<std::string>& archive_lines) {
  ColumnTable sums;
  for (const std::string& line : archive_lines) {
    const size_t comma = line.find(',');
    const std::string column = line.substr(comma + 1);
    const size_t colon = column.rfind(':');
    sums[line.substr(0, comma)][column.substr(0, colon)] += std::stoll(column.substr(colon + 1));
  }
  std::vector<std::string> out = ArchiveLines(sums);
  std::sort(out.begin(), out.end());
  std::string text;
  for (const std::string& line : out) text += line + "\n";
  return text;
}

struct Input {
  std::string text;
  std::vector<std::string> converted;  // by the core, good lines only
  std::string rejects;                 // expected reject file
};

// Realtime lines over a small key space (keys repeat), a few damaged, some blank.
Input MakeInput(const std::string& path, size_t n, uint32_t seed) {
  std::mt19937 rng(seed);
  const char* b32 = "0123456789abcdefghijklmnopqrstuv";
  Input input;
  for (size_t i = 1; i <= n; ++i) {
    std::string line;
    const std::string tkey = "k" + std::to_string(rng() % 700);
    const std::string hour = std::string("c41") + b32[rng() % 24];
    const std::string count = std::to_string(1 + rng() % 50);
    switch (rng() % 50) {
      case 0: line = "u|" + tkey + "." + hour + ",notanumber"; break;
      case 1: line = "u|" + tkey + ".c4zz," + count; break;
      case 2: line = ""; break;
      default:
        line = rng() % 2 == 0 ? "u|" + tkey + "." + hour + "," + count
                              : "c.u|" + tkey + ".S" + std::to_string(rng() % 9) + "." + hour + "," + count;
    }
    input.text += line + "\n";
    if (line.empty()) continue;
    Result<std::string> core = RealtimeToArchiveLine(line);
    if (core.ok()) {
      input.converted.push_back(*core);
    } else {
      input.rejects += path + ":" + std::to_string(i) + ": " + core.status().message() + "\n";
    }
  }
  return input;
}

struct Outcome {
  std::string sorted;
  std::string rejects;
  SortInputsResult result;
};

Outcome Sort(const TempDir& tmp, const std::string& input, int threads, uint64_t memory_bytes, const std::string& name) {
  SortInputsOptions options;
  options.inputs = {input};
  options.output = tmp / (name + ".csv");
  options.rejects_path = tmp / (name + ".rejects");
  options.temp_dir = tmp / (name + "-runs");
  options.memory_bytes = memory_bytes;
  options.threads = threads;
  options.max_bad_line_ratio = 0.5;
  Result<SortInputsResult> result = SortInputs(options);
  EXPECT_TRUE(result.ok()) << result.status().ToString();
  if (!result.ok()) return {};
  // No bad line: no reject file.
  return {ReadAll(options.output), FileExists(options.rejects_path) ? ReadAll(options.rejects_path) : "", *result};
}

TEST(SortInputs, SameOutputAndRejectsWhateverTheThreadsAndMemory) {
  Progress::SetQuiet(true);
  TempDir tmp;
  const std::string path = tmp / "export.csv";
  const Input input = MakeInput(path, 150000, 11);
  std::ofstream(path, std::ios::binary) << input.text;
  const std::string expected = SumOracle(input.converted);
  ASSERT_FALSE(input.rejects.empty());
  int case_number = 0;
  for (const int threads : {1, 2, 3}) {
    for (const uint64_t memory : {uint64_t{96} << 10, uint64_t{64} << 20}) {
      SCOPED_TRACE(::testing::Message() << "threads " << threads << " memory " << memory);
      const Outcome out = Sort(tmp, path, threads, memory, "case" + std::to_string(case_number++));
      EXPECT_EQ(out.sorted, expected);
      EXPECT_EQ(out.rejects, input.rejects) << "bad lines keep FILE:LINE and file order";
      EXPECT_EQ(out.result.bad_lines + input.converted.size(), out.result.lines);
      if (memory < (1u << 20)) {
        EXPECT_GT(out.result.runs, 0u) << "a tiny bound spills";
      } else {
        EXPECT_EQ(out.result.runs, 0u) << "everything fits in memory";
      }
    }
  }
  Progress::SetQuiet(false);
}

// A file that starts with a UTF-8 byte order mark (as spreadsheets write
// CSV): its first line is read without it, not refused as a namespace
// starting with three invisible bytes. A mark anywhere else is the line's.
TEST(SortInputs, AByteOrderMarkBeforeTheFirstLineIsNotPartOfIt) {
  Progress::SetQuiet(true);
  TempDir tmp;
  const std::string path = tmp / "excel.csv";
  std::ofstream(path, std::ios::binary) << "\xEF\xBB\xBFu|k1.c41a,5\nu|k1.c41b,2\n\xEF\xBB\xBFu|k2.c41a,1\n";
  const Outcome out = Sort(tmp, path, 2, uint64_t{64} << 20, "bom");
  EXPECT_EQ(out.sorted, SumOracle({*RealtimeToArchiveLine("u|k1.c41a,5"), *RealtimeToArchiveLine("u|k1.c41b,2")}));
  EXPECT_EQ(out.result.lines, 3u);
  EXPECT_EQ(out.result.bad_lines, 1u);
  EXPECT_NE(out.rejects.find(path + ":3: "), std::string::npos) << out.rejects;
  Progress::SetQuiet(false);
}

TEST(ExternalSortProducers, ThreadsAddingAtOnceStayWithinTheBound) {
  TempDir tmp;
  const uint64_t bound = 128u << 10;
  auto sorter = ExternalSorter::Create(
      {.temp_dir = tmp / "runs", .memory_bytes = bound, .threads = 2, .producers = 2});
  ASSERT_TRUE(sorter.ok());
  EXPECT_LE((*sorter)->chunk_bytes() * 2, bound) << "one chunk per producer, within the bound";
  std::vector<std::vector<std::string>> parts(2);
  std::vector<std::string> all;
  std::mt19937 rng(5);
  for (int i = 0; i < 20000; ++i) {
    const std::string line = "u|k" + std::to_string(rng() % 900) + ",c41" + std::to_string(rng() % 10) + ":" +
                             std::to_string(1 + rng() % 9);
    parts[i % 2].push_back(line);
    all.push_back(line);
  }
  std::vector<std::thread> threads;
  for (int p = 0; p < 2; ++p) {
    threads.emplace_back([&, p] {
      for (const std::string& line : parts[p]) ASSERT_TRUE((*sorter)->producer(p)->Add(line).ok());
    });
  }
  for (auto& t : threads) t.join();
  VectorLineSink out;
  ASSERT_TRUE((*sorter)->Finish(&out).ok());
  std::string text;
  for (const std::string& line : out.lines) text += line + "\n";
  EXPECT_EQ(text, SumOracle(all));
  EXPECT_GT((*sorter)->stats().runs, 2u);
  EXPECT_EQ((*sorter)->stats().lines_in, all.size());
}

}  // namespace
}  // namespace clickatron::rebuild
