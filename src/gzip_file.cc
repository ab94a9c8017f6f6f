// Gzip files through zlib's inflate/deflate (see gzip_file.h).
//
// Why not zlib's gzFile API: gzread() reports a stream cut short as a clean
// end (Z_BUF_ERROR, which it does not count as an error), skips bytes after
// the last member without a word, and reads a non-gzip file as plain text;
// gzclose() closes the descriptor before the caller could fsync it. Driving
// inflate/deflate directly makes each of those an explicit decision here.
#include "clickatron/gzip_file.h"

#include <fcntl.h>
#include <unistd.h>
#include <zlib.h>

#include <algorithm>
#include <cerrno>
#include <cstring>

#include <fmt/format.h>

#include "clickatron/file_util.h"

namespace clickatron {
namespace {

// windowBits for inflateInit2/deflateInit2: 15 (the largest window) + 16,
// which means a gzip wrapper, and only that (no zlib or raw deflate).
constexpr int kGzipWindowBits = 15 + 16;
// zlib counts in uInt: one call handles at most this much.
constexpr size_t kMaxZlibChunk = size_t{1} << 30;
constexpr size_t kWriteBufferBytes = 256u << 10;
constexpr size_t kCopyBlockBytes = 1u << 20;

Result<UniqueFd> OpenForReading(const std::string& path) {
  UniqueFd fd(::open(path.c_str(), O_RDONLY | O_CLOEXEC));
  if (!fd.valid()) {
    if (errno == ENOENT) return Status::NotFound(fmt::format("{} does not exist", path));
    return ErrnoStatus("open", path);
  }
  return fd;
}

}  // namespace

bool LooksLikeGzip(std::string_view head) {
  return head.size() >= 2 && static_cast<unsigned char>(head[0]) == 0x1f &&
         static_cast<unsigned char>(head[1]) == 0x8b;
}

// ---- GzipReader ----

struct GzipReader::Impl {
  UniqueFd fd;
  std::string path;
  z_stream stream{};  // stays at this address: zlib keeps a pointer back to it
  bool stream_ready = false;
  std::unique_ptr<unsigned char[]> input;
  size_t input_capacity = 0;
  uint64_t file_bytes_read = 0;
  uint64_t member_start = 0;  // file offset of the member being inflated
  bool file_ended = false;
  bool member_ended = false;  // inflate reached the current member's trailer
  Status error;

  ~Impl() {
    if (stream_ready) inflateEnd(&stream);
  }

  uint64_t consumed() const { return file_bytes_read - stream.avail_in; }

  Status Fail(Status st) {
    error = std::move(st);
    return error;
  }

  Status Corrupt(std::string_view what) {
    return Fail(Status::Corruption(
        fmt::format("{}: gzip: {} (in the member starting at byte {})", path, what, member_start)));
  }

  // Reads more compressed bytes when inflate has used up the last ones.
  Status Refill() {
    while (true) {
      const ssize_t n = ::read(fd.get(), input.get(), input_capacity);
      if (n < 0) {
        if (errno == EINTR) continue;
        return Fail(ErrnoStatus("read", path));
      }
      if (n == 0) file_ended = true;
      stream.next_in = input.get();
      stream.avail_in = static_cast<uInt>(n);
      file_bytes_read += static_cast<uint64_t>(n);
      return Status::Ok();
    }
  }

