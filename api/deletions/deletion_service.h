// Deletions on an API node (docs/protocols.md, "Deletions"):
//
//   POST /delete?ns=&key=&from=&to=   (admin) 202 {"id"}: recorded durably, run, answered once cut
//   GET  /delete/ID                   (admin) how far it has come
//   POST /delete/record               (internal) a peer's copy of a deletion
//   POST /delete/folded               (internal) the rebuild: generation G folds these in (deployed)
//   GET  /delete/local?id=ID          (internal) whether this node's late-data files hold it
//   GET  /deletions                   (internal) every deletion this node knows
//   GET  /oplog/heads                 (internal) this node's oplog head per realtime shard
//
// The node that takes a POST /delete owns it and runs it on its own thread
// (one deletion at a time, each step retried every second until it
// succeeds, resumed after a restart): a copy to every other API node, a
// tombstone on every realtime shard (realtime/tombstones.h), then the cut
// (every API node's oplog heads, asked after every tombstone is in) sent to
// every shard. Every step is idempotent, so a retry or a resume after kill
// -9 repeats harmlessly.
//
// Thread-safety: routes on the loop thread; the runner on its own.
#pragma once

#include <condition_variable>
#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <mutex>
#include <thread>
#include <vector>

#include <nlohmann/json.hpp>

#include "clickatron/daemon.h"
#include "clickatron/home_node.h"
#include "clickatron/http_client.h"
#include "clickatron/http_server.h"
#include "clickatron/oplog_record.h"
#include "clickatron/status.h"
#include "deletions/deletion_log.h"

namespace clickatron::api {

// This node's late-data files, as the write path keeps them (ingest/late_data.h).
struct LateFiles {
  using LinePredicate = std::function<bool(const OplogHeader& frame, std::string_view line)>;
  // Rewrites every file marked done without the lines deletions took out.
  std::function<void(std::function<void(Status)>)> scrub_done;
  // Whether any file holds a line the predicate names.
  std::function<void(LinePredicate, std::function<void(Result<bool>)>)> holds;
};

class DeletionService {
 public:
  // `oplog_heads`: the write path's OplogHeads (called on the loop thread).
  // `client` (on the server's loop) relays a POST /delete whose id's home
  // is another API node there.
  static Result<std::unique_ptr<DeletionService>> Create(const DaemonContext& ctx, HttpServer& server,
                                                          HttpClient& client,
                                                          std::function<std::vector<uint64_t>()> oplog_heads,
                                                          LateFiles late,
                                                          std::function<void(uint64_t)> generation_deployed = {});
  ~DeletionService();
  const DeletionLog& log() const { return *log_; }
  DeletionService(const DeletionService&) = delete;
  DeletionService& operator=(const DeletionService&) = delete;

 private:
  DeletionService(const DaemonContext& ctx, HttpClient& client, std::unique_ptr<DeletionLog> log, LateFiles late)
      : ctx_(ctx), client_(client), home_(ctx.cluster, ctx.member.name), log_(std::move(log)), late_(std::move(late)) {}
  void RegisterRoutes(HttpServer& server, std::function<std::vector<uint64_t>()> oplog_heads);
  void HandleDelete(const HttpExchangePtr& ex);
  // A client's deletion id is taken by its home API node alone
  // (clickatron/home_node.h): on another node the request is relayed
  // there. True when relayed (or refused: relayed here, yet the id's home
  // is another node).
  bool RelayedToHome(const HttpExchangePtr& ex, const std::string& id);
  void HandleStatus(const HttpExchangePtr& ex);
  void HandleRecord(const HttpExchangePtr& ex);
  void HandleFolded(const HttpExchangePtr& ex);
  void HandleLocal(const HttpExchangePtr& ex);
  // Answers a POST /delete of deletion `id` with 202 once its cut is taken,
  // or after kCutWait when it is not (a member down): an increment
  // acknowledged after that answer is then above the cut, and counts.
  void AnswerOnceCut(const HttpExchangePtr& ex, const std::string& id);
  // The runner took `id`'s cut: the requests waiting for it are answered.
  void NotifyCut(const std::string& id);
  // A stop's drain: every request waiting for a cut is answered now.
  void AnswerCutWaitersNow();
  // The cluster file's API members but this one.
  std::vector<const MemberConfig*> OtherApiNodes() const;
  // Puts every deletion each of `peers` knows (GET /deletions) into the
  // log; returns the peers that did not answer.
  std::vector<const MemberConfig*> SyncFromPeers(std::vector<const MemberConfig*> peers, int timeout_ms);
  // GET /delete/ID's object: with `waiting` while a step fails.
  nlohmann::json StatusWithWaiting(const Deletion& d);
  // Whether no file the cluster serves or keeps holds `d` any more (every
  // API node's GET /delete/local); if so, marks it physical on every node.
  Status CheckPhysical(Deletion* d);
  // POST /delete/record of `d` to every other API node (stops when the
  // runner is stopping). With `unknown_shards`, adds each realtime member a
  // peer's cluster file names and this node's does not.
  Status CopyToPeers(BlockingHttpClient& client, const Deletion& d,
                     std::vector<std::string>* unknown_shards = nullptr);
  // The runner: advances every deletion this node owns until each is done.
  void RunLoop();
  // One pass over a deletion's steps; OK once its realtime part is done.
  Status Advance(Deletion* d);
  void Wake();

  const DaemonContext& ctx_;
  HttpClient& client_;  // the loop's
  const HomeNode home_;
  // Loop thread: requests relayed to their id's home and not answered yet,
  // and a stop's drain waiting for them (a client without an answer would
  // not know whether its deletion was taken).
  int relays_in_flight_ = 0;
  std::function<void()> drained_;
  std::unique_ptr<DeletionLog> log_;
  LateFiles late_;
  // Told the generation a `POST /delete/folded` with "deployed" names: every
  // archive replica serves it (the read path then uses no kept answer of an
  // older one, KnownGeneration::SawHandover).
  std::function<void(uint64_t)> generation_deployed_;
  std::mutex mu_;
  std::condition_variable cv_;
  bool stop_ = false;
  bool work_ = true;  // something to try now
  bool check_physical_ = true;  // a deploy happened (or the node started): look at deployed deletions
  bool deployed_event_ = false;  // under mu_: a deploy was told since the runner last looked
  std::map<std::string, int> physical_tries_;  // runner thread: looks that found a node not answering
  std::map<std::string, std::string> waiting_;  // under mu_: why an owned deletion's last step failed
  // Under mu_: by deletion id, the answers of POST /delete requests waiting
  // for its cut (each run on the loop).
  std::map<std::string, std::vector<std::pair<uint64_t, std::function<void()>>>> cut_waiters_;
  uint64_t cut_waiter_tokens_ = 0;  // under mu_: names each waiter, for its timer to remove it
  HttpServer* server_ = nullptr;  // the loop the routes run on
  // Runner thread (Create before it starts): peers whose deletions this
  // node has not learnt yet.
  std::vector<const MemberConfig*> unsynced_peers_;
  std::thread runner_;
};

}  // namespace clickatron::api
