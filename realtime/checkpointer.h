// Checkpointer: applies batches to memory and persists them by checkpoint
// (docs/protocols.md, "Realtime shard: memory and checkpoints").
//
// The API's oplog is the write-ahead log of the cluster, so a shard need not
// write every batch to disk: it adds each batch to the *active* MemTable and
// raises the source's *applied* watermark. A checkpoint then
//   1. on the loop thread: freezes the active table (a fresh one takes new
//      batches), takes a store snapshot, and notes every source's applied
//      watermark — O(1), nothing waits for the disk;
//   2. on the checkpoint thread: writes the frozen table and those
//      watermarks as one sorted file per column family and ingests them
//      together, atomically and durably (shard_store.h);
//   3. back on the loop thread: the noted watermarks become *durable*, the
//      frozen table and the snapshot are dropped.
// At most one checkpoint runs at a time. Reads meanwhile see the store as of
// the snapshot plus the frozen and the active table (ReadView), so a record
// is never counted twice, whether the write has landed yet or not.
//
// After a crash the store holds the records of exactly its durable
// watermarks; the API re-sends its oplog above them.
//
// A checkpoint starts on the server's timer (checkpoint_interval_ms), when
// the active table passes half the memory budget, and when a caller waits
// for persistence (an export). While one is running and the tables together
// reach the budget, Admit() refuses batches (the API backs off and keeps
// them in its oplog).
//
// A failed checkpoint (a full disk, a read-only remount) keeps its frozen
// table and is retried on the next tick, resuming the store first: the
// durable watermarks stop rising, nothing counts twice (a failed write
// leaves nothing in the store: its files are ingested all together or not
// at all), and /stats and the log say why.
//
// Thread-safety: the loop thread calls everything; the checkpoint thread
// touches only the store and the frozen table, and `post` brings its results
// back to the loop. Unthreaded (unit tests), a checkpoint completes inside
// Start().
#pragma once

#include <chrono>
#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "apply_batch.h"
#include "clickatron/serial_executor.h"
#include "clickatron/status.h"
#include "mem_table.h"
#include "shard_store.h"

namespace clickatron::realtime {

using Runner = std::function<void(std::function<void()>)>;

struct CheckpointOptions {
  // Persist on a thread of the checkpointer's own, and hand results back
  // through `post` (the loop's RunInLoop). False: inline, inside Start()
  // (unit tests).
  bool threaded = false;
  Runner post;
  size_t memory_budget_bytes = size_t{256} << 20;
  // Fault injection (tests): when DIR/checkpoint-fail exists, checkpoints
  // fail before writing, as a full disk would; DIR/checkpoint-delay-ms (a number) stalls a
  // checkpoint that long after its records landed in the store, before it
  // completes on the loop. Empty: off.
  std::string fault_dir;
};

// What a read merges: the store (as of `at`, or now) and the tables.
struct ReadView {
  const ShardStore* store = nullptr;
  SnapshotPtr at;
  std::vector<const MemTable*> tables;
  // The ShardStore::version() of the state the view reads (`at`'s, or the
  // store's now): two views with the same number read the same stored
  // records (scan_cache.h).
  uint64_t store_version = 0;
};

struct CheckpointStats {
  uint64_t completed = 0;
  uint64_t failed = 0;
  uint64_t records_written = 0;   // counter and lookup records, all checkpoints
  uint64_t bytes_written = 0;     // table bytes persisted (MemTable::bytes())
  double last_seconds = 0;
  double max_seconds = 0;
  double total_seconds = 0;
  uint64_t refused_batches = 0;   // Admit() said no
  std::string last_error;         // empty once a checkpoint succeeds again
};

class Checkpointer {
 public:
  // `durable` holds the watermarks found in the store: applied starts there.
  Checkpointer(ShardStore* store, std::map<std::string, uint64_t> durable, CheckpointOptions options);
  ~Checkpointer();
  Checkpointer(const Checkpointer&) = delete;
  Checkpointer& operator=(const Checkpointer&) = delete;

  // False when the tables are at the memory budget: refuse the batch now.
  bool Admit();
  // Adds a batch to the active table and raises `source`'s applied
  // watermark to `seq`. REQUIRES: seq > Applied(source), days checked open.
  Status Apply(const std::string& source, uint64_t seq, const ParsedBatch& batch, int64_t lookup_day);

