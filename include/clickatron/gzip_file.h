// Gzip files (RFC 1952) through zlib, with every failure a Status.
//
// GzipReader streams a gzip file's decompressed bytes, strictly: data must
// never come back silently short. A stream that ends before its trailer (a
// truncated file, a zero-byte one included), a damaged byte (bad header,
// bad deflate data, a trailer whose CRC-32 or length disagrees) and bytes
// after a member that are not another whole member are all CORRUPTION,
// naming the file and the offset of the member at fault. Concatenated
// members (`cat a.gz b.gz`, pigz) read as one stream, as gunzip reads them.
// A file that is not gzip at all is CORRUPTION too: a caller that also takes
// plain text checks LooksLikeGzip() on its first bytes first.
//
// GzipWriter compresses into a new file. Nothing is promised until Finish()
// returns OK: it ends the stream (the trailer), writes what is buffered,
// fsyncs the file and closes it, and reports a failure of any of those
// steps (close() too). It does not fsync the directory, so the file's name
// is not yet durable: write under a temporary name and RenameDurably()
// (file_util.h) it into place, as CompressFileAtomically() does. A writer
// destroyed without Finish() closes the file unfinished (no trailer), which
// a GzipReader reports as truncated.
//
// The first write error poisons a writer (every later call returns it), and
// the first read error a reader: a stream is never resumed after a gap.
//
// Thread-safety: a reader or writer belongs to one thread at a time;
// CompressFileAtomically shares no state (two calls for the same `to` race
// as two renames do).
#pragma once

#include <cstddef>
#include <cstdint>
#include <memory>
#include <string>
#include <string_view>

#include "clickatron/status.h"
#include "clickatron/unique_fd.h"

namespace clickatron {

// True if `head` starts with the gzip magic bytes 1f 8b.
bool LooksLikeGzip(std::string_view head);

class GzipReader {
 public:
  struct Options {
    size_t buffer_bytes = 64u << 10;  // compressed bytes read from the file at a time
  };
  // NOT_FOUND if `path` does not exist.
  static Result<GzipReader> Open(const std::string& path, Options options);
  static Result<GzipReader> Open(const std::string& path) { return Open(path, Options{}); }
  // Reads `fd` from where it is positioned; `path` names it in messages.
  static Result<GzipReader> FromFd(UniqueFd fd, std::string path, Options options);

  GzipReader(GzipReader&&) noexcept;
  GzipReader& operator=(GzipReader&&) noexcept;
  ~GzipReader();

  // Up to `n` decompressed bytes into `out`. Returns 0 only at the clean end
  // of the stream (or for n == 0); fewer than `n` bytes is no sign of the end.
  Result<size_t> Read(char* out, size_t n);
  // Compressed bytes of the file consumed so far (for progress reports).
  uint64_t compressed_bytes_read() const;
  const std::string& path() const;

 private:
  struct Impl;
  explicit GzipReader(std::unique_ptr<Impl> impl);
  std::unique_ptr<Impl> impl_;
};

class GzipWriter {
 public:
  // Creates `path` (truncating a file there), mode 0644. `level`: 1 (fast)
  // to 9 (small), or -1 for zlib's default (6).
  static Result<GzipWriter> Create(const std::string& path, int level);

  GzipWriter(GzipWriter&&) noexcept;
  GzipWriter& operator=(GzipWriter&&) noexcept;
  ~GzipWriter();

  Status Write(std::string_view bytes);
  // Trailer, flush, fsync, close (see above). FAILED_PRECONDITION if called twice.
  Status Finish();
  const std::string& path() const;

 private:
  struct Impl;
  explicit GzipWriter(std::unique_ptr<Impl> impl);
  std::unique_ptr<Impl> impl_;
};

// Compresses the file `from` into `to`: written as `to` + ".tmp", fsynced,
// renamed over `to`, and the directory fsynced. On failure the temp file is
// removed and `to` is left as it was.
Status CompressFileAtomically(const std::string& from, const std::string& to, int level);

// Decompresses a gzip body held in memory (an HTTP request with
// Content-Encoding: gzip), concatenated members included. A damaged or
// truncated stream is INVALID_ARGUMENT INVALID_GZIP; an output past
// `max_bytes` stops there with OUT_OF_RANGE BODY_TOO_LARGE, so a small bomb
// cannot make a large allocation.
Result<std::string> GunzipBuffer(std::string_view compressed, size_t max_bytes);

}  // namespace clickatron
