// Union estimates kept by their parts' identity; see union_estimate_cache.h.
#include "query/cache/union_estimate_cache.h"

#include <cstring>
#include <string>

namespace clickatron::api {

uint64_t UnionEstimateCache::Estimate(const std::vector<const std::shared_ptr<const UniqueSketch>*>& parts) {
  thread_local std::vector<const UniqueSketch*> sketches;
  sketches.clear();
  for (const auto* p : parts) sketches.push_back(p->get());
  if (!cache_.enabled() || parts.size() < kMinParts) return UniqueSketch::EstimateUnion(sketches);
  // The key: the parts' addresses, in order.
  thread_local std::string key;
  key.resize(sketches.size() * sizeof(const UniqueSketch*));
  std::memcpy(key.data(), sketches.data(), key.size());
  if (const auto kept = cache_.Find<Entry>(CacheKind::kUnionEstimate, key)) {
    ++stats_.union_cache_hits;
    return kept->estimate;
  }
  ++stats_.union_cache_misses;
  auto entry = std::make_shared<Entry>();
  entry->estimate = UniqueSketch::EstimateUnion(sketches);
  entry->parts.reserve(parts.size());
  size_t charge = sizeof(Entry) + parts.size() * sizeof(std::shared_ptr<const UniqueSketch>);
  for (const auto* p : parts) {
    entry->parts.push_back(*p);
    charge += (*p)->MemoryBytes();  // in full: the entry may be what keeps them alive
  }
  const uint64_t estimate = entry->estimate;
  cache_.Insert<Entry>(CacheKind::kUnionEstimate, key, std::move(entry), charge);
  return estimate;
}

}  // namespace clickatron::api
