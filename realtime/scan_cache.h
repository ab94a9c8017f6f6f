// ScanCache: what the store held for one day under one key prefix, as a
// scan of the API's /mfwmatch read it, kept for the next scan of that prefix
// while the store has not changed since.
//
// Why: a dashboard's hot key is read many times a second, and each read of
// its realtime hours walked RocksDB again: a day of a busy key's subtotal
// records is a hundred or more entries, each found in every sorted run
// (checkpoint file) it is in since the last compaction, as a merge operand
// to fold. Writing checkpoints folded (a put per key, the stored value read
// first) was tried: it did not make these reads cheaper, since a scan still
// meets a key once per run, and it cost uniform-key ingest 31% (docs/
// benchmarks.md, 2026-12-07). Keeping the scan's result cuts a hot key's
// realtime read CPU to about a third. The store only
// changes when a checkpoint lands (every checkpoint_interval_ms) or a day is
// created or dropped, so between two of those the same scan reads the same
// records. Only the store's part is kept: the in-memory tables, which change
// with every batch, are read afresh and added on top as before
// (record_scan.h), so a read is as current as without the cache.
//
// Entries are stamped with the store version the scan read
// (ReadView::store_version, which changes whenever the records a view reads
// could): an entry of another version is a miss and is replaced. Least
// recently used out first, within a byte budget; 0 turns the cache off.
//
// Thread-safety: none; the loop thread only.
#pragma once

#include <cstddef>
#include <cstdint>
#include <limits>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "clickatron/lru_map.h"
#include "shard_store.h"

namespace clickatron::realtime {

// Keys and raw values in key order, packed in one buffer. A unique record's
// value is kept as its sketch text (value_is_text): every read sends it as
// text, and encoding a busy key's day of sketches again on every scan was
// 19% of a shard's perf samples answering /uniques for hot keys (bench-query).
class CachedRecords {
 public:
  // `max_bytes`: a recording that grows past it stops keeping records
  // (overflowed(): it is not kept), so a scan of a large prefix streams in
  // bounded memory as it did before the cache.
  explicit CachedRecords(size_t max_bytes = std::numeric_limits<size_t>::max()) : max_bytes_(max_bytes) {}
  void Add(std::string_view key, std::string_view raw_value);
  // A record already in its kept form (`text`: a unique record's sketch
  // text), past any max_bytes.
  void AddKept(std::string_view key, std::string_view value, bool text);
  bool overflowed() const { return overflowed_; }
  // Gives back what the buffers reserved beyond their records (the cache
  // charges capacity).
  void ShrinkToFit();
  size_t size() const { return items_.size(); }
  std::string_view key(size_t i) const { return std::string_view(data_).substr(items_[i].at, items_[i].key_size); }
  std::string_view value(size_t i) const {
    return std::string_view(data_).substr(items_[i].at + items_[i].key_size, items_[i].value_size);
  }
  // Whether value(i) is a unique record's sketch text rather than the
  // store's binary (a value whose form does not check is kept as stored, so
  // that the read reports it as before).
  bool value_is_text(size_t i) const { return items_[i].text; }
  // The first record whose key is >= target (size() when none).
  size_t LowerBound(std::string_view target) const;
  size_t bytes() const { return data_.capacity() + items_.capacity() * sizeof(Item); }

 private:
  struct Item {
    size_t at;
    uint32_t key_size;
    uint32_t value_size;
    bool text;
  };
  std::string data_;
  std::vector<Item> items_;
  size_t max_bytes_;
  bool overflowed_ = false;
};
using CachedRecordsPtr = std::shared_ptr<const CachedRecords>;

// A cursor over kept records; it shares them, so an eviction meanwhile does
// not end it.
std::unique_ptr<StoreCursor> NewCachedRecordsCursor(CachedRecordsPtr records);

// `hours` with each unique record's hours of one UTC day as one record, the
// union of their sketches keyed by the first hour (as unite=day reads them:
// record_scan.h); the other records as they are. nullptr when a sketch does
// not decode (the hours are read instead, which reports it).
std::shared_ptr<const CachedRecords> UniteDays(const CachedRecords& hours);

struct ScanCacheOptions {
  size_t max_bytes = size_t{64} << 20;  // 0: off
  // Scans that read fewer records are not kept. Reading a few records from
  // RocksDB costs about what a lookup in a large table does, and keeping
  // every key's few records would fill the table with entries that save
  // nothing: a key read once, or with little today, is cheaper to read
  // again (the benchmark's sparse keys ran slower with them kept). 8 keeps a
  // busy key's day of hours, which is where the reads' time went.
  size_t min_records = 8;
};

class ScanCache {
 public:
  explicit ScanCache(ScanCacheOptions options)
      : entries_(options.max_bytes), max_bytes_(options.max_bytes), min_records_(options.min_records) {}

