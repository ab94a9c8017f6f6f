// Reads from the archive replicas of a shard (get / mget over the sorted
// archive file), spreading queries over the replicas and failing over.
//
// Every archive answer carries X-Archive-Generation and X-Archive-Last-Day;
// a reply reports them as an ArchiveView so the caller knows which days the
// data it got covers. The requests of one query go through one Session, which
// sticks to one replica while it answers: its answers come from one file
// generation unless a reload happens mid-query (the caller compares views).
//
// Routing: a key's archive shard is crc32(shard key) % the shard count the
// serving files were cut with, which answers carry (X-Archive-Shard-Count)
// and which differs from the cluster file's archive_shards between a change
// of it and the deploy of the generation that re-partitions the archive
// (docs/protocols.md, "Archive shard count"). The reader routes by the count
// of the newest generation it has seen: before it has seen one it first asks
// shard 0 (GET /manifest, which every count has), and falls back to the
// cluster file's count when that answer names none. A session begun for a
// shard key whose answer names another count than it was routed by is sent
// again to the shard of that count (a deploy in progress: a few times, then
// SHARD_UNAVAILABLE), so every answer comes from the shard holding the key.
//
// A replica that fails (no answer, timeout, 5xx, an answer without the
// headers) is skipped for a short penalty and the request goes to the next;
// when none answers, the reply is UNAVAILABLE / SHARD_UNAVAILABLE (503).
//
// It keeps nothing: the node's read cache is a layer over it
// (cached_archive_reader.h), which learns from OnAnswer which file each
// replica serves.
//
// Get is coalesced per replica (coalescer.h): while a request is out to the
// replica, further gets queue and go out together as one mget; a failed
// batch fails over (or fails) every get in it, and every get's reply still
// carries the view of the answer it came from. An mget small enough for one
// batch (a query's second round trip: a sparse key's few hours) queues the
// same way, its keys together; a larger one goes out as requests of its own.
//
// Thread-safety: loop thread only. Callbacks run on the loop, never after the
// reader is destroyed.
#pragma once

#include <chrono>
#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "clickatron/config.h"
#include "clickatron/http_client.h"
#include "clickatron/status.h"
#include "query/fetch/archive_reply.h"
#include "query/fetch/coalescer.h"
#include "query/fetch/known_generation.h"
#include "query/merge/read_records.h"
#include "query/read_stats.h"

