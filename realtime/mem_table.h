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
//   counters  record key -> delta added since the last checkpoint (> 0)
//   sketches  "~" key    -> the visitors added since the last checkpoint
//   lookups   "l|HASH"   -> full value (a put: the last one wins)
//
// Reads need the records of one key prefix in key order (fwmatch, the API's
// mfwmatch). A hash table has no order, so counters are also indexed by
// *group*: the key up to the first '.' after its '|' ("u|jehiah." holds the
// total's hours, "c.u|jehiah." every country's hours). Every prefix the API
// scans is at least a group, so a scan sorts one group's keys (lazily, once
// per change), not the table; a shorter prefix (an operator's "u|je") walks
// the groups.
//
// Atomicity: Apply() adds a whole batch or nothing (an int64 overflow undoes
// the lines already added; sketches and lookups are applied only after every
// counter fitted).
//
// Thread-safety: not thread-safe. The loop thread mutates the active table;
// a frozen table (one being checkpointed) is only read, by the loop thread
// (reads) and the checkpoint thread (ForEach*); the lazily sorted group
// index is touched by the loop thread only.
#pragma once

#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <unordered_map>
#include <vector>

#include "apply_batch.h"
#include "clickatron/status.h"
#include "shard_store.h"

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
  // sketch, or a lookup's value.
  std::optional<int64_t> Counter(int64_t day, std::string_view key) const;
  const UniqueSketch* Sketch(int64_t day, std::string_view key) const;
  const std::string* Lookup(int64_t day, std::string_view key) const;

  // A cursor over one day's records starting with `prefix`, in key order,
  // values encoded as the store holds them (8-byte counters, binary sketches). It owns a copy
  // of what it returns: later Apply() calls do not change it.
  std::unique_ptr<StoreCursor> NewCursor(int64_t day, std::string_view prefix) const;

  // Sizes the hash tables for about as many keys per day as `previous`
  // held: a fresh table after a checkpoint then grows without rehashing.
  void ReserveLike(const MemTable& previous);

  bool empty() const { return keys_ == 0; }
  // Whether the day has records (a day only reserved by ReserveLike has none).
  bool HasDay(int64_t day) const;
  std::vector<int64_t> Days() const;  // the days with records
  size_t keys() const { return keys_; }
  size_t keys(int64_t day) const;
  // An estimate of the heap the table holds (keys, values, hash nodes,
  // index): what the memory budget is measured in.
  size_t bytes() const { return bytes_; }

  // Every record, day by day (ascending), in no particular key order.
  void ForEachCounter(const std::function<void(int64_t day, std::string_view key, int64_t delta)>& fn) const;
  void ForEachLookup(const std::function<void(int64_t day, std::string_view key, std::string_view value)>& fn) const;
  void ForEachSketch(const std::function<void(int64_t day, std::string_view key, const UniqueSketch& sketch)>& fn) const;

 private:
  using CounterEntry = std::pair<const std::string, int64_t>;
  using SketchEntry = std::pair<const std::string, UniqueSketch>;
  // A group's keys are all counters or all sketches ("~" starts the group).
  struct Group {
    std::vector<const CounterEntry*> entries;  // the counters map's nodes (stable addresses)
    std::vector<const SketchEntry*> sketches;  // the sketches map's nodes
    bool sorted = true;
  };
  struct Day {
    std::unordered_map<std::string, int64_t, StringHash, StringEq> counters;
    std::unordered_map<std::string, UniqueSketch, StringHash, StringEq> sketches;
    std::unordered_map<std::string, std::string, StringHash, StringEq> lookups;
    mutable std::unordered_map<std::string_view, Group, StringHash, StringEq> groups;
  };

  Day& DayFor(int64_t day);
  // Adds `delta` to a counter, creating it (and indexing it) when new.
  // False, with nothing changed, on overflow.
  bool Add(Day& day, std::string_view key, int64_t delta);
  // Takes back an Add() of a batch that failed later on.
  void Undo(Day& day, std::string_view key, int64_t delta);
  void Unite(Day& day, std::string_view key, const UniqueSketch& sketch);
  // Puts a new entry in its group's index and counts it.
  template <typename Entry>
  void Index(Day& day, const Entry* entry, std::vector<const Entry*> Group::*list);

  std::map<int64_t, Day> days_;
  size_t keys_ = 0;
  size_t bytes_ = 0;
};

}  // namespace clickatron::realtime
