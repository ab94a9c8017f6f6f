// Archive replica reads with failover; see archive_reader.h.
#include "query/fetch/archive_reader.h"
#include "query/fetch/shard_unavailable.h"

#include <fmt/format.h>
#include <spdlog/spdlog.h>

#include <algorithm>
#include <unordered_set>

#include "clickatron/key_codec.h"
#include "clickatron/shard.h"
#include "query/fetch/coalesced_reads.h"
#include "query/fetch/fan_in.h"

namespace clickatron::api {

ArchiveReader::ArchiveReader(const ClusterConfig& cluster, HttpClient& client, ReadStats& stats, Options options)
    : client_(client),
      stats_(stats),
      options_(options),
      config_shards_(std::max(cluster.archive_shards, 1)),
      known_generation_(options_.known_generation ? options_.known_generation
                                                  : std::make_shared<KnownGeneration>(std::string())) {
  replicas_.resize(static_cast<size_t>(std::max(cluster.archive_shards, 1)));
  round_robin_.resize(replicas_.size(), 0);
  manifest_facts_.resize(replicas_.size());
  facts_waiting_.resize(replicas_.size());
  for (size_t shard = 0; shard < replicas_.size(); ++shard) {
    for (const MemberConfig* m : cluster.ArchiveReplicas(static_cast<int>(shard))) {
      replicas_[shard].push_back(Replica{m->name, m->listen, {}});
    }
  }
  if (options_.coalesce_in_flight > 0) {
    const Coalescer<ArchiveReply>::Options coalesce{.max_in_flight = options_.coalesce_in_flight,
                                                    .max_keys = options_.coalesce_max_keys,
                                                    .max_bytes = options_.max_target_bytes};
    coalescers_.resize(replicas_.size());
    for (size_t shard = 0; shard < replicas_.size(); ++shard) {
      for (size_t replica = 0; replica < replicas_[shard].size(); ++replica) {
        coalescers_[shard].push_back(std::make_unique<Coalescer<ArchiveReply>>(
            coalesce,
            [this, shard, replica](std::vector<std::string> keys, Coalescer<ArchiveReply>::BatchDone done) {
              SendBatch(static_cast<int>(shard), replica, std::move(keys), std::move(done));
            },
            TargetKeyCost));
      }
    }
  }
}

ArchiveReader::~ArchiveReader() { alive_.reset(); }

size_t ArchiveReader::PickFrom(int shard, size_t first) const {
  const auto& replicas = replicas_[static_cast<size_t>(shard)];
  const auto now = std::chrono::steady_clock::now();
  for (size_t k = 0; k < replicas.size(); ++k) {
    const size_t i = (first + k) % replicas.size();
    if (replicas[i].down_until <= now) return i;
  }
  return first % replicas.size();  // all penalised: try anyway, in turn
}

void ArchiveReader::StartAwayFrom(Session& session, size_t replica) const {
  if (session.shard < 0 || static_cast<size_t>(session.shard) >= replicas_.size()) return;
  const size_t n = replicas_[static_cast<size_t>(session.shard)].size();
  if (n < 2) return;
  const size_t next = PickFrom(session.shard, replica + 1);
  session.replica = next != replica % n ? next : (replica + 1) % n;
}

void ArchiveReader::Penalize(size_t shard, size_t replica) {
  if (shard >= replicas_.size() || replica >= replicas_[shard].size()) return;
  replicas_[shard][replica].down_until = std::chrono::steady_clock::now() + options_.replica_penalty;
}

int ArchiveReader::ShardCount() const { return routing_shards_ > 0 ? routing_shards_ : config_shards_; }

int ArchiveReader::ShardFor(std::string_view shard_key, int shard_count) {
  return static_cast<int>(ShardOf(shard_key, static_cast<uint32_t>(std::max(shard_count, 1))));
}

std::shared_ptr<ArchiveReader::Session> ArchiveReader::BeginShard(int shard, int shard_count) {
  auto session = std::make_shared<Session>();
  session->shard = shard;
  session->shard_count = shard_count;
  // A shard the cluster file has no replica for (a count larger than the
  // file's) fails when the session sends.
  if (static_cast<size_t>(shard) < replicas_.size() && !replicas_[static_cast<size_t>(shard)].empty()) {
    session->replica = PickFrom(shard, round_robin_[static_cast<size_t>(shard)]++);
  }
  return session;
}

std::shared_ptr<ArchiveReader::Session> ArchiveReader::Begin(std::string_view shard_key) {
  auto session = BeginShard(ShardFor(shard_key, ShardCount()), ShardCount());
  session->shard_key = std::string(shard_key);
  return session;
}

bool ArchiveReader::Misrouted(const Session& session, const ArchiveView& view) {
  return view.shard_count != 0 && view.shard_count != session.shard_count;
}

Status ArchiveReader::Reroute(Session& session, const ArchiveView& view) {
  constexpr int kMaxReroutes = 3;  // more only while a re-partitioned generation is half deployed
  if (session.shard_key.empty() || session.reroutes >= kMaxReroutes) {
    return ShardUnavailable(fmt::format(
        "archive shard {}: asked by {} shards, it answers for {} (a re-partitioned generation is being deployed)",
        session.shard, session.shard_count, view.shard_count));
  }
  ++session.reroutes;
  ++stats_.archive_reroutes;
  PointAt(session, view.shard_count);
  return Status::Ok();
}

void ArchiveReader::PointAt(Session& session, int shard_count) {
  const auto fresh = BeginShard(ShardFor(session.shard_key, shard_count), shard_count);
  session.shard = fresh->shard;
  session.replica = fresh->replica;
  session.shard_count = shard_count;
}

void ArchiveReader::LearnShardCount(const ArchiveView& view) {
  if (view.shard_count == 0 || view.generation < routing_generation_) return;
  if (view.shard_count != routing_shards_) {
    spdlog::info("archive generation {} is cut into {} shards (the cluster file says {}): archive reads are routed "
                 "by {}",
                 view.generation, view.shard_count, config_shards_, view.shard_count);
  }
  routing_generation_ = view.generation;
  routing_shards_ = view.shard_count;
}

void ArchiveReader::WhenRouted(std::function<void()> then) {
  if (routing_asked_ || routing_shards_ > 0) return then();
  routing_waiters_.push_back(std::move(then));
  if (routing_waiters_.size() > 1) return;  // the question is out
  // Shard 0 exists under every count, and has a file whenever any shard has.
  auto session = BeginShard(0, config_shards_);
  std::weak_ptr<bool> alive = alive_;
  Send(session, "/manifest?shard=0", Attempts(0), [this, alive](Result<ArchiveReply> reply) {
    if (alive.expired()) return;
    // Answered: its count is learned (Interpret), or it says none (no file:
    // the cluster file's count until an answer says one). Not answered: these
    // reads go by the cluster file's count and the next read asks again.
    if (reply.ok()) routing_asked_ = true;
    std::vector<std::function<void()>> waiters;
    waiters.swap(routing_waiters_);
    for (auto& waiter : waiters) waiter();
  });
}

void ArchiveReader::RouteByDeployed(std::function<void()> then) {
  const uint64_t deployed = known_generation_->deployed();
  if (deployed == 0 || routing_generation_ >= deployed) return then();
  if (deployed_route_asked_ >= deployed && deployed_route_waiters_.empty()) return then();
  deployed_route_waiters_.push_back(std::move(then));
  if (deployed_route_waiters_.size() > 1) return;  // the question is out
  deployed_route_asked_ = deployed;
  // Shard 0 is deployed last: once it serves the deployed generation, its
  // answer's count (learned in Interpret) is that generation's.
  auto session = BeginShard(0, ShardCount());
  std::weak_ptr<bool> alive = alive_;
  Send(session, "/manifest?shard=0", Attempts(0), [this, alive](Result<ArchiveReply>) {
    if (alive.expired()) return;
    std::vector<std::function<void()>> waiters;
    waiters.swap(deployed_route_waiters_);
    for (auto& waiter : waiters) waiter();
  });
}

Result<ArchiveReply> ArchiveReader::Interpret(const Replica& replica, const HttpResponse& response) {
  if (!response.ok()) return ShardUnavailable(response.transport.message());
  if (response.status_code >= 500) {
    // With its reason (ARCHIVE_DAMAGED, ARCHIVE_UNAVAILABLE …): the query's
    // 503 names the last replica's, so a shard whose replicas all refuse
    // says why without an operator reading each one.
    return ShardUnavailable(fmt::format("archive replica {} answered {}", replica.name, DescribeHttpAnswer(response)));
  }
  if (response.status_code != 200 && response.status_code != 404) {
    // Our request was refused: another replica would refuse it too.
    return Status::Internal(fmt::format("archive replica {} refused a read ({}): {}", replica.name,
                                        response.status_code, QuoteForMessage(response.body)));
  }
  auto view = ParseArchiveView(response);
  if (!view.ok()) return ShardUnavailable(fmt::format("archive replica {}: {}", replica.name, view.status().message()));
  known_generation_->Saw(view->generation);
  LearnShardCount(*view);
  if (view->generation == 0 && known_generation_->newest() > 0) {
    return ShardUnavailable(fmt::format(
        "archive replica {} serves no file while the archive is at generation {}: its file is missing (if the "
        "archive was reset on purpose, remove {} on this API node)",
        replica.name, known_generation_->newest(),
        known_generation_->path().empty() ? std::string("the archive-generation file") : known_generation_->path()));
  }
  ArchiveReply reply;
  reply.view = *view;
  reply.found = response.status_code == 200;
  if (reply.found) reply.body = response.body;
  return reply;
}

void ArchiveReader::Send(std::shared_ptr<Session> session, std::string target, int attempts_left, ReplyCallback done,
                         BodyCheck check) {
  const size_t shard = static_cast<size_t>(session->shard);
  if (shard >= replicas_.size() || replicas_[shard].empty()) {
    done(ShardUnavailable(fmt::format("archive shard {} has no replica in the cluster file", shard)));
    return;
  }
  const size_t index = session->replica % replicas_[shard].size();
  ++stats_.archive_requests;
  HttpRequestSpec spec;
  spec.target = target;
  spec.timeout_ms = options_.timeout_ms;
  std::weak_ptr<bool> alive = alive_;
  const auto sent = std::chrono::steady_clock::now();
  // `shard` and `index` are where this request went: another request of the
  // session may reroute it (session->shard) while this one is out.
  client_.Send(replicas_[shard][index].peer, std::move(spec),
               [this, alive, session, shard, target = std::move(target), attempts_left, index, sent,
                done = std::move(done), check = std::move(check)](HttpResponse response) mutable {
                 if (alive.expired()) return;
                 Replica& replica = replicas_[shard][index];
                 Result<ArchiveReply> reply = Interpret(replica, response);
                 if (reply.ok() && answer_seen_) answer_seen_(shard, index, reply->view, sent);
                 if (reply.ok()) reply->replica = index;
                 if (reply.ok() && check) {
                   if (Status st = check(*reply); !st.ok()) {
                     reply = ShardUnavailable(
                         fmt::format("archive replica {} answered garbage: {}", replica.name, st.message()));
                   }
                 }
                 if (!reply.ok() && damage_seen_) {
                   if (std::optional<ArchiveView> damaged = DamagedFileOf(response)) {
                     damage_seen_(shard, index, *damaged);
                   }
                 }
                 // A shard other than 0 serving no file, before any answer
                 // said which count the archive is cut into (shard 0 did not
                 // answer): it may be a new shard of a count not deployed
                 // yet, whose "not found" would drop archived clicks.
                 if (reply.ok() && reply->view.generation == 0 && shard != 0 && !routing_asked_ &&
                     routing_shards_ == 0) {
                   done(ShardUnavailable(fmt::format(
                       "archive shard {} serves no file and shard 0, which says how the archive is cut, did not "
                       "answer",
                       shard)));
                   return;
                 }
                 if (reply.ok() || reply.status().code() != StatusCode::kUnavailable) {
                   done(std::move(reply));
                   return;
                 }
                 Penalize(shard, index);
                 // A lone replica gets a second try for a keep-alive
                 // connection it closed (that fails at once), not after it
                 // let a request time out.
                 const bool lone_timed_out = replicas_[shard].size() == 1 && !response.ok() &&
                                             response.transport.reason() == "TIMEOUT";
                 if (attempts_left <= 1 || lone_timed_out) {
                   done(ShardUnavailable(fmt::format("archive shard {}: no replica answered (last: {}, {})", shard,
                                                     replica.name, reply.status().message())));
                   return;
                 }
                 ++stats_.archive_failovers;
                 // The next replica of this shard, unless the session was
                 // rerouted meanwhile (then its own pick stands).
                 if (static_cast<size_t>(session->shard) == shard) {
                   session->replica = PickFrom(session->shard, index + 1);
                 }
                 Send(session, std::move(target), attempts_left - 1, std::move(done), std::move(check));
               });
}

int ArchiveReader::Attempts(int shard) const {
  const size_t n = shard >= 0 && shard < static_cast<int>(replicas_.size()) ? replicas_[shard].size() : 0;
  // Each replica once, and a single replica twice (a keep-alive connection
  // the server closed can fail one request spuriously).
  return static_cast<int>(std::max<size_t>(2, n));
}

size_t ArchiveReader::ReplicaOf(const Session& session) const {
  const size_t replicas = Replicas(static_cast<size_t>(session.shard));
  return replicas == 0 ? 0 : session.replica % replicas;
}

void ArchiveReader::AskServedFile(size_t shard, size_t replica, std::function<void()> done) {
  auto session = std::make_shared<Session>();
  session->shard = static_cast<int>(shard);
  session->replica = replica;
  Send(session, fmt::format("/manifest?shard={}", shard), 1,
       [done = std::move(done)](Result<ArchiveReply>) { done(); });
}

void ArchiveReader::Route(const std::shared_ptr<Session>& session, std::function<void()> then) {
  WhenRouted([this, session, then = std::move(then)]() {
    // Begun before the count was learned: on the shard of the learned one.
    if (!session->shard_key.empty() && session->shard_count != ShardCount() && session->reroutes == 0) {
      PointAt(*session, ShardCount());
    }
    then();
  });
}

void ArchiveReader::Get(const std::shared_ptr<Session>& session, std::string_view key, ReplyCallback done) {
  Route(session, [this, session, key = std::string(key), done = std::move(done)]() mutable {
    GetRouted(session, std::move(key), std::move(done));
  });
}

void ArchiveReader::GetRouted(std::shared_ptr<Session> session, std::string key, ReplyCallback done) {
  auto checked = [this, session, key, done](Result<ArchiveReply> reply) mutable {
    if (reply.ok() && Misrouted(*session, reply->view)) {
      if (Status st = Reroute(*session, reply->view); !st.ok()) return done(std::move(st));
      return GetRouted(session, std::move(key), std::move(done));
    }
    done(std::move(reply));
  };
  const size_t shard = static_cast<size_t>(session->shard);
  if (shard >= coalescers_.size() || coalescers_[shard].empty()) {
    Send(session, GetTarget(key), Attempts(session->shard), std::move(checked));
    return;
  }
  auto& replicas = coalescers_[shard];
  replicas[session->replica % replicas.size()]->Submit(
      key, [session, checked = std::move(checked)](Result<ArchiveReply> reply) mutable {
        // The session follows the batch's failover, as a get of its own would.
        if (reply.ok()) session->replica = reply->replica;
        checked(std::move(reply));
      });
}

void ArchiveReader::SendBatch(int shard, size_t replica, std::vector<std::string> keys,
                              Coalescer<ArchiveReply>::BatchDone done) {
  // A replica that failed since the gets were queued is skipped at once, not
  // after another timeout.
  // Not re-routed itself: each get's own session checks its reply's view.
  auto session = std::make_shared<Session>();
  session->shard = shard;
  session->replica = PickFrom(shard, replica);
  if (keys.size() == 1) {  // a lone get stays a get: the same request as without coalescing
    Send(session, GetTarget(keys.front()), Attempts(shard), AsBatchOfOne<ArchiveReply>(std::move(done)));
    return;
  }
  ++stats_.archive_coalesced_requests;
  stats_.archive_coalesced_keys += keys.size();
  std::string target = MGetTarget(keys);
  // mget answers 200 with the hits only; the headers hold for every key. The
  // split is the check: an answer that cannot be split per key is tried on
  // another replica, and the split the last answer made is what is handed on.
  auto split = std::make_shared<Result<std::vector<ArchiveReply>>>(std::vector<ArchiveReply>{});
  auto check = [keys = std::move(keys), split](const ArchiveReply& reply) {
    *split = SplitArchiveMget(reply.found ? std::string_view(reply.body) : std::string_view(), keys, reply.view,
                              reply.replica);
    return split->status();
  };
  Send(
      session, std::move(target), Attempts(shard),
      [split, done = std::move(done)](Result<ArchiveReply> reply) {
        if (!reply.ok()) return done(reply.status());
        done(std::move(*split));
      },
      std::move(check));
}

void ArchiveReader::MGet(const std::shared_ptr<Session>& session, const std::vector<std::string>& keys,
                         MGetCallback done) {
  Route(session, [this, session, keys, done = std::move(done)]() mutable {
    MGetRouted(session, std::move(keys), std::move(done));
  });
}

void ArchiveReader::MGetRouted(std::shared_ptr<Session> session, std::vector<std::string> keys, MGetCallback done) {
  auto asked = std::make_shared<std::vector<std::string>>(std::move(keys));
  // A keyed session answered for another count is asked again on the shard
  // of that count; a shard's session (lookups) hands the answers back for
  // its caller to check.
  auto checked = [this, session, asked, done = std::move(done)](Result<std::vector<ArchiveReply>> replies) mutable {
    if (replies.ok() && !session->shard_key.empty()) {
      for (const ArchiveReply& reply : *replies) {
        if (!Misrouted(*session, reply.view)) continue;
        if (Status st = Reroute(*session, reply.view); !st.ok()) return done(std::move(st));
        return MGetRouted(session, *asked, std::move(done));
      }
    }
    done(std::move(replies));
  };
  if (FitsOneBatch(session->shard, *asked)) return MGetCoalesced(session, *asked, std::move(checked));
  // Each key once: a replica answers a line per key asked, and a key asked
  // twice would read as a repeated line (the batches' coalescer does the
  // same). Kept in order, in place.
  {
    std::unordered_set<std::string_view> seen;
    std::vector<bool> first(asked->size());
    for (size_t i = 0; i < asked->size(); ++i) first[i] = seen.insert((*asked)[i]).second;
    seen.clear();  // its views are of strings about to move
    size_t kept = 0;
    for (size_t i = 0; i < asked->size(); ++i) {
      if (first[i] && kept++ != i) (*asked)[kept - 1] = std::move((*asked)[i]);
    }
    asked->resize(kept);
  }
  const std::vector<MGetBatch> targets = MGetTargets(*asked, options_.max_target_bytes, options_.max_keys_per_mget);
  FanInAll<ArchiveReply>(
      targets.size(),
      [&](size_t i, ReplyCallback answer) {
        // Each part's answer as a batch's: only keys it asked, each once (its
        // lines go on whole, as an mget answer).
        auto check = [asked, first = targets[i].first_key, count = targets[i].keys](const ArchiveReply& reply) {
          return reply.found
                     ? CheckArchiveMget(reply.body, std::span<const std::string>(*asked).subspan(first, count))
                     : Status::Ok();
        };
        Send(session, targets[i].target, Attempts(session->shard), std::move(answer), std::move(check));
      },
      std::move(checked));
}

bool ArchiveReader::FitsOneBatch(int shard, const std::vector<std::string>& keys) const {
  if (keys.empty() || static_cast<size_t>(shard) >= coalescers_.size() ||
      coalescers_[static_cast<size_t>(shard)].empty() || keys.size() > options_.coalesce_max_keys) {
    return false;
  }
  size_t bytes = 0;
  for (const std::string& key : keys) bytes += TargetKeyCost(key);
  return bytes <= options_.max_target_bytes;
}

void ArchiveReader::MGetCoalesced(std::shared_ptr<Session> session, std::vector<std::string> keys,
                                  MGetCallback done) {
  struct Gathered {
    std::vector<std::string> keys;
    std::vector<ArchiveReply> replies;  // by key
    size_t left = 0;
    Status failed;
    MGetCallback done;
  };
  auto gathered = std::make_shared<Gathered>();
  gathered->replies.resize(keys.size());
  gathered->left = keys.size();
  gathered->done = std::move(done);
  auto finish = [gathered]() {
    if (!gathered->failed.ok()) return gathered->done(std::move(gathered->failed));
    // The answers as mget answers: one per (file, replica) they came from
    // (all one unless a reload or failover fell between two batches; the
    // caller's view check sees that), each holding the "key,value" lines of
    // its hits.
    std::vector<ArchiveReply> out;
    for (size_t i = 0; i < gathered->keys.size(); ++i) {
      ArchiveReply& reply = gathered->replies[i];
      auto same = std::find_if(out.begin(), out.end(), [&](const ArchiveReply& o) {
        return o.view == reply.view && o.replica == reply.replica;
      });
      if (same == out.end()) {
        out.emplace_back();
        same = std::prev(out.end());
        same->view = reply.view;
        same->replica = reply.replica;
        same->found = true;  // an mget answers 200 with its hits, none or more
      }
      if (reply.found) same->body.append(gathered->keys[i]).append(",").append(reply.body);
    }
    gathered->done(std::move(out));
  };
  std::vector<Coalescer<ArchiveReply>::Lookup> lookups;
  lookups.reserve(keys.size());
  for (size_t i = 0; i < keys.size(); ++i) {
    lookups.push_back({keys[i], [session, gathered, i, finish](Result<ArchiveReply> reply) {
                         if (!reply.ok()) {
                           if (gathered->failed.ok()) gathered->failed = reply.status();
                         } else {
                           // The session follows the batch's failover, as a get of its own would.
                           session->replica = reply->replica;
                           gathered->replies[i] = std::move(*reply);
                         }
                         if (--gathered->left == 0) finish();
                       }});
  }
  // The keys stay for the answers' lines; the coalescer's queue holds its own.
  gathered->keys = std::move(keys);
  auto& replicas = coalescers_[static_cast<size_t>(session->shard)];
  replicas[session->replica % replicas.size()]->SubmitAll(std::move(lookups));
}

}  // namespace clickatron::api
