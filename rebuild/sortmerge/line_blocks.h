// A file's lines in blocks of whole lines, for several threads at once.
//
// Converting lines is most of the cost of reading an input, and it splits
// cleanly by line; what does not split is knowing each line's number (bad
// lines are reported as FILE:LINE). So the reading, which is cheap, stays
// serial under a lock: each call hands out the next block of whole lines
// (plain or gzip, detected as LineReader does) with the number of its first
// line and a sequence number, and the caller's thread works through it.
//
// Thread-safety: Next() from any thread; a Block belongs to its caller.
#pragma once

#include <cstdint>
#include <cstring>
#include <memory>
#include <mutex>
#include <string>
#include <string_view>

#include "clickatron/status.h"
#include "sortmerge/line_io.h"

namespace clickatron::rebuild {

class LineBlockReader {
 public:
  struct Block {
    std::string bytes;        // whole lines, each ended by '\n' but maybe the file's last
    uint64_t first_line = 0;  // 1-based number of the first line in bytes
    uint64_t seq = 0;         // 0, 1, 2, … in file order
  };

  // block_bytes: about how much each block holds (more when one line is longer).
  static Result<std::unique_ptr<LineBlockReader>> Open(const std::string& path, size_t block_bytes);

  // Fills *block with the next lines; false at the end or on an error
  // (status() tells which). Thread-safe.
  bool Next(Block* block);

  Status status() const;
  const std::string& path() const { return path_; }
  uint64_t file_bytes() const { return file_bytes_; }

 private:
  LineBlockReader() = default;
  // Appends up to `want` bytes of the file to *out; 0 at the end. REQUIRES: mutex_ held.
  Result<size_t> ReadMore(std::string* out, size_t want);

  std::string path_;
  size_t block_bytes_ = 0;
  uint64_t file_bytes_ = 0;
  mutable std::mutex mutex_;
  // Guarded by mutex_:
  OpenedInput input_;
  std::string carry_;  // a partial line read past the end of the last block
  bool eof_ = false;
  uint64_t next_line_ = 1;
  uint64_t next_seq_ = 0;
  Status status_;
};

// Calls fn(line, line_number) for each line of a block (without '\n').
template <typename Fn>
void ForEachBlockLine(const LineBlockReader::Block& block, Fn&& fn) {
  const char* p = block.bytes.data();
  const char* const end = p + block.bytes.size();
  uint64_t number = block.first_line;
  while (p < end) {
    const void* nl = std::memchr(p, '\n', static_cast<size_t>(end - p));
    const char* stop = nl != nullptr ? static_cast<const char*>(nl) : end;
    fn(std::string_view(p, static_cast<size_t>(stop - p)), number++);
    p = stop + 1;
  }
}

}  // namespace clickatron::rebuild
