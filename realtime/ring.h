// The Today / Yesterday / Tomorrow ring of day stores (docs/protocols.md).
//
// Positions after rotating to Today = D: Yesterday = D-1, Today = D,
// Tomorrow = D+1. A day that leaves those positions unexported is "retained":
// still readable, no longer open, cleared only once POST /exported says a
// deployed archive holds it (at once, then). An exported day still in a
// position is cleared when rotation moves it out. Data is never dropped
// silently.
//
// Open days (take increments): Today, Tomorrow, and Yesterday until an export
// seals it. Lookups go to Today. Today and Tomorrow cannot be sealed.
//
// The ring state (Today, and per day: sealed / exported / being cleared /
// cleared) is persisted in the store's metadata with a synced write before
// any column family is created or dropped, and Open() finishes whatever a
// crash interrupted, so it survives kill -9 at any point.
//
// Watermarks: a batch is applied to memory with its (source → seq) applied
// watermark, and persisted by checkpoint with the durable one
// (checkpointer.h), so a batch is applied exactly once: iff seq >
// applied(source). A restart starts again from the durable watermarks.
//
// Days with records still in memory are not dropped: a clear decided then
// is finished after the next checkpoint.
//
// Archived through L: the deployed archive holds every day up to L (its
// manifests' last_day), learned from the archive when the daemon starts and
// from the rebuild after each deploy (POST /archived). A day at or before L
// is never open, whatever this store remembers: a store that was wiped and
// comes back with that day as its Yesterday must not take the API's re-sent
// lines for it (they would be counted again, docs/operations.md), and such a
// day is marked exported, since the archive holds it.
//
// Thread-safety: not thread-safe; the server's loop thread owns the Ring.
#pragma once

#include <cstdint>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "apply_batch.h"
#include "checkpointer.h"
#include "clickatron/status.h"
#include "record_scan.h"
#include "scan_cache.h"
#include "shard_store.h"

namespace clickatron::realtime {

enum class Position { kYesterday, kToday, kTomorrow, kRetained };
const char* PositionName(Position position);

struct DayState {
  bool sealed = false;    // export started: no more increments
  bool exported = false;  // a deployed archive holds the day: may be cleared
  bool clearing = false;  // drop decided, maybe not done (crash recovery)
  bool cleared = false;   // dropped; the entry stays while the day holds a position
};

struct ApplyOutcome {
  size_t applied = 0;     // lines applied now
  bool duplicate = false;
  uint64_t seq = 0;       // the batch's seq, or the watermark for a duplicate
};

struct RotateReport {
  int64_t from = 0;
  int64_t to = 0;
  std::vector<int64_t> created;
  std::vector<int64_t> cleared;
  std::vector<int64_t> retained;  // left the positions unexported
};

struct RingCounters {
  uint64_t batches_applied = 0;
  uint64_t increments_applied = 0;  // counter lines
  uint64_t lookups_applied = 0;
  uint64_t uniques_applied = 0;     // unique-record (sketch) lines
  uint64_t duplicate_batches = 0;
  uint64_t day_not_open_batches = 0;
  uint64_t rotations = 0;
  uint64_t days_cleared = 0;
};

class Ring {
 public:
  // Loads the ring state from `store` (a new store starts with Today =
  // `clock_today`) and brings the store's days in line with it.
  // `scan_cache`: the cache of stored records that /mfwmatch scans share
  // (scan_cache.h).
  static Result<std::unique_ptr<Ring>> Open(ShardStore* store, int64_t clock_today,
                                            CheckpointOptions checkpoints = {}, ScanCacheOptions scan_cache = {});

  int64_t today() const { return today_; }
  Position PositionOf(int64_t day) const;
  bool IsOpen(int64_t day) const;
  std::vector<int64_t> OpenDays() const;
  // Days with a store to read (open, sealed or retained; not cleared), ascending.
  std::vector<int64_t> ReadableDays() const;
  const std::map<int64_t, DayState>& days() const { return days_; }

  // The applied watermark (in memory) and the durable one (persisted).
  uint64_t Watermark(const std::string& source) const { return checkpointer_->Applied(source); }
  uint64_t DurableWatermark(const std::string& source) const { return checkpointer_->Durable(source); }
  const std::map<std::string, uint64_t>& watermarks() const { return checkpointer_->applied(); }
  // Applies the batch with its watermark, or reports it a duplicate.
  // 409 DAY_NOT_OPEN (nothing applied) when a line's day is not open;
  // 503 MEMORY_FULL (nothing applied) while the memory budget is used up;
  // 503 STORE_MISSING when an open day's store could not be created.
  Result<ApplyOutcome> Apply(const std::string& source, uint64_t seq, const ParsedBatch& batch);

