// Framed log files: round trip, torn tails cut, corruption reported (never
// skipped), gzip-compressed files read the same way.
#include "clickatron/framed_log.h"

#include <gtest/gtest.h>
#include <sys/stat.h>
#include <unistd.h>
#include <zlib.h>

#include <fstream>
#include <sstream>
#include <string>
#include <vector>

#include "testutil/testutil.h"

namespace clickatron {
namespace {

using testing::TempDir;
using testing::ReadAll;
using testing::WriteAll;

// Builds a frame by hand from the format in framed_log.h (independent of the writer).
std::string Frame(const std::string& payload) {
  std::string out;
  auto put = [&](uint32_t v) {
    for (int i = 0; i < 4; ++i) out.push_back(static_cast<char>((v >> (8 * i)) & 0xff));
  };
  put(0x4C4F4B43);
  put(static_cast<uint32_t>(payload.size()));
  put(static_cast<uint32_t>(crc32(0, reinterpret_cast<const Bytef*>(payload.data()), payload.size())));
  return out + payload;
}

struct ReadResult {
  std::vector<std::string> payloads;
  Status error;
  bool truncated = false;
  uint64_t good_bytes = 0;
};

ReadResult ReadFile(const std::string& path) {
  ReadResult r;
  auto reader = FramedLogReader::Open(path);
  if (!reader.ok()) {
    r.error = reader.status();
    return r;
  }
  while (true) {
    auto next = (*reader)->Next();
    if (!next.ok()) {
      r.error = next.status();
      break;
    }
    if (!next->has_value()) break;
    r.payloads.push_back(**next);
  }
  r.truncated = (*reader)->truncated_tail();
  r.good_bytes = (*reader)->good_bytes();
  return r;
}

void Gzip(const std::string& from, const std::string& to) {
  std::string data = ReadAll(from);
  gzFile gz = gzopen(to.c_str(), "wb");
  ASSERT_NE(gz, nullptr);
  ASSERT_EQ(gzwrite(gz, data.data(), static_cast<unsigned>(data.size())), static_cast<int>(data.size()));
  ASSERT_EQ(gzclose(gz), Z_OK);
}

TEST(FramedLogTest, WriterOutputMatchesTheDocumentedFrameFormat) {
  TempDir dir;
  std::string path = dir / "a.log";
  auto w = FramedLogWriter::Open(path);
  ASSERT_TRUE(w.ok()) << w.status().ToString();
  ASSERT_TRUE((*w)->Append("hello").ok());
  ASSERT_TRUE((*w)->Append("").ok());
  ASSERT_TRUE((*w)->Append("line one\nline two\n").ok());
  ASSERT_TRUE((*w)->Sync().ok());
  std::string expected = Frame("hello") + Frame("") + Frame("line one\nline two\n");
  EXPECT_EQ((*w)->size(), expected.size());
  ASSERT_TRUE((*w)->Close().ok());
  EXPECT_EQ(ReadAll(path), expected);

  ReadResult r = ReadFile(path);
  ASSERT_TRUE(r.error.ok()) << r.error.ToString();
  EXPECT_EQ(r.payloads, (std::vector<std::string>{"hello", "", "line one\nline two\n"}));
  EXPECT_FALSE(r.truncated);
  EXPECT_EQ(r.good_bytes, expected.size());
}

TEST(FramedLogTest, ReopenedWriterAppendsAfterExistingFrames) {
  TempDir dir;
  std::string path = dir / "a.log";
  {
    auto w = FramedLogWriter::Open(path);
    ASSERT_TRUE(w.ok());
    ASSERT_TRUE((*w)->Append("first").ok());
  }
  auto w = FramedLogWriter::Open(path);
  ASSERT_TRUE(w.ok());
  EXPECT_EQ((*w)->size(), Frame("first").size());
  ASSERT_TRUE((*w)->Append("second").ok());
  ASSERT_TRUE((*w)->Close().ok());
  EXPECT_EQ(ReadFile(path).payloads, (std::vector<std::string>{"first", "second"}));
}

// Every possible cut inside the last frame is a torn tail: the good frames are
// returned, truncated_tail() is true and good_bytes() marks where they end.
TEST(FramedLogTest, EveryCutInsideTheLastFrameIsATruncatedTail) {
  TempDir dir;
  std::string good = Frame("alpha") + Frame("beta");
  std::string last = Frame("gamma-payload");
  for (size_t cut = 1; cut < last.size(); ++cut) {
    std::string path = dir / ("cut" + std::to_string(cut) + ".log");
    WriteAll(path, good + last.substr(0, cut));
    ReadResult r = ReadFile(path);
    ASSERT_TRUE(r.error.ok()) << "cut " << cut << ": " << r.error.ToString();
    EXPECT_EQ(r.payloads, (std::vector<std::string>{"alpha", "beta"})) << "cut " << cut;
    EXPECT_TRUE(r.truncated) << "cut " << cut;
    EXPECT_EQ(r.good_bytes, good.size()) << "cut " << cut;
  }
}

TEST(FramedLogTest, WriterCutsATornTailBeforeAppending) {
  TempDir dir;
  std::string path = dir / "a.log";
  std::string good = Frame("alpha");
  WriteAll(path, good + Frame("torn").substr(0, 7));
  auto w = FramedLogWriter::Open(path);
  ASSERT_TRUE(w.ok()) << w.status().ToString();
  EXPECT_EQ((*w)->size(), good.size());
  ASSERT_TRUE((*w)->Append("after").ok());
  ASSERT_TRUE((*w)->Close().ok());
  EXPECT_EQ(ReadAll(path), good + Frame("after"));
  ReadResult r = ReadFile(path);
  EXPECT_TRUE(r.error.ok());
  EXPECT_FALSE(r.truncated);
  EXPECT_EQ(r.payloads, (std::vector<std::string>{"alpha", "after"}));
}

TEST(FramedLogTest, LastFrameWithBadChecksumIsATornTail) {
  TempDir dir;
  std::string path = dir / "a.log";
  std::string last = Frame("gamma");
  last.back() ^= 0x01;  // the payload's last byte never made it to disk
  WriteAll(path, Frame("alpha") + last);
  ReadResult r = ReadFile(path);
  ASSERT_TRUE(r.error.ok()) << r.error.ToString();
  EXPECT_EQ(r.payloads, (std::vector<std::string>{"alpha"}));
  EXPECT_TRUE(r.truncated);
}

TEST(FramedLogTest, ZeroFilledTailIsATornTail) {
  TempDir dir;
  std::string path = dir / "a.log";
  WriteAll(path, Frame("alpha") + std::string(100, '\0'));
  ReadResult r = ReadFile(path);
  ASSERT_TRUE(r.error.ok()) << r.error.ToString();
  EXPECT_EQ(r.payloads, (std::vector<std::string>{"alpha"}));
  EXPECT_TRUE(r.truncated);
  EXPECT_EQ(r.good_bytes, Frame("alpha").size());
}

TEST(FramedLogTest, BadChecksumInTheMiddleIsCorruptionNotSkipped) {
  TempDir dir;
  std::string path = dir / "a.log";
  std::string middle = Frame("beta");
  middle[kFrameHeaderBytes + 1] ^= 0x20;
  WriteAll(path, Frame("alpha") + middle + Frame("gamma"));
  ReadResult r = ReadFile(path);
  EXPECT_EQ(r.error.code(), StatusCode::kCorruption) << r.error.ToString();
  EXPECT_NE(r.error.message().find("offset " + std::to_string(Frame("alpha").size())), std::string::npos)
      << r.error.message();
  // "gamma" is never handed out: nothing after the damage is trusted.
  EXPECT_EQ(r.payloads, (std::vector<std::string>{"alpha"}));
}

TEST(FramedLogTest, GarbageHeaderInTheMiddleIsCorruption) {
  TempDir dir;
  std::string path = dir / "a.log";
  WriteAll(path, Frame("alpha") + std::string("not a frame header at all") + Frame("gamma"));
  ReadResult r = ReadFile(path);
  EXPECT_EQ(r.error.code(), StatusCode::kCorruption);
  EXPECT_EQ(r.payloads, (std::vector<std::string>{"alpha"}));
}

TEST(FramedLogTest, WriterRefusesToAppendToACorruptFile) {
  TempDir dir;
  std::string path = dir / "a.log";
  std::string middle = Frame("beta");
  middle[kFrameHeaderBytes] ^= 0x01;
  std::string contents = Frame("alpha") + middle + Frame("gamma");
  WriteAll(path, contents);
  auto w = FramedLogWriter::Open(path);
  ASSERT_FALSE(w.ok());
  EXPECT_EQ(w.status().code(), StatusCode::kCorruption);
  EXPECT_EQ(ReadAll(path), contents);  // untouched
}

TEST(FramedLogTest, ReadsGzipCompressedFiles) {
  TempDir dir;
  std::string plain = dir / "seg.log";
  std::vector<std::string> payloads;
  {
    auto w = FramedLogWriter::Open(plain);
    ASSERT_TRUE(w.ok());
    for (int i = 0; i < 500; ++i) {
      payloads.push_back("# record " + std::to_string(i) + "\n" + std::string(static_cast<size_t>(i % 97), 'x'));
      ASSERT_TRUE((*w)->Append(payloads.back()).ok());
    }
  }
  Gzip(plain, dir / "seg.log.gz");
  ReadResult r = ReadFile(dir / "seg.log.gz");
  ASSERT_TRUE(r.error.ok()) << r.error.ToString();
  EXPECT_EQ(r.payloads, payloads);
  EXPECT_FALSE(r.truncated);
}

TEST(FramedLogTest, TruncatedGzipFileIsCorruption) {
  TempDir dir;
  std::string plain = dir / "seg.log";
  {
    auto w = FramedLogWriter::Open(plain);
    ASSERT_TRUE(w.ok());
    for (int i = 0; i < 2000; ++i) ASSERT_TRUE((*w)->Append("payload number " + std::to_string(i * 7919)).ok());
  }
  Gzip(plain, dir / "seg.log.gz");
  std::string gz = ReadAll(dir / "seg.log.gz");
  WriteAll(dir / "cut.log.gz", gz.substr(0, gz.size() / 2));
  ReadResult r = ReadFile(dir / "cut.log.gz");
  EXPECT_FALSE(r.error.ok());
  EXPECT_EQ(r.error.code(), StatusCode::kCorruption) << r.error.ToString();
}

TEST(FramedLogTest, WriterDoesNotOpenCompressedFiles) {
  TempDir dir;
  auto w = FramedLogWriter::Open(dir / "x.log.gz");
  EXPECT_FALSE(w.ok());
}

TEST(FramedLogTest, MissingFileIsNotFound) {
  TempDir dir;
  auto r = FramedLogReader::Open(dir / "nope.log");
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.status().code(), StatusCode::kNotFound);
}

}  // namespace
}  // namespace clickatron
