// Line streams for the rebuild: every step reads and writes newline-ended
// text files (exports, runs, sorted day data, archive shards) through these.
//
// LineReader reads a plain or gzip file (detected by its magic bytes) in big
// blocks and hands out views of whole lines without copying; a view is valid
// until the next call to Next(). LineWriter buffers output, can keep a running
// crc32, and makes the file durable on Finish().
//
// Thread-safety: one object per thread.
#pragma once

#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "clickatron/gzip_file.h"
#include "clickatron/status.h"
#include "clickatron/unique_fd.h"

namespace clickatron::rebuild {

// Where sorted lines go: a file, a combiner, a shard splitter, a test vector.
class LineSink {
 public:
  virtual ~LineSink() = default;
  // `line` has no trailing newline.
  virtual Status Put(std::string_view line) = 0;
};

// A stream of lines: a file, a filtered file, a test vector.
class LineSource {
 public:
  virtual ~LineSource() = default;
  // Sets *line to the next line (without '\n'); returns false at the end.
  // After a false return, status() tells whether the end was clean.
  virtual bool Next(std::string_view* line) = 0;
  virtual const Status& status() const = 0;
  // A name for messages ("days/2012-03-25/export-0.csv").
  virtual const std::string& name() const = 0;
};

// A data file opened for streaming reads: gzip (known by its magic bytes)
// through GzipReader with a 256 KiB buffer, else the plain descriptor with
// sequential read-ahead. Exactly one of fd and gzip is set.
struct OpenedInput {
  UniqueFd fd;
  std::optional<GzipReader> gzip;
  uint64_t file_bytes = 0;

  // One read of at most `room` bytes into dst (EINTR retried). 0 at the end;
  // CORRUPTION for a damaged or truncated gzip file, IO_ERROR otherwise,
  // both naming the file.
  Result<size_t> Read(const std::string& path, char* dst, size_t room);
};
Result<OpenedInput> OpenInput(const std::string& path);

class LineReader : public LineSource {
 public:
  struct Options {
    size_t buffer_bytes = 1u << 20;  // grows when a single line is longer
    bool compute_crc = false;        // crc32 of the raw (decompressed) bytes read
    bool strip_cr = false;           // accept CRLF files (bulk loads from elsewhere)
    // Plain files only: read the bytes [begin_offset, end_offset) (a range of
    // a sorted run that another thread merges the rest of). Both must fall
    // on line starts; end_offset past the end means to the end.
    uint64_t begin_offset = 0;
    uint64_t end_offset = UINT64_MAX;
  };
  static Result<std::unique_ptr<LineReader>> Open(const std::string& path, Options options);
  static Result<std::unique_ptr<LineReader>> Open(const std::string& path) { return Open(path, Options{}); }

  bool Next(std::string_view* line) override;
  const Status& status() const override { return status_; }
  const std::string& name() const override { return path_; }

  uint64_t line_number() const { return line_number_; }  // of the line last returned, 1-based
  uint64_t bytes_read() const { return bytes_read_; }    // raw file bytes consumed so far (from begin_offset)
  uint64_t file_bytes() const { return file_bytes_; }    // size on disk (compressed if gzip)
  uint32_t crc32() const { return crc_; }                // with Options::compute_crc
  bool gzip() const { return input_.gzip.has_value(); }

 private:
  LineReader() = default;
  bool Refill();  // reads more into the buffer; false at EOF or error

  std::string path_;
  Options options_;
  OpenedInput input_;
  std::unique_ptr<char[]> buffer_;
  size_t capacity_ = 0;
  size_t begin_ = 0;  // first unread byte
  size_t end_ = 0;    // one past the last valid byte
  bool eof_ = false;
  Status status_;
  uint64_t line_number_ = 0;
  uint64_t bytes_read_ = 0;
  uint64_t file_bytes_ = 0;
  uint64_t bytes_left_ = UINT64_MAX;  // plain files: of the range asked for
  uint32_t crc_ = 0;
};

// Writes lines to `path` (created or truncated). Nothing is visible under a
// final name: callers write to a temp path and rename after Finish().
class LineWriter : public LineSink {
 public:
  struct Options {
    size_t buffer_bytes = 1u << 20;
    bool fsync = true;         // Finish() fsyncs (intermediate runs skip it)
    bool compute_crc = false;  // keep crc32() (archive shard files)
  };
  static Result<std::unique_ptr<LineWriter>> Create(const std::string& path, Options options);
  static Result<std::unique_ptr<LineWriter>> Create(const std::string& path) { return Create(path, Options{}); }
  ~LineWriter() override = default;  // closes (without fsync) if Finish() was not called

  Status Put(std::string_view line) override;  // appends line + '\n'
  Status PutRaw(std::string_view bytes);       // appends bytes as they are
  // Appends whole lines (`bytes` ends in '\n') and counts `lines` of them.
  Status PutLines(std::string_view bytes, uint64_t lines);
  // Appends the bytes of the file at `path`, which holds `lines` whole
  // lines, in the kernel (copy_file_range) unless a crc is kept.
  Status AppendFile(const std::string& path, uint64_t lines);
  Status Finish();                             // flush, fsync (per options), close

  uint64_t lines() const { return lines_; }
  uint64_t bytes() const { return bytes_; }
  uint32_t crc32() const { return crc_; }  // with Options::compute_crc: of every byte, once Finish() returned
  const std::string& path() const { return path_; }

 private:
  LineWriter() = default;
  Status Flush();
  void CrcCatchUp();  // extends crc_ over the buffered bytes not yet in it

  std::string path_;
  Options options_;
  UniqueFd fd_;
  std::unique_ptr<char[]> buffer_;
  size_t used_ = 0;
  size_t crc_done_ = 0;  // buffer bytes [0, crc_done_) are in crc_
  uint64_t lines_ = 0;
  uint64_t bytes_ = 0;
  uint32_t crc_ = 0;
  Status failed_;
};

// Number of '\n' bytes in `bytes` (16 at a time: the archive merge counts
// the lines of every span it copies, hundreds of megabytes a night).
uint64_t CountNewlines(std::string_view bytes);

// Lines held in memory (tests, small inputs).
class VectorLineSink : public LineSink {
 public:
  Status Put(std::string_view line) override {
    lines.emplace_back(line);
    return Status::Ok();
  }
  std::vector<std::string> lines;
};

// The lines of a whole file's text held in memory or mapped (each ending in
// '\n'; a last line without one is still a line).
class TextLineSource : public LineSource {
 public:
  TextLineSource(std::string_view text, std::string name) : text_(text), name_(std::move(name)) {}
  bool Next(std::string_view* line) override {
    if (pos_ >= text_.size()) return false;
    size_t end = text_.find('\n', pos_);
    if (end == std::string_view::npos) end = text_.size();
    *line = text_.substr(pos_, end - pos_);
    pos_ = end + 1;
    return true;
  }
  const Status& status() const override { return status_; }
  const std::string& name() const override { return name_; }

 private:
  std::string_view text_;
  size_t pos_ = 0;
  std::string name_;
  Status status_;
};

class VectorLineSource : public LineSource {
 public:
  explicit VectorLineSource(std::vector<std::string> lines, std::string name = "memory")
      : lines_(std::move(lines)), name_(std::move(name)) {}
  bool Next(std::string_view* line) override {
    if (next_ >= lines_.size()) return false;
    *line = lines_[next_++];
    return true;
  }
  const Status& status() const override { return status_; }
  const std::string& name() const override { return name_; }

 private:
  std::vector<std::string> lines_;
  size_t next_ = 0;
  std::string name_;
  Status status_;
};

}  // namespace clickatron::rebuild