  bool enabled() const { return max_bytes_ > 0; }
  // The records kept for (day, prefix) when a scan of store version
  // `version` made them; nullptr otherwise (an entry of another version is
  // dropped). Counts a hit or a miss.
  CachedRecordsPtr Find(int64_t day, std::string_view prefix, uint64_t version);
  // The same records as united for a unite=day read (UniteDays): made at the
  // first such read of an entry and kept beside its hours, charged with
  // them. Why: uniting a busy key's 24 sketches on every read cost the shard
  // more than sending them had cost the API. nullptr as Find, or when the
  // records do not unite (a miss: the store is read).
  CachedRecordsPtr FindUnited(int64_t day, std::string_view prefix, uint64_t version);
  // A recording for a scan to fill: it stops keeping records past what one
  // entry may hold (an eighth of the budget).
  std::shared_ptr<CachedRecords> NewRecording() const {
    return std::make_shared<CachedRecords>(max_bytes_ / 8);
  }
  // Keeps what a whole scan of (day, prefix) at `version` read (null: it
  // read nothing), if it read at least min_records and did not overflow,
  // unless a scan of a newer version has been seen (its records would be
  // stale at once).
  void Put(int64_t day, std::string_view prefix, uint64_t version, std::shared_ptr<CachedRecords> records);

  // Whether the store held no record of `day` at all at `version`, as a
  // scan found (NoteDayEmpty); nullopt: not known for that version. Why:
  // Tomorrow's store is empty until its first checkpoint, yet every read
  // named it, and an empty scan is never kept (min_records), so each read
  // opened a RocksDB iterator on it and missed: half of the lookups of a
  // benchmark of hot keys. A day's emptiness is one fact per version, not
  // one entry per prefix.
  std::optional<bool> DayEmpty(int64_t day, uint64_t version) const;
  void NoteDayEmpty(int64_t day, uint64_t version, bool empty);
  // A (day, prefix) a scan did not look up because its day is known empty
  // (neither a hit nor a miss).
  void CountEmptyDaySkip() { ++empty_day_skips_; }

  struct Figures {
    uint64_t hits = 0;
    uint64_t misses = 0;
    uint64_t empty_day_skips = 0;
    size_t entries = 0;
    size_t bytes = 0;  // charged: records, keys and a fixed overhead per entry
    size_t budget_bytes = 0;
  };
  Figures figures() const {
    return Figures{hits_, misses_, empty_day_skips_, entries_.size(), entries_.charged(), max_bytes_};
  }

  // What an entry is charged beyond its records and key (list and hash
  // nodes, the shared records' control block).
  static constexpr size_t kEntryOverhead = 160;

 private:
  struct Entry {
    uint64_t version = 0;
    CachedRecordsPtr records;
    CachedRecordsPtr united;  // made at the first FindUnited; null before
  };
  // The entry key of (day, prefix), in key_ (reused: no allocation per lookup).
  std::string_view KeyOf(int64_t day, std::string_view prefix);
  // The entry of (day, prefix) made at `version`, or nullptr (one of an
  // older version is dropped). Counts nothing; leaves its key in key_.
  Entry* EntryOf(int64_t day, std::string_view prefix, uint64_t version);

  LruMap<Entry> entries_;
  size_t max_bytes_;
  size_t min_records_;
  uint64_t newest_version_ = 0;  // the highest version a Find or Put named
  struct DayFact {
    int64_t day;
    uint64_t version;
    bool empty;
  };
  std::vector<DayFact> day_facts_;  // one per day the ring reads (a handful)
  std::string key_;
  uint64_t hits_ = 0;
  uint64_t misses_ = 0;
  uint64_t empty_day_skips_ = 0;
};

}  // namespace clickatron::realtime
