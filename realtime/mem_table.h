// MemTable: the records of the open days that batches have added since the
// last checkpoint, held in memory (the hot tier; docs/protocols.md,
// "Realtime shard: memory and checkpoints").
//
// Applying a batch costs one hash lookup per line: a hot counter is one
// entry however many batches touch it, and reaches RocksDB once per
// checkpoint (checkpointer.h) as one merge operand, instead of once per
// batch. That is what moved a shard's apply rate from RocksDB's memtable
// skip list (one insert per line) to hash-table speed.
//
// Contents per UTC day:
//   counters  record key -> delta added since the last checkpoint, and the
//                           visitors added to its unique record ("~" + key)
//   lookups   "l|HASH"   -> full value (a put: the last one wins)
//
// A unique record rides on its counter's entry rather than taking a hash
// entry of its own: the API sends a record's "~" line right after its
// counter's line (one increment with uniq= names both), so the "~" line
// finds the entry the counter line just found, without a second lookup,
// index entry or key copy (ParseBatch marks such lines). Any other "~" line
// finds the entry by its key without the '~', or makes it with a delta of 0
// when its counter has none yet (reads and checkpoints skip a 0, as they
// skip an undone counter).
//
// Reads need the records of one key prefix in key order (fwmatch, the API's
// mfwmatch). A hash table has no order, so counters are also indexed by
// *group*: the key up to the first '.' after its '|' ("u|jehiah." holds the
// total's hours, "c.u|jehiah." every country's hours, and their unique
// records: "~u|jehiah." is read from the group "u|jehiah."). Every prefix the API
// scans is at least a group, so a scan sorts one group's keys (lazily, once
// per change), not the table; a shorter prefix (an operator's "u|je") walks
// the groups. New entries join their groups at the next read, not when
// applied: under keys never seen before, inserting each key's group at
// apply time was the loop thread's largest cost (16% of a shard's perf
// samples), paid even when nothing reads the table before its checkpoint.
//
// Atomicity: Apply() adds a whole batch or nothing (an int64 overflow undoes
// the lines already added; sketches and lookups are applied only after every
// counter fitted).
//
// Thread-safety: not thread-safe. The loop thread mutates the active table.
// A frozen table (one being checkpointed) has its records read by the loop
// thread (reads) and the checkpoint thread (CheckpointCounters, ForEach*);
// its group index (the pending entries, the groups, their lazy sort) and
// the arena that holds it are the loop thread's alone, which indexes and
// sorts there on reads. A frozen table never grows: the loop thread would
// unmap a slot array the checkpoint thread reads (counter_index.h).
#pragma once

#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <memory_resource>
#include <new>
#include <optional>
#include <string>
#include <string_view>
#include <unordered_map>
#include <vector>

#include "apply_batch.h"
#include "counter_index.h"
#include "clickatron/status.h"
#include "shard_store.h"
#include "table_arena.h"

namespace clickatron::realtime {

// Heterogeneous lookup: find a std::string key by string_view without a copy.
struct StringHash {
  using is_transparent = void;
  size_t operator()(std::string_view s) const { return std::hash<std::string_view>{}(s); }
};
struct StringEq {
  using is_transparent = void;
  bool operator()(std::string_view a, std::string_view b) const { return a == b; }
};

// The group of a record key (see above): the key up to and including the
// first '.' after its first '|'; the whole key when there is none.
std::string_view KeyGroup(std::string_view key);

class MemTable {
 public:
  MemTable() = default;
  MemTable(const MemTable&) = delete;
  MemTable& operator=(const MemTable&) = delete;

  // Adds every line (counters to their day, lookups to `lookup_day`).
  // 500 COUNTER_OVERFLOW (nothing applied) when a sum would pass int64.
  Status Apply(const ParsedBatch& batch, int64_t lookup_day);

  // The delta held for a counter (nullopt: none), a unique record's
  // sketch (`key` with its '~'), or a lookup's value.
  std::optional<int64_t> Counter(int64_t day, std::string_view key) const;
  const UniqueSketch* Sketch(int64_t day, std::string_view key) const;
  const std::pmr::string* Lookup(int64_t day, std::string_view key) const;

  // A cursor over one day's records starting with `prefix`, in key order,
  // values encoded as the store holds them (8-byte counters, binary sketches). It owns a copy
  // of what it returns: later Apply() calls do not change it.
  std::unique_ptr<StoreCursor> NewCursor(int64_t day, std::string_view prefix) const;

  // Makes `previous`'s days in this table, sizes their group indexes like
  // `previous`'s and the busiest day's counter index like its own (only the
  // busiest: yesterday's slots are not reserved again after midnight): a
  // table of new keys otherwise doubles its
  // slot array a dozen times, zero-filling twice what it ends with (page
  // zeroing under CounterIndex::Grow was 5.9% of a shard's CPU under
  // uniform keys). The reservation is in the table's bytes, so the budget
  // counts it (this was once left out because a checkpoint's arrays, then
  // uncounted, made it push a small shard past its bound).
  void ReserveLike(const MemTable& previous);

