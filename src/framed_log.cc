// Framed append-only log files (see framed_log.h).
//
// Telling a torn tail from corruption: appends are single writes at the end of
// the file, so a crash can only leave (a) a prefix of the last frame, (b) a
// last frame whose bytes did not all reach the disk (its CRC fails and nothing
// follows it), or (c) a zero-filled tail (the file size was extended but the
// data blocks were never written, after a power cut). All three are "torn
// tail": the writer cuts them. Anything else — a bad header or a bad CRC with
// more data after it — is CORRUPTION, reported with its offset, never skipped.
#include "clickatron/framed_log.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <sys/uio.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <vector>

#include <fmt/format.h>
#include <spdlog/spdlog.h>

#include "clickatron/file_util.h"
#include "clickatron/gzip_file.h"
#include "clickatron/shard.h"
#include "clickatron/unique_fd.h"

namespace clickatron {
namespace {

void PutU32(char* p, uint32_t v) {
  for (int i = 0; i < 4; ++i) p[i] = static_cast<char>((v >> (8 * i)) & 0xff);
}

uint32_t GetU32(const char* p) {
  uint32_t v = 0;
  for (int i = 0; i < 4; ++i) v |= static_cast<uint32_t>(static_cast<unsigned char>(p[i])) << (8 * i);
  return v;
}

bool HasSuffix(std::string_view s, std::string_view suffix) {
  return s.size() >= suffix.size() && s.substr(s.size() - suffix.size()) == suffix;
}

// A byte stream: a plain file or a gzip file, read in buffered chunks.
class ByteSource {
 public:
  virtual ~ByteSource() = default;
  // Up to n bytes; 0 at the end.
  virtual Result<size_t> ReadSome(char* buf, size_t n) = 0;
};

class FdSource : public ByteSource {
 public:
  FdSource(UniqueFd fd, std::string path) : fd_(std::move(fd)), path_(std::move(path)) {}
  Result<size_t> ReadSome(char* buf, size_t n) override {
    while (true) {
      ssize_t got = ::read(fd_.get(), buf, n);
      if (got >= 0) return static_cast<size_t>(got);
      if (errno != EINTR) return ErrnoStatus("read", path_);
    }
  }

 private:
  UniqueFd fd_;
  std::string path_;
};

// A compressed segment is written whole and renamed into place, so a short
// or damaged stream is corruption (GzipReader says so), not a torn tail.
class GzSource : public ByteSource {
 public:
  explicit GzSource(GzipReader reader) : reader_(std::move(reader)) {}
  Result<size_t> ReadSome(char* buf, size_t n) override { return reader_.Read(buf, n); }

 private:
  GzipReader reader_;
};

class FramedLogReaderImpl : public FramedLogReader {
 public:
  FramedLogReaderImpl(std::unique_ptr<ByteSource> source, std::string path)
      : source_(std::move(source)), path_(std::move(path)), buf_(1 << 16) {}

  Result<std::optional<std::string>> Next() override {
    if (!error_.ok()) return error_;
    if (done_) return std::optional<std::string>();
    char header[kFrameHeaderBytes];
    Result<size_t> got = Read(header, kFrameHeaderBytes);
    if (!got.ok()) return Fail(got.status());
    if (*got == 0) return End(false);
    if (*got < kFrameHeaderBytes) return End(true);
    const uint32_t magic = GetU32(header);
    const uint32_t length = GetU32(header + 4);
    const uint32_t crc = GetU32(header + 8);
    if (magic != kFrameMagic || length > kMaxFramePayload) {
      // A zero-filled tail (size extended, blocks never written) is torn;
      // anything else here is damage in the middle of the file.
      Result<bool> zeros = RestIsZero(header, kFrameHeaderBytes);
      if (!zeros.ok()) return Fail(zeros.status());
      if (*zeros) return End(true);
      return Fail(Status::Corruption(fmt::format("{}: bad frame header at offset {} (magic {:#010x}, length {})",
                                                 path_, good_bytes_, magic, length)));
    }
    std::string payload(length, '\0');
    got = Read(payload.data(), length);
    if (!got.ok()) return Fail(got.status());
    if (*got < length) return End(true);
    if (Crc32(payload) != crc) {
      Result<bool> at_end = AtEnd();
      if (!at_end.ok()) return Fail(at_end.status());
      // The last frame, partly written: torn. With data after it: corruption.
      if (*at_end) return End(true);
      return Fail(Status::Corruption(
          fmt::format("{}: checksum mismatch in the frame at offset {} ({} bytes)", path_, good_bytes_, length)));
    }
    good_bytes_ += kFrameHeaderBytes + length;
    return std::optional<std::string>(std::move(payload));
  }

