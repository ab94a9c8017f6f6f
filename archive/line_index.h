// LineIndex: where lines start in a sorted file held in memory, found lazily
// per block of bytes, so a binary search probes line starts directly.
//
// Why: a search that probes byte offsets must walk back to the start of the
// line it lands in and forward to its end, and a probe is most likely to land
// in a long line (a busy key's total holds years of hours, tens of KB), so
// every lookup scanned such lines again, about 20 probes a key. The archive's
// mget profile was a quarter memchr/memrchr. Here block k (the bytes from
// k * block_bytes) knows the first line start at or after its first byte; it
// is found the first time a search asks (one scan to the next newline) and
// kept, so later probes cost a load and a compare of the prefix's bytes.
//
// Memory: 8 bytes per block, 0.2% of the file at the default 4 KiB (about
// 400 MB for a 197 GB shard file), taken from calloc's zeroed pages so it
// becomes resident only as searches fill it; nothing of the file is read
// until a search asks.
//
// Thread-safety: any thread may search. A block's entry is computed from the
// immutable data alone, so two threads racing on it store the same value.
#pragma once

#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <memory>
#include <string_view>

namespace clickatron::archive {

class LineIndex {
 public:
  static constexpr size_t kDefaultBlockBytes = 4096;

  // `data` must outlive the index. block_bytes >= 1.
  explicit LineIndex(std::string_view data, size_t block_bytes = kDefaultBlockBytes);
  LineIndex(const LineIndex&) = delete;
  LineIndex& operator=(const LineIndex&) = delete;

  std::string_view data() const { return data_; }
  size_t block_bytes() const { return block_bytes_; }
  // Blocks 0 .. blocks()-1 cover the data; block blocks() is past its end.
  size_t blocks() const { return blocks_; }
  // The first line start at or after byte k * block_bytes(), or data().size()
  // when no line starts there. k <= blocks(). Never decreasing in k.
  size_t FirstLineStartOfBlock(size_t k) const;

 private:
  std::string_view data_;
  size_t block_bytes_;
  size_t blocks_;
  struct Free {
    void operator()(uint64_t* p) const { std::free(p); }
  };
  // Per block: its first line start + 1; 0 while not yet found. Read and
  // written through std::atomic_ref.
  std::unique_ptr<uint64_t[], Free> starts_;
};

}  // namespace clickatron::archive
