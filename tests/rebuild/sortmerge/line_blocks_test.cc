// LineBlockReader: blocks read by several threads at once hold every line of
// the file exactly once, each with its own line number, for plain and gzip
// files, lines longer than a block, blank lines and a missing last newline.
#include "sortmerge/line_blocks.h"

#include <gtest/gtest.h>
#include <zlib.h>

#include <fstream>
#include <iterator>
#include <map>
#include <mutex>
#include <random>
#include <thread>

#include "testutil/testutil.h"

namespace clickatron::rebuild {
namespace {

using clickatron::testing::TempDir;

std::string RandomText(uint32_t seed, size_t lines, bool final_newline) {
  std::mt19937 rng(seed);
  std::string text;
  for (size_t i = 0; i < lines; ++i) {
    const size_t length = rng() % 50 == 0 ? 9000 + rng() % 3000 : rng() % 40;  // some longer than a block
    for (size_t j = 0; j < length; ++j) text += static_cast<char>('a' + rng() % 26);
    if (i + 1 < lines || final_newline) text += '\n';
  }
  return text;
}

// The file's lines as LineReader numbers them (1-based).
std::map<uint64_t, std::string> ExpectedLines(const std::string& text) {
  std::map<uint64_t, std::string> lines;
  size_t start = 0;
  uint64_t number = 1;
  while (start < text.size()) {
    size_t nl = text.find('\n', start);
    if (nl == std::string::npos) nl = text.size();
    lines[number++] = text.substr(start, nl - start);
    start = nl + 1;
  }
  return lines;
}

std::map<uint64_t, std::string> ReadWithThreads(const std::string& path, int threads) {
  auto reader = LineBlockReader::Open(path, 4096);
  EXPECT_TRUE(reader.ok()) << reader.status().ToString();
  if (!reader.ok()) return {};
  std::mutex mutex;
  std::map<uint64_t, std::string> lines;
  std::vector<uint64_t> seqs;
  std::vector<std::thread> workers;
  for (int t = 0; t < threads; ++t) {
    workers.emplace_back([&] {
      LineBlockReader::Block block;
      while ((*reader)->Next(&block)) {
        std::lock_guard<std::mutex> lock(mutex);
        seqs.push_back(block.seq);
        ForEachBlockLine(block, [&](std::string_view line, uint64_t number) {
          EXPECT_TRUE(lines.emplace(number, std::string(line)).second) << "line " << number << " twice";
        });
      }
    });
  }
  for (auto& w : workers) w.join();
  EXPECT_TRUE((*reader)->status().ok()) << (*reader)->status().ToString();
  std::sort(seqs.begin(), seqs.end());
  for (size_t i = 0; i < seqs.size(); ++i) EXPECT_EQ(seqs[i], i);
  return lines;
}

TEST(LineBlockReader, EveryLineOnceWithItsNumberFromSeveralThreads) {
  TempDir tmp;
  for (const bool final_newline : {true, false}) {
    const std::string text = RandomText(final_newline ? 1 : 2, 3000, final_newline);
    const std::string path = tmp / "lines.csv";
    std::ofstream(path, std::ios::binary) << text;
    const auto expected = ExpectedLines(text);
    ASSERT_GT(expected.size(), 2900u);
    EXPECT_EQ(ReadWithThreads(path, 1), expected);
    EXPECT_EQ(ReadWithThreads(path, 3), expected);
  }
}

TEST(LineBlockReader, GzipFilesGiveTheSameLines) {
  TempDir tmp;
  const std::string text = RandomText(3, 2000, true);
  const std::string path = tmp / "lines.csv.gz";
  gzFile gz = gzopen(path.c_str(), "wb");
  ASSERT_NE(gz, nullptr);
  ASSERT_EQ(gzwrite(gz, text.data(), static_cast<unsigned>(text.size())), static_cast<int>(text.size()));
  ASSERT_EQ(gzclose(gz), Z_OK);
  EXPECT_EQ(ReadWithThreads(path, 2), ExpectedLines(text));
}

TEST(LineBlockReader, TruncatedGzipFileIsAnError) {
  TempDir tmp;
  const std::string text = RandomText(4, 3000, true);
  const std::string path = tmp / "lines.csv.gz";
  gzFile gz = gzopen(path.c_str(), "wb");
  ASSERT_NE(gz, nullptr);
  ASSERT_EQ(gzwrite(gz, text.data(), static_cast<unsigned>(text.size())), static_cast<int>(text.size()));
  ASSERT_EQ(gzclose(gz), Z_OK);
  std::ifstream in(path, std::ios::binary);
  const std::string whole((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  std::ofstream(path, std::ios::binary | std::ios::trunc) << whole.substr(0, whole.size() - 10);
  auto reader = LineBlockReader::Open(path, 4096);
  ASSERT_TRUE(reader.ok()) << reader.status().ToString();
  LineBlockReader::Block block;
  while ((*reader)->Next(&block)) {
  }
  EXPECT_EQ((*reader)->status().code(), StatusCode::kCorruption) << (*reader)->status().ToString();
}

TEST(LineBlockReader, EmptyFileAndMissingFile) {
  TempDir tmp;
  std::ofstream(tmp / "empty.csv").close();
  EXPECT_TRUE(ReadWithThreads(tmp / "empty.csv", 2).empty());
  EXPECT_FALSE(LineBlockReader::Open(tmp / "missing.csv", 4096).ok());
}

}  // namespace
}  // namespace clickatron::rebuild
