// Reads from the realtime shards (fwmatch / mget over every store of the
// ring). One member serves a shard: a request that gets no answer (or a 5xx)
// is sent once more, then the reply is UNAVAILABLE / SHARD_UNAVAILABLE (503):
// a query never goes on without the recent hours.
//
// Fwmatch is coalesced per shard (coalescer.h): while a request is out to the
// shard, further fwmatches queue and go out together as one /mfwmatch, whose
// answer is split back per prefix (each gets exactly what its own /fwmatch
// would have answered); a failed batch fails every fwmatch in it.
//
// Thread-safety: loop thread only. Callbacks run on the loop, never after the
// reader is destroyed.
#pragma once

#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "clickatron/config.h"
#include "clickatron/http_client.h"
#include "clickatron/realtime_shard_map.h"
#include "clickatron/status.h"
#include "query/fetch/coalescer.h"
#include "query/fetch/known_generation.h"
#include "query/read_stats.h"

namespace clickatron::api {

class RealtimeReader {
 public:
  struct Options {
    int timeout_ms = 5000;
    size_t max_target_bytes = 6000;
    size_t max_keys_per_mget = 400;
    // Fwmatch coalescing: sent at once while fewer than this many requests
    // are out to the shard, else queued for the next mfwmatch; 0: off.
    int coalesce_in_flight = 1;
    size_t coalesce_max_keys = 64;
    // Told what every answer says of the archive (known_generation.h's
    // SawHandover); null: not told.
    std::shared_ptr<KnownGeneration> known_generation;
  };
  RealtimeReader(const ClusterConfig& cluster, HttpClient& client, ReadStats& stats, Options options);
  ~RealtimeReader();

  // The body of the answer: "key,value" lines, "" when nothing matched.
  using BodyCallback = std::function<void(Result<std::string>)>;
  // Fwmatches skip the ring's days up to skip_through() (after=D): days the
  // archive holds, which readers ignore anyway (the overlap day Yesterday
  // stays in the ring until midnight after its rebuild). `all_days`: every
  // day, in a request of its own (a query whose archive answer ends before
  // skip_through(), see SkipDaysThrough). `unite_days`: a unique record's
  // hours of one UTC day may come as one line (unite=day, docs/protocols.md),
  // for a reader that counts visitors over whole UTC days only; sent in
  // batches of their own.
  void Fwmatch(int shard, std::string_view prefix, BodyCallback done, bool all_days = false,
               bool unite_days = false);
  // Fwmatch on every shard that may hold `shard_key` (realtime_shard_map.h):
  // one, or two while the shard count changes, whose bodies are joined (a
  // record is on one of them only; readers add lines up, in any order).
  void FwmatchKey(std::string_view shard_key, std::string_view prefix, BodyCallback done, bool all_days = false,
                  bool unite_days = false);
  // Raises the day fwmatches skip through. Readers call it with the last
  // day of archive answers.
  void SkipDaysThrough(int64_t day);
  // Lowers it to `last_day` (nullopt: skip nothing), for an archive answer
  // that ends before it: a rollback, a manifest put right. Without this a
  // node would read realtime twice for every query until it restarted.
  // Each lowering starts a new skip epoch; at most one every
  // kSkipLowerEvery.
  void SkipNoMoreThan(const std::optional<int64_t>& last_day);
  std::optional<int64_t> skip_through() const { return skip_through_; }
  // Counts the lowerings: while it is unchanged the skip only grew, so a
  // query that compares its answer with skip_through() once they are in
  // knows no fwmatch it sent skipped more.
  uint64_t skip_epoch() const { return skip_epoch_; }
  // True when a fwmatch sent (not all_days) since `since_epoch` for a query
  // whose archive answer ends at `last_day` may have skipped a day that
  // answer lacks: the query must read realtime again with all_days.
  bool MaySkipPast(const std::optional<int64_t>& last_day, uint64_t since_epoch) const {
    if (since_epoch != skip_epoch_) return true;
    return skip_through_.has_value() && (!last_day.has_value() || *skip_through_ > *last_day);
  }
  const RealtimeShardMap& shard_map() const { return shard_map_; }
  // The bodies of the batched /mget requests.
  void MGet(int shard, const std::vector<std::string>& keys, std::function<void(Result<std::vector<std::string>>)> done);

 private:
  // `not_found_is_empty`: a 404 is "nothing matched" (get, fwmatch), not a
  // missing endpoint (mfwmatch on a daemon that predates it).
  void Send(int shard, std::string target, int attempts_left, bool not_found_is_empty, BodyCallback done);
  void SendBatch(int shard, std::vector<std::string> prefixes, Coalescer<std::string>::BatchDone done,
                 bool unite_days);
  // Tells options_.known_generation what a 200 answer's headers say.
  void NoteHandover(const HttpResponse& response);
  // `target` with &after=skip_through() when set.
  std::string Skipping(std::string target) const;

  const RealtimeShardMap shard_map_;
  HttpClient& client_;
  ReadStats& stats_;
  Options options_;
  std::vector<std::optional<MemberConfig>> members_;  // by shard; empty when the file names none
  std::vector<std::unique_ptr<Coalescer<std::string>>> coalescers_;  // by shard; empty when off
  std::vector<std::unique_ptr<Coalescer<std::string>>> uniting_coalescers_;  // the same, for unite=day
  std::optional<int64_t> skip_through_;
  uint64_t skip_epoch_ = 0;
  static constexpr std::chrono::seconds kSkipLowerEvery{10};
  std::optional<std::chrono::steady_clock::time_point> skip_lowered_at_;
  std::shared_ptr<bool> alive_ = std::make_shared<bool>(true);
};

}  // namespace clickatron::api
