// ShardStore: a realtime shard's RocksDB database: what the checkpoints
// (checkpointer.h) have persisted. With the files it uses (checkpoint_file.h,
// rocks_status.h) and counter_merge.cc it is the only code that includes
// RocksDB; everything above it sees days, keys and Status values.
//
// Layout on disk (DATA_DIR/db, one RocksDB database):
//   column family "day-YYYY-MM-DD"  that UTC day's records: counters as 8-byte
//                                   little-endian int64 (counter_merge.h),
//                                   lookups as their full value, unique
//                                   records ("~KEY") as binary sketches
//   default column family           metadata: "wm|SOURCE" -> decimal seq (the
//                                   durable watermark of each API node),
//                                   "ring" -> the ring state as JSON (ring.h)
//   DATA_DIR/db/checkpoint-staging  a checkpoint's files while they are made
//                                   (emptied at open: never ingested)
//
// Why one database with a column family per day rather than one database per
// day: a checkpoint touches several days (23:59 and 00:00 increments, lookups
// in Today beside counters for Yesterday), and a RocksDB ingestion of files
// (like a WriteBatch) is atomic only inside one database. Across the column
// families of one database it is atomic, so a checkpoint's records for every
// day and its watermarks commit together or not at all, and exactly-once
// needs nothing more. Clearing a day
// stays cheap (DropColumnFamily deletes its files), and metadata never mixes
// with records, so an export cannot leak a watermark.
//
// Durability: Write() makes a checkpoint durable in one step. It writes one
// sorted SST file per column family it touches (checkpoint_file.h) and
// ingests them all with one IngestExternalFiles call, which records them in
// the MANIFEST together or not at all: after a crash a store has exactly the
// records of the watermarks it holds. Checkpoint records never pass through
// a memtable, a WAL or a flush. The WAL is kept for the ring state (PutMeta),
// a few small synced writes a day. docs/benchmarks.md has the measurements
// that chose this (and, before it, a memtable write without the WAL and one
// atomic flush).
//
// Thread-safety: the server's loop thread calls everything, except Write()
// and Resume(), which the checkpoint thread calls, and DeleteMatching(),
// which the server's tombstone thread calls, each one at a time,
// for days the loop does not create or drop meanwhile (the Ring keeps days
// with unpersisted records). Cursors may outlive a DropDay of their day
// (they keep its data alive until destroyed) and even the ShardStore itself.
#pragma once

#include <bit>
#include <cstdint>
#include <cstring>
#include <functional>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "clickatron/huge_pages.h"
#include "clickatron/status.h"
#include "clickatron/unique_sketch.h"

namespace clickatron::realtime {

struct StoreOptions {
  // Every family's memtables in all (checkpoints do not pass through them),
  // charged to the block cache: at most half of block_cache_mb.
  int write_buffer_mb = 64;
  int block_cache_mb = 128;   // shared by every family: blocks, indexes, filters, write buffers
  // A checkpoint waits while a family it writes has this many files in level
  // 0 (0: RocksDB's level0_slowdown_writes_trigger), at most level0_wait_ms,
  // then fails with COMPACTION_BEHIND (retried). Tests lower them.
  int level0_wait_files = 0;
  int level0_wait_ms = 10'000;
  bool auto_compactions = true;  // tests: off, so level 0 only grows
};

// What the store's memory holds against its bounds (/stats "memory_parts").
struct StoreMemory {
  uint64_t block_cache_bytes = 0;          // everything charged: blocks, indexes, filters, write buffers
  uint64_t block_cache_pinned_bytes = 0;   // of which in use now (L0's indexes and filters, open reads)
  uint64_t block_cache_capacity_bytes = 0;
  uint64_t write_buffer_bytes = 0;         // memtables (within block_cache_bytes)
  uint64_t write_buffer_bound_bytes = 0;
};

// A consistent point-in-time view of the whole store (RocksDB snapshot);
// released when the last holder lets go.
class StoreSnapshot {
 public:
  explicit StoreSnapshot(uint64_t version) : version_(version) {}
  virtual ~StoreSnapshot() = default;
  // The store's version() when the snapshot was taken.
  uint64_t version() const { return version_; }