  bool truncated_tail() const override { return truncated_tail_; }
  uint64_t good_bytes() const override { return good_bytes_; }

 private:
  Result<std::optional<std::string>> End(bool torn) {
    done_ = true;
    truncated_tail_ = torn;
    return std::optional<std::string>();
  }
  Result<std::optional<std::string>> Fail(Status st) {
    error_ = std::move(st);
    return error_;
  }

  Status Fill() {
    if (pos_ < len_ || eof_) return Status::Ok();
    Result<size_t> got = source_->ReadSome(buf_.data(), buf_.size());
    if (!got.ok()) return got.status();
    pos_ = 0;
    len_ = *got;
    if (len_ == 0) eof_ = true;
    return Status::Ok();
  }

  // Reads up to n bytes (fewer only at the end).
  Result<size_t> Read(char* out, size_t n) {
    size_t done = 0;
    while (done < n) {
      CLICKATRON_RETURN_IF_ERROR(Fill());
      if (eof_) break;
      size_t take = std::min(n - done, len_ - pos_);
      std::memcpy(out + done, buf_.data() + pos_, take);
      pos_ += take;
      done += take;
    }
    return done;
  }

  Result<bool> AtEnd() {
    CLICKATRON_RETURN_IF_ERROR(Fill());
    return eof_;
  }

  // True if `head` and everything after it are zero bytes.
  Result<bool> RestIsZero(const char* head, size_t n) {
    for (size_t i = 0; i < n; ++i) {
      if (head[i] != 0) return false;
    }
    while (true) {
      CLICKATRON_RETURN_IF_ERROR(Fill());
      if (eof_) return true;
      for (size_t i = pos_; i < len_; ++i) {
        if (buf_[i] != 0) return false;
      }
      pos_ = len_;
    }
  }

  std::unique_ptr<ByteSource> source_;
  std::string path_;
  std::vector<char> buf_;
  size_t pos_ = 0;
  size_t len_ = 0;
  bool eof_ = false;
  bool done_ = false;
  bool truncated_tail_ = false;
  uint64_t good_bytes_ = 0;
  Status error_;
};

class FramedLogWriterImpl : public FramedLogWriter {
 public:
  FramedLogWriterImpl(UniqueFd fd, std::string path, uint64_t size)
      : fd_(std::move(fd)), path_(std::move(path)), size_(size) {}

  Status Append(std::string_view payload) override {
    if (!fd_.valid()) return Status::FailedPrecondition(fmt::format("{} is closed", path_));
    if (!broken_.ok()) return broken_;
    if (payload.size() > kMaxFramePayload) {
      return Status::InvalidArgument(fmt::format("{}: frame of {} bytes is over the {} byte limit", path_,
                                                 payload.size(), kMaxFramePayload));
    }
    char header[kFrameHeaderBytes];
    PutU32(header, kFrameMagic);
    PutU32(header + 4, static_cast<uint32_t>(payload.size()));
    PutU32(header + 8, Crc32(payload));
    iovec iov[2] = {{header, kFrameHeaderBytes}, {const_cast<char*>(payload.data()), payload.size()}};
    const size_t total = kFrameHeaderBytes + payload.size();
    size_t done = 0;
    while (done < total) {
      // Skip what is already written across the two buffers.
      iovec rest[2];
      int n = 0;
      size_t skip = done;
      for (const iovec& v : iov) {
        if (skip >= v.iov_len) {
          skip -= v.iov_len;
          continue;
        }
        rest[n++] = {static_cast<char*>(v.iov_base) + skip, v.iov_len - skip};
        skip = 0;
      }
      ssize_t w = ::writev(fd_.get(), rest, n);
      if (w < 0) {
        if (errno == EINTR) continue;
        Status st = ErrnoStatus("append to", path_);
        // Cut the partial frame so later appends do not follow garbage
        // (which a reader would then call corruption).
        CutTo(size_);
        return st;
      }
      done += static_cast<size_t>(w);
    }
    size_ += total;
    return Status::Ok();
  }