namespace clickatron::api {

// Reads the headers; CORRUPTION when X-Archive-Generation or
// X-Archive-Last-Day is missing, or any is malformed.
Result<ArchiveView> ParseArchiveView(const HttpResponse& response);
// The file a 503 ARCHIVE_DAMAGED names (its headers), when the answer is
// one and names it with its crc32; nullopt otherwise.
std::optional<ArchiveView> DamagedFileOf(const HttpResponse& response);

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
    // The newest generation seen, kept across restarts (known_generation.h)
    // and shared by the node's read loops; null: one of its own, in memory.
    std::shared_ptr<KnownGeneration> known_generation;
  };
  ArchiveReader(const ClusterConfig& cluster, HttpClient& client, ReadStats& stats, Options options);
  ~ArchiveReader();

  struct Session {
    int shard = 0;
    size_t replica = 0;
    int shard_count = 0;    // the count `shard` was computed with
    std::string shard_key;  // empty: a session for one shard, not one key (lookups)
    int reroutes = 0;
  };
  // A session for the keys of one shard key, on its shard by the current
  // routing count (call inside WhenRouted to have a learned one).
  std::shared_ptr<Session> Begin(std::string_view shard_key);
  // A session for shard `shard` of `shard_count` (lookups: keys of many
  // shard keys, grouped by ShardFor); its answers are not re-routed, the
  // caller checks them with Misrouted.
  std::shared_ptr<Session> BeginShard(int shard, int shard_count);

  // Runs `then` once the routing count is known (at once but for the first
  // reads after start; see the header comment).
  void WhenRouted(std::function<void()> then);
  // Runs `then` once the routing count is that of the generation realtime
  // says is deployed, as far as shard 0 tells (at once when it already is,
  // or shard 0 was asked for that generation). An answer older than the
  // deployed generation may come from a shard a re-partition dropped, whose
  // replica still runs: read again by the old count, it would be taken for
  // a rollback and answered stale.
  void RouteByDeployed(std::function<void()> then);
  int ShardCount() const;
  // The archive shard of `shard_key` among `shard_count` shards.
  static int ShardFor(std::string_view shard_key, int shard_count);
  // True when `view` names another shard count than the session was routed by.
  static bool Misrouted(const Session& session, const ArchiveView& view);

  using ReplyCallback = std::function<void(Result<ArchiveReply>)>;
  using MGetCallback = std::function<void(Result<std::vector<ArchiveReply>>)>;
  void Get(const std::shared_ptr<Session>& session, std::string_view key, ReplyCallback done);
  // One reply per request sent (keys are batched); hits are "key,value"
  // lines.
  void MGet(const std::shared_ptr<Session>& session, const std::vector<std::string>& keys, MGetCallback done);

  // Get and MGet are Route, then GetRouted / MGetRouted: a layer that
  // answers some keys itself looks them up in between, on the session's
  // shard. Route points a session begun before the routing count was
  // learned at its shard by the learned count, then runs `then`.
  void Route(const std::shared_ptr<Session>& session, std::function<void()> then);
  void GetRouted(std::shared_ptr<Session> session, std::string key, ReplyCallback done);
  void MGetRouted(std::shared_ptr<Session> session, std::vector<std::string> keys, MGetCallback done);

  // Called with every answer that has good headers: the shard and replica
  // that gave it, what it says of the file, and when its request was sent
  // (an answer to an earlier request may come later). One listener; null
  // stops it.
  using AnswerSeen = std::function<void(size_t shard, size_t replica, const ArchiveView& view,
                                        std::chrono::steady_clock::time_point sent)>;
  void OnAnswer(AnswerSeen seen) { answer_seen_ = std::move(seen); }
  // Called when a replica refuses a read because the file it serves is
  // damaged (503 ARCHIVE_DAMAGED, with that file's headers): the file `view`
  // names is not to be trusted, whatever was read from it before. One
  // listener; null stops it.
  using DamageSeen = std::function<void(size_t shard, size_t replica, const ArchiveView& view)>;
  void OnDamage(DamageSeen seen) { damage_seen_ = std::move(seen); }
  // Asks replica `replica` of `shard` once which file it serves (GET
  // /manifest); its answer reaches OnAnswer, then `done` runs, answered or not.
  void AskServedFile(size_t shard, size_t replica, std::function<void()> done);
  // The shards and each one's replicas in the cluster file; the replica a
  // session's requests go to.
  size_t Shards() const { return replicas_.size(); }
  size_t Replicas(size_t shard) const { return shard < replicas_.size() ? replicas_[shard].size() : 0; }
  size_t ReplicaOf(const Session& session) const;
  // Replica `replica` of `shard`'s member name ("" when there is none).
  std::string ReplicaName(size_t shard, size_t replica) const {
    return shard < replicas_.size() && replica < replicas_[shard].size() ? replicas_[shard][replica].name : "";
  }

  // Points `session` at another replica of its shard than `replica` (the
  // next one that is not down; when all are, the next in turn), when the
  // shard has more than one: a re-read that must not take the answer of
  // `replica` again unless the others fail.
  void StartAwayFrom(Session& session, size_t replica) const;
  // Skips `replica` of `shard` for replica_penalty, as a failed one is: it
  // answered from a file older than the one realtime says is deployed.
  void Penalize(size_t shard, size_t replica);

  // True when an answer of `view` lacks a day realtime has handed over to
  // the archive (KnownGeneration::Behind), or is of an older generation than
  // realtime says is deployed (a kept answer, or one sent just before a
  // deploy: after a restatement, the same days with other counts).
  // The generation realtime says is deployed (0: none said yet).
  uint64_t DeployedGeneration() const { return known_generation_->deployed(); }
  bool BehindRealtime(const ArchiveView& view) const {
    return known_generation_->Behind(view.last_day) ||
           (view.generation != 0 && view.generation < known_generation_->deployed());
  }

  // What the manifest of the session's shard's file of `generation` says
  // that a query needs beside the data: whether its format is the one
  // queries read, and the namespaces with rolled-up days (retention.h). Asked once per shard and generation (GET /manifest on the
  // session's replica) and then remembered (answered at once after that).
  // `manifest_read` false when the answer names another generation (a reload
  // in between: asked again next time), when no replica answers, and for a
  // garbled answer. Never fails.
  // `whole`: the file is of format 2 with every day and span record
  // (Manifest::SpanRecordsWhole), the only format queries can read.
  struct ManifestFacts {
    bool manifest_read = false;
    bool whole = false;
    // Shared: facts are copied per query, the list only once per generation.
    std::shared_ptr<const std::vector<AppliedRetention>> retention;
  };
  void ReadManifestFacts(const std::shared_ptr<Session>& session, uint64_t generation,
                         std::optional<uint32_t> crc32, std::function<void(ManifestFacts)> done);
  // The same when already known (nullopt: not asked yet for that shard and
  // generation); never sends anything.
  std::optional<ManifestFacts> KnownManifestFacts(const Session& session, uint64_t generation,
                                                  std::optional<uint32_t> crc32) const;

 private:
  struct Replica {
    std::string name;
    HostPort peer;
    std::chrono::steady_clock::time_point down_until{};
  };
  // Checks a found answer's body before it is taken (an mget answer names
  // only keys asked, each once): an answer that fails it is a replica
  // answering garbage, failed over like one that is down.
  using BodyCheck = std::function<Status(const ArchiveReply&)>;
  void Send(std::shared_ptr<Session> session, std::string target, int attempts_left, ReplyCallback done,
            BodyCheck check = nullptr);
  // One coalesced request for `keys` to `replica` of `shard` (failing over).
  void SendBatch(int shard, size_t replica, std::vector<std::string> keys,
                 Coalescer<ArchiveReply>::BatchDone done);
  int Attempts(int shard) const;
  size_t PickFrom(int shard, size_t first) const;
  // Not const: it remembers the newest generation any replica has served,
  // and the shard count of the newest that said one.
  Result<ArchiveReply> Interpret(const Replica& replica, const HttpResponse& response);
  void LearnShardCount(const ArchiveView& view);
  // Points a keyed session answered for another count than it was routed by
  // at its shard under the count `view` names; SHARD_UNAVAILABLE when it has
  // been re-routed too often (or has no shard key).
  Status Reroute(Session& session, const ArchiveView& view);
  // The same without counting: a session begun before the count was learned.
  void PointAt(Session& session, int shard_count);
  // Whether `keys` fit one coalesced request to `shard` (coalescing on, and
  // within its key and byte limits): such an mget queues with other
  // queries' gets instead of going out as a request of its own.
  bool FitsOneBatch(int shard, const std::vector<std::string>& keys) const;
  // The mget of `keys` through the session's replica's coalescer, answered
  // as MGet answers.
  void MGetCoalesced(std::shared_ptr<Session> session, std::vector<std::string> keys, MGetCallback done);

  HttpClient& client_;
  ReadStats& stats_;
  Options options_;
  int config_shards_;
  // The shard count of the newest generation whose answer said one (0: none
  // yet), and that generation.
  int routing_shards_ = 0;
  uint64_t routing_generation_ = 0;
  bool routing_asked_ = false;                     // shard 0 answered the first question (or failed to)
  std::vector<std::function<void()>> routing_waiters_;  // reads waiting for that answer
  uint64_t deployed_route_asked_ = 0;  // the deployed generation shard 0 was last asked about
  std::vector<std::function<void()>> deployed_route_waiters_;  // reads waiting for that answer
  std::vector<std::vector<Replica>> replicas_;  // by shard
  std::vector<size_t> round_robin_;             // by shard
  std::vector<std::vector<std::unique_ptr<Coalescer<ArchiveReply>>>> coalescers_;  // by shard, replica
  // The newest archive generation seen on any shard, also across restarts:
  // a replica serving no file (generation 0) after the cluster has an
  // archive has lost its file, and its answers would drop archived days.
  std::shared_ptr<KnownGeneration> known_generation_;
  // By shard: generation -> what its manifest says (the newest few
  // generations asked about).
  // Keyed by (generation, crc32; 0 when an answer did not say it).
  std::vector<std::map<std::pair<uint64_t, uint32_t>, ManifestFacts>> manifest_facts_;
  // By shard: generation -> the callers waiting for its /manifest answer.
  std::vector<std::map<std::pair<uint64_t, uint32_t>, std::vector<std::function<void(ManifestFacts)>>>> facts_waiting_;
  AnswerSeen answer_seen_;
  DamageSeen damage_seen_;
  std::shared_ptr<bool> alive_ = std::make_shared<bool>(true);
};

}  // namespace clickatron::api