  Result<size_t> Read(char* out, size_t n) {
    if (!error.ok()) return error;
    const size_t want = std::min(n, kMaxZlibChunk);
    stream.next_out = reinterpret_cast<Bytef*>(out);
    stream.avail_out = static_cast<uInt>(want);
    while (stream.avail_out == want && want > 0) {
      if (stream.avail_in == 0 && !file_ended) CLICKATRON_RETURN_IF_ERROR(Refill());
      if (stream.avail_in == 0) {
        if (member_ended) break;  // the clean end: the last member was whole
        return Corrupt("the file ends inside the stream (truncated)");
      }
      if (member_ended) {
        // More bytes after a whole member: they must be the next member.
        member_start = consumed();
        member_ended = false;
        if (inflateReset(&stream) != Z_OK) return Fail(Status::Internal(fmt::format("{}: inflateReset", path)));
      }
      const int rc = inflate(&stream, Z_NO_FLUSH);
      if (rc == Z_STREAM_END) {
        member_ended = true;
      } else if (rc == Z_MEM_ERROR) {
        return Fail(Status::Internal(fmt::format("{}: gzip: out of memory", path)));
      } else if (rc != Z_OK && rc != Z_BUF_ERROR) {  // Z_BUF_ERROR: needs more input
        return Corrupt(stream.msg != nullptr ? stream.msg : zError(rc));
      }
    }
    return want - stream.avail_out;
  }
};

GzipReader::GzipReader(std::unique_ptr<Impl> impl) : impl_(std::move(impl)) {}
GzipReader::GzipReader(GzipReader&&) noexcept = default;
GzipReader& GzipReader::operator=(GzipReader&&) noexcept = default;
GzipReader::~GzipReader() = default;

Result<GzipReader> GzipReader::Open(const std::string& path, Options options) {
  Result<UniqueFd> fd = OpenForReading(path);
  if (!fd.ok()) return fd.status();
  ::posix_fadvise(fd->get(), 0, 0, POSIX_FADV_SEQUENTIAL);
  return FromFd(std::move(fd).value(), path, options);
}

Result<GzipReader> GzipReader::FromFd(UniqueFd fd, std::string path, Options options) {
  auto impl = std::make_unique<Impl>();
  impl->fd = std::move(fd);
  impl->path = std::move(path);
  impl->input_capacity = std::clamp<size_t>(options.buffer_bytes, 4096, kMaxZlibChunk);
  impl->input.reset(new unsigned char[impl->input_capacity]);
  if (inflateInit2(&impl->stream, kGzipWindowBits) != Z_OK) {
    return Status::Internal(fmt::format("{}: inflateInit2 failed (out of memory?)", impl->path));
  }
  impl->stream_ready = true;
  return GzipReader(std::move(impl));
}

Result<size_t> GzipReader::Read(char* out, size_t n) { return impl_->Read(out, n); }
uint64_t GzipReader::compressed_bytes_read() const { return impl_->consumed(); }
const std::string& GzipReader::path() const { return impl_->path; }

// ---- GzipWriter ----

struct GzipWriter::Impl {
  UniqueFd fd;
  std::string path;
  z_stream stream{};  // stays at this address: zlib keeps a pointer back to it
  bool stream_ready = false;
  std::unique_ptr<unsigned char[]> output;
  bool finished = false;
  Status error;

  ~Impl() {
    if (stream_ready) deflateEnd(&stream);
  }

  Status Fail(Status st) {
    error = std::move(st);
    fd.Reset();  // nothing more goes to this file
    return error;
  }

  // Writes out the compressed bytes collected so far.
  Status Drain() {
    const size_t have = kWriteBufferBytes - stream.avail_out;
    if (Status st = WriteAllToFd(fd.get(), {reinterpret_cast<const char*>(output.get()), have}, path); !st.ok()) {
      return Fail(st);
    }
    stream.next_out = output.get();
    stream.avail_out = static_cast<uInt>(kWriteBufferBytes);
    return Status::Ok();
  }

  // Runs deflate over what is in stream.next_in; with Z_FINISH also ends the stream.
  Status Deflate(int flush) {
    while (true) {
      if (stream.avail_out == 0) CLICKATRON_RETURN_IF_ERROR(Drain());
      const int rc = deflate(&stream, flush);
      if (rc == Z_STREAM_ERROR) return Fail(Status::Internal(fmt::format("{}: deflate: stream error", path)));
      if (flush == Z_FINISH) {
        if (rc == Z_STREAM_END) return Status::Ok();
        // Otherwise deflate stopped for want of output space.
        if (stream.avail_out != 0) return Fail(Status::Internal(fmt::format("{}: deflate made no progress", path)));
      } else if (stream.avail_in == 0 && stream.avail_out != 0) {
        return Status::Ok();  // all input taken
      }
    }
  }

  Status Write(std::string_view bytes) {
    if (finished) return Status::FailedPrecondition(fmt::format("{}: gzip stream already finished", path));
    if (!error.ok()) return error;
    while (!bytes.empty()) {
      const size_t chunk = std::min(bytes.size(), kMaxZlibChunk);
      stream.next_in = reinterpret_cast<Bytef*>(const_cast<char*>(bytes.data()));
      stream.avail_in = static_cast<uInt>(chunk);
      CLICKATRON_RETURN_IF_ERROR(Deflate(Z_NO_FLUSH));
      bytes.remove_prefix(chunk);
    }
    return Status::Ok();
  }