  Status TruncateTo(uint64_t size) override {
    if (!fd_.valid()) return Status::FailedPrecondition(fmt::format("{} is closed", path_));
    if (!broken_.ok()) return broken_;
    if (size > size_) return Status::InvalidArgument(fmt::format("{}: cannot cut to {} bytes, past its end", path_, size));
    if (!CutTo(size)) return broken_;
    size_ = size;
    return Status::Ok();
  }

  Status Sync() override {
    if (!fd_.valid()) return Status::FailedPrecondition(fmt::format("{} is closed", path_));
    if (::fdatasync(fd_.get()) != 0) return ErrnoStatus("fdatasync", path_);
    return Status::Ok();
  }

  Status Close() override { return fd_.Close().WithContext(path_); }

  uint64_t size() const override { return size_; }
  const std::string& path() const override { return path_; }

 private:
  // ftruncate; when it fails the file's end is unknown, so appends stop.
  bool CutTo(uint64_t size) {
    if (::ftruncate(fd_.get(), static_cast<off_t>(size)) == 0) return true;
    broken_ = Status::IoError(
        fmt::format("{}: cannot cut a failed append ({}); no more appends", path_, std::strerror(errno)));
    spdlog::error("{}", broken_.message());
    return false;
  }

  UniqueFd fd_;
  std::string path_;
  uint64_t size_;
  Status broken_;
};

}  // namespace

Result<std::unique_ptr<FramedLogReader>> FramedLogReader::Open(const std::string& path) {
  if (HasSuffix(path, ".gz")) {
    Result<GzipReader> gz = GzipReader::Open(path, GzipReader::Options{.buffer_bytes = 1u << 16});
    if (!gz.ok()) return gz.status();
    return std::unique_ptr<FramedLogReader>(
        std::make_unique<FramedLogReaderImpl>(std::make_unique<GzSource>(std::move(gz).value()), path));
  }
  UniqueFd fd(::open(path.c_str(), O_RDONLY | O_CLOEXEC));
  if (!fd.valid()) {
    if (errno == ENOENT) return Status::NotFound(fmt::format("{} does not exist", path));
    return ErrnoStatus("open", path);
  }
  return std::unique_ptr<FramedLogReader>(
      std::make_unique<FramedLogReaderImpl>(std::make_unique<FdSource>(std::move(fd), path), path));
}

Result<std::unique_ptr<FramedLogWriter>> FramedLogWriter::Open(const std::string& path) {
  if (HasSuffix(path, ".gz")) {
    return Status::InvalidArgument(fmt::format("{}: compressed logs are read-only", path));
  }
  bool existed = FileExists(path);
  if (existed) {
    auto reader = FramedLogReader::Open(path);
    if (!reader.ok()) return reader.status();
    while (true) {
      auto next = (*reader)->Next();
      if (!next.ok()) return next.status();  // corruption: refuse to append after it
      if (!next->has_value()) break;
    }
    if ((*reader)->truncated_tail()) {
      uint64_t good = (*reader)->good_bytes();
      spdlog::warn("{}: cutting a torn tail after byte {}", path, good);
      if (::truncate(path.c_str(), static_cast<off_t>(good)) != 0) return ErrnoStatus("truncate", path);
      CLICKATRON_RETURN_IF_ERROR(FsyncFile(path));
    }
  }
  UniqueFd fd(::open(path.c_str(), O_WRONLY | O_CREAT | O_APPEND | O_CLOEXEC, 0644));
  if (!fd.valid()) return ErrnoStatus("open for append", path);
  struct stat st;
  if (::fstat(fd.get(), &st) != 0) return ErrnoStatus("stat", path);
  // The new name must survive a crash as well as the data synced into it.
  if (!existed) CLICKATRON_RETURN_IF_ERROR(FsyncDir(DirName(path)));
  return std::unique_ptr<FramedLogWriter>(
      std::make_unique<FramedLogWriterImpl>(std::move(fd), path, static_cast<uint64_t>(st.st_size)));
}

}  // namespace clickatron
