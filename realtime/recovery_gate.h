// RecoveryGate: after a crash, a realtime shard answers no read until its
// senders have given back what it had applied and lost.
//
// A shard applies batches in memory and persists them at its checkpoints; a
// kill -9 loses what came after the last one (the API nodes still hold it in
// their oplogs and send it again). Reads are served from memory, so before
// the crash they counted those batches: served from the checkpoint alone, a
// restarted shard would answer less than it already had (a "short 200": a
// probe read 37 such answers, a key's whole day missing, in the 40 ms
// before the API noticed the restart and re-sent).
//
// So a shard that did not stop cleanly holds its reads back (503
// SHARD_RECOVERING) until every API node whose batches it had persisted
// says, in a batch or a watermark poll (`heard=N`: the highest applied
// watermark that node ever heard from this shard), that the shard has
// applied all it had before: its watermark for that node is at least N (N
// is the highest seq the node may have sent: a batch applied just before
// the crash may never have been answered). An idle API node polls once a
// second, a busy one sends its next batch at once or after its retry
// backoff, so that is within about a second of the restart when they are
// up. One that does not answer (down, or gone from the cluster) would hold
// reads back for good: `max_wait` after the shard starts serving, or after
// the last batch of a re-send still under way, the gate opens anyway and
// logs whom it did not hear from. A day is not exported meanwhile (its
// export would seal it, and the re-sent lines would go to late data: the
// archive would hold the day short).
//
// A sender whose batches carry no `heard` (an older API node, a test acting
// as one) is taken at its word: its first batch releases it (`clickatron
// oplog replay` sends its oplog's last seq). A poll without `heard` (a tool,
// a look by hand) only reads and releases nothing. A node's very first batch is noted in the
// data dir (`sources`, one line a node, fsynced once), so a crash before
// any checkpoint persisted it still waits for that node. A last
// batch whose every line went to late data is never applied: the gate then
// waits out max_wait.
//
// Whether the last stop was clean is kept in a marker file in the data dir:
// written (durably) at start, removed at a clean stop once everything in
// memory is persisted. A marker found at start is a crash's.
//
// Thread-safety: the shard's loop thread only.
#pragma once

#include <chrono>
#include <cstdint>
#include <map>
#include <optional>
#include <set>
#include <string>

#include "clickatron/status.h"

namespace clickatron::realtime {

class RecoveryGate {
 public:
  using Clock = std::chrono::steady_clock;

  // Reads the marker in `data_dir` and writes it for this run. `durable`:
  // the persisted watermark of each source; `api_sources`: the API members
  // of the cluster file. A crash holds reads back for the API sources with
  // a persisted watermark above 0 or a batch noted (NoteSender).
  static Result<RecoveryGate> Open(const std::string& data_dir, const std::map<std::string, uint64_t>& durable,
                                   const std::set<std::string, std::less<>>& api_sources,
                                   std::chrono::milliseconds max_wait, Clock::time_point now = Clock::now());

  // The shard serves from `now` on (its start may block on the archive
  // first): max_wait counts from here.
  void StartServing(Clock::time_point now = Clock::now()) { deadline_ = now + max_wait_; }

  // After a clean stop that persisted everything: the next start is clean.
  Status MarkStoppedCleanly();

  // `source`'s batch is applied: the first one of a node is noted durably
  // (before its answer), so that a crash waits for the node even when no
  // checkpoint has persisted its watermark yet.
  Status NoteSender(const std::string& source);

  // `source` said (a batch or a poll) it had heard `heard` applied (nullopt:
  // it does not say); the shard's applied watermark for it is `applied`.
  // A re-send still short of `heard` keeps the gate up for max_wait more
  // each time it has applied another batch.
  void Heard(const std::string& source, std::optional<uint64_t> heard, uint64_t applied,
             Clock::time_point now = Clock::now());

  // Why reads are held back now, or nullopt when they are served. Past
  // max_wait the gate opens (and logs whom it still waited for).
  std::optional<std::string> HeldBack(Clock::time_point now = Clock::now());

  // Whether reads are held back at `now` (HeldBack's answer, without its log).
  bool recovering(Clock::time_point now) const { return !waiting_.empty() && now < deadline_; }
  uint64_t reads_held_back() const { return reads_held_back_; }
  void CountHeldBack() { ++reads_held_back_; }

 private:
  RecoveryGate() = default;
  std::string WaitingNames() const;  // "api-0, api-1"
  std::string marker_path_;
  std::string senders_path_;
  std::set<std::string, std::less<>> senders_;  // every API node that ever sent a batch here
  // The sources not yet heard from -> their applied watermark as last seen
  // (the persisted one at start).
  std::map<std::string, uint64_t> waiting_;
  std::chrono::milliseconds max_wait_{0};
  Clock::time_point deadline_;
  uint64_t reads_held_back_ = 0;
};

}  // namespace clickatron::realtime