 private:
  uint64_t version_;
};
using SnapshotPtr = std::shared_ptr<const StoreSnapshot>;

// A key as a checkpoint file sorts it (checkpoint_file.cc): its first 16
// bytes as two big-endian words, zero-padded, beside the view of the whole
// key. The words compare as the bytes do (a key that ends sooner sorts
// first, as among strings), so a sort of a million new keys compares whole
// keys, where the table put them, only for the few that share 16 bytes.
struct SortKey {
  uint64_t high = 0;
  uint64_t low = 0;
  std::string_view key;

  explicit SortKey(std::string_view k) : key(k) {
    char bytes[16] = {};
    k.copy(bytes, sizeof bytes);
    std::memcpy(&high, bytes, 8);
    std::memcpy(&low, bytes + 8, 8);
    static_assert(std::endian::native == std::endian::little, "SortKey swaps bytes to big-endian");
    high = __builtin_bswap64(high);
    low = __builtin_bswap64(low);
  }
  bool operator<(const SortKey& o) const {
    if (high != o.high) return high < o.high;
    if (low != o.low) return low < o.low;
    return key < o.key;
  }
  // The words first: most keys differ there.
  bool operator==(const SortKey& o) const { return high == o.high && low == o.low && key == o.key; }
};

// A counter record as a checkpoint writes it: 40 bytes, the one array a
// checkpoint of the in-memory table makes per day (MemTable::CheckpointCounters).
struct SortableCounter {
  SortKey key;
  int64_t delta;
  bool operator<(const SortableCounter& o) const { return key < o.key; }
};
// A day's of them: a million under new keys, filled in one pass, so on huge
// pages (huge_pages.h).
using SortableCounters = std::vector<SortableCounter, HugePageAllocator<SortableCounter>>;

// One atomic, durable write (a checkpoint): every entry and the watermarks
// land together. Keys and values are views: they must outlive the Write()
// call only.
struct StoreWrite {
  struct Increment {
    int64_t day;
    std::string_view key;
    int64_t delta;
  };
  struct Put {
    int64_t day;
    std::string_view key;
    std::string_view value;
  };
  std::vector<Increment> increments;
  // Counters already by day in the form a checkpoint file sorts (the
  // checkpointer's: no other copy of a table's records is made). Write()
  // sorts and frees them.
  std::map<int64_t, SortableCounters> day_counters;
  std::vector<Put> puts;
  struct Unite {
    int64_t day;
    std::string_view counter_key;  // the unique record is "~" + counter_key
    const UniqueSketch* sketch;
  };
  std::vector<Unite> sketches;  // unique records: united with what is stored (a merge operand each)
  std::map<std::string, uint64_t> watermarks;  // source -> seq, written beside the records
  // Fault injection (tests): runs once the files are made (their paths), before
  // they are ingested; an error stops the write there (nothing ingested).
  std::function<Status(const std::vector<std::string>& files)> before_ingest;
};

// A forward cursor over one day's records in key order.
class StoreCursor {
 public:
  virtual ~StoreCursor() = default;
  virtual void Seek(std::string_view target) = 0;  // first key >= target
  virtual bool Valid() const = 0;
  virtual std::string_view key() const = 0;        // REQUIRES: Valid()
  virtual std::string_view raw_value() const = 0;  // REQUIRES: Valid(); see AppendValueText
  // A unique record's sketch when the cursor holds it decoded (the in-memory
  // table's): readers use it instead of decoding raw_value(). nullptr else.
  virtual const UniqueSketch* sketch() const { return nullptr; }
  // Whether raw_value() is a unique record's sketch text, not its stored
  // binary (the scan cache's, scan_cache.h): readers add it as text.
  virtual bool value_is_text() const { return false; }
  virtual void Next() = 0;
  // Not ok when iteration stopped on an error rather than at the end.
  virtual Status status() const = 0;
};

struct CursorOptions {
  bool bulk_scan = false;   // don't fill the block cache, read ahead (exports)
  // Every Seek's target holds its whole key part (ScansByKeyPrefix,
  // key_prefix.h) and the cursor is read only while its keys keep that
  // part: files without it are skipped by their prefix filters, and the
  // cursor ends where the part does. A cursor that crosses keys must not.
  bool by_key_prefix = false;
  std::string upper_bound;  // exclusive; empty: none
  SnapshotPtr at;           // read this snapshot (null: the latest state)
};

class ShardStore {
 public:
  // Opens (creating if needed) the database in `dir`, with every column family
  // found there.
  static Result<std::unique_ptr<ShardStore>> Open(const std::string& dir, const StoreOptions& options);
  ~ShardStore();
  ShardStore(const ShardStore&) = delete;
  ShardStore& operator=(const ShardStore&) = delete;

