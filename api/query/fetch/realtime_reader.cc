// Realtime shard reads; see realtime_reader.h.
#include "query/fetch/realtime_reader.h"
#include "query/fetch/shard_unavailable.h"

#include <charconv>

#include <fmt/format.h>

#include "clickatron/key_codec.h"
#include "clickatron/ymdh.h"
#include "query/fetch/coalesced_reads.h"
#include "query/fetch/fan_in.h"

namespace clickatron::api {

void RealtimeReader::NoteHandover(const HttpResponse& response) {
  if (!options_.known_generation) return;
  // A shard that says nothing (never told, or older than these headers)
  // hands nothing over; a value that does not parse is taken as not said.
  uint64_t generation = 0;
  const std::string g = response.Header("X-Realtime-Archive-Generation");
  if (const auto [end, ec] = std::from_chars(g.data(), g.data() + g.size(), generation);
      ec != std::errc() || end != g.data() + g.size()) {
    generation = 0;
  }
  std::optional<int64_t> through;
  const std::string day = response.Header("X-Realtime-Archived-Through");
  if (!day.empty()) {
    if (Result<int64_t> parsed = ParseDate(day); parsed.ok()) through = *parsed;
  }
  options_.known_generation->SawHandover(generation, through);
}
namespace {

constexpr int kAttempts = 2;

}  // namespace

RealtimeReader::RealtimeReader(const ClusterConfig& cluster, HttpClient& client, ReadStats& stats, Options options)
    : shard_map_(cluster), client_(client), stats_(stats), options_(options) {
  const int shards = shard_map_.slots();
  for (int shard = 0; shard < shards; ++shard) {
    const MemberConfig* m = cluster.RealtimeMember(shard);
    members_.push_back(m != nullptr ? std::optional<MemberConfig>(*m) : std::nullopt);
  }
  if (options_.coalesce_in_flight > 0) {
    const Coalescer<std::string>::Options coalesce{.max_in_flight = options_.coalesce_in_flight,
                                                   .max_keys = options_.coalesce_max_keys,
                                                   .max_bytes = options_.max_target_bytes};
    for (const bool unite_days : {false, true}) {
      auto& coalescers = unite_days ? uniting_coalescers_ : coalescers_;
      for (int shard = 0; shard < shards; ++shard) {
        coalescers.push_back(std::make_unique<Coalescer<std::string>>(
            coalesce,
            [this, shard, unite_days](std::vector<std::string> prefixes, Coalescer<std::string>::BatchDone done) {
              SendBatch(shard, std::move(prefixes), std::move(done), unite_days);
            },
            TargetKeyCost));
      }
    }
  }
}

RealtimeReader::~RealtimeReader() { alive_.reset(); }

void RealtimeReader::Send(int shard, std::string target, int attempts_left, bool not_found_is_empty,
                          BodyCallback done) {
  const MemberConfig* member = shard >= 0 && static_cast<size_t>(shard) < members_.size() && members_[shard]
                                   ? &*members_[static_cast<size_t>(shard)]
                                   : nullptr;
  if (member == nullptr) {
    done(ShardUnavailable(fmt::format("realtime shard {} has no member in the cluster file", shard)));
    return;
  }
  ++stats_.realtime_requests;
  HttpRequestSpec spec;
  spec.target = target;
  spec.timeout_ms = options_.timeout_ms;
  std::weak_ptr<bool> alive = alive_;
  client_.Send(member->listen, std::move(spec),
               [this, alive, shard, member, target = std::move(target), attempts_left, not_found_is_empty,
                done = std::move(done)](HttpResponse response) mutable {
                 if (alive.expired()) return;
                 if (response.ok() && (response.status_code == 200 ||
                                       (response.status_code == 404 && not_found_is_empty))) {
                   NoteHandover(response);
                   done(response.status_code == 200 ? std::move(response.body) : std::string());
                   return;
                 }
                 if (response.ok() && response.status_code < 500) {
                   done(Status::Internal(fmt::format("realtime {} refused a read ({}): {}", member->name,
                                                     response.status_code, QuoteForMessage(response.body))));
                   return;
                 }
                 // The shard's own reason when it gave one (a damaged store's
                 // CORRUPTION names the file), not only its status.
                 const std::string why = DescribeHttpAnswer(response);
                 // The second attempt is for a keep-alive connection the
                 // shard closed, which fails at once; a shard that let a
                 // request time out would most likely do so again.
                 const bool timed_out = !response.ok() && response.transport.reason() == "TIMEOUT";
                 if (attempts_left <= 1 || timed_out) {
                   done(ShardUnavailable(fmt::format("realtime shard {} ({}): {}", shard, member->name, why)));
                   return;
                 }
                 ++stats_.realtime_retries;
                 Send(shard, std::move(target), attempts_left - 1, not_found_is_empty, std::move(done));
               });
}

void RealtimeReader::SkipDaysThrough(int64_t day) {
  if (!skip_through_ || day > *skip_through_) skip_through_ = day;
}

void RealtimeReader::SkipNoMoreThan(const std::optional<int64_t>& last_day) {
  if (!skip_through_ || (last_day && *last_day >= *skip_through_)) return;
  // During a deploy, answers ending on the old and the new last day
  // alternate for a few seconds: lowering at each would make every query in
  // flight read again (a new epoch), where only the lagging ones need to.
  const auto now = std::chrono::steady_clock::now();
  if (skip_lowered_at_ && now - *skip_lowered_at_ < kSkipLowerEvery) return;
  skip_lowered_at_ = now;
  skip_through_ = last_day;
  ++skip_epoch_;
}

std::string RealtimeReader::Skipping(std::string target) const {
  if (skip_through_) target += "&after=" + FormatDate(*skip_through_);
  return target;
}

namespace {

std::string Uniting(std::string target, bool unite_days) {
  if (unite_days) target += "&unite=day";
  return target;
}

}  // namespace

void RealtimeReader::Fwmatch(int shard, std::string_view prefix, BodyCallback done, bool all_days, bool unite_days) {
  if (all_days) {
    Send(shard, Uniting(FwmatchTarget(prefix), unite_days), kAttempts, true, std::move(done));
    return;
  }
  auto& coalescers = unite_days ? uniting_coalescers_ : coalescers_;
  if (shard < 0 || static_cast<size_t>(shard) >= coalescers.size()) {
    Send(shard, Uniting(Skipping(FwmatchTarget(prefix)), unite_days), kAttempts, true, std::move(done));
    return;
  }
  coalescers[static_cast<size_t>(shard)]->Submit(std::string(prefix), std::move(done));
}

void RealtimeReader::FwmatchKey(std::string_view shard_key, std::string_view prefix, BodyCallback done,
                                bool all_days, bool unite_days) {
  const RealtimeShardMap::Shards shards = shard_map_.ShardsOfKey(shard_key);
  if (shards.size == 1) {
    Fwmatch(shards.shard[0], prefix, std::move(done), all_days, unite_days);
    return;
  }
  // The first failure is the answer (SHARD_UNAVAILABLE of either shard).
  FanInAll<std::string>(
      2,
      [&](size_t i, BodyCallback answer) {
        Fwmatch(shards.shard[i], prefix, std::move(answer), all_days, unite_days);
      },
      [done = std::move(done)](Result<std::vector<std::string>> bodies) {
        if (!bodies.ok()) return done(bodies.status());
        done((*bodies)[0] + (*bodies)[1]);
      });
}

void RealtimeReader::SendBatch(int shard, std::vector<std::string> prefixes, Coalescer<std::string>::BatchDone done,
                               bool unite_days) {
  if (prefixes.size() == 1) {  // a lone fwmatch stays a fwmatch
    Send(shard, Uniting(Skipping(FwmatchTarget(prefixes.front())), unite_days), kAttempts, true,
         AsBatchOfOne<std::string>(std::move(done)));
    return;
  }
  ++stats_.realtime_coalesced_requests;
  stats_.realtime_coalesced_prefixes += prefixes.size();
  std::string target = Uniting(Skipping(MFwmatchTarget(prefixes)), unite_days);
  Send(shard, std::move(target), kAttempts, false,
       [prefixes = std::move(prefixes), done = std::move(done)](Result<std::string> body) {
         if (!body.ok()) return done(body.status());
         done(SplitFwmatchByPrefix(*body, prefixes));
       });
}

void RealtimeReader::MGet(int shard, const std::vector<std::string>& keys,
                          std::function<void(Result<std::vector<std::string>>)> done) {
  const std::vector<MGetBatch> targets = MGetTargets(keys, options_.max_target_bytes, options_.max_keys_per_mget);
  FanInAll<std::string>(
      targets.size(),
      [&](size_t i, BodyCallback answer) { Send(shard, targets[i].target, kAttempts, true, std::move(answer)); },
      std::move(done));
}

}  // namespace clickatron::api
