// The external sort's final merge split by key range across threads
// (range_merge.h): same bytes as the reference with keys in every run (so
// the pivot keys sit in several runs and in the last chunk), a dominant key,
// both ways of adding lines; the run index finds exact offsets; a run that
// breaks in either range, or cannot be read, fails the sort and leaves no
// temp files. Expected output is the test's own (sort_oracle.h).
#include <gtest/gtest.h>

#include <algorithm>
#include <filesystem>
#include <functional>
#include <random>
#include <sstream>
#include <thread>

#include "clickatron/record.h"
#include "sortmerge/external_sort.h"
#include "testutil/sort_oracle.h"
#include "sortmerge/sorted_run.h"
#include "testutil/testutil.h"

namespace clickatron::rebuild {
namespace {

using clickatron::testing::ReadAll;
using clickatron::testing::TempDir;
using clickatron::testing::WriteAll;
namespace fs = std::filesystem;

// 1 MiB: chunks of 256 KiB (Add) or 384 KiB (2 producers), and room for
// ~10 runs in the final merge, which is forced to split however small the
// input.
constexpr uint64_t kBound = 1u << 20;

// Totals and subtotals over `key_space` keys, and `hot_share` percent of
// the lines on one key ("u|hot"), in random order.
std::vector<std::string> Lines(size_t n, uint32_t seed, size_t key_space, unsigned hot_share) {
  std::mt19937 rng(seed);
  const char* b32 = "0123456789abcdefghijklmnopqrstuv";
  std::vector<std::string> lines;
  for (size_t i = 0; i < n; ++i) {
    const std::string hour = std::string("c4") + b32[1 + rng() % 28] + b32[rng() % 24];
    const std::string count = std::to_string(1 + rng() % 9);
    if (rng() % 100 < hot_share) {
      lines.push_back("u|hot," + hour + ":" + count);
      continue;
    }
    const std::string tkey = "k" + std::to_string(rng() % key_space);
    if (rng() % 2 == 0) {
      lines.push_back("u|" + tkey + "," + hour + ":" + count);
    } else {
      lines.push_back("c.u|" + tkey + "." + hour + ",S" + std::to_string(rng() % 20) + ":" + count);
    }
  }
  return lines;
}

struct SortResult {
  Status status;
  std::vector<std::string> lines;
  ExternalSortStats stats;
};

ExternalSortOptions Options(const std::string& temp_dir, int threads, int producers) {
  return {.temp_dir = temp_dir,
          .memory_bytes = kBound,
          .threads = threads,
          .producers = producers,
          .parallel_merge_min_bytes = 0};
}

// Sorts `input` through Add(), or split between `producers` threads, into
// `sink` (by default result.lines). `before_finish` runs once every line is
// in (runs exist on disk).
SortResult Sort(const std::vector<std::string>& input, const ExternalSortOptions& options,
                const std::function<void()>& before_finish = {}, LineSink* sink = nullptr) {
  SortResult result;
  auto sorter = ExternalSorter::Create(options);
  if (!sorter.ok()) return {sorter.status(), {}, {}};
  if (options.producers == 0) {
    for (const std::string& line : input) {
      if (Status st = (*sorter)->Add(line); !st.ok()) return {st, {}, {}};
    }
  } else {
    std::vector<Status> added(static_cast<size_t>(options.producers));
    std::vector<std::thread> threads;
    for (int p = 0; p < options.producers; ++p) {
      threads.emplace_back([&, p] {
        for (size_t i = static_cast<size_t>(p); i < input.size(); i += static_cast<size_t>(options.producers)) {
          added[static_cast<size_t>(p)] = (*sorter)->producer(p)->Add(input[i]);
          if (!added[static_cast<size_t>(p)].ok()) return;
        }
      });
    }
    for (auto& t : threads) t.join();
    for (const Status& st : added) {
      if (!st.ok()) return {st, {}, {}};
    }
  }
  if (before_finish) before_finish();
  VectorLineSink out;
  result.status = (*sorter)->Finish(sink != nullptr ? sink : &out);
  result.lines = std::move(out.lines);
  result.stats = (*sorter)->stats();
  return result;
}

std::vector<fs::path> Files(const fs::path& dir) {
  std::vector<fs::path> files;
  if (!fs::exists(dir)) return files;
  for (const auto& entry : fs::directory_iterator(dir)) files.push_back(entry.path());
  std::sort(files.begin(), files.end());
  return files;
}

// Swaps two neighbouring lines of a run (same bytes, so its index still
// holds): `from_end` false swaps the first two, true the last two. The run
// is then out of order in the range that holds them.
void SwapTwoLines(const fs::path& run, bool from_end) {
  const std::string bytes = ReadAll(run);
  std::vector<std::string> lines;
  std::stringstream ss(bytes);
  for (std::string line; std::getline(ss, line);) lines.push_back(line);
  ASSERT_GE(lines.size(), 4u);
  const size_t i = from_end ? lines.size() - 2 : 0;
  std::swap(lines[i], lines[i + 1]);
  std::string joined;
  for (const std::string& line : lines) joined += line + "\n";
  ASSERT_EQ(joined.size(), bytes.size());
  WriteAll(run, joined);
}

TEST(ParallelMerge, AddModeMatchesTheReferenceWithKeysInEveryRun) {
  TempDir tmp;
  // 300 keys in ~8 runs: every key, so every pivot, is in every run and
  // in the last chunk, and is combined across the cut.
  const auto input = Lines(60000, 11, 300, 5);
  const SortResult r = Sort(input, Options(tmp / "runs", 2, 0));
  ASSERT_TRUE(r.status.ok()) << r.status.ToString();
  EXPECT_EQ(r.lines, Oracle(input));
  EXPECT_GE(r.stats.runs, 5u);
  EXPECT_EQ(r.stats.merge_passes, 0u);
  EXPECT_EQ(r.stats.final_merge_ranges, 2u);
  EXPECT_EQ(r.stats.lines_out, r.lines.size());
  EXPECT_TRUE(Files(tmp / "runs").empty());
}

TEST(ParallelMerge, ProducersMatchTheReferenceAndOneThread) {
  TempDir tmp;
  const auto input = Lines(80000, 12, 5000, 20);
  const auto expected = Oracle(input);
  const SortResult two = Sort(input, Options(tmp / "two", 2, 2));
  ASSERT_TRUE(two.status.ok()) << two.status.ToString();
  EXPECT_EQ(two.lines, expected);
  EXPECT_GE(two.stats.runs, 3u);
  EXPECT_EQ(two.stats.final_merge_ranges, 2u);
  EXPECT_EQ(two.stats.lines_out, expected.size());
  const SortResult one = Sort(input, Options(tmp / "one", 1, 1));
  ASSERT_TRUE(one.status.ok()) << one.status.ToString();
  EXPECT_EQ(one.lines, expected);
  EXPECT_EQ(one.stats.final_merge_ranges, 1u);
}

// A file writer gets the later ranges copied whole (copy_file_range): the
// file and its line count are still the reference's.
TEST(ParallelMerge, IntoAFileWriter) {
  TempDir tmp;
  const auto input = Lines(60000, 18, 4000, 5);
  const std::string path = tmp / "sorted.csv";
  auto writer = LineWriter::Create(path, {.buffer_bytes = 64u << 10, .fsync = false});
  ASSERT_TRUE(writer.ok());
  const SortResult r = Sort(input, Options(tmp / "runs", 2, 2), {}, writer->get());
  ASSERT_TRUE(r.status.ok()) << r.status.ToString();
  ASSERT_TRUE((*writer)->Finish().ok());
  EXPECT_EQ(r.stats.final_merge_ranges, 2u);
  const auto expected = Oracle(input);
  std::string expected_text;
  for (const std::string& line : expected) expected_text += line + "\n";
  EXPECT_EQ(ReadAll(path), expected_text);
  EXPECT_EQ((*writer)->lines(), expected.size());
  EXPECT_EQ(r.stats.lines_out, expected.size());
}

TEST(ParallelMerge, ManyPassesThenAFinalSplitIntoThreeRanges) {
  TempDir tmp;
  const auto input = Lines(80000, 13, 2000, 0);
  ExternalSortOptions options = Options(tmp / "runs", 3, 0);
  options.max_fan_in = 3;
  const SortResult r = Sort(input, options);
  ASSERT_TRUE(r.status.ok()) << r.status.ToString();
  EXPECT_EQ(r.lines, Oracle(input));
  EXPECT_GT(r.stats.merge_passes, 0u);
  EXPECT_EQ(r.stats.final_merge_ranges, 3u);
}

TEST(ParallelMerge, ADominantKeyFallsBackToOneThread) {
  TempDir tmp;
  // One subtotal key with thousands of distinct skeys: a line of tens of KB
  // in every run, most of the bytes, which no pivot can split.
  std::vector<std::string> input = Lines(1000, 14, 50, 0);
  for (int i = 0; i < 12000; ++i) input.push_back("c.u|hot.c41l,S" + std::to_string(i % 3000) + ":1");
  std::shuffle(input.begin(), input.end(), std::mt19937(14));
  const SortResult r = Sort(input, Options(tmp / "runs", 2, 0));
  ASSERT_TRUE(r.status.ok()) << r.status.ToString();
  EXPECT_EQ(r.lines, Oracle(input));
  EXPECT_EQ(r.stats.final_merge_ranges, 1u);
}

TEST(ParallelMerge, SmallInputsStayOnOneThread) {
  TempDir tmp;
  const auto input = Lines(40000, 15, 300, 5);
  ExternalSortOptions options = Options(tmp / "runs", 2, 0);
  options.parallel_merge_min_bytes = 64u << 20;
  const SortResult r = Sort(input, options);
  ASSERT_TRUE(r.status.ok()) << r.status.ToString();
  EXPECT_EQ(r.lines, Oracle(input));
  EXPECT_EQ(r.stats.final_merge_ranges, 1u);
}

TEST(ParallelMerge, RunIndexFindsTheExactStartOfEveryKey) {
  TempDir tmp;
  // Keys of one length, two apart, so "one below" is between two of them.
  const auto key_of = [](int n) { return "u|k" + std::to_string(100000 + n); };
  std::vector<std::string> lines;
  for (int i = 0; i < 2000; ++i) lines.push_back(key_of(2 + i * 2) + ",c41l:" + std::to_string(i));
  const std::string path = tmp / "run.csv";
  RunFile run;
  {
    auto writer = LineWriter::Create(path, {.fsync = false});
    ASSERT_TRUE(writer.ok());
    RunIndexSink sink(writer->get(), 1000, &run);
    for (const std::string& line : lines) ASSERT_TRUE(sink.Put(line).ok());
    ASSERT_TRUE((*writer)->Finish().ok());
  }
  EXPECT_EQ(run.bytes, fs::file_size(path));
  EXPECT_GT(run.marks.size(), 20u);
  const RunInput input(&run);
  uint64_t offset = 0;
  for (int i = 0; i < 2000; ++i) {
    // The key itself, and a key just below it (between two of the run's).
    const std::string key = key_of(2 + i * 2);
    const std::string below = key_of(1 + i * 2);
    auto at = input.Find(key);
    auto at_below = input.Find(below);
    ASSERT_TRUE(at.ok() && at_below.ok());
    EXPECT_EQ(*at, offset) << key;
    EXPECT_EQ(*at_below, offset) << below;
    offset += lines[static_cast<size_t>(i)].size() + 1;
  }
  EXPECT_EQ(*input.Find("u|z"), run.bytes);
  EXPECT_EQ(*input.Find("a"), 0u);
  // The range from a key on reads exactly the lines from that key on.
  auto from = input.Find(key_of(2 + 1000 * 2));
  ASSERT_TRUE(from.ok());
  auto source = input.Open(*from, run.bytes, 4096);
  ASSERT_TRUE(source.ok());
  std::string_view line;
  size_t i = 1000;
  while ((*source)->Next(&line)) EXPECT_EQ(line, lines[i++]);
  EXPECT_EQ(i, lines.size());
}

// A run that breaks in the range merged by the helper thread (its last
// lines), or by the calling thread (its first lines): the sort fails with
// that run's error, not the other range's stop, and leaves no files.
TEST(ParallelMerge, ABrokenRunInEitherRangeFailsAndLeavesNoTempFiles) {
  for (const bool from_end : {true, false}) {
    SCOPED_TRACE(from_end ? "range 1 breaks" : "range 0 breaks");
    TempDir tmp;
    const auto input = Lines(40000, 16, 3000, 0);
    const fs::path runs = tmp / "runs";
    const SortResult r = Sort(input, Options(runs, 2, 2), [&] {
      const auto files = Files(runs);
      ASSERT_FALSE(files.empty());
      SwapTwoLines(files.front(), from_end);
    });
    ASSERT_FALSE(r.status.ok());
    EXPECT_EQ(r.stats.merge_passes, 0u);
    EXPECT_EQ(r.stats.final_merge_ranges, 2u);  // it failed in the split merge
    EXPECT_NE(r.status.ToString().find("not sorted"), std::string::npos) << r.status.ToString();
    EXPECT_NE(r.status.ToString().find("run-000000"), std::string::npos) << r.status.ToString();
    EXPECT_TRUE(Files(runs).empty());  // the sorter is gone: runs and range files removed
  }
}

TEST(ParallelMerge, ARunThatCannotBeReadFailsAndLeavesNoTempFiles) {
  TempDir tmp;
  const auto input = Lines(40000, 17, 3000, 0);
  const fs::path runs = tmp / "runs";
  fs::path broken;
  const SortResult r = Sort(input, Options(runs, 2, 2), [&] {
    const auto files = Files(runs);
    ASSERT_FALSE(files.empty());
    // A directory where the run was: it opens, but every read fails.
    broken = files.back();
    fs::remove(broken);
    fs::create_directory(broken);
  });
  ASSERT_FALSE(r.status.ok());
  EXPECT_EQ(r.status.code(), StatusCode::kIoError) << r.status.ToString();
  fs::remove(broken);
  EXPECT_TRUE(Files(runs).empty());
}

}  // namespace
}  // namespace clickatron::rebuild
