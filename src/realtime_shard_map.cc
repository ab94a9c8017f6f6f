#include "clickatron/realtime_shard_map.h"

#include "clickatron/shard.h"
#include "clickatron/ymdh.h"

namespace clickatron {

RealtimeShardMap::RealtimeShardMap(const ClusterConfig& cluster)
    : count_(static_cast<uint32_t>(std::max(cluster.realtime_shards, 1))),
      previous_(static_cast<uint32_t>(std::max(cluster.previous_realtime_shards, 0))),
      since_day_(cluster.realtime_shards_since_day),
      slots_(std::max(cluster.realtime_shards, 1)) {
  if (previous_ != 0) {
    // Days outside the hour codes' years would fail the config's date
    // check first; an empty code would send every hour to the new count.
    auto code = YmdhFromUnix(since_day_ * kSecondsPerDay);
    if (code.ok()) since_hour_ = *code;
  }
}

uint32_t RealtimeShardMap::CountForDay(int64_t day) const {
  return previous_ != 0 && day < since_day_ ? previous_ : count_;
}

uint32_t RealtimeShardMap::ShardOfHour(std::string_view shard_key, std::string_view ymdh) const {
  const uint32_t count = previous_ != 0 && ymdh < since_hour_ ? previous_ : count_;
  return ShardOf(shard_key, count);
}

RealtimeShardMap::Shards RealtimeShardMap::ShardsOfKey(std::string_view shard_key) const {
  Shards shards;
  shards.shard[shards.size++] = static_cast<int>(ShardOf(shard_key, count_));
  if (changing()) {
    const int old = static_cast<int>(ShardOf(shard_key, previous_));
    if (old != shards.shard[0]) shards.shard[shards.size++] = old;
  }
  return shards;
}

}  // namespace clickatron