  Status Finish() {
    if (finished) return Status::FailedPrecondition(fmt::format("{}: gzip stream already finished", path));
    finished = true;
    if (!error.ok()) return error;
    CLICKATRON_RETURN_IF_ERROR(Deflate(Z_FINISH));
    CLICKATRON_RETURN_IF_ERROR(Drain());
    if (::fsync(fd.get()) != 0) return Fail(ErrnoStatus("fsync", path));
    if (Status st = fd.Close(); !st.ok()) return Fail(st.WithContext(path));
    return Status::Ok();
  }
};

GzipWriter::GzipWriter(std::unique_ptr<Impl> impl) : impl_(std::move(impl)) {}
GzipWriter::GzipWriter(GzipWriter&&) noexcept = default;
GzipWriter& GzipWriter::operator=(GzipWriter&&) noexcept = default;
GzipWriter::~GzipWriter() = default;

Result<GzipWriter> GzipWriter::Create(const std::string& path, int level) {
  if (level != Z_DEFAULT_COMPRESSION && (level < 1 || level > 9)) {
    return Status::InvalidArgument(fmt::format("{}: gzip level {} is not 1..9 (or -1)", path, level));
  }
  auto impl = std::make_unique<Impl>();
  impl->path = path;
  impl->fd.Reset(::open(path.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644));
  if (!impl->fd.valid()) return ErrnoStatus("create", path);
  impl->output.reset(new unsigned char[kWriteBufferBytes]);
  impl->stream.next_out = impl->output.get();
  impl->stream.avail_out = static_cast<uInt>(kWriteBufferBytes);
  // memLevel 8 and the default strategy: what gzopen("wb<level>") used, so
  // the header and the compressed bytes match files written before.
  if (deflateInit2(&impl->stream, level, Z_DEFLATED, kGzipWindowBits, 8, Z_DEFAULT_STRATEGY) != Z_OK) {
    return Status::Internal(fmt::format("{}: deflateInit2 failed (out of memory?)", path));
  }
  impl->stream_ready = true;
  return GzipWriter(std::move(impl));
}

Status GzipWriter::Write(std::string_view bytes) { return impl_->Write(bytes); }
Status GzipWriter::Finish() { return impl_->Finish(); }
const std::string& GzipWriter::path() const { return impl_->path; }

// ---- CompressFileAtomically ----

namespace {

Status CompressInto(const std::string& from, GzipWriter& out) {
  Result<UniqueFd> in = OpenForReading(from);
  if (!in.ok()) return in.status();
  ::posix_fadvise(in->get(), 0, 0, POSIX_FADV_SEQUENTIAL);
  std::unique_ptr<char[]> block(new char[kCopyBlockBytes]);
  while (true) {
    const ssize_t n = ::read(in->get(), block.get(), kCopyBlockBytes);
    if (n < 0) {
      if (errno == EINTR) continue;
      return ErrnoStatus("read", from);
    }
    if (n == 0) return out.Finish();
    CLICKATRON_RETURN_IF_ERROR(out.Write(std::string_view(block.get(), static_cast<size_t>(n))));
  }
}

}  // namespace

Status CompressFileAtomically(const std::string& from, const std::string& to, int level) {
  const std::string tmp = to + ".tmp";
  Status st;
  {
    Result<GzipWriter> out = GzipWriter::Create(tmp, level);
    st = out.ok() ? CompressInto(from, *out) : out.status();
  }  // an unfinished writer's descriptor is closed before the unlink
  if (st.ok()) st = RenameDurably(tmp, to);
  if (!st.ok()) ::unlink(tmp.c_str());
  return st;
}

Result<std::string> GunzipBuffer(std::string_view compressed, size_t max_bytes) {
  std::string out;
  z_stream stream{};
  if (inflateInit2(&stream, kGzipWindowBits) != Z_OK) return Status::Internal("inflateInit2 failed");
  std::string_view rest = compressed;
  char block[64 * 1024];
  Status st;
  bool in_member = false;
  while (st.ok()) {
    if (!in_member) {
      if (rest.empty()) break;  // every member ended at its trailer
      in_member = true;
    }
    if (stream.avail_in == 0) {
      const size_t take = std::min(rest.size(), kMaxZlibChunk);
      stream.next_in = reinterpret_cast<Bytef*>(const_cast<char*>(rest.data()));
      stream.avail_in = static_cast<uInt>(take);
      rest.remove_prefix(take);
    }
    stream.next_out = reinterpret_cast<Bytef*>(block);
    stream.avail_out = sizeof block;
    const int rc = inflate(&stream, Z_NO_FLUSH);
    const size_t produced = sizeof block - stream.avail_out;
    if (out.size() + produced > max_bytes) {
      st = Status(StatusCode::kOutOfRange, fmt::format("the gzip body inflates to more than {} bytes", max_bytes),
                  "BODY_TOO_LARGE");
      break;
    }
    out.append(block, produced);
    if (rc == Z_STREAM_END) {
      // Another member may follow (as gunzip reads `cat a.gz b.gz`): what
      // inflate left unread sits just before `rest` in `compressed`.
      rest = std::string_view(reinterpret_cast<const char*>(stream.next_in), stream.avail_in + rest.size());
      stream.avail_in = 0;
      in_member = false;
      if (inflateReset(&stream) != Z_OK) st = Status::Internal("inflateReset failed");
      continue;
    }
    if (rc != Z_OK && !(rc == Z_BUF_ERROR && produced > 0)) {
      st = Status::InvalidArgument(fmt::format("the gzip body is damaged ({})", stream.msg ? stream.msg : "inflate"),
                                   "INVALID_GZIP");
      break;
    }
    if (rc == Z_OK && produced == 0 && stream.avail_in == 0 && rest.empty()) {
      st = Status::InvalidArgument("the gzip body ends before its trailer", "INVALID_GZIP");
    }
  }
  inflateEnd(&stream);
  if (!st.ok()) return st;
  return out;
}

}  // namespace clickatron
