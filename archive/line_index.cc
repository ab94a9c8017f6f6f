#include "line_index.h"

#include <algorithm>
#include <atomic>
#include <cstring>
#include <new>

namespace clickatron::archive {

LineIndex::LineIndex(std::string_view data, size_t block_bytes)
    : data_(data),
      block_bytes_(block_bytes == 0 ? 1 : block_bytes),
      blocks_((data.size() + block_bytes_ - 1) / block_bytes_),
      entries_(static_cast<uint64_t*>(
          std::calloc(blocks_ == 0 ? 1 : blocks_, kEntryWords * sizeof(uint64_t)))) {
  if (!entries_) throw std::bad_alloc();
}

uint64_t* LineIndex::Entry(size_t k) const {
  uint64_t* entry = entries_.get() + k * kEntryWords;
  std::atomic_ref<uint64_t> start_slot(entry[0]);
  if (start_slot.load(std::memory_order_acquire) != 0) return entry;
  // A line starts at s when s == 0 or data[s - 1] is a newline: the first
  // one at or after `from` follows the first newline at or after from - 1.
  size_t start = 0;
  if (k > 0) {
    const size_t from = k * block_bytes_;
    const void* nl = std::memchr(data_.data() + from - 1, '\n', data_.size() - (from - 1));
    start = nl ? static_cast<size_t>(static_cast<const char*>(nl) - data_.data()) + 1 : data_.size();
  }
  // The line's first bytes, up to its end (a newline or the data's).
  const size_t avail = std::min(kHeadBytes, data_.size() - start);
  const void* nl = avail == 0 ? nullptr : std::memchr(data_.data() + start, '\n', avail);
  const size_t n = nl ? static_cast<size_t>(static_cast<const char*>(nl) - (data_.data() + start)) : avail;
  const bool ends = nl != nullptr || start + n == data_.size();
  char head[2 * sizeof(uint64_t)] = {};
  if (n > 0) std::memcpy(head, data_.data() + start, n);
  head[sizeof(head) - 1] = static_cast<char>(static_cast<uint8_t>(n) | (ends ? kEnds : 0));
  uint64_t words[2];
  std::memcpy(words, head, sizeof(words));
  std::atomic_ref<uint64_t>(entry[1]).store(words[0], std::memory_order_relaxed);
  std::atomic_ref<uint64_t>(entry[2]).store(words[1], std::memory_order_relaxed);
  start_slot.store(start + 1, std::memory_order_release);
  return entry;
}

size_t LineIndex::FirstLineStartOfBlock(size_t k) const {
  if (k == 0) return 0;
  if (k >= blocks_) return data_.size();
  return std::atomic_ref<uint64_t>(Entry(k)[0]).load(std::memory_order_relaxed) - 1;
}

int LineIndex::CompareFirstLine(size_t k, std::string_view prefix) const {
  if (k >= blocks_) return 1;
  uint64_t* entry = Entry(k);
  if (std::atomic_ref<uint64_t>(entry[0]).load(std::memory_order_relaxed) - 1 == data_.size()) {
    return 1;  // no line starts in or after this block
  }
  const uint64_t words[2] = {std::atomic_ref<uint64_t>(entry[1]).load(std::memory_order_relaxed),
                             std::atomic_ref<uint64_t>(entry[2]).load(std::memory_order_relaxed)};
  char head[sizeof(words)];
  std::memcpy(head, words, sizeof(words));
  const auto meta = static_cast<uint8_t>(head[sizeof(head) - 1]);
  const size_t n = meta & ~kEnds;
  const bool ends = (meta & kEnds) != 0;
  const size_t m = std::min(n, prefix.size());
  if (const int c = m == 0 ? 0 : std::memcmp(head, prefix.data(), m); c != 0) return c < 0 ? -1 : 1;
  if (m == prefix.size()) return 0;  // the line starts with the whole prefix
  // The kept bytes are a prefix of `prefix`: a line that ends there sorts
  // before it; one that goes on must be read.
  return ends ? -1 : kUndecided;
}

}  // namespace clickatron::archive
