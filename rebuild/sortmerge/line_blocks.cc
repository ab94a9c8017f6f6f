#include "sortmerge/line_blocks.h"

#include <fmt/format.h>

namespace clickatron::rebuild {

Result<std::unique_ptr<LineBlockReader>> LineBlockReader::Open(const std::string& path, size_t block_bytes) {
  auto in = OpenInput(path);
  if (!in.ok()) return in.status();
  std::unique_ptr<LineBlockReader> reader(new LineBlockReader());
  reader->path_ = path;
  reader->block_bytes_ = block_bytes < 4096 ? 4096 : block_bytes;
  reader->file_bytes_ = in->file_bytes;
  reader->input_ = std::move(in).value();
  return reader;
}

Status LineBlockReader::status() const {
  std::lock_guard<std::mutex> lock(mutex_);
  return status_;
}

Result<size_t> LineBlockReader::ReadMore(std::string* out, size_t want) {
  const size_t old = out->size();
  out->resize(old + want);
  auto n = input_.Read(path_, out->data() + old, want);
  out->resize(old + (n.ok() ? *n : 0));
  return n;
}

bool LineBlockReader::Next(Block* block) {
  std::lock_guard<std::mutex> lock(mutex_);
  if (!status_.ok()) return false;
  block->bytes.clear();
  block->bytes.swap(carry_);  // the partial line left over starts this block
  // Read until the block holds at least one whole line (or the file ends).
  size_t last_newline = std::string::npos;
  size_t scanned = 0;
  while (!eof_) {
    const size_t want = block_bytes_ > block->bytes.size() ? block_bytes_ - block->bytes.size() : block_bytes_;
    Result<size_t> n = ReadMore(&block->bytes, want);
    if (!n.ok()) {
      status_ = n.status();
      return false;
    }
    if (*n == 0) {
      eof_ = true;
      break;
    }
    const void* found = ::memrchr(block->bytes.data() + scanned, '\n', block->bytes.size() - scanned);
    if (found != nullptr) {
      last_newline = static_cast<size_t>(static_cast<const char*>(found) - block->bytes.data());
      if (block->bytes.size() >= block_bytes_) break;
    }
    scanned = block->bytes.size();
  }
  if (block->bytes.empty()) return false;  // the end
  if (!eof_) {
    // Whole lines only; the partial line after the last newline starts the
    // next block. (At the end of the file the rest is its last line.)
    carry_.assign(block->bytes, last_newline + 1);
    block->bytes.resize(last_newline + 1);
  }
  uint64_t lines = CountNewlines(block->bytes);
  if (!block->bytes.empty() && block->bytes.back() != '\n') ++lines;  // the last line has no newline
  block->first_line = next_line_;
  block->seq = next_seq_++;
  next_line_ += lines;
  return true;
}

}  // namespace clickatron::rebuild
