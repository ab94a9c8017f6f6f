// Gzip files: round trips, compatibility with zlib's own gzFile reader and
// writer (files written before GzipWriter existed must still read), and the
// strictness promised in gzip_file.h: a truncated, damaged or padded stream
// is CORRUPTION, never data cut short.
#include "clickatron/gzip_file.h"

#include <gtest/gtest.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>
#include <zlib.h>

#include <fstream>
#include <sstream>
#include <string>

#include "clickatron/file_util.h"
#include "testutil/testutil.h"

namespace clickatron {
namespace {

using testing::TempDir;
using testing::ReadAll;
using testing::WriteAll;

// Counter-like lines, a few MB: more than every buffer involved.
std::string SampleText(size_t lines) {
  std::string out;
  uint64_t x = 88172645463325252ull;
  for (size_t i = 0; i < lines; ++i) {
    x ^= x << 13;
    x ^= x >> 7;
    x ^= x << 17;
    out += "u|key" + std::to_string(x % 100000) + ",c3p" + std::to_string(i % 24) + ",";
    out += std::to_string(x % 977) + "\n";
  }
  return out;
}

// gzip bytes made by zlib's gzFile API: how every .gz file was written
// before GzipWriter (and an implementation independent of it).
std::string ZlibGzip(const std::string& data, const std::string& scratch_path) {
  gzFile gz = gzopen(scratch_path.c_str(), "wb1");
  EXPECT_NE(gz, nullptr);
  if (!data.empty()) {
    EXPECT_EQ(gzwrite(gz, data.data(), static_cast<unsigned>(data.size())), static_cast<int>(data.size()));
  }
  EXPECT_EQ(gzclose(gz), Z_OK);
  return ReadAll(scratch_path);
}

struct ReadOutcome {
  std::string data;
  Status status;
  uint64_t compressed_bytes_read = 0;
};

// Reads the whole stream in pieces of `piece` bytes, stopping at the first error.
ReadOutcome ReadGzip(const std::string& path, size_t piece = 4096) {
  ReadOutcome r;
  auto reader = GzipReader::Open(path);
  if (!reader.ok()) {
    r.status = reader.status();
    return r;
  }
  std::string buf(piece, '\0');
  while (true) {
    Result<size_t> n = reader->Read(buf.data(), buf.size());
    if (!n.ok()) {
      r.status = n.status();
      break;
    }
    if (*n == 0) break;
    r.data.append(buf, 0, *n);
  }
  r.compressed_bytes_read = reader->compressed_bytes_read();
  return r;
}

// The same for bytes held in memory (a memfd: the loops below read
// thousands of variants of a file, too slow through the file system).
ReadOutcome ReadGzipBytes(const std::string& bytes) {
  UniqueFd fd(::memfd_create("gzip-test", MFD_CLOEXEC));
  EXPECT_TRUE(fd.valid());
  EXPECT_EQ(::write(fd.get(), bytes.data(), bytes.size()), static_cast<ssize_t>(bytes.size()));
  EXPECT_EQ(::lseek(fd.get(), 0, SEEK_SET), 0);
  ReadOutcome r;
  auto reader = GzipReader::FromFd(std::move(fd), "memory.gz", GzipReader::Options{});
  if (!reader.ok()) {
    r.status = reader.status();
    return r;
  }
  std::string buf(4096, '\0');
  while (true) {
    Result<size_t> n = reader->Read(buf.data(), buf.size());
    if (!n.ok()) {
      r.status = n.status();
      break;
    }
    if (*n == 0) break;
    r.data.append(buf, 0, *n);
  }
  return r;
}

Status WriteGzip(const std::string& path, const std::string& data, size_t piece = 100000, int level = 1) {
  auto writer = GzipWriter::Create(path, level);
  if (!writer.ok()) return writer.status();
  for (size_t at = 0; at < data.size(); at += piece) {
    CLICKATRON_RETURN_IF_ERROR(writer->Write(std::string_view(data).substr(at, piece)));
  }
  return writer->Finish();
}

TEST(GzipFileTest, WriterAndReaderRoundTrip) {
  TempDir dir;
  const std::string text = SampleText(200000);
  ASSERT_TRUE(WriteGzip(dir / "a.gz", text).ok());
  const std::string compressed = ReadAll(dir / "a.gz");
  EXPECT_LT(compressed.size(), text.size() / 2);
  for (size_t piece : {size_t{1} << 20, size_t{4096}, size_t{7}}) {
    ReadOutcome r = ReadGzip(dir / "a.gz", piece);
    ASSERT_TRUE(r.status.ok()) << r.status.ToString();
    EXPECT_EQ(r.data, text) << "piece " << piece;
    EXPECT_EQ(r.compressed_bytes_read, compressed.size());
  }
}

TEST(GzipFileTest, ReaderReadsWhatZlibsGzFileWrote) {
  TempDir dir;
  const std::string text = SampleText(50000);
  ZlibGzip(text, dir / "old.gz");
  ReadOutcome r = ReadGzip(dir / "old.gz");
  ASSERT_TRUE(r.status.ok()) << r.status.ToString();
  EXPECT_EQ(r.data, text);
}

TEST(GzipFileTest, WriterOutputIsWhatZlibsGzFileWrites) {
  TempDir dir;
  const std::string text = SampleText(50000);
  ASSERT_TRUE(WriteGzip(dir / "new.gz", text).ok());
  // Same header, same deflate settings: the same bytes as gzopen("wb1").
  EXPECT_EQ(ReadAll(dir / "new.gz"), ZlibGzip(text, dir / "old.gz"));

  gzFile gz = gzopen((dir / "new.gz").c_str(), "rb");
  ASSERT_NE(gz, nullptr);
  std::string back(text.size() + 1, '\0');
  EXPECT_EQ(gzread(gz, back.data(), static_cast<unsigned>(back.size())), static_cast<int>(text.size()));
  gzclose(gz);
  back.resize(text.size());
  EXPECT_EQ(back, text);
}

TEST(GzipFileTest, EmptyStreamRoundTrips) {
  TempDir dir;
  ASSERT_TRUE(WriteGzip(dir / "empty.gz", "").ok());
  EXPECT_EQ(ReadAll(dir / "empty.gz").size(), 20u);  // header and trailer, nothing between
  ReadOutcome r = ReadGzip(dir / "empty.gz");
  EXPECT_TRUE(r.status.ok()) << r.status.ToString();
  EXPECT_EQ(r.data, "");
}

TEST(GzipFileTest, ZeroByteFileIsCorruptionNotAnEmptyStream) {
  TempDir dir;
  WriteAll(dir / "zero.gz", "");
  ReadOutcome r = ReadGzip(dir / "zero.gz");
  EXPECT_EQ(r.status.code(), StatusCode::kCorruption) << r.status.ToString();
}

// Every cut of the file, from the first byte to the last, is an error: the
// trailer (CRC-32 and length) is what says the stream is whole.
TEST(GzipFileTest, EveryTruncationIsCorruption) {
  TempDir dir;
  const std::string text = SampleText(1000);
  const std::string whole = ZlibGzip(text, dir / "whole.gz");
  ASSERT_GT(whole.size(), 100u);
  for (size_t cut = 1; cut < whole.size(); ++cut) {
    ReadOutcome r = ReadGzipBytes(whole.substr(0, cut));
    ASSERT_EQ(r.status.code(), StatusCode::kCorruption) << "cut at " << cut << ": " << r.status.ToString();
  }
  // Named in the message, with what is wrong.
  WriteAll(dir / "cut.gz", whole.substr(0, whole.size() / 2));
  Status st = ReadGzip(dir / "cut.gz").status;
  EXPECT_NE(st.message().find("cut.gz"), std::string::npos) << st.message();
  EXPECT_NE(st.message().find("truncated"), std::string::npos) << st.message();
}

// A damaged byte never yields different data: it is CORRUPTION, or it
// touched bits the decoder never uses (the header's mtime, extra flags and
// OS bytes 4..9, or don't-care bits of a block's Huffman table description)
// and the data comes back exactly as written. The trailer's CRC-32 and
// length make the second case rare.
TEST(GzipFileTest, ACorruptByteIsCorruptionOrChangesNothing) {
  TempDir dir;
  const std::string text = SampleText(1000);
  const std::string whole = ZlibGzip(text, dir / "whole.gz");
  size_t corrupt = 0;
  for (size_t at = 0; at < whole.size(); ++at) {
    std::string bad = whole;
    bad[at] = static_cast<char>(bad[at] ^ 0xff);
    ReadOutcome r = ReadGzipBytes(bad);
    if (r.status.ok()) {
      ASSERT_EQ(r.data, text) << "byte " << at << " changed the data without an error";
    } else {
      ASSERT_EQ(r.status.code(), StatusCode::kCorruption) << "byte " << at << ": " << r.status.ToString();
      ++corrupt;
    }
  }
  EXPECT_GT(corrupt, whole.size() * 9 / 10);
  for (size_t at : {size_t{0}, size_t{1}, size_t{2}, size_t{3}, whole.size() - 8, whole.size() - 1}) {
    std::string bad = whole;
    bad[at] = static_cast<char>(bad[at] ^ 0xff);
    EXPECT_EQ(ReadGzipBytes(bad).status.code(), StatusCode::kCorruption) << "byte " << at;
  }
}

TEST(GzipFileTest, ErrorsAreSticky) {
  TempDir dir;
  const std::string whole = ZlibGzip(SampleText(3000), dir / "whole.gz");
  WriteAll(dir / "cut.gz", whole.substr(0, whole.size() - 1));
  auto reader = GzipReader::Open(dir / "cut.gz");
  ASSERT_TRUE(reader.ok());
  std::string buf(1 << 20, '\0');
  Result<size_t> n = reader->Read(buf.data(), buf.size());
  while (n.ok() && *n > 0) n = reader->Read(buf.data(), buf.size());
  ASSERT_EQ(n.status().code(), StatusCode::kCorruption);
  Result<size_t> again = reader->Read(buf.data(), buf.size());
  EXPECT_EQ(again.status().code(), StatusCode::kCorruption);
}

// gzip and gunzip treat concatenated members as one file (`cat a.gz b.gz`,
// pigz, logs appended by gzip -c >>); zlib's gzread did too, and bulk loads
// take .gz files made elsewhere.
TEST(GzipFileTest, ConcatenatedMembersReadAsOneStream) {
  TempDir dir;
  const std::string a = SampleText(2000);
  const std::string b = "second member\n";
  WriteAll(dir / "ab.gz", ZlibGzip(a, dir / "a.gz") + ZlibGzip("", dir / "empty.gz") + ZlibGzip(b, dir / "b.gz"));
  ReadOutcome r = ReadGzip(dir / "ab.gz", 333);
  ASSERT_TRUE(r.status.ok()) << r.status.ToString();
  EXPECT_EQ(r.data, a + b);
}

TEST(GzipFileTest, BytesAfterTheLastMemberAreCorruption) {
  TempDir dir;
  const std::string whole = ZlibGzip("some text\n", dir / "whole.gz");
  for (const std::string& tail : {std::string("garbage"), std::string(16, '\0'), std::string("\x1f")}) {
    WriteAll(dir / "tail.gz", whole + tail);
    ReadOutcome r = ReadGzip(dir / "tail.gz");
    EXPECT_EQ(r.status.code(), StatusCode::kCorruption) << tail.size() << " bytes: " << r.status.ToString();
    // The message names where the bad member starts: just after the good one.
    EXPECT_NE(r.status.message().find("byte " + std::to_string(whole.size())), std::string::npos)
        << r.status.message();
  }
}

TEST(GzipFileTest, PlainTextIsCorruptionNotReadThrough) {
  TempDir dir;
  WriteAll(dir / "plain.gz", "u|a,c3p1,1\n");
  ReadOutcome r = ReadGzip(dir / "plain.gz");
  EXPECT_EQ(r.status.code(), StatusCode::kCorruption) << r.status.ToString();
  EXPECT_EQ(r.data, "");
}

TEST(GzipFileTest, MissingFileIsNotFound) {
  TempDir dir;
  EXPECT_EQ(ReadGzip(dir / "nope.gz").status.code(), StatusCode::kNotFound);
}

TEST(GzipFileTest, LooksLikeGzipChecksTheMagicBytes) {
  EXPECT_TRUE(LooksLikeGzip("\x1f\x8b\x08"));
  EXPECT_FALSE(LooksLikeGzip("\x1f"));
  EXPECT_FALSE(LooksLikeGzip("\x8b\x1f"));
  EXPECT_FALSE(LooksLikeGzip("u|a,c3p1,1"));
}

TEST(GzipFileTest, WriterWithoutFinishLeavesATruncatedStream) {
  TempDir dir;
  {
    auto writer = GzipWriter::Create(dir / "unfinished.gz", 1);
    ASSERT_TRUE(writer.ok());
    ASSERT_TRUE(writer->Write(SampleText(100000)).ok());
  }
  ReadOutcome r = ReadGzip(dir / "unfinished.gz");
  EXPECT_EQ(r.status.code(), StatusCode::kCorruption) << r.status.ToString();
}

TEST(GzipFileTest, WriterRefusesUseAfterFinish) {
  TempDir dir;
  auto writer = GzipWriter::Create(dir / "a.gz", 1);
  ASSERT_TRUE(writer.ok());
  ASSERT_TRUE(writer->Write("x\n").ok());
  ASSERT_TRUE(writer->Finish().ok());
  EXPECT_EQ(writer->Write("y\n").code(), StatusCode::kFailedPrecondition);
  EXPECT_EQ(writer->Finish().code(), StatusCode::kFailedPrecondition);
  EXPECT_EQ(ReadGzip(dir / "a.gz").data, "x\n");
}

TEST(GzipFileTest, WriterRejectsABadLevel) {
  TempDir dir;
  EXPECT_EQ(GzipWriter::Create(dir / "a.gz", 0).status().code(), StatusCode::kInvalidArgument);
  EXPECT_EQ(GzipWriter::Create(dir / "a.gz", 10).status().code(), StatusCode::kInvalidArgument);
  EXPECT_TRUE(GzipWriter::Create(dir / "a.gz", -1).ok());
  EXPECT_TRUE(GzipWriter::Create(dir / "a.gz", 9).ok());
}

// /dev/full takes the open and fails every write (ENOSPC): the error comes
// back from Write or Finish, and stays.
TEST(GzipFileTest, WriteErrorIsReportedAndSticks) {
  if (::access("/dev/full", W_OK) != 0) GTEST_SKIP() << "no writable /dev/full";
  auto writer = GzipWriter::Create("/dev/full", 1);
  ASSERT_TRUE(writer.ok()) << writer.status().ToString();
  const std::string text = SampleText(200000);  // compresses to more than the writer's buffer
  Status st = writer->Write(text);
  if (st.ok()) st = writer->Finish();
  EXPECT_EQ(st.code(), StatusCode::kIoError) << st.ToString();
  EXPECT_NE(st.message().find("/dev/full"), std::string::npos) << st.message();
  EXPECT_EQ(writer->Write("more").code(), StatusCode::kIoError);
}

TEST(GzipFileTest, CompressFileAtomicallyReplacesTheTargetWhole) {
  TempDir dir;
  const std::string text = SampleText(30000);
  WriteAll(dir / "seg.log", text);
  WriteAll(dir / "seg.log.gz", "old contents");
  ASSERT_TRUE(CompressFileAtomically(dir / "seg.log", dir / "seg.log.gz", 1).ok());
  ReadOutcome r = ReadGzip(dir / "seg.log.gz");
  ASSERT_TRUE(r.status.ok()) << r.status.ToString();
  EXPECT_EQ(r.data, text);
  EXPECT_FALSE(FileExists(dir / "seg.log.gz.tmp"));
  EXPECT_EQ(ReadAll(dir / "seg.log"), text);  // the source is left alone
}

TEST(GzipFileTest, CompressFileAtomicallyLeavesNothingBehindOnFailure) {
  TempDir dir;
  WriteAll(dir / "seg.log.gz", "old contents");
  Status st = CompressFileAtomically(dir / "missing.log", dir / "seg.log.gz", 1);
  EXPECT_EQ(st.code(), StatusCode::kNotFound) << st.ToString();
  EXPECT_EQ(ReadAll(dir / "seg.log.gz"), "old contents");
  EXPECT_FALSE(FileExists(dir / "seg.log.gz.tmp"));
}

// GunzipBuffer (an HTTP body with Content-Encoding: gzip): the same bytes
// as zlib wrote, members concatenated, damage refused, a bomb stopped.
TEST(GzipFileTest, GunzipBufferInflatesWhatZlibWrote) {
  TempDir dir;
  const std::string a = SampleText(500), b = SampleText(30);
  const std::string gz_a = ZlibGzip(a, dir.path() + "/a.gz"), gz_b = ZlibGzip(b, dir.path() + "/b.gz");
  Result<std::string> one = GunzipBuffer(gz_a, 1 << 20);
  ASSERT_TRUE(one.ok()) << one.status().ToString();
  EXPECT_EQ(*one, a);
  Result<std::string> two = GunzipBuffer(gz_a + gz_b, 1 << 20);
  ASSERT_TRUE(two.ok()) << two.status().ToString();
  EXPECT_EQ(*two, a + b);
  Result<std::string> empty = GunzipBuffer("", 1 << 20);
  ASSERT_TRUE(empty.ok());
  EXPECT_EQ(*empty, "");
}

TEST(GzipFileTest, GunzipBufferRefusesDamageAndBombs) {
  TempDir dir;
  const std::string text = SampleText(2000);
  const std::string gz = ZlibGzip(text, dir.path() + "/t.gz");
  EXPECT_EQ(GunzipBuffer(gz.substr(0, gz.size() - 5), 1 << 20).status().reason(), "INVALID_GZIP");
  EXPECT_EQ(GunzipBuffer(gz + "trailing", 1 << 20).status().reason(), "INVALID_GZIP");
  EXPECT_EQ(GunzipBuffer("plain text", 1 << 20).status().reason(), "INVALID_GZIP");
  ASSERT_GT(text.size(), 1000u);
  Result<std::string> bomb = GunzipBuffer(gz, text.size() - 1);
  EXPECT_EQ(bomb.status().reason(), "BODY_TOO_LARGE");
  EXPECT_TRUE(GunzipBuffer(gz, text.size()).ok());
}

}  // namespace
}  // namespace clickatron
