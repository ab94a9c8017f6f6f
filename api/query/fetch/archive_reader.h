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
#include "query/cache/archive_reply_cache.h"
#include "query/fetch/coalescer.h"
#include "query/fetch/known_generation.h"
#include "query/merge/read_records.h"
#include "query/read_stats.h"

namespace clickatron::api {

// Reads the headers; CORRUPTION when X-Archive-Generation or
// X-Archive-Last-Day is missing, or any is malformed.
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
    // The newest generation seen, kept across restarts (known_generation.h)
    // and shared by the node's read loops; null: one of its own, in memory.
    std::shared_ptr<KnownGeneration> known_generation;
    // The node's read cache (read_cache.h), where answers are kept per key
    // and file (archive_reply_cache.h); null: nothing kept. A kept answer is
    // used for a session on a replica whose newest answer named its file,
    // unless realtime says a newer generation is deployed or hands over a
    // day that file lacks (known_generation.h): no deploy waits for it.
    std::shared_ptr<ReadCache> cache;
  };
  ArchiveReader(const ClusterConfig& cluster, HttpClient& client, ReadStats& stats, Options options);
  // A replica not heard from for this long is asked which file it serves
  // (GET /manifest) when a kept answer of it is looked up: how soon a file
  // replaced by hand is noticed. Deploys by the rebuild are known sooner
  // (realtime's answers say them), and nothing waits on this.
  static constexpr std::chrono::milliseconds kReconfirmEvery{1000};
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
  int ShardCount() const;
  int ShardFor(std::string_view shard_key) const;
  // True when `view` names another shard count than the session was routed by.
  static bool Misrouted(const Session& session, const ArchiveView& view);

  using ReplyCallback = std::function<void(Result<ArchiveReply>)>;
  void Get(const std::shared_ptr<Session>& session, std::string_view key, ReplyCallback done);
  // One reply per request sent (keys are batched); hits are "key,value"
  // lines. Keys answered from the cache come as one more reply (kept = true):
  // their lines, or their decoded columns (decoded_lines) once a query
  // decoded them (KeepDecodedColumns).
  void MGet(const std::shared_ptr<Session>& session, const std::vector<std::string>& keys,
            std::function<void(Result<std::vector<ArchiveReply>>)> done);

  // True when an answer of `view` lacks a day realtime has handed over to
  // the archive (KnownGeneration::Behind), or is of an older generation than
  // realtime says is deployed (a kept answer, or one sent just before a
  // deploy: after a restatement, the same days with other counts).
  bool BehindRealtime(const ArchiveView& view) const {
    return known_generation_->Behind(view.last_day) ||
           (view.generation != 0 && view.generation < known_generation_->deployed());
  }

  // Keeps the decoded columns of a kept total record's answer with it
  // (ArchiveReply::total_hours), for the queries that read it next.
  void KeepDecodedTotal(const Session& session, std::string_view key, const ArchiveReply& reply,
                        std::shared_ptr<const ArchiveTotalHours> hours);

  // The same for a kept subtotal or unique record (ArchiveReply::columns)
  // read from an mget answer of the cache (its `view`).
  void KeepDecodedColumns(const Session& session, std::string_view key, const ArchiveView& view,
                          std::shared_ptr<const DecodedColumns> columns);

  // Drops the kept answer of `key` from the file of `view`: its value did
  // not decode. The reader does not parse values, so a replica's garbage
  // under good headers was kept, and every later query of the key got it
  // again, without asking, until the generation changed.
  void Forget(const Session& session, std::string_view key, const ArchiveView& view);

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
  void Send(std::shared_ptr<Session> session, std::string target, int attempts_left, ReplyCallback done);
  // The file kept answers for `session` must be of: the one its replica's
  // newest answer named, while realtime says of no newer one (nullopt: none,
  // a file that does not say its crc32, a file older than the deployed
  // generation or lacking a day realtime handed over, or the cache is off).
  // Asks the replica again (Probe) when it has said nothing for
  // kReconfirmEvery.
  std::optional<ServedFile> CachedFile(const Session& session);
  void Probe(size_t shard, size_t replica);
  // An answer sent at `sent` said `view`: newer than what the replica last
  // confirmed unless a later request's answer came first.
  void Confirm(size_t shard, size_t replica, const ArchiveView& view, std::chrono::steady_clock::time_point sent);
  // Whether `reply` may be kept: the cache is on and it is of the
  // generation its replica confirmed.
  bool Keepable(int shard, const ArchiveReply& reply, int shard_count) const;
  // Keeps `reply` for `key` if Keepable.
  void Keep(int shard, std::string_view key, ArchiveReply reply, int shard_count);
  // Keeps every key of mget answers (absent ones as not found), when they
  // all come from one confirmed generation.
  void KeepMget(int shard, const std::vector<std::string>& keys, const std::vector<ArchiveReply>& replies,
                int shard_count);
  // One coalesced request for `keys` to `replica` of `shard` (failing over).
  void SendBatch(int shard, size_t replica, std::vector<std::string> keys,
                 Coalescer<ArchiveReply>::BatchDone done);
  int Attempts(int shard) const;
  size_t PickFrom(int shard, size_t first) const;
  // Not const: it remembers the newest generation any replica has served,
  // and the shard count of the newest that said one.
  Result<ArchiveReply> Interpret(const Replica& replica, const HttpResponse& response);
  void LearnShardCount(const ArchiveView& view);
  // Points a keyed session at its shard under `shard_count`; false when it
  // has been re-routed too often (or has no shard key).
  bool Reroute(Session& session, int shard_count);
  // The same without counting: a session begun before the count was learned.
  void PointAt(Session& session, int shard_count);
  void GetRouted(std::shared_ptr<Session> session, std::string key, ReplyCallback done);
  void MGetRouted(std::shared_ptr<Session> session, std::vector<std::string> keys,
                  std::function<void(Result<std::vector<ArchiveReply>>)> done);
  // Whether `keys` fit one coalesced request to `shard` (coalescing on, and
  // within its key and byte limits): such an mget queues with other
  // queries' gets instead of going out as a request of its own.
  bool FitsOneBatch(int shard, const std::vector<std::string>& keys) const;
  // The mget of `keys` through the session's replica's coalescer, answered
  // as MGet answers (`kept_lines`, the cache's part, appended).
  void MGetCoalesced(std::shared_ptr<Session> session, std::vector<std::string> keys,
                     std::optional<ArchiveReply> kept_lines,
                     std::function<void(Result<std::vector<ArchiveReply>>)> done);

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
  // By shard, replica: the view (generation, file crc32) the replica's
  // newest answer (by the time its request was sent) said, and whether a
  // probe is out.
  struct Confirmed {
    ArchiveView view;
    std::chrono::steady_clock::time_point sent{};
    bool probe_out = false;
  };
  std::vector<std::vector<Confirmed>> confirmed_;
  std::shared_ptr<ReadCache> read_cache_;  // never null (capacity 0: off)
  ArchiveReplyCache cache_;
  std::shared_ptr<bool> alive_ = std::make_shared<bool>(true);
};

}  // namespace clickatron::api
