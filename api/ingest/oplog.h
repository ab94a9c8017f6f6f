// The API node's operation log (docs/protocols.md): every combined batch is appended
// here, with its shard and per-shard seq, and made durable before any client
// of that flush window gets its OK. It is the only state the write path keeps:
// after a crash, what a shard has not acknowledged (its watermark) is re-sent
// from here.
//
// Files (DATA_DIR/oplog): framed-log segments "oplog-<id>.log"; a segment is
// closed when it passes oplog_segment_bytes, then gzipped to ".log.gz" in the
// background (the gzip at idle CPU priority: under a full load it waits). Every segment starts with a checkpoint record (the last seq of
// every shard so far), so the newest segment alone gives the next seq even
// after older ones are deleted. A closed segment is deleted once every shard
// has acknowledged every batch in it and oplog_retention_hours have passed.
//
// Group commit: Commit() hands batches to a writer thread, which appends
// everything queued, then fdatasyncs once (policy "always") and only then
// reports back on the event loop, so the loop keeps serving during the fsync.
// "interval" reports after the write and syncs every oplog_sync_interval_ms;
// "none" never syncs (the OS decides; a power cut can lose acknowledged data).
//
// Thread-safety: Commit, Acknowledge, durable_seq, ReadBatches, the stats and
// Stop may be called from any thread; callbacks run through `post` (the loop).
#pragma once

#include <atomic>
#include <condition_variable>
#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <thread>
#include <vector>

#include <nlohmann/json.hpp>

#include "clickatron/clock.h"
#include "clickatron/framed_log.h"
#include "clickatron/oplog_record.h"
#include "clickatron/status.h"
#include "clickatron/serial_executor.h"

namespace clickatron::api {

enum class SyncPolicy { kAlways, kInterval, kNone };
Result<SyncPolicy> ParseSyncPolicy(std::string_view text);

// One combined batch for one shard: what is sent as POST /incr?seq=N.
struct OplogBatch {
  uint32_t shard = 0;
  uint64_t seq = 0;
  std::string lines;     // realtime lines, each ending in '\n'
  size_t line_count = 0;
};
using BatchPtr = std::shared_ptr<OplogBatch>;

struct OplogOptions {
  std::string dir;     // DATA_DIR/oplog
  std::string source;  // this API member's name, recorded in every batch
  uint32_t shard_count = 1;
  SyncPolicy sync = SyncPolicy::kAlways;
  int sync_interval_ms = 100;
  uint64_t segment_bytes = 64u << 20;
  int retention_hours = 48;
  // Stamps a segment when it closes and decides when it is past retention.
  // Must outlive the Oplog.
  const Clock* clock = &SystemClock::Instance();
  // Per shard, the highest seq the shard confirmed durable (the API's
  // durable-shard-N markers; empty: not known). A closed segment found
  // damaged at Open whose every batch is at or below it is set aside
  // (renamed *.damaged) instead of stopping the node: nothing in it is
  // needed any more.
  std::vector<uint64_t> acknowledged_seq;
  // Tests only ([api] fault_injection): while FAULT_DIR/oplog-stall exists
  // the writer holds the commits queued (at most a minute).
  std::string fault_dir;
};

class Oplog {
 public:
  using Post = std::function<void(std::function<void()>)>;

  // Scans every segment: cuts a torn tail, and refuses (CORRUPTION, with the
  // file and offset) a damaged record anywhere else — never skips one. Then
  // starts a new segment.
  static Result<std::unique_ptr<Oplog>> Open(OplogOptions options, Post post);
  ~Oplog();
  Oplog(const Oplog&) = delete;
  Oplog& operator=(const Oplog&) = delete;

  // Highest seq found per shard at Open: new seqs must start above it.
  const std::vector<uint64_t>& recovered_last_seq() const { return recovered_last_seq_; }

  // Appends the batches in order (seqs ascending per shard), then a commit
  // frame recording `keys` (the Idempotency-Key values of the requests this
  // commit answers: durable exactly when the batches are), and runs `done`
  // through `post` once they are as durable as the policy promises.
  void Commit(std::vector<BatchPtr> batches, std::vector<CommittedKey> keys, std::function<void(Status)> done);
  void Commit(std::vector<BatchPtr> batches, std::function<void(Status)> done) {
    Commit(std::move(batches), {}, std::move(done));
  }
  // The keys of every commit frame found at Open, with the unix time of
  // their commit, oldest first. Taken once (moved out).
  std::vector<std::pair<CommittedKey, int64_t>> TakeRecoveredKeys() { return std::move(recovered_keys_); }
  // Batches found after a segment's last commit frame at Open (never
  // acknowledged: a crash between the appends of one commit), cut.
  uint64_t uncommitted_batches_cut() const { return uncommitted_batches_cut_; }
  // Damaged segments found at Open whose batches every shard had confirmed
  // durable: renamed *.damaged and left out.
  uint64_t damaged_segments_set_aside() const { return damaged_segments_set_aside_; }
  // Highest seq of `shard` that survives a power cut (fsynced; with "none":
  // written). Only batches up to it may be sent.
  uint64_t durable_seq(uint32_t shard) const { return durable_seq_[shard].load(std::memory_order_acquire); }
  // The lowest seq of `shard` the oplog still holds (0: none): no batch
  // below it can be read again.
  uint64_t OldestSeq(uint32_t shard) const;
  // Runs on the loop whenever a background sync advances durable_seq.
  void SetDurableListener(std::function<void()> fn);

