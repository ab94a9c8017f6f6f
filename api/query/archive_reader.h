// Reads from the archive replicas of a shard (get / mget over the sorted
// archive file), spreading queries over the replicas and failing over.
//
// Every archive answer carries X-Archive-Generation and X-Archive-Last-Day;
// a reply reports them as an ArchiveView so the caller knows which days the
// data it got covers. The requests of one query go through one Session, which
// sticks to one replica while it answers: its answers come from one file
// generation unless a reload happens mid-query (the caller compares views).
//
// A replica that fails (no answer, timeout, 5xx, an answer without the
// headers) is skipped for a short penalty and the request goes to the next;
// when none answers, the reply is UNAVAILABLE / SHARD_UNAVAILABLE (503).
//
// Get is coalesced per replica (coalescer.h): while a request is out to the
// replica, further gets queue and go out together as one mget; a failed
// batch fails over (or fails) every get in it, and every get's reply still
// carries the view of the answer it came from.
//
// Thread-safety: loop thread only. Callbacks run on the loop, never after the
// reader is destroyed.
#pragma once

#include <chrono>
#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <string>
#include <vector>

#include "clickatron/config.h"
#include "clickatron/http_client.h"
#include "clickatron/status.h"
#include "query/coalescer.h"
#include "query/known_generation.h"
#include "query/read_records.h"
#include "query/read_stats.h"

namespace clickatron::api {

struct ArchiveView {
  uint64_t generation = 0;
  ArchiveLastDay last_day;
  friend bool operator==(const ArchiveView&, const ArchiveView&) = default;
};

struct ArchiveReply {
  ArchiveView view;
  bool found = false;  // 200; false for 404 (no such key)
  std::string body;    // as /get answers it: "value\n"
  size_t replica = 0;  // which replica of the shard answered
};

// Reads the two headers; CORRUPTION when either is missing or malformed.
Result<ArchiveView> ParseArchiveView(const HttpResponse& response);

class ArchiveReader {
 public:
  struct Options {
    int timeout_ms = 5000;
    std::chrono::milliseconds replica_penalty{2000};  // a failed replica is skipped this long
    size_t max_target_bytes = 6000;
    size_t max_keys_per_mget = 400;
    // Get coalescing: a get is sent at once while fewer than this many
    // requests are out to its replica, else queued for the next mget; 0
    // turns coalescing off.
    int coalesce_in_flight = 1;
    size_t coalesce_max_keys = 64;
    // Where the newest generation seen is kept across restarts
    // (known_generation.h); empty: memory only.
    std::string generation_file;
  };
  ArchiveReader(const ClusterConfig& cluster, HttpClient& client, ReadStats& stats, Options options);
  ~ArchiveReader();

  struct Session {
    int shard = 0;
    size_t replica = 0;
  };
  std::shared_ptr<Session> Begin(int shard);

  using ReplyCallback = std::function<void(Result<ArchiveReply>)>;
  void Get(const std::shared_ptr<Session>& session, std::string_view key, ReplyCallback done);
  // One reply per request sent (keys are batched); hits are "key,value" lines.
  void MGet(const std::shared_ptr<Session>& session, const std::vector<std::string>& keys,
            std::function<void(Result<std::vector<ArchiveReply>>)> done);

  // Whether the session's shard's file of `generation` has a day subtotal
  // record for every UTC day with subtotal hours of a key (its manifest's
  // day_subtotals_every_day), so that a day record it lacks means that day
  // has no hours of that key. Asked once per shard and generation (GET
  // /manifest on the session's replica) and then remembered. false when the
  // answer names another generation (a reload in between: asked again next
  // time), when no replica answers, and for a manifest that does not say so;
  // a caller that gets false reads a lacking day by its hours. Never fails.
  void DayRecordsEveryDay(const std::shared_ptr<Session>& session, uint64_t generation,
                          std::function<void(bool)> done);

 private:
  struct Replica {
    std::string name;
    HostPort peer;
    std::chrono::steady_clock::time_point down_until{};
  };
  void Send(std::shared_ptr<Session> session, std::string target, int attempts_left, ReplyCallback done);
  // One coalesced request for `keys` to `replica` of `shard` (failing over).
  void SendBatch(int shard, size_t replica, std::vector<std::string> keys,
                 Coalescer<ArchiveReply>::BatchDone done);
  int Attempts(int shard) const;
  size_t PickFrom(int shard, size_t first) const;
  // Not const: it remembers the newest generation any replica has served.
  Result<ArchiveReply> Interpret(const Replica& replica, const HttpResponse& response);

  HttpClient& client_;
  ReadStats& stats_;
  Options options_;
  std::vector<std::vector<Replica>> replicas_;  // by shard
  std::vector<size_t> round_robin_;             // by shard
  std::vector<std::vector<std::unique_ptr<Coalescer<ArchiveReply>>>> coalescers_;  // by shard, replica
  // The newest archive generation seen on any shard, also across restarts:
  // a replica serving no file (generation 0) after the cluster has an
  // archive has lost its file, and its answers would drop archived days.
  KnownGeneration known_generation_;
  // By shard: generation -> its manifest's day_subtotals_every_day (the
  // newest few generations asked about).
  std::vector<std::map<uint64_t, bool>> day_records_every_day_;
  std::shared_ptr<bool> alive_ = std::make_shared<bool>(true);
};

}  // namespace clickatron::api
