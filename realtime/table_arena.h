// TableArena: the memory of one in-memory table (mem_table.h), mapped in
// chunks and given back all at once when the table goes.
//
// Why: under keys never seen before, a shard spent a quarter of its CPU
// freeing a checkpointed table node by node (its hash maps' clear(), and
// the kernel's TLB shootdowns for the pages malloc handed back), and the
// loop thread a malloc per key and per hash node. A table only grows until
// it is checkpointed and then goes whole, so its nodes need no free of
// their own: they are cut from chunks, and the chunks are freed with the
// table. bytes() is what the chunks take, the table's true size for the
// memory budget.
//
// Nothing is given back before the table goes (do_deallocate is a no-op): a
// hash map's old buckets and a group's outgrown vectors stay, and are
// counted. Only blocks (AllocateBlock) go sooner. Thread-safety: none: the loop thread allocates (into a frozen
// table too, whose group index it builds on reads); the checkpoint thread,
// which reads a frozen table's records, never touches its arena.
#pragma once

#include <cstddef>
#include <memory_resource>
#include <vector>

#include "clickatron/huge_pages.h"

namespace clickatron::realtime {

class TableArena : public std::pmr::memory_resource {
 public:
  TableArena() = default;
  TableArena(const TableArena&) = delete;
  TableArena& operator=(const TableArena&) = delete;
  ~TableArena() override;

  // Bytes mapped, less the current chunk's unused tail (at most
  // a chunk): grows with each allocation, not a chunk at a time.
  size_t bytes() const { return bytes_ - static_cast<size_t>(end_ - next_); }

  // A zero-filled block of `bytes` on a mapping of its own, for an array
  // replaced whole as it grows (a counter index's slots): FreeBlock gives it
  // back at once instead of with the table. Throws bad_alloc.
  void* AllocateBlock(size_t bytes);
  void FreeBlock(void* at, size_t bytes);

 private:
  // One huge page (huge_pages.h): small against the memory budget, large
  // enough that chunks are few. Chunks and blocks are huge-page mappings:
  // a table's memory is filled at random, and 4 KiB page faults on it were
  // the largest part of a shard's CPU under keys never seen before.
  static constexpr size_t kChunkBytes = kHugePageBytes;

  // A new mapping of `bytes` (rounded up to huge pages), kept and counted.
  // Throws bad_alloc.
  char* Map(size_t bytes);
  void* do_allocate(size_t bytes, size_t alignment) override;
  void do_deallocate(void*, size_t, size_t) override {}
  bool do_is_equal(const std::pmr::memory_resource& other) const noexcept override { return this == &other; }

  struct Mapping {
    void* at;
    size_t bytes;
  };
  std::vector<Mapping> chunks_;  // chunks and blocks
  char* next_ = nullptr;  // free space of the current chunk: [next_, end_)
  char* end_ = nullptr;
  size_t bytes_ = 0;
};

}  // namespace clickatron::realtime