  bool empty() const { return keys() == 0; }
  // Whether the day has records (a day only reserved by ReserveLike has none).
  bool HasDay(int64_t day) const;
  // Entries (counter keys, also one made for a unique record alone) plus
  // unique records plus lookups: what a checkpoint writes, give or take an
  // entry that holds only visitors.
  size_t keys() const { return entries_ + sketch_records_ + lookup_records_; }
  size_t sketch_records() const { return sketch_records_; }
  size_t lookup_records() const { return lookup_records_; }
  size_t keys(int64_t day) const;
  // What the memory budget is measured in: the heap the table holds (its
  // arena's chunks: entries with their keys, slots, lookups' hash nodes,
  // the group index; and its sketches), plus what checkpointing it will
  // take beside it (kCheckpointBytesPer* a record). A checkpoint's
  // arrays grow with the table, not with anything fixed: left out, they
  // took a 64 MiB shard past its budget plus overhead.
  size_t bytes() const {
    return arena_.bytes() + sketch_bytes_ + entries_ * kCheckpointBytesPerCounter +
           sketch_records_ * kCheckpointBytesPerSketch + lookup_records_ * kCheckpointBytesPerLookup;
  }
  // A checkpoint's working memory per record (Checkpointer::RunJob,
  // ShardStore::Write, WriteCheckpointFile). A counter: its SortableCounter
  // (CheckpointCounters), sorted in place. A unique record: its
  // StoreWrite::Unite, a pointer to it in its day's list, and its sort form
  // (the size of a SortableCounter). A lookup: its StoreWrite::Put and a pointer.
  static constexpr size_t kCheckpointBytesPerCounter = sizeof(SortableCounter);
  static constexpr size_t kCheckpointBytesPerSketch =
      sizeof(StoreWrite::Unite) + sizeof(void*) + sizeof(SortableCounter);
  static constexpr size_t kCheckpointBytesPerLookup = sizeof(StoreWrite::Put) + sizeof(void*);

  // Every counter, day by day, in no particular key order: the arrays a
  // checkpoint sorts and writes (StoreWrite::day_counters), made in one
  // walk of each day's entries.
  std::map<int64_t, SortableCounters> CheckpointCounters() const;
  // Every other record, day by day (ascending), in no particular key order.
  void ForEachLookup(const std::function<void(int64_t day, std::string_view key, std::string_view value)>& fn) const;
  // Every unique record: `counter_key` is its key without the '~' (the
  // table holds no "~" key to point into).
  void ForEachSketch(
      const std::function<void(int64_t day, std::string_view counter_key, const UniqueSketch& sketch)>& fn) const;

 private:
  // A counter key's entry (see above), found through its day's
  // CounterIndex (counter_index.h). Entries, their keys, the index and the
  // group index live in the table's arena (table_arena.h); sketches on the
  // heap.
  using Entry = CounterEntry;
  struct Group {
    using allocator_type = std::pmr::polymorphic_allocator<>;
    explicit Group(const allocator_type& arena) : entries(arena) {}
    std::pmr::vector<const Entry*> entries;  // the day's entries (stable addresses)
    bool sorted = true;
  };
  struct Day {
    explicit Day(TableArena* arena)
        : counters(arena), lookups(arena), groups(arena), unindexed(arena) {}
    CounterIndex counters;
    std::pmr::unordered_map<std::pmr::string, std::pmr::string, StringHash, StringEq> lookups;
    mutable std::pmr::unordered_map<std::string_view, Group, StringHash, StringEq> groups;
    mutable std::pmr::vector<const Entry*> unindexed;  // new entries not in `groups` yet
    size_t sketches = 0;  // entries with visitors
  };
  // A Day in place, destroyed only when it holds heap of its own (sketches):
  // everything else it holds lives in the arena, which frees it whole, so a
  // checkpointed table goes without walking its million nodes (that walk
  // was 17% of a shard's CPU under new keys, some of it on the loop thread).
  class DaySlot {
   public:
    explicit DaySlot(TableArena* arena) { new (storage_) Day(arena); }
    DaySlot(const DaySlot&) = delete;
    DaySlot& operator=(const DaySlot&) = delete;
    ~DaySlot() {
      if (day().sketches > 0) day().~Day();
    }
    Day& day() { return *std::launder(reinterpret_cast<Day*>(storage_)); }
    const Day& day() const { return *std::launder(reinterpret_cast<const Day*>(storage_)); }

   private:
    alignas(Day) unsigned char storage_[sizeof(Day)];
  };

  Day& DayFor(int64_t day);
  // The entry of `key` (a counter key; `hash` its CounterIndex::Hash), made
  // and indexed when new.
  Entry& EntryFor(Day& day, std::string_view key, uint64_t hash);
  // Adds `delta` to a counter's entry (made when new) and sets `*entry`.
  // False, with nothing changed, on overflow.
  bool Add(Day& day, std::string_view key, uint64_t hash, int64_t delta, Entry** entry);
  // Takes back an Add() of a batch that failed later on.
  void Undo(Day& day, std::string_view key, int64_t delta);
  void Unite(Day& day, Entry& entry, const UniqueSketch& sketch);
  // Counts a new entry and queues it for its group's index.
  void Index(Day& day, const Entry* entry);
  // Puts the day's queued entries in their groups (a prefix scan's first
  // step; the loop thread's, like the lazy sort). An allocation failure here
  // ends the process (nothing catches it on the loop), so a half-done pass
  // is never read.
  static void IndexPending(const Day& day);

  TableArena arena_;  // before days_: outlives the maps that live in it
  std::map<int64_t, DaySlot> days_;
  size_t entries_ = 0;
  size_t sketch_records_ = 0;
  size_t lookup_records_ = 0;
  size_t sketch_bytes_ = 0;  // the sketches' heap (the rest is the arena's)
};

}  // namespace clickatron::realtime
