#include "line_index.h"

#include <atomic>
#include <cstring>
#include <new>

namespace clickatron::archive {

LineIndex::LineIndex(std::string_view data, size_t block_bytes)
    : data_(data),
      block_bytes_(block_bytes == 0 ? 1 : block_bytes),
      blocks_((data.size() + block_bytes_ - 1) / block_bytes_),
      starts_(static_cast<uint64_t*>(std::calloc(blocks_ == 0 ? 1 : blocks_, sizeof(uint64_t)))) {
  if (!starts_) throw std::bad_alloc();
}

size_t LineIndex::FirstLineStartOfBlock(size_t k) const {
  if (k == 0) return 0;
  if (k >= blocks_) return data_.size();
  std::atomic_ref<uint64_t> slot(starts_[k]);
  if (const uint64_t known = slot.load(std::memory_order_relaxed); known != 0) return known - 1;
  // A line starts at s when s == 0 or data[s - 1] is a newline: the first
  // one at or after `from` follows the first newline at or after from - 1.
  const size_t from = k * block_bytes_;
  const void* nl = std::memchr(data_.data() + from - 1, '\n', data_.size() - (from - 1));
  const size_t start = nl ? static_cast<size_t>(static_cast<const char*>(nl) - data_.data()) + 1 : data_.size();
  slot.store(start + 1, std::memory_order_relaxed);
  return start;
}

}  // namespace clickatron::archive
