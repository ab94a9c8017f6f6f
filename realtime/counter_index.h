// CounterIndex: one day's counter entries of an in-memory table (mem_table.h),
// found by key: an open-addressing table of (hash, entry) slots over
// entries that each hold their key, all in the table's arena.
//
// Why not std::unordered_map: under keys never seen before, finding a key
// was the loop thread's largest cost (19% of a shard's perf samples), every
// one a cache miss or two: the bucket array, then each node of the bucket's
// chain, then for a hit the key's own allocation. Here a key costs one slot
// read (16 bytes: its hash and its entry), which the batch's apply asks for
// ahead of time (Prefetch), and a hit one more read, of the entry with its
// key beside it. Each entry is one allocation instead of a node and a key.
//
// Linear probing, at most 3/4 full; the table doubles past that. A small
// slot array is cut from the arena and stays there when outgrown (counted);
// one of a huge page or more is a block of its own (table_arena.h), which
// comes zero-filled from the kernel (no memset: that clearing was 8.5% of a
// shard's CPU under new keys) and goes as soon as it is outgrown. Nothing is
// ever erased: an undone counter stays at 0.
//
// Thread-safety: none (the loop thread makes entries; a frozen table's
// entries are read by the checkpoint thread while nothing changes them).
#pragma once

#include <cstddef>
#include <cstdint>
#include <memory>
#include <memory_resource>
#include <string_view>

#include "clickatron/unique_sketch.h"
#include "table_arena.h"

namespace clickatron::realtime {

// A counter key's counts (mem_table.h explains the visitors' ride).
struct CounterEntry {
  std::string_view key;   // its bytes follow the entry in the arena
  int64_t delta = 0;      // 0: none (undone, or only visitors)
  std::unique_ptr<UniqueSketch> visitors;  // its unique record's, once a "~" line named it
};

class CounterIndex {
 public:
  explicit CounterIndex(TableArena* arena) : arena_(arena) {}
  CounterIndex(const CounterIndex&) = delete;
  CounterIndex& operator=(const CounterIndex&) = delete;
  // Destroys the entries (their sketches are on the heap); the arena frees
  // the bytes. A day without sketches need not run it (mem_table.h).
  ~CounterIndex();

  static uint64_t Hash(std::string_view key);

  // Asks the CPU for the slot where `hash` starts: a batch calls it several
  // lines ahead of FindOrMake for the same hash, then PrefetchEntry (which
  // reads that slot, arrived by then, and asks for its entry) a few lines
  // ahead, so that a hit finds its key in cache too.
  void Prefetch(uint64_t hash) const;
  void PrefetchEntry(uint64_t hash) const;

  CounterEntry* Find(std::string_view key, uint64_t hash) const;
  // The entry of `key`, made (delta 0) when new; *made says which.
  CounterEntry* FindOrMake(std::string_view key, uint64_t hash, bool* made);

  // Room for `entries` without growing.
  void Reserve(size_t entries);
  size_t size() const { return size_; }
  bool empty() const { return size_ == 0; }

  // Every entry, in slot order (no key order); the next entries are asked
  // for ahead, as the slots give them.
  template <typename Fn>
  void ForEach(Fn&& fn) const {
    constexpr size_t kAhead = 8;
    for (size_t i = 0; i < capacity_; ++i) {
      if (i + kAhead < capacity_ && slots_[i + kAhead].entry != nullptr) __builtin_prefetch(slots_[i + kAhead].entry);
      if (slots_[i].entry != nullptr) fn(static_cast<const CounterEntry&>(*slots_[i].entry));
    }
  }

 private:
  struct Slot {
    uint64_t hash;
    CounterEntry* entry;  // nullptr: empty
  };

  size_t Home(uint64_t hash) const { return hash & (capacity_ - 1); }
  // Doubles (or first sizes) the slot array to hold `entries` at 3/4 full.
  void Grow(size_t entries);
  // Whether a slot array of `capacity` is a block of its own (see above).
  static bool InBlock(size_t capacity);

  TableArena* arena_;
  Slot* slots_ = nullptr;
  size_t capacity_ = 0;  // a power of two, or 0
  size_t size_ = 0;
};

}  // namespace clickatron::realtime
