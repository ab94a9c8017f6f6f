// MappedFileLines: the lines of a file mapping, checksummed as they pass, with
// the pages behind the reader handed back (a whole-archive read keeps its
// resident set bounded).
#include "mapped_file_lines.h"

#include <gtest/gtest.h>

#include <fstream>
#include <string>
#include <vector>

#include <fmt/format.h>

#include "clickatron/file_util.h"
#include "clickatron/shard.h"
#include "testutil/testutil.h"

namespace clickatron::rebuild::mapped_file_lines_test {
namespace {

TEST(MappedFileLinesTest, GivesEveryLineAndTheCrcOfEveryByteWithoutKeepingTheFileResident) {
  testing::TempDir dir;
  const std::string path = dir / "archive.csv";
  std::string text;
  for (int i = 0; text.size() < (48u << 20); ++i) text += fmt::format("u|key{:08d},c3p1:{}\n", i, i % 977);
  text += "last,line without a newline";
  ASSERT_TRUE(WriteFileAtomically(path, text).ok());
  auto mapped = MappedFile::Open(path);
  ASSERT_TRUE(mapped.ok()) << mapped.status().ToString();

  const int64_t before = testing::ProcStatusKb(0, "RssFile");
  ASSERT_GE(before, 0);
  MappedFileLines lines((*mapped)->data(), path);
  std::string_view line;
  size_t count = 0, at = 0;
  bool same = true;
  int64_t peak = 0;
  while (lines.Next(&line)) {
    const size_t end = std::min(text.find('\n', at), text.size());
    same = same && line == std::string_view(text).substr(at, end - at);
    at = end + 1;
    if (++count % 100000 == 0) peak = std::max(peak, testing::ProcStatusKb(0, "RssFile") - before);
  }
  EXPECT_TRUE(same);
  EXPECT_EQ(at, text.size() + 1);
  EXPECT_EQ(lines.crc32(), Crc32(text));
  // 48 MiB read; some 12 MiB behind the reader stay mapped in (read whole
  // without handing pages back, some 30 MiB of it were resident here).
  EXPECT_LT(peak, 22 * 1024) << "kB of the file resident while reading it";
  EXPECT_GT(peak, 1024) << "kB of the file resident while reading it";  // it was read
}

// A directory given where a file is wanted (`clickatron manifest DIR`) is
// named as such, not reported as mmap's "No such device".
TEST(MappedFileTest, ADirectoryIsNotAFile) {
  testing::TempDir dir;
  auto mapped = MappedFile::Open(dir.path());
  ASSERT_FALSE(mapped.ok());
  EXPECT_EQ(mapped.status().reason(), "NOT_A_FILE");
  EXPECT_NE(mapped.status().message().find("is not a regular file"), std::string::npos) << mapped.status().ToString();
}

}  // namespace
}  // namespace clickatron::rebuild::mapped_file_lines_test