  struct ReadResult {
    std::vector<BatchPtr> batches;
    uint64_t scanned_to = 0;  // every batch of the shard with after < seq <= scanned_to was returned
  };
  // Batches of `shard` with after < seq <= upto, in seq order, stopping after
  // about max_lines lines. Blocking file reads: call off the loop.
  Result<ReadResult> ReadBatches(uint32_t shard, uint64_t after, uint64_t upto, size_t max_lines) const;

  // Every batch of `shard` up to `seq` has been handled (applied by the shard
  // or moved to late data). Until each shard has acknowledged once, nothing
  // is deleted.
  void Acknowledge(uint32_t shard, uint64_t seq);
  // Deletes closed segments that are fully acknowledged and past retention
  // (in the background); then runs `done`, if given, on the background
  // thread with the number deleted.
  void CollectGarbage(std::function<void(size_t deleted)> done = {});

  bool failed() const { return failed_.load(); }
  nlohmann::json StatsJson() const;

  // Finishes queued commits, syncs, closes. Idempotent.
  void Stop();

 private:
  struct Segment {
    uint64_t id = 0;
    bool compressed = false;
    bool closed = false;
    int64_t closed_unix = 0;
    uint64_t bytes = 0;
    std::vector<uint64_t> min_seq, max_seq;  // per shard; 0: none
  };
  struct PendingCommit {
    std::vector<BatchPtr> batches;
    std::vector<CommittedKey> keys;
    std::function<void(Status)> done;
  };

  Oplog(OplogOptions options, Post post);
  Status Scan();
  Status ScanSegment(Segment* seg);
  // A stop that synced and closed the segment it wrote leaves
  // DIR/clean-stop ({"segment", "bytes"}): that segment ended whole, so a
  // bad frame at its end at the next Open is damage, not a crash's torn
  // write, and is refused rather than cut (its batches were acknowledged).
  // Open removes it once the segments are read.
  std::string CleanStopPath() const { return OplogCleanStopPath(options_.dir); }
  void WriteCleanStop(uint64_t bytes);
  std::optional<OplogCleanStop> clean_stop_;  // read by Scan, for ScanSegment
  // Segment `id` could not be read (`damage`); `next` is the segment after
  // it. Sets it aside if every batch it can hold is acknowledged; else the
  // error that stops the start.
  Status SetAsideIfAcknowledged(uint64_t id, bool compressed, uint64_t next, bool next_compressed,
                                const Status& damage);
  Status StartSegment(uint64_t id);
  // Closes the current segment if it is full and starts the next.
  Status RollIfFull();
  // Appends a commit's batches, all or none (a failure cuts the ones
  // written back out of the segment).
  Status AppendCommit(const std::vector<BatchPtr>& batches, const std::vector<CommittedKey>& keys);
  void LogAppendFailure(const Status& st);  // rate-limited
  // The answer once the oplog has failed (an fsync, or a cut that did not
  // work): the increments may or may not be applied.
  static Status OplogFailed(const Status& cause);
  Status AppendBatch(const OplogBatch& batch);
  Status AppendCommitFrame(const std::vector<CommittedKey>& keys);
  Status SyncTimed();
  void WriterLoop();
  void HoldWhileFaultStall();
  size_t DeleteCollectableSegments();  // on background_
  void Compress(uint64_t id);  // on background_: gzips on compressor_
  void FinishCompress(uint64_t id, const std::string& plain, const Status& st);
  std::string SegmentPath(uint64_t id, bool compressed) const;
  std::vector<std::pair<int, uint64_t>> LastSeqs() const;

  OplogOptions options_;
  Post post_;
  std::vector<uint64_t> recovered_last_seq_;
  std::vector<std::pair<CommittedKey, int64_t>> recovered_keys_;  // Open only
  uint64_t uncommitted_batches_cut_ = 0;
  uint64_t damaged_segments_set_aside_ = 0;
  std::unique_ptr<std::atomic<uint64_t>[]> durable_seq_;

  // Writer thread only.
  std::unique_ptr<FramedLogWriter> current_;
  uint64_t current_id_ = 0;
  std::vector<uint64_t> written_seq_;  // per shard, appended so far
  bool dirty_ = false;                 // appended since the last sync
  uint64_t append_failures_unlogged_ = 0;                // writer thread only
  std::chrono::steady_clock::time_point last_append_failure_log_{};
  std::chrono::steady_clock::time_point last_sync_;

  mutable std::mutex mu_;
  std::condition_variable cv_;
  std::vector<PendingCommit> queue_;       // GUARDED_BY(mu_)
  bool stopping_ = false;                  // GUARDED_BY(mu_)
  std::map<uint64_t, Segment> segments_;   // GUARDED_BY(mu_)
  std::vector<uint64_t> acked_;            // GUARDED_BY(mu_), per shard
  std::vector<bool> acked_known_;          // GUARDED_BY(mu_)
  std::function<void()> durable_listener_; // GUARDED_BY(mu_)

  // Stats.
  std::atomic<bool> failed_{false};
  std::atomic<uint64_t> bytes_written_{0};
  std::atomic<uint64_t> records_written_{0};
  std::atomic<uint64_t> commits_{0};
  mutable std::mutex stats_mu_;
  uint64_t fsyncs_ = 0;                    // GUARDED_BY(stats_mu_)
  uint64_t fsync_total_us_ = 0;            // GUARDED_BY(stats_mu_)
  std::vector<uint32_t> fsync_window_us_;  // GUARDED_BY(stats_mu_), recent fsync latencies (ring)

  std::thread writer_;
  std::unique_ptr<SerialExecutor> background_;  // deletions, segment bookkeeping
  std::unique_ptr<SerialExecutor> compressor_;  // gzip, at idle priority
};

}  // namespace clickatron::api
