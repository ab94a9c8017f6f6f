// Archive replica reads with failover; see archive_reader.h.
#include "query/archive_reader.h"

#include <fmt/format.h>
#include <nlohmann/json.hpp>
#include <strings.h>

#include <algorithm>
#include <charconv>

#include "clickatron/key_codec.h"
#include "clickatron/ymdh.h"
#include "query/coalesced_reads.h"
#include "query/fan_in.h"
#include "query/read_targets.h"

namespace clickatron::api {
namespace {

const std::string* FindHeader(const HttpResponse& response, std::string_view name) {
  for (const auto& [k, v] : response.headers) {
    if (k.size() == name.size() && strncasecmp(k.data(), name.data(), k.size()) == 0) return &v;
  }
  return nullptr;
}

Status ShardUnavailable(std::string message) { return Status::Unavailable(std::move(message), "SHARD_UNAVAILABLE"); }

}  // namespace

Result<ArchiveView> ParseArchiveView(const HttpResponse& response) {
  const std::string* generation = FindHeader(response, "X-Archive-Generation");
  const std::string* last_day = FindHeader(response, "X-Archive-Last-Day");
  if (generation == nullptr || last_day == nullptr) {
    return Status::Corruption("answer without X-Archive-Generation / X-Archive-Last-Day");
  }
  ArchiveView view;
  const auto [end, ec] = std::from_chars(generation->data(), generation->data() + generation->size(), view.generation);
  if (ec != std::errc() || end != generation->data() + generation->size()) {
    return Status::Corruption(fmt::format("bad X-Archive-Generation {}", QuoteForMessage(*generation)));
  }
  if (!last_day->empty()) {
    auto day = ParseDate(*last_day);
    if (!day.ok()) return Status::Corruption(fmt::format("bad X-Archive-Last-Day {}", QuoteForMessage(*last_day)));
    view.last_day = *day;
  }
  return view;
}

ArchiveReader::ArchiveReader(const ClusterConfig& cluster, HttpClient& client, ReadStats& stats, Options options)
    : client_(client), stats_(stats), options_(options), known_generation_(options_.generation_file) {
  replicas_.resize(static_cast<size_t>(std::max(cluster.archive_shards, 1)));
  round_robin_.resize(replicas_.size(), 0);
  day_records_every_day_.resize(replicas_.size());
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

std::shared_ptr<ArchiveReader::Session> ArchiveReader::Begin(int shard) {
  auto session = std::make_shared<Session>();
  session->shard = shard;
  const auto& replicas = replicas_[static_cast<size_t>(shard)];
  if (!replicas.empty()) session->replica = PickFrom(shard, round_robin_[static_cast<size_t>(shard)]++);
  return session;
}

Result<ArchiveReply> ArchiveReader::Interpret(const Replica& replica, const HttpResponse& response) {
  if (!response.ok()) return ShardUnavailable(response.transport.message());
  if (response.status_code >= 500) {
    return ShardUnavailable(fmt::format("archive replica {} answered {}", replica.name, response.status_code));
  }
  if (response.status_code != 200 && response.status_code != 404) {
    // Our request was refused: another replica would refuse it too.
    return Status::Internal(fmt::format("archive replica {} refused a read ({}): {}", replica.name,
                                        response.status_code, QuoteForMessage(response.body)));
  }
  auto view = ParseArchiveView(response);
  if (!view.ok()) return ShardUnavailable(fmt::format("archive replica {}: {}", replica.name, view.status().message()));
  known_generation_.Saw(view->generation);
  if (view->generation == 0 && known_generation_.newest() > 0) {
    return ShardUnavailable(fmt::format(
        "archive replica {} serves no file while the archive is at generation {}: its file is missing (if the "
        "archive was reset on purpose, remove {} on this API node)",
        replica.name, known_generation_.newest(),
        known_generation_.path().empty() ? std::string("the archive-generation file") : known_generation_.path()));
  }
  ArchiveReply reply;
  reply.view = *view;
  reply.found = response.status_code == 200;
  if (reply.found) reply.body = response.body;
  return reply;
}

void ArchiveReader::Send(std::shared_ptr<Session> session, std::string target, int attempts_left, ReplyCallback done) {
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
  client_.Send(replicas_[shard][index].peer, std::move(spec),
               [this, alive, session, target = std::move(target), attempts_left, index,
                done = std::move(done)](HttpResponse response) mutable {
                 if (alive.expired()) return;
                 Replica& replica = replicas_[static_cast<size_t>(session->shard)][index];
                 Result<ArchiveReply> reply = Interpret(replica, response);
                 if (reply.ok()) reply->replica = index;
                 if (reply.ok() || reply.status().code() != StatusCode::kUnavailable) {
                   done(std::move(reply));
                   return;
                 }
                 replica.down_until = std::chrono::steady_clock::now() + options_.replica_penalty;
                 if (attempts_left <= 1) {
                   done(ShardUnavailable(fmt::format("archive shard {}: no replica answered (last: {})",
                                                     session->shard, reply.status().message())));
                   return;
                 }
                 ++stats_.archive_failovers;
                 session->replica = PickFrom(session->shard, index + 1);
                 Send(session, std::move(target), attempts_left - 1, std::move(done));
               });
}

int ArchiveReader::Attempts(int shard) const {
  const size_t n = shard >= 0 && shard < static_cast<int>(replicas_.size()) ? replicas_[shard].size() : 0;
  // Each replica once, and a single replica twice (a keep-alive connection
  // the server closed can fail one request spuriously).
  return static_cast<int>(std::max<size_t>(2, n));
}

void ArchiveReader::Get(const std::shared_ptr<Session>& session, std::string_view key, ReplyCallback done) {
  const size_t shard = static_cast<size_t>(session->shard);
  if (shard >= coalescers_.size() || coalescers_[shard].empty()) {
    Send(session, GetTarget(key), Attempts(session->shard), std::move(done));
    return;
  }
  auto& replicas = coalescers_[shard];
  replicas[session->replica % replicas.size()]->Submit(
      std::string(key), [session, done = std::move(done)](Result<ArchiveReply> reply) {
        // The session follows the batch's failover, as a get of its own would.
        if (reply.ok()) session->replica = reply->replica;
        done(std::move(reply));
      });
}

void ArchiveReader::SendBatch(int shard, size_t replica, std::vector<std::string> keys,
                              Coalescer<ArchiveReply>::BatchDone done) {
  // A replica that failed since the gets were queued is skipped at once, not
  // after another timeout.
  auto session = std::make_shared<Session>(Session{.shard = shard, .replica = PickFrom(shard, replica)});
  if (keys.size() == 1) {  // a lone get stays a get: the same request as without coalescing
    Send(session, GetTarget(keys.front()), Attempts(shard), AsBatchOfOne<ArchiveReply>(std::move(done)));
    return;
  }
  ++stats_.archive_coalesced_requests;
  stats_.archive_coalesced_keys += keys.size();
  std::string target = MGetTarget(keys);
  Send(session, std::move(target), Attempts(shard),
       [keys = std::move(keys), done = std::move(done)](Result<ArchiveReply> reply) {
         if (!reply.ok()) return done(reply.status());
         // mget answers 200 with the hits only; the headers hold for every key.
         done(SplitArchiveMget(reply->found ? std::string_view(reply->body) : std::string_view(), keys, reply->view,
                               reply->replica));
       });
}

void ArchiveReader::MGet(const std::shared_ptr<Session>& session, const std::vector<std::string>& keys,
                         std::function<void(Result<std::vector<ArchiveReply>>)> done) {
  const std::vector<std::string> targets = MGetTargets(keys, options_.max_target_bytes, options_.max_keys_per_mget);
  auto replies = std::make_shared<std::vector<ArchiveReply>>(targets.size());
  auto join = FanIn::Create([replies, done = std::move(done)](Status st) {
    if (!st.ok()) {
      done(std::move(st));
      return;
    }
    done(std::move(*replies));
  });
  std::vector<std::function<void(Status)>> parts;
  for (size_t i = 0; i < targets.size(); ++i) parts.push_back(join->Part());
  join->Arm();  // nothing sent yet: only the parts can finish it now
  for (size_t i = 0; i < targets.size(); ++i) {
    Send(session, targets[i], Attempts(session->shard),
         [replies, i, part = std::move(parts[i])](Result<ArchiveReply> reply) {
           if (!reply.ok()) {
             part(reply.status());
             return;
           }
           (*replies)[i] = std::move(*reply);
           part(Status::Ok());
         });
  }
}

void ArchiveReader::DayRecordsEveryDay(const std::shared_ptr<Session>& session, uint64_t generation,
                                       std::function<void(bool)> done) {
  const size_t shard = static_cast<size_t>(session->shard);
  if (shard >= day_records_every_day_.size()) return done(false);
  auto& known = day_records_every_day_[shard];
  if (auto it = known.find(generation); it != known.end()) return done(it->second);
  std::weak_ptr<bool> alive = alive_;
  Send(session, fmt::format("/manifest?shard={}", shard), Attempts(session->shard),
       [this, alive, shard, generation, done = std::move(done)](Result<ArchiveReply> reply) {
         if (alive.expired()) return;
         if (!reply.ok() || !reply->found) return done(false);
         // {"data": the manifest, or null for a file without one, ...}
         const nlohmann::json answer = nlohmann::json::parse(reply->body, nullptr, /*allow_exceptions=*/false);
         bool every_day = false;
         if (answer.is_object() && answer.contains("data") && answer["data"].is_object()) {
           const nlohmann::json& flag = answer["data"].value("day_subtotals_every_day", nlohmann::json(false));
           every_day = flag.is_boolean() && flag.get<bool>();
         }
         auto& known = day_records_every_day_[shard];
         known[reply->view.generation] = every_day;
         while (known.size() > 4) known.erase(known.begin());  // generations only grow
         done(reply->view.generation == generation && every_day);
       });
}

}  // namespace clickatron::api