  uint64_t Applied(const std::string& source) const;
  uint64_t Durable(const std::string& source) const;
  const std::map<std::string, uint64_t>& applied() const { return applied_; }
  const std::map<std::string, uint64_t>& durable() const { return durable_; }

  // Starts a checkpoint when there is something to persist and none is
  // running; retries a failed one (the server's tick). Does nothing once
  // Drain() has begun.
  void Start();
  // Runs `done` (on the loop) once everything applied before this call is
  // durable, or with the error of the checkpoint that failed to make it so
  // (503 SHUTTING_DOWN once Drain() has started).
  void WhenPersisted(std::function<void(Status)> done);
  // Lowers `source`'s watermark from `expect` to `seq` (an operator's repair
  // after a watermark was raised past what its API node wrote;
  // docs/operations.md). Waits until no checkpoint holds older marks, then
  // the next checkpoint writes `seq`; only once that is durable do Applied
  // and Durable say `seq` (until then they say `expect`, and the server
  // refuses the source's batches: Lowering()). `done` runs then, or with the
  // checkpoint's error (the lowering stays pending and is retried with it).
  // WATERMARK_CHANGED (409) when the applied watermark is not `expect`.
  // REQUIRES: seq <= expect.
  void LowerWatermark(const std::string& source, uint64_t seq, uint64_t expect, std::function<void(Status)> done);
  // A lowering of `source` is waiting for its checkpoint.
  bool Lowering(const std::string& source) const;
  // Runs after every successful checkpoint (the Ring clears days then).
  void SetPersistedListener(std::function<void()> fn) { persisted_listener_ = std::move(fn); }
  // Blocks until everything applied is durable (shutdown). With threaded
  // runners, call only once the loop no longer runs.
  Status Drain();

  // Whether records of `day` are in memory (not yet durable).
  bool HoldsDay(int64_t day) const;
  ReadView View() const;

  size_t memory_bytes() const;
  size_t memory_budget_bytes() const { return options_.memory_budget_bytes; }
  size_t memory_keys() const;
  size_t memory_keys(int64_t day) const;
  bool running() const { return running_; }
  const CheckpointStats& stats() const { return stats_; }
  nlohmann::json StatsJson() const;

 private:
  struct Job;
  // Start(), but a failed job is retried only when `retry_failed` (the tick
  // and exports), not by every batch that finds the memory full.
  void StartJob(bool retry_failed);
  // Freezes the active table into job_.
  void Freeze();
  // Runs job_ (on the checkpoint thread, or inline).
  void Dispatch();
  void Finish(const std::shared_ptr<Job>& job);
  static void RunJob(ShardStore* store, const std::string& fault_dir, Job& job);
  void FireWaiters(uint64_t durable_generation, const Status& failure);

  ShardStore* store_;
  CheckpointOptions options_;
  std::map<std::string, uint64_t> applied_;
  std::map<std::string, uint64_t> durable_;
  std::map<std::string, uint64_t> lowering_;  // source -> lowered watermark, not yet durable
  std::unique_ptr<MemTable> active_;
  std::shared_ptr<Job> job_;  // the frozen table's checkpoint: running, or failed and to retry
  bool running_ = false;
  bool draining_ = false;
  uint64_t next_generation_ = 1;  // the generation the next freeze gets
  struct Waiter {
    uint64_t generation;  // done once this generation is durable
    std::function<void(Status)> done;
  };
  std::vector<Waiter> waiters_;
  std::function<void()> persisted_listener_;
  CheckpointStats stats_;
  // Failures are logged once, then once a minute while they last (each
  // names a new staging file, so comparing messages would log every tick);
  // a failure of another code is logged at once.
  std::chrono::steady_clock::time_point failure_logged_at_{};
  StatusCode failure_logged_code_ = StatusCode::kOk;
  uint64_t failures_unlogged_ = 0;
  std::shared_ptr<int> alive_ = std::make_shared<int>(0);  // posted results check it
  std::unique_ptr<SerialExecutor> thread_;                  // declared last: joined first
};

}  // namespace clickatron::realtime
