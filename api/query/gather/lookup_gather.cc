// QueryGather's lookups: full values of hashed keys, through the cache; see query_gather.h.
#include "query/query_gather.h"

#include <fmt/format.h>

#include <map>
#include <memory>
#include <set>
#include <string>
#include <vector>

#include "clickatron/record.h"
#include "query/fetch/fan_in.h"
#include "query/gather/gather_steps.h"
#include "query/merge/read_records.h"

namespace clickatron::api {

void QueryGather::ResolveHashes(std::vector<std::string> hashes,
                                std::function<void(Result<std::map<std::string, std::string>>)> done,
                                uint64_t data_generation) {
  struct State {
    std::map<std::string, std::string> values;
    std::set<std::string> pending;           // not in the cache
    std::map<std::string, std::string> source_failed;  // a source of this hash did not answer: why
    std::map<std::string, uint64_t> older_answer;  // its archive shard answered from an older generation: which
  };
  auto state = std::make_shared<State>();
  std::vector<std::string> archive_keys;
  std::map<int, std::vector<std::string>> by_realtime_shard;
  for (std::string& hash : hashes) {
    if (state->values.count(hash) || state->pending.count(hash)) continue;
    // A key erased for all time: its full value is not shown, kept or not.
    if (deletions_ != nullptr && deletions_->LookupDeleted(hash)) continue;
    if (const auto cached = lookups_.Get(hash)) {
      ++stats_.lookup_cache_hits;
      state->values.emplace(hash, *cached);
      continue;
    }
    archive_keys.push_back(LookupKey(hash));
    for (int shard : realtime_.shard_map().ShardsOfKey(hash)) by_realtime_shard[shard].push_back(LookupKey(hash));
    state->pending.insert(std::move(hash));
  }
  if (state->pending.empty()) {
    done(std::move(state->values));
    return;
  }
  stats_.lookups_fetched += state->pending.size();

  auto join = FanIn::Create([this, state, data_generation, done = std::move(done)](Status st) {
    if (!st.ok()) {
      done(std::move(st));
      return;
    }
    for (const std::string& hash : state->pending) {
      auto it = state->values.find(hash);
      if (it != state->values.end()) {
        lookups_.Put(hash, it->second);
      } else if (auto failed = state->source_failed.find(hash); failed != state->source_failed.end()) {
        done(Status::Unavailable(
            fmt::format("the lookup record of {} is on a shard that did not answer ({})", hash, failed->second),
            "SHARD_UNAVAILABLE"));
        return;
      } else if (auto older = state->older_answer.find(hash); older != state->older_answer.end()) {
        done(Status::Unavailable(
            fmt::format("the lookup record of {} is on an archive shard that serves generation {}, older than the "
                        "{} its value was read from (a deploy under way): retry",
                        hash, older->second, data_generation),
            "SHARD_UNAVAILABLE"));
        return;
      } else {
        ++stats_.lookups_missing;
      }
    }
    done(std::move(state->values));
  });
  // Lines "l|HASH,value" from either source; a source that fails marks its
  // hashes, which only matters for hashes no other source resolved.
  const auto absorb = [state, data_generation](const std::vector<std::string>& keys, const Status& st,
                                               const std::vector<std::string_view>& bodies,
                                               uint64_t generation) -> Status {
    if (!st.ok()) {
      if (st.code() != StatusCode::kUnavailable) return st;
      for (const std::string& key : keys) state->source_failed.emplace(key.substr(2), st.message());
      return Status::Ok();
    }
    if (generation != 0 && generation < data_generation) {
      for (const std::string& key : keys) state->older_answer.emplace(key.substr(2), generation);
    }
    for (std::string_view body : bodies) {
      auto lines = SplitKeyValueLines(body);
      if (!lines.ok()) return lines.status();
      for (const auto& [key, value] : *lines) {
        if (!key.starts_with("l|")) continue;
        std::string hash(key.substr(2));
        if (state->pending.count(hash)) state->values.emplace(std::move(hash), std::string(value));
      }
    }
    return Status::Ok();
  };
  std::vector<std::function<void()>> sends;
  sends.push_back([this, keys = std::move(archive_keys), part = join->Part(), absorb]() mutable {
    archive_.WhenRouted([this, keys = std::move(keys), part = std::move(part), absorb]() mutable {
      ArchiveLookups(std::move(keys), archive_.ShardCount(), /*attempts_left=*/3, absorb, std::move(part));
    });
  });
  for (auto& [shard, keys] : by_realtime_shard) {
    auto part = join->Part();
    sends.push_back([this, shard, keys = std::move(keys), part, absorb]() {
      realtime_.MGet(shard, keys, [keys, part, absorb](Result<std::vector<std::string>> replies) {
        std::vector<std::string_view> bodies;
        if (replies.ok()) {
          for (const std::string& r : *replies) bodies.push_back(r);
        }
        part(absorb(keys, replies.status(), bodies, /*generation=*/0));
      });
    });
  }
  join->Arm();
  for (auto& send : sends) send();
}

void QueryGather::ArchiveLookups(std::vector<std::string> keys, int shard_count, int attempts_left,
                                 LookupAbsorb absorb, std::function<void(Status)> done) {
  // Grouped by their shards under `shard_count`; a group answered for
  // another count (a re-partitioned generation is being deployed) is
  // grouped again by the count the answer named, a few times, then counts as
  // a source that did not answer.
  std::map<int, std::vector<std::string>> by_shard;
  for (std::string& key : keys) {
    by_shard[ArchiveReader::ShardFor(std::string_view(key).substr(2), shard_count)].push_back(std::move(key));
  }
  struct Pending {
    std::vector<std::string> misrouted;
    int named_count = 0;  // the count a misrouted group's answer named
    size_t groups = 0;
    Status failed;
  };
  auto pending = std::make_shared<Pending>();
  pending->groups = by_shard.size();
  auto group_done = [this, pending, attempts_left, absorb, done]() {
    if (--pending->groups > 0) return;
    if (!pending->failed.ok()) return done(pending->failed);
    if (pending->misrouted.empty()) return done(Status::Ok());
    if (attempts_left <= 1) {
      return done(absorb(pending->misrouted, Status::Unavailable("lookups answered for another archive shard count",
                                                             "SHARD_UNAVAILABLE"),
                         {}, /*generation=*/0));
    }
    ArchiveLookups(std::move(pending->misrouted), pending->named_count, attempts_left - 1, absorb, done);
  };
  if (by_shard.empty()) return done(Status::Ok());
  for (auto& [shard, group] : by_shard) {
    auto session = archive_.BeginShard(shard, shard_count);
    archive_reads_.MGet(session, group, [session, group, pending, absorb, group_done](
                                      Result<std::vector<ArchiveReply>> replies) mutable {
      if (replies.ok()) {
        for (const ArchiveReply& r : *replies) {
          if (ArchiveReader::Misrouted(*session, r.view)) {
            pending->misrouted.insert(pending->misrouted.end(), group.begin(), group.end());
            pending->named_count = r.view.shard_count;
            return group_done();
          }
        }
      }
      std::vector<std::string_view> bodies;
      uint64_t generation = 0;  // the oldest that answered (one replica answers a group)
      if (replies.ok()) {
        for (const ArchiveReply& r : *replies) {
          bodies.push_back(r.body);
          if (r.view.generation != 0 && (generation == 0 || r.view.generation < generation)) {
            generation = r.view.generation;
          }
        }
      }
      if (Status st = absorb(group, replies.status(), bodies, generation); !st.ok() && pending->failed.ok()) {
        pending->failed = st;
      }
      group_done();
    });
  }
}

}  // namespace clickatron::api
