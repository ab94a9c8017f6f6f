// RealtimeServer: clickatron-realtime's HTTP face. Handlers only: parse the
// request, call the Ring, map the Status to an answer. The wire contract is
// docs/protocols.md ("API node → realtime shard", "Realtime reads").
//
// Everything runs on the HttpServer's loop thread: a batch is applied to the
// in-memory table (a hash lookup per line), which keeps the code simple and
// every batch strictly ordered; only checkpoints touch the disk, on their
// own thread (checkpointer.h).
#pragma once

#include <cstdint>
#include <memory>
#include <optional>
#include <map>
#include <set>
#include <string>
#include <vector>

#include "clickatron/clock.h"
#include "clickatron/daemon.h"
#include "clickatron/http_server.h"
#include "clickatron/serial_executor.h"
#include "clickatron/status.h"
#include "recovery_gate.h"
#include "ring.h"
#include "shard_store.h"
#include "tombstones.h"

namespace clickatron::realtime {

// Counters the server keeps besides the Ring's.
struct ServerCounters {
  uint64_t bad_batches = 0;
  uint64_t exports_started = 0;
  uint64_t exports_completed = 0;
  uint64_t exports_failed = 0;
  uint64_t export_lines = 0;
  uint64_t watermark_mismatches = 0;
  uint64_t unknown_sources = 0;  // batches refused: source not an API member
  uint64_t watermark_resets = 0; // POST /watermark/reset that lowered a watermark
  uint64_t tombstone_refusals = 0;      // batches refused while a matching tombstone waited for its cut
  uint64_t tombstone_dropped_lines = 0; // lines a tombstone's cut took out of batches
  uint64_t tombstone_deleted_records = 0;  // stored records deleted by tombstones
};

class RealtimeServer {
 public:
  // Opens DATA_DIR/db, loads the ring, binds the listen address. Under the
  // cluster clock "system" the ring turns by `clock` (which must outlive the
  // server); under "manual" by POST /rotate alone.
  static Result<std::unique_ptr<RealtimeServer>> Create(const DaemonContext& context,
                                                        const Clock& clock = SystemClock::Instance());
  ~RealtimeServer();

  Status Run();
  uint16_t port() const { return http_->port(); }

 private:
  RealtimeServer() = default;
  void RegisterRoutes();
  bool ClockIsManual() const { return cluster_clock_ == "manual"; }
  // Ring::NoteArchivedThrough, refusing (ARCHIVE_AHEAD_OF_RING) an archive
  // that says it holds Today or later under the system clock.
  Status NoteArchivedThrough(int64_t through);
  // Under the cluster clock "system", rotates when clock_'s UTC date has moved on.
  void RotateByClock();

  void HandleIncr(const HttpExchangePtr& ex);
  void HandleWatermark(const HttpExchangePtr& ex);
  // Admin: POST /watermark/reset?source=S&seq=A&expect=W lowers a watermark
  // an API node is held on (docs/operations.md, "Watermark ahead").
  void HandleWatermarkReset(const HttpExchangePtr& ex);
  // True (and answered 503 SHARD_RECOVERING) while a restart after a crash
  // holds reads back.
  bool ReadsHeldBack(const HttpExchangePtr& ex);
  // A source's two watermarks, as every answer about it carries them.
  nlohmann::json Watermarks(const std::string& source) const;
  void HandleGet(const HttpExchangePtr& ex);
  void HandleMget(const HttpExchangePtr& ex);
  void HandleFwmatch(const HttpExchangePtr& ex);
  void HandleMfwmatchOnRing(const HttpExchangePtr& ex);
  void HandleRing(const HttpExchangePtr& ex);
  void HandleExport(const HttpExchangePtr& ex);
  // Streams a sealed day whose records are all persisted.
  void StartExport(const HttpExchangePtr& ex, int64_t day);
  void HandleExported(const HttpExchangePtr& ex);
  void SayHandover(const HttpExchangePtr& ex) const;
  bool NoteGenerationArg(const HttpExchangePtr& ex);
  // POST /archived?through=L (ring.h, "archived through").
  void HandleArchived(const HttpExchangePtr& ex);
  // Asks the archive's replicas how far the deployed archive reaches.
  void LearnArchivedThrough(const ClusterConfig& cluster);
  void HandleRotate(const HttpExchangePtr& ex);
  void HandleClear(const HttpExchangePtr& ex);
  // Deletions (tombstones.h; tombstone_http.cc): POST /tombstone installs
  // one and answers once the stores hold none of its records, POST
  // /tombstone/cut sets its cut, GET /tombstones lists them.
  void HandleTombstone(const HttpExchangePtr& ex);
  void HandleTombstoneCut(const HttpExchangePtr& ex);
  void HandleTombstones(const HttpExchangePtr& ex);
  // Deletes `t`'s records from every day's store (on tombstone_worker_: a
  // scan of every record of each day, which must not stall the loop).
  Result<uint64_t> DeleteTombstoneRecords(const Tombstone& t);
  // Answers every request waiting on tombstone `id`'s deletion run with
  // `answer` (a status, or the records it deleted) and ends the run.
  void AnswerTombstoneRun(const std::string& id, uint64_t epoch, const Result<uint64_t>& answer);

  nlohmann::json RingJson() const;
  nlohmann::json StatsJson() const;
  nlohmann::json MemoryPartsJson() const;
  std::string StatsPrometheus() const;

  std::string cluster_clock_;  // "system" or "manual" (the cluster file's clock)
  const Clock* clock_ = nullptr;
  std::string member_;
  uint64_t memory_budget_bytes_ = 0;  // [realtime] memory_budget_mb: the whole shard's bound
  // The cluster file's API members: the only sources whose batches count.
  std::set<std::string, std::less<>> api_sources_;
  // Declaration order is destruction order reversed: the Ring first (its
  // checkpoint thread hands results to the HTTP server's loop, so it must
  // stop while that server exists), then the HTTP server (streams still
  // holding a cursor keep the database open themselves), the store last.
  std::unique_ptr<ShardStore> store_;
  ServerCounters counters_;
  std::unique_ptr<HttpServer> http_;
  std::unique_ptr<Ring> ring_;
  std::unique_ptr<Tombstones> tombstones_;
  std::optional<RecoveryGate> recovery_;
  // Tombstone id -> the requests waiting on its deletion run (loop thread).
  // One run at a time per id: an install retried while a run is out joins
  // it, for a second run queued behind the first would scan again after the
  // API had the answer and sent the cut, and delete records acknowledged
  // after the deletion.
  std::map<std::string, std::vector<HttpExchangePtr>, std::less<>> tombstone_runs_;
  // Declared last, so destroyed (joined) first, while the loop's server exists.
  std::unique_ptr<SerialExecutor> tombstone_worker_;
};

}  // namespace clickatron::realtime
