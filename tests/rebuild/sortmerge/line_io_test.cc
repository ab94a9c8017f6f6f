// CountNewlines and LineWriter's running crc32 (checksummed in pieces as the
// buffer fills) against plain recomputation; AppendFile keeps order and counts;
// LineReader takes gzip by content and never ends a damaged one quietly.
#include "sortmerge/line_io.h"

#include <gtest/gtest.h>
#include <zlib.h>

#include <algorithm>
#include <random>
#include <string>

#include "clickatron/file_util.h"
#include "clickatron/shard.h"
#include "testutil/testutil.h"

namespace clickatron::rebuild {
namespace {

using clickatron::testing::TempDir;

TEST(CountNewlines, EqualsStdCount) {
  std::mt19937 rng(3);
  std::string text(20000, 'x');
  for (char& c : text) c = rng() % 4 == 0 ? '\n' : static_cast<char>(rng());
  for (int round = 0; round < 2000; ++round) {
    const size_t offset = rng() % 32;
    const size_t length = rng() % (text.size() - offset);
    const std::string_view span(text.data() + offset, length);
    ASSERT_EQ(CountNewlines(span), static_cast<uint64_t>(std::count(span.begin(), span.end(), '\n')))
        << "round " << round;
  }
  EXPECT_EQ(CountNewlines(std::string(10000, '\n')), 10000u);  // more than 255 blocks of matches
}

// Lines of a gzip file written by zlib's gzFile API (as gzip(1) would).
std::string WriteGzipLines(const std::string& path, int lines) {
  std::string text;
  for (int i = 0; i < lines; ++i) {
    text += "u|key" + std::to_string(i * 7919 % 100003) + ",c3p1," + std::to_string(i) + "\n";
  }
  gzFile gz = gzopen(path.c_str(), "wb");
  EXPECT_NE(gz, nullptr);
  EXPECT_EQ(gzwrite(gz, text.data(), static_cast<unsigned>(text.size())), static_cast<int>(text.size()));
  EXPECT_EQ(gzclose(gz), Z_OK);
  return text;
}

TEST(LineReader, ReadsGzipByContent) {
  TempDir dir;
  const std::string path = dir.path() + "/history.csv";  // no .gz: the magic bytes decide
  const std::string text = WriteGzipLines(path, 50000);
  auto reader = LineReader::Open(path, {.buffer_bytes = 4096, .compute_crc = true});
  ASSERT_TRUE(reader.ok()) << reader.status().ToString();
  EXPECT_TRUE((*reader)->gzip());
  std::string back;
  std::string_view line;
  while ((*reader)->Next(&line)) back.append(line).append("\n");
  ASSERT_TRUE((*reader)->status().ok()) << (*reader)->status().ToString();
  EXPECT_EQ(back, text);
  EXPECT_EQ((*reader)->line_number(), 50000u);
  EXPECT_EQ((*reader)->crc32(), Crc32Extend(0, text));
  EXPECT_EQ((*reader)->bytes_read(), (*reader)->file_bytes());  // compressed bytes: all of them
}

// zlib's gzread ends a cut-off stream as if it were whole; a bulk load of a
// half-copied history.csv.gz must fail, not load half.
TEST(LineReader, TruncatedGzipIsCorruptionNotAnEarlyEnd) {
  TempDir dir;
  const std::string path = dir.path() + "/history.csv.gz";
  WriteGzipLines(path, 50000);
  auto whole = ReadFileToString(path);
  ASSERT_TRUE(whole.ok());
  ASSERT_TRUE(WriteFileAtomically(path, whole->substr(0, whole->size() * 2 / 3)).ok());
  auto reader = LineReader::Open(path);
  ASSERT_TRUE(reader.ok()) << reader.status().ToString();
  std::string_view line;
  uint64_t lines = 0;
  while ((*reader)->Next(&line)) ++lines;
  EXPECT_EQ((*reader)->status().code(), StatusCode::kCorruption) << (*reader)->status().ToString();
  EXPECT_LT(lines, 50000u);
}

TEST(LineWriter, RunningCrcEqualsTheFilesCrc) {
  TempDir dir;
  const std::string path = dir.path() + "/out.csv";
  // A small buffer, lines, raw spans and spans bigger than the buffer: the
  // crc is taken in pieces on every path.
  auto writer = LineWriter::Create(path, {.buffer_bytes = 64u << 10, .fsync = false, .compute_crc = true});
  ASSERT_TRUE(writer.ok()) << writer.status().ToString();
  std::mt19937 rng(5);
  for (int i = 0; i < 20000; ++i) {
    const int kind = static_cast<int>(rng() % 10);
    if (kind < 7) {
      ASSERT_TRUE((*writer)->Put(std::string(rng() % 60, static_cast<char>('a' + rng() % 26))).ok());
    } else {
      std::string span(kind == 9 ? 70000 + rng() % 1000 : rng() % 3000, 'q');
      span.back() = '\n';
      ASSERT_TRUE((*writer)->PutLines(span, 1).ok());
    }
  }
  ASSERT_TRUE((*writer)->Finish().ok());
  auto text = ReadFileToString(path);
  ASSERT_TRUE(text.ok());
  EXPECT_EQ((*writer)->bytes(), text->size());
  EXPECT_EQ((*writer)->crc32(), Crc32Extend(0, *text));
}

TEST(LineWriter, AppendFileKeepsOrderLinesAndCrc) {
  TempDir dir;
  const std::string part = dir.path() + "/part.csv";
  std::string part_text;
  for (int i = 0; i < 5000; ++i) part_text += "u|k" + std::to_string(i) + ",c41l:1\n";
  ASSERT_TRUE(WriteFileAtomically(part, part_text).ok());
  // In the kernel (no crc) and through the buffer (crc kept).
  for (const bool crc : {false, true}) {
    SCOPED_TRACE(crc ? "with crc" : "copy_file_range");
    const std::string path = dir.path() + (crc ? "/crc.csv" : "/plain.csv");
    auto writer = LineWriter::Create(path, {.buffer_bytes = 4096, .fsync = false, .compute_crc = crc});
    ASSERT_TRUE(writer.ok());
    ASSERT_TRUE((*writer)->Put("first").ok());  // still buffered: must land before the file
    ASSERT_TRUE((*writer)->AppendFile(part, 5000).ok());
    ASSERT_TRUE((*writer)->Put("last").ok());
    ASSERT_TRUE((*writer)->Finish().ok());
    auto text = ReadFileToString(path);
    ASSERT_TRUE(text.ok());
    EXPECT_EQ(*text, "first\n" + part_text + "last\n");
    EXPECT_EQ((*writer)->lines(), 5002u);
    EXPECT_EQ((*writer)->bytes(), text->size());
    if (crc) {
      EXPECT_EQ((*writer)->crc32(), Crc32Extend(0, *text));
    }
  }
  auto writer = LineWriter::Create(dir.path() + "/missing.csv", {.fsync = false});
  ASSERT_TRUE(writer.ok());
  EXPECT_FALSE((*writer)->AppendFile(dir.path() + "/no-such-part.csv", 1).ok());
}

}  // namespace
}  // namespace clickatron::rebuild
