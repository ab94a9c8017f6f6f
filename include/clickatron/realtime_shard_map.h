// Which realtime shard a record goes to, and which shards a reader asks.
//
// A record goes to crc32(shard key) % N (shard.h), where N is the count of
// the UTC day its hour belongs to: realtime_shards, or for days before
// [cluster] realtime_shards_since, previous_realtime_shards. So a change of
// the count takes effect at a day boundary, and every day's records of a key
// sit on one shard.
//
// Readers ask every shard that may hold a key (its shard under each count,
// one or two shards) and add what they answer: a record is only ever on one
// shard, so the sum is exact whichever count routed it, also for a batch an
// API node made under the old count and replays later. The rebuild exports
// every shard of realtime_shards (a previous count is always smaller). Once
// the last day before the change is archived, the two keys can go and
// readers ask one shard again.
//
// Thread-safety: immutable after construction; any thread may use it.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>

#include "clickatron/config.h"

namespace clickatron {

class RealtimeShardMap {
 public:
  explicit RealtimeShardMap(const ClusterConfig& cluster);

  int slots() const { return slots_; }
  bool changing() const { return previous_ != 0 && previous_ != count_; }
  // The count of UTC day `day` (days since 1970-01-01).
  uint32_t CountForDay(int64_t day) const;
  // The shard of a record of hour `ymdh` (a valid hour code; code order is
  // time order, ymdh.h) whose shard key is `shard_key`.
  uint32_t ShardOfHour(std::string_view shard_key, std::string_view ymdh) const;

  // The shards that may hold `shard_key`'s records: one, or two while a
  // change is in effect (both counts put the key on different shards).
  struct Shards {
    int shard[2] = {0, 0};
    int size = 0;
    const int* begin() const { return shard; }
    const int* end() const { return shard + size; }
  };
  Shards ShardsOfKey(std::string_view shard_key) const;

 private:
  uint32_t count_;
  uint32_t previous_;      // 0: no change
  std::string since_hour_; // the hour code of realtime_shards_since 00:00 UTC
  int64_t since_day_;
  int slots_;
};

}  // namespace clickatron
