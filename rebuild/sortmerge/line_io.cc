#include "clickatron/file_util.h"
#include "sortmerge/line_io.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>

#if defined(__SSE2__)
#include <emmintrin.h>
#endif

#include <fmt/format.h>

#include "sortmerge/crc32_fast.h"

namespace clickatron::rebuild {
namespace {

// LineWriter checksums its buffer in pieces of this size as they fill.
constexpr size_t kCrcBatch = 16u << 10;

// gzip files start with 1f 8b; anything else is read as plain text.
bool HasGzipMagic(int fd) {
  char magic[2] = {0, 0};
  const ssize_t n = ::pread(fd, magic, 2, 0);
  return n == 2 && LooksLikeGzip(std::string_view(magic, 2));
}

}  // namespace

Result<OpenedInput> OpenInput(const std::string& path) {
  UniqueFd fd(::open(path.c_str(), O_RDONLY | O_CLOEXEC));
  if (!fd.valid()) {
    if (errno == ENOENT) return Status::NotFound(fmt::format("{} does not exist", path));
    return ErrnoStatus("open", path);
  }
  OpenedInput in;
  struct stat st;
  if (::fstat(fd.get(), &st) == 0) in.file_bytes = static_cast<uint64_t>(st.st_size);
  ::posix_fadvise(fd.get(), 0, 0, POSIX_FADV_SEQUENTIAL);
  if (HasGzipMagic(fd.get())) {
    Result<GzipReader> gzip = GzipReader::FromFd(std::move(fd), path, GzipReader::Options{.buffer_bytes = 256u << 10});
    if (!gzip.ok()) return gzip.status();
    in.gzip.emplace(std::move(gzip).value());
  } else {
    in.fd = std::move(fd);
  }
  return in;
}

Result<size_t> OpenedInput::Read(const std::string& path, char* dst, size_t room) {
  if (gzip.has_value()) return gzip->Read(dst, room);
  ssize_t n = 0;
  do {
    n = room == 0 ? 0 : ::read(fd.get(), dst, room);
  } while (n < 0 && errno == EINTR);
  if (n < 0) return ErrnoStatus("read", path);
  return static_cast<size_t>(n);
}

uint64_t CountNewlines(std::string_view bytes) {
  const char* p = bytes.data();
  const char* const end = p + bytes.size();
  uint64_t count = 0;
#if defined(__SSE2__)
  // Per-byte counters (a match is -1, subtracted), summed before they can wrap.
  const __m128i newline = _mm_set1_epi8('\n');
  while (end - p >= 16) {
    __m128i counters = _mm_setzero_si128();
    for (int i = 0; i < 255 && end - p >= 16; ++i, p += 16) {
      const __m128i block = _mm_loadu_si128(reinterpret_cast<const __m128i*>(p));
      counters = _mm_sub_epi8(counters, _mm_cmpeq_epi8(block, newline));
    }
    const __m128i sums = _mm_sad_epu8(counters, _mm_setzero_si128());
    count += static_cast<uint64_t>(_mm_cvtsi128_si64(sums)) +
             static_cast<uint64_t>(_mm_cvtsi128_si64(_mm_unpackhi_epi64(sums, sums)));
  }
#endif
  for (; p < end; ++p) count += *p == '\n' ? 1 : 0;
  return count;
}

Result<std::unique_ptr<LineReader>> LineReader::Open(const std::string& path, Options options) {
  auto in = OpenInput(path);
  if (!in.ok()) return in.status();
  std::unique_ptr<LineReader> reader(new LineReader());
  reader->path_ = path;
  reader->options_ = options;
  reader->file_bytes_ = in->file_bytes;
  reader->input_ = std::move(in).value();
  if (options.begin_offset > 0 || options.end_offset != UINT64_MAX) {
    if (reader->gzip()) {
      return Status::InvalidArgument(fmt::format("{}: a byte range of a gzip file cannot be read", path));
    }
    if (options.end_offset < options.begin_offset) {
      return Status::InvalidArgument(fmt::format("{}: byte range {}..{} is reversed", path, options.begin_offset,
                                                 options.end_offset));
    }
    if (options.begin_offset > 0 &&
        ::lseek(reader->input_.fd.get(), static_cast<off_t>(options.begin_offset), SEEK_SET) < 0) {
      return ErrnoStatus("seek", path);
    }
    reader->bytes_left_ = options.end_offset - options.begin_offset;
  }
  reader->capacity_ = options.buffer_bytes < 4096 ? 4096 : options.buffer_bytes;
  reader->buffer_.reset(new char[reader->capacity_]);
  return reader;
}

bool LineReader::Refill() {
  if (eof_ || !status_.ok()) return false;
  // Move the partial line to the front; grow when a line fills the buffer.
  if (begin_ > 0) {
    std::memmove(buffer_.get(), buffer_.get() + begin_, end_ - begin_);
    end_ -= begin_;
    begin_ = 0;
  }
  if (end_ == capacity_) {
    const size_t bigger = capacity_ * 2;
    std::unique_ptr<char[]> grown(new char[bigger]);
    std::memcpy(grown.get(), buffer_.get(), end_);
    buffer_ = std::move(grown);
    capacity_ = bigger;
  }
  char* dst = buffer_.get() + end_;
  const size_t room = capacity_ - end_;
  // A byte range of a plain file stops at its end (bytes_left_).
  const size_t ask = !gzip() && bytes_left_ < room ? static_cast<size_t>(bytes_left_) : room;
  auto read = input_.Read(path_, dst, ask);
  if (!read.ok()) {
    status_ = read.status();
    return false;
  }
  const size_t n = *read;
  if (gzip()) {
    bytes_read_ = input_.gzip->compressed_bytes_read();
  } else {
    bytes_read_ += n;
    if (bytes_left_ != UINT64_MAX) bytes_left_ -= n;
  }
  if (n == 0) {
    eof_ = true;
    return false;
  }
  if (options_.compute_crc) crc_ = FastCrc32Extend(crc_, std::string_view(dst, n));
  end_ += n;
  return true;
}

bool LineReader::Next(std::string_view* line) {
  size_t scanned = begin_;  // bytes already known to hold no newline
  while (true) {
    const char* start = buffer_.get() + begin_;
    const void* nl = std::memchr(buffer_.get() + scanned, '\n', end_ - scanned);
    if (nl != nullptr) {
      const char* stop = static_cast<const char*>(nl);
      size_t length = static_cast<size_t>(stop - start);
      begin_ += length + 1;
      if (options_.strip_cr && length > 0 && start[length - 1] == '\r') --length;
      *line = std::string_view(start, length);
      ++line_number_;
      return true;
    }
    scanned = end_ - begin_;  // relative: Refill moves data to the front
    if (!Refill()) {
      if (!status_.ok() || begin_ == end_) return false;
      // The last line has no newline: still a line.
      size_t length = end_ - begin_;
      const char* last = buffer_.get() + begin_;
      begin_ = end_;
      if (options_.strip_cr && length > 0 && last[length - 1] == '\r') --length;
      *line = std::string_view(last, length);
      ++line_number_;
      return true;
    }
    scanned += begin_;
  }
}

Result<std::unique_ptr<LineWriter>> LineWriter::Create(const std::string& path, Options options) {
  UniqueFd fd(::open(path.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644));
  if (!fd.valid()) return ErrnoStatus("create", path);
  std::unique_ptr<LineWriter> writer(new LineWriter());
  writer->path_ = path;
  writer->options_ = options;
  writer->fd_ = std::move(fd);
  if (writer->options_.buffer_bytes < 4096) writer->options_.buffer_bytes = 4096;
  writer->buffer_.reset(new char[writer->options_.buffer_bytes]);
  return writer;
}

Status LineWriter::Flush() {
  if (!failed_.ok()) return failed_;
  size_t done = 0;
  while (done < used_) {
    const ssize_t n = ::write(fd_.get(), buffer_.get() + done, used_ - done);
    if (n < 0) {
      if (errno == EINTR) continue;
      failed_ = ErrnoStatus("write", path_);
      return failed_;
    }
    done += static_cast<size_t>(n);
  }
  if (options_.compute_crc) CrcCatchUp();
  used_ = 0;
  crc_done_ = 0;
  return Status::Ok();
}

void LineWriter::CrcCatchUp() {
  crc_ = FastCrc32Extend(crc_, std::string_view(buffer_.get() + crc_done_, used_ - crc_done_));
  crc_done_ = used_;
}

Status LineWriter::PutRaw(std::string_view bytes) {
  const size_t capacity = options_.buffer_bytes;
  if (used_ + bytes.size() > capacity) {
    CLICKATRON_RETURN_IF_ERROR(Flush());
    if (bytes.size() > capacity) {
      // Too big to buffer: write it straight through (crc kept in order).
      size_t done = 0;
      while (done < bytes.size()) {
        const ssize_t n = ::write(fd_.get(), bytes.data() + done, bytes.size() - done);
        if (n < 0) {
          if (errno == EINTR) continue;
          failed_ = ErrnoStatus("write", path_);
          return failed_;
        }
        done += static_cast<size_t>(n);
      }
      if (options_.compute_crc) crc_ = FastCrc32Extend(crc_, bytes);
      bytes_ += bytes.size();
      return Status::Ok();
    }
  }
  std::memcpy(buffer_.get() + used_, bytes.data(), bytes.size());
  used_ += bytes.size();
  bytes_ += bytes.size();
  // The checksum is taken while the bytes are still in cache, not over the
  // whole buffer at Flush (which would read it back from memory).
  if (options_.compute_crc && used_ - crc_done_ >= kCrcBatch) CrcCatchUp();
  return Status::Ok();
}

Status LineWriter::Put(std::string_view line) {
  if (used_ + line.size() + 1 <= options_.buffer_bytes) {
    std::memcpy(buffer_.get() + used_, line.data(), line.size());
    used_ += line.size();
    buffer_[used_++] = '\n';
    bytes_ += line.size() + 1;
    if (options_.compute_crc && used_ - crc_done_ >= kCrcBatch) CrcCatchUp();
  } else {
    CLICKATRON_RETURN_IF_ERROR(PutRaw(line));
    CLICKATRON_RETURN_IF_ERROR(PutRaw("\n"));
  }
  ++lines_;
  return Status::Ok();
}

Status LineWriter::PutLines(std::string_view bytes, uint64_t lines) {
  CLICKATRON_RETURN_IF_ERROR(PutRaw(bytes));
  lines_ += lines;
  return Status::Ok();
}

Status LineWriter::AppendFile(const std::string& path, uint64_t lines) {
  CLICKATRON_RETURN_IF_ERROR(Flush());  // what is buffered goes first
  const UniqueFd in(::open(path.c_str(), O_RDONLY | O_CLOEXEC));
  if (!in.valid()) return ErrnoStatus("open", path);
  Status status;
  uint64_t copied = 0;
  bool by_kernel = !options_.compute_crc;
  while (by_kernel) {
    const ssize_t n = ::copy_file_range(in.get(), nullptr, fd_.get(), nullptr, size_t{1} << 30, 0);
    if (n > 0) {
      copied += static_cast<uint64_t>(n);
    } else if (n == 0) {
      break;
    } else if (errno == EINTR) {
      continue;
    } else if (copied == 0 && (errno == EXDEV || errno == ENOSYS || errno == EINVAL || errno == EOPNOTSUPP)) {
      by_kernel = false;  // not across these file systems: through the buffer
    } else {
      status = failed_ = ErrnoStatus("copy_file_range to", path_);
      break;
    }
  }
  bytes_ += copied;
  if (status.ok() && !by_kernel) {
    std::unique_ptr<char[]> block(new char[options_.buffer_bytes]);
    while (status.ok()) {
      const ssize_t n = ::read(in.get(), block.get(), options_.buffer_bytes);
      if (n < 0 && errno == EINTR) continue;
      if (n < 0) status = ErrnoStatus("read", path);
      if (n <= 0) break;
      status = PutRaw(std::string_view(block.get(), static_cast<size_t>(n)));
    }
  }
  if (status.ok()) lines_ += lines;
  return status;
}

Status LineWriter::Finish() {
  CLICKATRON_RETURN_IF_ERROR(Flush());
  if (options_.fsync && ::fsync(fd_.get()) != 0) return ErrnoStatus("fsync", path_);
  return fd_.Close().WithContext(path_);
}

}  // namespace clickatron::rebuild
