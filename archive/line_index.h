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
// The block's entry also keeps the first kHeadBytes bytes of that line (as
// LevelDB's index block keeps its blocks' separator keys): a probe whose
// prefix differs from the line within them is decided by the entry alone,
// without touching the file. A lookup's probes land on lines all over a
// file of gigabytes, each a cache and TLB miss, and they were what the
// replica's mget spent most of its time on (memchr or memcmp, whichever
// touched a probed line first: docs/benchmarks.md). Only the last probes,
// among the lines of one key whose first bytes tie, read the file.
//
// Memory: 24 bytes per block, 0.6% of the file at the default 4 KiB (about
// 1.2 GB for a 197 GB shard file), taken from calloc's zeroed pages so it
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
  // Bytes of a block's first line kept in its entry.
  static constexpr size_t kHeadBytes = 15;
  // CompareFirstLine's answer when the kept bytes tie with the prefix and
  // the line goes on past them: compare the line itself.
  static constexpr int kUndecided = 2;

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
  // How the first line starting in block k (FirstLineStartOfBlock) compares
  // with `prefix`, from the kept bytes alone: <0 when it sorts before every
  // line starting with `prefix`, 0 when it starts with it, >0 when it sorts
  // after them (also when no line starts there); kUndecided when that takes
  // more of the line than the entry keeps. Bytes compare unsigned, and a
  // line that ends sorts before any longer prefix of it, as in the search.
  int CompareFirstLine(size_t k, std::string_view prefix) const;

 private:
  // Block k's entry, filled on first use: its first line start + 1 (0: not
  // yet), then the line's first bytes and, in the last byte, how many of
  // them there are (up to kHeadBytes) and whether the line ends there
  // (kEnds). The start is stored last (release): an entry read with a start
  // has its bytes.
  static constexpr size_t kEntryWords = 3;
  static constexpr uint8_t kEnds = 0x80;
  uint64_t* Entry(size_t k) const;

  std::string_view data_;
  size_t block_bytes_;
  size_t blocks_;
  struct Free {
    void operator()(uint64_t* p) const { std::free(p); }
  };
  // kEntryWords words per block (Entry). Read and written through
  // std::atomic_ref: two threads filling one entry store the same words.
  std::unique_ptr<uint64_t[], Free> entries_;
};

}  // namespace clickatron::archive