  // Finishes what a failed step left: a position without its store (a
  // failed rotation), a clear that waited or failed. Called every tick.
  Status Tick();

  // Forward only: 409 ROTATE_BACKWARDS for an earlier day; same day: no-op.
  Result<RotateReport> RotateTo(int64_t new_today);
  // Seals a day for export. 404 DAY_NOT_IN_RING, 409 DAY_STILL_CURRENT for
  // Today and Tomorrow. Sealing a sealed day is OK.
  Status Seal(int64_t day);
  // The rebuild's mark: the day is in a deployed archive. Returns the day's
  // state after: "exported" (still in a position: cleared when it leaves),
  // "cleared" (retained: cleared now), "absent" (no such day: nothing to do).
  // 409 NOT_SEALED for a day never exported.
  Result<std::string> MarkExported(int64_t day);
  // 404 DAY_NOT_IN_RING, 409 NOT_EXPORTED.
  Status Clear(int64_t day);
  // The deployed archive holds every day through `day`: raises the mark
  // (never lowers it) and marks every day at or before it exported.
  Status NoteArchivedThrough(int64_t day);
  std::optional<int64_t> archived_through() const { return archived_through_; }
  // The generation the rebuild last said every archive replica serves
  // (POST /archived, /exported): raised, never lowered, and persisted, so
  // that a restarted shard still says it (an API node started beside it
  // would otherwise take a replica restored to an older file for the
  // archive). 0: none said yet.
  Status NoteArchiveGeneration(uint64_t generation);
  uint64_t archive_generation() const { return archive_generation_; }
  // The newest day this store may hold no more of because a deployed
  // archive holds it: archived_through() or the newest day marked exported,
  // whichever is later (nullopt: none). Read answers say it, so that an API
  // node never adds an archive answer that lacks such a day to realtime's
  // (docs/protocols.md, "What realtime hands over").
  std::optional<int64_t> HandedOverThrough() const;

  // Reads over the readable days, or only `only_day`; scans also only the
  // days after `after` (a reader that has those days from the archive).
  Result<std::optional<std::string>> Get(std::string_view key, std::optional<int64_t> only_day) const;
  // A scan without a limit reads through the scan cache, as ScanMany does.
  // `unite_days`: record_scan.h's ScanPrefix.
  Result<std::unique_ptr<LineSource>> Scan(std::string_view prefix, std::optional<int64_t> only_day,
                                           uint64_t limit, std::optional<int64_t> after = std::nullopt,
                                           bool unite_days = false) const;
  // Several prefixes (sorted and disjoint: DisjointPrefixes) in one scan
  // (record_scan.h's ScanPrefixes).
  Result<std::unique_ptr<LineSource>> ScanMany(std::vector<std::string> prefixes, std::optional<int64_t> only_day,
                                               std::optional<int64_t> after = std::nullopt,
                                               bool unite_days = false) const;
  // REQUIRES: Seal(day) succeeded. 503 NOT_PERSISTED while records of the
  // day are still in memory (Checkpointer::WhenPersisted first).
  Result<std::unique_ptr<LineSource>> Export(int64_t day) const;

  const RingCounters& counters() const { return counters_; }
  ShardStore& store() const { return *store_; }
  Checkpointer& checkpointer() const { return *checkpointer_; }
  ScanCache::Figures scan_cache_figures() const { return scan_cache_->figures(); }
  // "open" | "sealed" | "exported" for /ring.
  static const char* StateName(const DayState& state);

 private:
  Ring(ShardStore* store, ScanCacheOptions scan_cache)
      : store_(store), scan_cache_(std::make_shared<ScanCache>(scan_cache)) {}
  Status Load(int64_t clock_today, CheckpointOptions checkpoints);
  Status Persist();
  // Creates and drops column families until the store matches days_.
  Status Reconcile();
  bool InPositions(int64_t day) const { return day >= today_ - 1 && day <= today_ + 1; }
  std::vector<int64_t> ReadDays(std::optional<int64_t> only_day, std::optional<int64_t> after = std::nullopt) const;

  ShardStore* store_;
  int64_t today_ = 0;
  std::map<int64_t, DayState> days_;
  std::optional<int64_t> archived_through_;
  uint64_t archive_generation_ = 0;
  std::optional<int64_t> exported_max_;  // the newest day MarkExported ever marked (persisted)
  std::unique_ptr<Checkpointer> checkpointer_;
  std::shared_ptr<ScanCache> scan_cache_;  // shared with the scans that fill it (they may outlive the ring)
  RingCounters counters_;
};

}  // namespace clickatron::realtime