  // Days that have a column family, ascending.
  std::vector<int64_t> Days() const;
  bool HasDay(int64_t day) const;
  Status CreateDay(int64_t day);
  // Drops the day's column family: its data is gone for good once no cursor
  // holds it. Dropping a missing day is OK.
  Status DropDay(int64_t day);

  // Applies `write` atomically and durably (see above): all of it, or
  // nothing. A failed write may be retried with a copy of what it was
  // given (it takes `write` whole: its day_counters are sorted and freed).
  // Records of one key are folded (counters summed, sketches united, the
  // last put kept). REQUIRES: every day named in `write` exists.
  Status Write(StoreWrite write);
  // After an error (a full disk, a read-only remount) RocksDB refuses
  // writes until resumed; Resume() retries what failed.
  Status Resume();

  // The state now, for reads that must not see writes made after it.
  SnapshotPtr Snapshot() const;
  // A number that changes whenever the records of any day may have changed:
  // a Write() that reached its ingest (landed or not), a day created or
  // dropped. Two reads of one version read the same records (the realtime
  // scan cache, scan_cache.h, relies on it). Like Snapshot(), it names the
  // state only while no Write() runs (the checkpointer writes one at a time
  // and reads a snapshot meanwhile).
  uint64_t version() const;

  // A record's raw value (see AppendValueText), nullopt when absent.
  Result<std::optional<std::string>> Get(int64_t day, std::string_view key, const StoreSnapshot* at = nullptr) const;
  Result<std::unique_ptr<StoreCursor>> NewCursor(int64_t day, const CursorOptions& options) const;

  // Deletes every record of `day` whose key `matches` (a deletion,
  // tombstones.h): one synced write, after which no read sees them. Returns
  // how many were deleted. Any thread (it scans every record of the day:
  // the server runs it off the loop); REQUIRES: no checkpoint holds records
  // of those keys that are not yet written (the server waits for
  // Checkpointer::WhenPersisted and refuses such records meanwhile).
  Result<uint64_t> DeleteMatching(int64_t day, const std::function<bool(std::string_view key)>& matches);

  // Metadata (default column family). PutMeta with sync fsyncs the WAL.
  Result<std::optional<std::string>> GetMeta(std::string_view key) const;
  Status PutMeta(std::string_view key, std::string_view value, bool sync);
  // Every source's watermark, read from the metadata.
  Result<std::map<std::string, uint64_t>> LoadWatermarks() const;

  // Integer RocksDB properties ("rocksdb.estimate-num-keys"…): of one day, or
  // summed over the whole database. nullopt when unknown.
  std::optional<uint64_t> DayProperty(int64_t day, const std::string& property) const;
  std::optional<uint64_t> DbProperty(const std::string& property) const;
  // Thread-safe.
  StoreMemory Memory() const;

  const std::string& dir() const { return dir_; }

 private:
  struct Impl;
  ShardStore(std::string dir, std::unique_ptr<Impl> impl);
  std::string dir_;
  std::unique_ptr<Impl> impl_;
};

inline constexpr std::string_view kWatermarkPrefix = "wm|";

// True for "l|…" keys: their value is a string. "~…" keys (IsUniqueKey in
// record.h) hold a binary UniqueSketch; every other record is a counter.
bool IsLookupKey(std::string_view key);
// Appends a stored record's value as it appears after the comma of a line:
// counters in decimal, lookups as stored, sketches as text. Corruption for a
// counter that is not 8 bytes or a sketch that does not decode.
Status AppendValueText(std::string_view key, std::string_view raw, std::string* out);
// The column family name of a day ("day-2012-03-25"), and back.
std::string DayFamilyName(int64_t day);
std::optional<int64_t> DayFromFamilyName(std::string_view name);

}  // namespace clickatron::realtime
