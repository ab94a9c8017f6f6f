#include "ingest/increment_records.h"

#include "clickatron/shard.h"

namespace clickatron::api {
namespace {

template <typename ShardOfKey>
void AddLookup(const IncrementKeyPart& part, const ShardOfKey& shard_of, std::vector<RoutedRecord>* out) {
  if (!part.hashed) return;
  RoutedRecord& r = out->emplace_back();
  r.shard = shard_of(part.stored);
  r.lookup = true;
  r.key = part.stored;
  r.lookup_value = part.full;
}

// shard_of(shard key) -> shard: the increment's records, lookups included,
// all go by the count of its day.
template <typename ShardOfKey>
void Expand(const Increment& inc, const ShardOfKey& shard_of, std::vector<RoutedRecord>* out) {
  // "ns|tkey" is both the shard key and the prefix of the total's key.
  std::string shard_key;
  shard_key.reserve(inc.ns.size() + 1 + inc.tkey.stored.size());
  shard_key.append(inc.ns).append("|").append(inc.tkey.stored);
  const uint32_t shard = shard_of(shard_key);

  RoutedRecord& total = out->emplace_back();
  total.shard = shard;
  total.key.reserve(shard_key.size() + 5);
  total.key.append(shard_key).append(".").append(inc.ymdh);
  total.delta = inc.value;
  total.has_visitor = inc.has_visitor;
  total.visitor = inc.visitor;

  for (const auto& [sns, skey] : inc.subs) {
    RoutedRecord& sub = out->emplace_back();
    sub.shard = shard;
    sub.key.reserve(sns.size() + shard_key.size() + skey.stored.size() + 7);
    sub.key.append(sns).append(".").append(shard_key).append(".").append(skey.stored).append(".").append(inc.ymdh);
    sub.delta = inc.value;
    sub.has_visitor = inc.has_visitor;
    sub.visitor = inc.visitor;
  }
  AddLookup(inc.tkey, shard_of, out);
  for (const auto& [sns, skey] : inc.subs) AddLookup(skey, shard_of, out);
}

}  // namespace

void ExpandIncrement(const Increment& inc, const RealtimeShardMap& shards, std::vector<RoutedRecord>* out) {
  Expand(inc, [&](std::string_view key) { return shards.ShardOfHour(key, inc.ymdh); }, out);
}

void ExpandIncrement(const Increment& inc, uint32_t shard_count, std::vector<RoutedRecord>* out) {
  Expand(inc, [&](std::string_view key) { return ShardOf(key, shard_count); }, out);
}

}  // namespace clickatron::api
