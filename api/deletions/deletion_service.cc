#include "deletions/deletion_service.h"

#include <algorithm>
#include <chrono>

#include <fmt/format.h>
#include <nlohmann/json.hpp>
#include <spdlog/spdlog.h>

#include "clickatron/http_client.h"

namespace clickatron::api {
namespace {

int64_t NowUnix() {
  return std::chrono::duration_cast<std::chrono::seconds>(std::chrono::system_clock::now().time_since_epoch()).count();
}

nlohmann::json StatusJson(const Deletion& d) {
  nlohmann::json j = {{"id", d.id},
                      {"ns", d.ns},
                      {"from", d.from_unix},
                      {"to", d.to_unix},
                      {"created", d.created_unix},
                      {"owner", d.owner},
                      {"realtime", d.realtime_done ? "done" : "pending"},
                      // The cut is the deletion's moment: increments acknowledged
                      // after it count.
                      {"cut_taken", !d.cuts.empty()},
                      // Every node's reads hide the archived hours once it has
                      // the record; realtime's are gone once every shard cut.
                      {"effective", d.realtime_done && d.peers_told},
                      {"physical", d.physical},
                      {"folded_into", d.folded_into}};
  j["key"] = d.key.empty() ? nlohmann::json(nullptr) : nlohmann::json(d.key);
  return j;
}

// How long a POST /delete waits for its cut before it answers without it.
// All members up, the cut comes within some 100 ms; a member down holds it
// until the member is back, and the client hears why (`waiting`) instead.
constexpr auto kCutWait = std::chrono::seconds(5);

// A POST or GET to a member, signed; OK only for a 200.
Status Call(BlockingHttpClient& client, const MemberConfig& member, const std::string& method,
            const std::string& target, const std::string& body, int timeout_ms, std::string* answer = nullptr) {
  HttpRequestSpec spec;
  spec.method = method;
  spec.target = target;
  spec.body = body;
  spec.timeout_ms = timeout_ms;
  HttpResponse r = client.Fetch(member.listen, spec);
  if (!r.ok() || r.status_code != 200) {
    return Status::Unavailable(fmt::format("{} {} on {}: {}", method, target, member.name, DescribeHttpAnswer(r)));
  }
  if (answer != nullptr) *answer = std::move(r.body);
  return Status::Ok();
}

}  // namespace

Result<std::unique_ptr<DeletionService>> DeletionService::Create(const DaemonContext& ctx, HttpServer& server,
                                                                  HttpClient& client,
                                                                  std::function<std::vector<uint64_t>()> oplog_heads,
                                                                  LateFiles late,
                                                                  std::function<void(uint64_t)> generation_deployed) {
  auto log = DeletionLog::Open(ctx.member.data_dir + "/deletions");
  if (!log.ok()) return log.status();
  std::unique_ptr<DeletionService> service(
      new DeletionService(ctx, client, std::move(log).value(), std::move(late)));
  service->server_ = &server;
  service->generation_deployed_ = std::move(generation_deployed);
  service->RegisterRoutes(server, std::move(oplog_heads));
  // A stop answers the requests still waiting for a cut (with what the
  // deletion has reached) rather than closing them unanswered: a client
  // without an answer and without an id would make a second deletion.
  server.OnStopDrain([s = service.get()](std::function<void()> drained) {
    s->AnswerCutWaitersNow();
    if (s->relays_in_flight_ == 0) {
      drained();
    } else {
      s->drained_ = std::move(drained);  // the last relay's answer ends the drain
    }
  });
  // A node new to the cluster (or whose data dir was replaced) learns the
  // deletions its peers know before it answers a read; peers that do not
  // answer now are asked again by the runner.
  service->unsynced_peers_ = service->SyncFromPeers(service->OtherApiNodes(), 1000);
  service->runner_ = std::thread([s = service.get()] { s->RunLoop(); });
  return service;
}

DeletionService::~DeletionService() {
  {
    std::lock_guard lock(mu_);
    stop_ = true;
  }
  cv_.notify_all();
  if (runner_.joinable()) runner_.join();
}

void DeletionService::Wake() {
  {
    std::lock_guard lock(mu_);
    work_ = true;
  }
  cv_.notify_all();
}

void DeletionService::RegisterRoutes(HttpServer& server, std::function<std::vector<uint64_t>()> oplog_heads) {
  server.AdminRoute("/delete", [this](const HttpExchangePtr& ex) { HandleDelete(ex); }, kPost);
  server.AdminRoute("/delete/", [this](const HttpExchangePtr& ex) { HandleStatus(ex); }, kGet);
  server.InternalRoute("/delete/record", [this](const HttpExchangePtr& ex) { HandleRecord(ex); }, kPost);
  server.InternalRoute("/delete/folded", [this](const HttpExchangePtr& ex) { HandleFolded(ex); }, kPost);
  server.InternalRoute("/delete/local", [this](const HttpExchangePtr& ex) { HandleLocal(ex); }, kGet);
  server.InternalRoute("/deletions", [this](const HttpExchangePtr& ex) {
    nlohmann::json all = nlohmann::json::array();
    for (const Deletion& d : log_->All()) all.push_back(d.ToJson());
    ex->ReplyJson({{"deletions", std::move(all)}});
  }, kGet);
  server.InternalRoute("/oplog/heads", [this, heads = std::move(oplog_heads)](const HttpExchangePtr& ex) {
    ex->ReplyJson({{"member", ctx_.member.name}, {"heads", heads()}});
  }, kGet);
}

void DeletionService::HandleDelete(const HttpExchangePtr& ex) {
  auto parsed = DeletionFromArgs(ex->args(), NowUnix());
  if (!parsed.ok()) {
    ex->ReplyError(400, parsed.status().reason(), parsed.status().message());
    return;
  }
  Deletion d = std::move(parsed).value();
  if (!d.id.empty() && RelayedToHome(ex, d.id)) return;
  if (!d.id.empty()) {
    // The client's own id: a retry of a request this node already took is
    // that deletion. The same id for other keys or hours is refused, as an
    // Idempotency-Key reused for another body is: taken as a retry, it
    // would drop the deletion asked for without a word. (A `to` left to its
    // default, the hour after now, moves between retries: not compared.)
    if (std::optional<Deletion> known = log_->Get(d.id)) {
      if (!known->SameScopeAs(d, /*compare_to=*/ex->args().Has("to"))) {
        ex->ReplyError(422, "DELETION_ID_REUSED",
                       fmt::format("deletion {} was taken for ns {} key {} hours [{}, {}); a retry must ask for the "
                                   "same, and another deletion needs another id",
                                   known->id, known->ns, known->key.empty() ? "(every key)" : known->key,
                                   known->from_unix, known->to_unix));
        return;
      }
      AnswerOnceCut(ex, known->id);
      return;
    }
  } else {
    d.id = NewDeletionId(d.created_unix);
  }
  d.owner = ctx_.member.name;
  // Durable before the answer: from here it is run to its end, across restarts.
  if (Status st = log_->Put(d); !st.ok()) {
    ex->ReplyError(st);
    return;
  }
  spdlog::info("deletion {}: ns {} key {} hours [{}, {}) accepted", d.id, d.ns, d.key.empty() ? "(every key)" : d.key,
               d.from_unix, d.to_unix);
  Wake();
  AnswerOnceCut(ex, d.id);
}

void DeletionService::AnswerOnceCut(const HttpExchangePtr& ex, const std::string& id) {
  // The timer's, the runner's and a stop's answers all run on the loop: the
  // first wins.
  auto answered = std::make_shared<bool>(false);
  auto answer = [this, ex, id, answered] {
    if (*answered) return;
    *answered = true;
    std::optional<Deletion> d = log_->Get(id);
    if (!d) return ex->ReplyError(500, "INTERNAL", fmt::format("deletion {} is not in the log any more", id));
    nlohmann::json data = StatusWithWaiting(*d);
    if (d->cuts.empty() && !data.contains("waiting")) {
      // No step has failed yet: a member is slow to answer (a hung one
      // times out after some seconds, then `waiting` names it).
      data["waiting"] = fmt::format(
          "CUT_PENDING: the deletion's cut is not taken yet (its owner {} is still asking the members, one of them "
          "slow to answer); an increment acknowledged before GET /delete/ID says realtime done may be deleted with "
          "the rest",
          d->owner);
    }
    const nlohmann::json envelope = {{"status_code", 202}, {"status_txt", "ACCEPTED"}, {"data", std::move(data)}};
    ex->Reply(202, envelope.dump() + "\n", "application/json");
  };
  {
    std::lock_guard lock(mu_);
    std::optional<Deletion> d = log_->Get(id);
    // Checked under mu_, which every writer of a cut takes after writing it
    // to call NotifyCut: a cut written after this look finds the waiter.
    if (d && d->cuts.empty()) {
      const uint64_t token = ++cut_waiter_tokens_;
      cut_waiters_[id].emplace_back(token, answer);
      server_->After(kCutWait, [this, id, token, answer] {
        answer();
        // No cut yet: the waiter goes (a retry adds its own).
        std::lock_guard forget(mu_);
        auto it = cut_waiters_.find(id);
        if (it == cut_waiters_.end()) return;
        std::erase_if(it->second, [token](const auto& w) { return w.first == token; });
        if (it->second.empty()) cut_waiters_.erase(it);
      });
      return;
    }
  }
  answer();
}

void DeletionService::NotifyCut(const std::string& id) {
  std::vector<std::pair<uint64_t, std::function<void()>>> waiters;
  {
    std::lock_guard lock(mu_);
    auto it = cut_waiters_.find(id);
    if (it == cut_waiters_.end()) return;
    waiters = std::move(it->second);
    cut_waiters_.erase(it);
  }
  for (auto& w : waiters) server_->RunInLoop(std::move(w.second));
}

void DeletionService::AnswerCutWaitersNow() {
  std::map<std::string, std::vector<std::pair<uint64_t, std::function<void()>>>> all;
  {
    std::lock_guard lock(mu_);
    all.swap(cut_waiters_);
  }
  for (auto& [id, waiters] : all) {
    for (auto& w : waiters) w.second();
  }
}

std::vector<const MemberConfig*> DeletionService::OtherApiNodes() const {
  std::vector<const MemberConfig*> out;
  for (const MemberConfig* api : ctx_.cluster.MembersWithRole(MemberRole::kApi)) {
    if (api->name != ctx_.member.name) out.push_back(api);
  }
  return out;
}

std::vector<const MemberConfig*> DeletionService::SyncFromPeers(std::vector<const MemberConfig*> peers,
                                                                int timeout_ms) {
  std::vector<const MemberConfig*> failed;
  if (peers.empty()) return failed;
  BlockingHttpClient client(ctx_.cluster);
  for (const MemberConfig* api : peers) {
    {
      std::lock_guard lock(mu_);
      if (stop_) return peers;
    }
    std::string answer;
    Status st = Call(client, *api, "GET", "/deletions", "", timeout_ms, &answer);
    const nlohmann::json j = st.ok() ? nlohmann::json::parse(answer, nullptr, /*allow_exceptions=*/false)
                                     : nlohmann::json();
    if (st.ok() && !(j.is_object() && j.contains("data") && j["data"].is_object() &&
                     j["data"].contains("deletions") && j["data"]["deletions"].is_array())) {
      st = Status::Corruption(fmt::format("GET /deletions on {}: not the expected JSON", api->name));
    }
    for (const nlohmann::json& one : st.ok() ? j["data"]["deletions"] : nlohmann::json::array()) {
      Result<Deletion> d = Deletion::FromJson(one);
      if (!d.ok()) {
        st = d.status();
        break;
      }
      // A copy of what this node knows already changes nothing (DeletionLog::Put).
      const bool cut = !d->cuts.empty();
      const std::string id = d->id;
      if (st = log_->PutCopy(std::move(d).value()); !st.ok()) {
        if (st.reason() != "DELETION_ID_CONFLICT") break;
        st = Status::Ok();  // logged; the peer's other deletion is not taken here
        continue;
      }
      if (cut) NotifyCut(id);
    }
    if (!st.ok()) {
      spdlog::warn("deletions: could not learn {}'s deletions yet ({}); asking again every second", api->name,
                   st.ToString());
      failed.push_back(api);
    }
  }
  return failed;
}

nlohmann::json DeletionService::StatusWithWaiting(const Deletion& d) {
  nlohmann::json j = StatusJson(d);
  std::lock_guard lock(mu_);
  if (auto it = waiting_.find(d.id); it != waiting_.end() && !d.realtime_done) j["waiting"] = it->second;
  return j;
}

bool DeletionService::RelayedToHome(const HttpExchangePtr& ex, const std::string& id) {
  const std::optional<HostPort> home = home_.HomeOf(id);
  if (!home) return false;  // this node is the id's home
  if (!ex->header(kRelayedFromHeader).empty()) {
    // The nodes' cluster files disagree on the id's home (relayed on, it
    // could go round for ever), or a client set the header itself.
    ex->ReplyError(421, "NOT_THE_IDS_HOME",
                   fmt::format("this request says it was relayed to its deletion id's home, but the id's home is {} "
                               "(the API nodes' cluster files differ, or {} was sent by a client); nothing was taken",
                               home->ToString(), kRelayedFromHeader));
    return true;
  }
  // The home answers once the cut is taken, or after kCutWait.
  const int timeout_ms = static_cast<int>(std::chrono::milliseconds(kCutWait).count()) + ctx_.cluster.api.request_timeout_ms;
  ++relays_in_flight_;
  home_.Relay(ex, *home, client_, timeout_ms,
              {"DELETION_HOME_DOWN",
               fmt::format("deletion {}'s home API node did not answer: either it never saw the request, or it "
                           "took the deletion and its answer was lost; retry with the same id to learn which",
                           id)},
              [this](bool) {
                if (--relays_in_flight_ == 0 && drained_) std::exchange(drained_, nullptr)();
              });
  return true;
}

void DeletionService::HandleStatus(const HttpExchangePtr& ex) {
  const std::string id = ex->path().substr(std::string_view("/delete/").size());
  std::optional<Deletion> d = log_->Get(id);
  if (!d) {
    ex->ReplyError(404, "NOT_FOUND", fmt::format("no deletion {} on this node", id));
    return;
  }
  ex->ReplyJson(StatusWithWaiting(*d));
}

void DeletionService::HandleRecord(const HttpExchangePtr& ex) {
  const nlohmann::json j = nlohmann::json::parse(ex->body(), nullptr, /*allow_exceptions=*/false);
  auto incoming = j.is_discarded() ? Result<Deletion>(Status::InvalidArgument("not JSON")) : Deletion::FromJson(j);
  if (!incoming.ok()) {
    ex->ReplyError(400, "BAD_DELETION", incoming.status().message());
    return;
  }
  // A late copy of an earlier state changes nothing (DeletionLog::Put); a
  // copy of another deletion under a known id is refused (PutCopy).
  if (Status st = log_->PutCopy(*incoming); !st.ok()) {
    ex->ReplyError(st);
    return;
  }
  // A retry of the POST taken by this node, not the owner, waits for it.
  if (!incoming->cuts.empty()) NotifyCut(incoming->id);
  // The realtime members this node's cluster file names: the owner checks
  // that its own file names them all before it installs tombstones.
  nlohmann::json realtime = nlohmann::json::array();
  for (const MemberConfig* m : ctx_.cluster.MembersWithRole(MemberRole::kRealtime)) {
    realtime.push_back({{"name", m->name}, {"shard", m->shard}});
  }
  ex->ReplyJson({{"id", incoming->id}, {"realtime_members", std::move(realtime)}});
}

// POST /delete/folded {"ids", "generation"}: the rebuild built archive
// generation G with these deletions' records taken out; reads of G and later
// generations need not hide them any more.
void DeletionService::HandleFolded(const HttpExchangePtr& ex) {
  const nlohmann::json j = nlohmann::json::parse(ex->body(), nullptr, /*allow_exceptions=*/false);
  const auto is = [&](const char* name, auto check) { return j.is_object() && j.contains(name) && check(j[name]); };
  if (!is("ids", [](const nlohmann::json& v) {
        return v.is_array() && std::all_of(v.begin(), v.end(), [](const nlohmann::json& id) { return id.is_string(); });
      }) ||
      !is("generation", [](const nlohmann::json& v) { return v.is_number_unsigned(); }) ||
      (j.contains("deployed") && !j["deployed"].is_boolean())) {
    ex->ReplyError(400, "BAD_FOLDED", "expected {\"ids\": [id, ...], \"generation\": G[, \"deployed\": true]}");
    return;
  }
  const bool deployed = j.contains("deployed") && j["deployed"].get<bool>();
  // Every run says "deployed" once every replica serves its generation: the
  // read path learns it here, not a second later from a replica's manifest,
  // so a query right after a `load --now` or a restatement (archive days
  // only, no realtime answer to say it) reads the new generation.
  if (deployed && generation_deployed_) generation_deployed_(j["generation"].get<uint64_t>());
  Result<size_t> known =
      log_->MarkFolded(j["ids"].get<std::vector<std::string>>(), j["generation"].get<uint64_t>(), deployed);
  if (!known.ok()) {
    ex->ReplyError(known.status());
    return;
  }
  // Files marked done before a deletion still hold its lines: rewritten
  // now, then answered (the rebuild tells "deployed" after marking its late
  // files done, so the owners' look finds them rewritten).
  late_.scrub_done([this, ex, deployed, known = *known](Status scrubbed) {
    if (!scrubbed.ok()) spdlog::warn("late data: rewriting done files without deleted lines: {}", scrubbed.ToString());
    if (deployed) {
      {
        std::lock_guard lock(mu_);
        check_physical_ = true;
        deployed_event_ = true;
      }
      Wake();
    }
    ex->ReplyJson({{"known", known}});
  });
}

// GET /delete/local?id=ID: {"late_holds", "deployed"}: whether a late-data
// file of this node holds a line the deletion took out (and whether this
// node heard that a generation without it is deployed).
void DeletionService::HandleLocal(const HttpExchangePtr& ex) {
  auto id = ex->args().GetSingle("id", "id is given more than once");
  if (!id.ok() || *id == nullptr) {
    ex->ReplyError(400, "INVALID_ID", "id is required (once)");
    return;
  }
  std::optional<Deletion> d = log_->Get(**id);
  if (!d) {
    ex->ReplyError(404, "NOT_FOUND", fmt::format("no deletion {} on this node", **id));
    return;
  }
  const DeletionScope scope = d->Scope();
  late_.holds([scope](const OplogHeader& frame, std::string_view line) { return scope.CoversLateLine(frame, line); },
              [ex, deployed = d->deployed](Result<bool> holds) {
                if (!holds.ok()) {
                  ex->ReplyError(holds.status());
                  return;
                }
                ex->ReplyJson({{"late_holds", *holds}, {"deployed", deployed}});
              });
}

Status DeletionService::Advance(Deletion* d) {
  BlockingHttpClient client(ctx_.cluster);
  const std::vector<const MemberConfig*> apis = ctx_.cluster.MembersWithRole(MemberRole::kApi);
  const std::vector<const MemberConfig*> shards = ctx_.cluster.MembersWithRole(MemberRole::kRealtime);
  auto stopping = [this] {
    std::lock_guard lock(mu_);
    return stop_;
  };
  const Status stopped = Status::Unavailable("stopping");
  std::vector<std::string> unknown_shards;
  if (!d->realtime_done) {
    // 1. Every API node keeps a copy (its reads and the rebuild ask it).
    CLICKATRON_RETURN_IF_ERROR(CopyToPeers(client, *d, &unknown_shards));
  }
  if (d->cuts.empty() && !unknown_shards.empty()) {
    // A node on a newer cluster file (a realtime shard being added,
    // docs/operations.md section 5) may route the key's records to a shard
    // this node does not know: its tombstone would miss them, and the rebuild
    // would fold them in for good. Nothing is installed until this node runs
    // a file with every shard its peers name.
    return Status::FailedPrecondition(
        fmt::format("{}; this node's cluster file does not name it: the deletion waits until this node is "
                    "restarted with the cluster's current file",
                    fmt::join(unknown_shards, "; ")),
        "CLUSTER_FILE_BEHIND");
  }
  if (d->cuts.empty()) {
    // Every member the next steps need answers now: a tombstone makes its
    // shard refuse batches adding to the deleted records until the cut
    // comes, so it is installed only when the cut can follow at once.
    for (const MemberConfig* api : apis) {
      if (stopping()) return stopped;
      CLICKATRON_RETURN_IF_ERROR(Call(client, *api, "GET", "/oplog/heads", "", 5000));
    }
    for (const MemberConfig* shard : shards) {
      if (stopping()) return stopped;
      CLICKATRON_RETURN_IF_ERROR(Call(client, *shard, "GET", "/tombstones", "", 5000));
    }
    // 2. A tombstone on every realtime shard (the key's shard may differ by
    //    day after a change of realtime_shards): each answers once its
    //    stores hold none of the records and it refuses new ones.
    //    Each answers the epoch the tombstone got there.
    std::map<int, uint64_t> epochs;
    for (const MemberConfig* shard : shards) {
      if (stopping()) return stopped;
      std::string answer;
      CLICKATRON_RETURN_IF_ERROR(
          Call(client, *shard, "POST", "/tombstone", d->TombstoneJson().dump(), 30000, &answer));
      const nlohmann::json j = nlohmann::json::parse(answer, nullptr, /*allow_exceptions=*/false);
      if (!j.is_object() || !j.contains("data") || !j["data"].is_object() || !j["data"].contains("epoch") ||
          !j["data"]["epoch"].is_number_unsigned()) {
        return Status::Corruption(fmt::format("POST /tombstone on {}: not the expected JSON", shard->name));
      }
      epochs[shard->shard] = j["data"]["epoch"].get<uint64_t>();
    }
    // 3. The cut: every API node's oplog heads, asked only now, so every
    //    batch below them was either applied before a tombstone (and deleted
    //    with the stores' records) or is still to come (and dropped).
    std::map<int, std::map<std::string, uint64_t>> cuts;
    for (const MemberConfig* api : apis) {
      if (stopping()) return stopped;
      std::string answer;
      CLICKATRON_RETURN_IF_ERROR(Call(client, *api, "GET", "/oplog/heads", "", 10000, &answer));
      const nlohmann::json j = nlohmann::json::parse(answer, nullptr, /*allow_exceptions=*/false);
      if (!j.is_object() || !j.contains("data") || !j["data"].is_object() || !j["data"].contains("heads") ||
          !j["data"]["heads"].is_array()) {
        return Status::Corruption(fmt::format("GET /oplog/heads on {}: not the expected JSON", api->name));
      }
      const nlohmann::json& heads = j["data"]["heads"];
      for (size_t s = 0; s < heads.size(); ++s) cuts[static_cast<int>(s)][api->name] = heads[s].get<uint64_t>();
    }
    d->cuts = std::move(cuts);
    d->cut_unix = NowUnix();
    d->epochs = std::move(epochs);
    CLICKATRON_RETURN_IF_ERROR(log_->Put(*d));
    NotifyCut(d->id);
  }
  if (!d->realtime_done) {
    // 3b. Every API node has the cut before any shard: the rebuild takes a
    //     deletion without one as "all there is came before it", true only
    //     while no shard applies batches past its cut.
    CLICKATRON_RETURN_IF_ERROR(CopyToPeers(client, *d));
    // 4. Each shard its cut (its own seqs of every API node). A shard that
    //    retired the tombstone since remembers its cut and answers 200.
    for (const MemberConfig* shard : shards) {
      if (stopping()) return stopped;
      std::map<std::string, uint64_t> cut;
      if (auto it = d->cuts.find(shard->shard); it != d->cuts.end()) cut = it->second;
      for (const MemberConfig* api : apis) cut.emplace(api->name, 0);  // a node with no batch for it yet
      const nlohmann::json body = {{"id", d->id}, {"cut", cut}};
      CLICKATRON_RETURN_IF_ERROR(Call(client, *shard, "POST", "/tombstone/cut", body.dump(), 10000));
    }
    d->realtime_done = true;
    CLICKATRON_RETURN_IF_ERROR(log_->Put(*d));
    spdlog::info("deletion {}: the realtime shards deleted its records and have its cut", d->id);
  }
  // 5. The other API nodes learn it is done (they answer GET /delete/ID
  //    too): each copy says so once every node has been told.
  Deletion told = *d;
  told.peers_told = true;
  CLICKATRON_RETURN_IF_ERROR(CopyToPeers(client, told));
  *d = std::move(told);
  return log_->Put(*d);
}

Status DeletionService::CopyToPeers(BlockingHttpClient& client, const Deletion& d,
                                    std::vector<std::string>* unknown_shards) {
  const std::string record = d.ToJson().dump();
  for (const MemberConfig* api : ctx_.cluster.MembersWithRole(MemberRole::kApi)) {
    if (api->name == ctx_.member.name) continue;
    {
      std::lock_guard lock(mu_);
      if (stop_) return Status::Unavailable("stopping");
    }
    std::string answer;
    CLICKATRON_RETURN_IF_ERROR(Call(client, *api, "POST", "/delete/record", record, 10000, &answer));
    if (unknown_shards == nullptr) continue;
    // A peer of an older version names none: nothing to compare.
    const nlohmann::json j = nlohmann::json::parse(answer, nullptr, /*allow_exceptions=*/false);
    const nlohmann::json* members = nullptr;
    if (j.is_object() && j.contains("data") && j["data"].is_object() && j["data"].contains("realtime_members") &&
        j["data"]["realtime_members"].is_array()) {
      members = &j["data"]["realtime_members"];
    }
    for (const nlohmann::json& m : members ? *members : nlohmann::json::array()) {
      // By shard number: tombstones go to this node's member of each shard
      // (a member renamed for the same shard is no shard missed).
      if (!m.is_object() || !m.contains("shard") || !m["shard"].is_number_integer()) continue;
      const int shard = m["shard"].get<int>();
      if (ctx_.cluster.RealtimeMember(shard) != nullptr) continue;
      const std::string name = m.contains("name") && m["name"].is_string() ? m["name"].get<std::string>() : "?";
      unknown_shards->push_back(
          fmt::format("{}'s cluster file names realtime member {} (shard {})", api->name, name, shard));
    }
  }
  return Status::Ok();
}

Status DeletionService::CheckPhysical(Deletion* d) {
  BlockingHttpClient client(ctx_.cluster);
  const std::vector<const MemberConfig*> apis = ctx_.cluster.MembersWithRole(MemberRole::kApi);
  for (const MemberConfig* api : apis) {
    std::string answer;
    CLICKATRON_RETURN_IF_ERROR(Call(client, *api, "GET", "/delete/local?id=" + PercentEncode(d->id), "", 30000, &answer));
    const nlohmann::json j = nlohmann::json::parse(answer, nullptr, /*allow_exceptions=*/false);
    if (!j.is_object() || !j.contains("data") || !j["data"].is_object() || !j["data"].contains("late_holds") ||
        !j["data"]["late_holds"].is_boolean()) {
      return Status::Corruption(fmt::format("GET /delete/local on {}: not the expected JSON", api->name));
    }
    if (j["data"]["late_holds"].get<bool>()) {
      return Status::FailedPrecondition(fmt::format("a late-data file of {} still holds some of it", api->name));
    }
  }
  // Every other node first: marked here last, so a node that missed it is
  // told again at the next look.
  d->physical = true;
  CLICKATRON_RETURN_IF_ERROR(CopyToPeers(client, *d));
  CLICKATRON_RETURN_IF_ERROR(log_->Put(*d));
  spdlog::info("deletion {}: physical (no file the cluster serves or keeps holds it)", d->id);
  return Status::Ok();
}

void DeletionService::RunLoop() {
  std::unique_lock lock(mu_);
  while (!stop_) {
    cv_.wait_for(lock, std::chrono::seconds(1), [this] { return stop_ || work_; });
    if (stop_) break;
    work_ = false;
    lock.unlock();
    if (!unsynced_peers_.empty()) unsynced_peers_ = SyncFromPeers(unsynced_peers_, 5000);
    std::vector<Deletion> unfinished = log_->Unfinished(ctx_.member.name);
    {
      // Why a deletion waited is kept only while it is unfinished.
      std::lock_guard check(mu_);
      std::erase_if(waiting_, [&](const auto& w) {
        return std::none_of(unfinished.begin(), unfinished.end(), [&](const Deletion& d) { return d.id == w.first; });
      });
    }
    for (Deletion d : unfinished) {
      const Status st = Advance(&d);
      std::lock_guard check(mu_);
      if (!st.ok()) {
        // Said once per cause, not every second; GET /delete/ID shows it.
        const std::string why = st.reason().empty() ? st.message() : st.reason() + ": " + st.message();
        if (waiting_[d.id] != why) spdlog::warn("deletion {}: {}; retrying every second", d.id, why);
        waiting_[d.id] = why;
      } else {
        waiting_.erase(d.id);
      }
      if (stop_) break;
    }
    bool look = false;
    {
      std::lock_guard check(mu_);
      std::swap(look, check_physical_);
      if (deployed_event_) physical_tries_.clear();  // a new deploy: a new minute of looks
      deployed_event_ = false;
    }
    // After a deploy: does any file still hold a deployed deletion? (A node
    // down then, or late files still sealed, answer at a later deploy.)
    // A node that did not answer is asked again a second later, for a
    // minute; a file that still holds it waits for the next deploy.
    bool again = false;
    for (Deletion d : look ? log_->AwaitingPhysical(ctx_.member.name) : std::vector<Deletion>{}) {
      const Status st = CheckPhysical(&d);
      if (st.ok()) {
        physical_tries_.erase(d.id);
        continue;
      }
      spdlog::info("deletion {}: not yet physical: {}", d.id, st.message());
      if (st.code() != StatusCode::kFailedPrecondition && ++physical_tries_[d.id] < 60) again = true;
    }
    if (again) {
      std::lock_guard check(mu_);
      check_physical_ = true;
    }
    lock.lock();
  }
}

}  // namespace clickatron::api
