// The API node's one cache; see read_cache.h.
#include "query/cache/read_cache.h"

#include <algorithm>
#include <limits>

namespace clickatron::api {
namespace {

// The map's key: the kind's byte before the owner's key, so kinds never
// collide. Built in a per-thread buffer: a lookup allocates nothing.
std::string_view FullKey(CacheKind kind, std::string_view key) {
  thread_local std::string buffer;
  buffer.clear();
  buffer.push_back(static_cast<char>(kind));
  buffer.append(key);
  return buffer;
}

}  // namespace

const char* CacheKindName(CacheKind kind) {
  switch (kind) {
    case CacheKind::kArchiveReply:
      return "archive_reply";
    case CacheKind::kLookup:
      return "lookup";
    case CacheKind::kSketchText:
      return "sketch_text";
    case CacheKind::kUnionEstimate:
      return "union_estimate";
  }
  return "unknown";
}

ReadCache::ReadCache(size_t capacity_bytes) : capacity_(capacity_bytes), shard_capacity_(capacity_bytes / kShards) {}

ReadCache::Shard& ReadCache::ShardOf(std::string_view full_key) {
  return shards_[TextHash{}(full_key) % kShards];
}

std::shared_ptr<const void> ReadCache::Drop(Shard& shard, Order::iterator it) {
  KindCounters& kind = kinds_[static_cast<uint8_t>(it->key[0])];
  std::shared_ptr<const void> value = std::move(it->value);
  kind.bytes.fetch_sub(static_cast<int64_t>(it->charge), std::memory_order_relaxed);
  kind.entries.fetch_sub(1, std::memory_order_relaxed);
  shard.charged -= it->charge;
  shard.index.erase(std::string_view(it->key));
  shard.order.erase(it);
  return value;
}

std::shared_ptr<const void> ReadCache::FindAny(CacheKind kind, std::string_view key) {
  if (capacity_ == 0) return nullptr;
  const std::string_view full = FullKey(kind, key);
  Shard& shard = ShardOf(full);
  std::lock_guard lock(shard.mu);
  auto it = shard.index.find(full);
  if (it == shard.index.end()) return nullptr;
  shard.order.splice(shard.order.begin(), shard.order, it->second);
  return it->second->value;
}

bool ReadCache::InsertAny(CacheKind kind, std::string_view key, std::shared_ptr<const void> value, size_t charge) {
  if (capacity_ == 0) return false;
  const std::string_view full = FullKey(kind, key);
  // Saturated: a charge past any shard's share must not wrap into a small one.
  const size_t total =
      charge > shard_capacity_ ? std::numeric_limits<size_t>::max() : charge + full.size() + kEntryOverhead;
  KindCounters& counters = kinds_[static_cast<uint8_t>(kind)];
  Shard& shard = ShardOf(full);
  // The values dropped (and what they may keep alive) are released outside
  // the lock: declared before it, destroyed after it.
  std::vector<std::shared_ptr<const void>> released;
  // Refused before anything is dropped: what was kept for the key stays (a
  // larger form of a value, such as its decoded one, leaves the smaller).
  if (total > shard_capacity_) return false;
  std::lock_guard lock(shard.mu);
  if (auto it = shard.index.find(full); it != shard.index.end()) released.push_back(Drop(shard, it->second));
  while (shard.charged + total > shard_capacity_ && !shard.order.empty()) {
    auto last = std::prev(shard.order.end());
    kinds_[static_cast<uint8_t>(last->key[0])].evictions.fetch_add(1, std::memory_order_relaxed);
    released.push_back(Drop(shard, last));
  }
  shard.order.push_front(Entry{std::string(full), std::move(value), total});
  shard.index.emplace(shard.order.front().key, shard.order.begin());
  shard.charged += total;
  counters.inserts.fetch_add(1, std::memory_order_relaxed);
  counters.bytes.fetch_add(static_cast<int64_t>(total), std::memory_order_relaxed);
  counters.entries.fetch_add(1, std::memory_order_relaxed);
  return true;
}

void ReadCache::Erase(CacheKind kind, std::string_view key) {
  if (capacity_ == 0) return;
  const std::string_view full = FullKey(kind, key);
  Shard& shard = ShardOf(full);
  std::shared_ptr<const void> erased;  // released after the lock
  std::lock_guard lock(shard.mu);
  if (auto it = shard.index.find(full); it != shard.index.end()) erased = Drop(shard, it->second);
}

ReadCache::KindFigures ReadCache::Figures(CacheKind kind) const {
  const KindCounters& c = kinds_[static_cast<uint8_t>(kind)];
  return KindFigures{c.inserts.load(std::memory_order_relaxed), c.evictions.load(std::memory_order_relaxed),
                     static_cast<size_t>(std::max<int64_t>(0, c.bytes.load(std::memory_order_relaxed))),
                     static_cast<size_t>(std::max<int64_t>(0, c.entries.load(std::memory_order_relaxed)))};
}

size_t ReadCache::charged() const {
  size_t sum = 0;
  for (const Shard& shard : shards_) {
    std::lock_guard lock(shard.mu);
    sum += shard.charged;
  }
  return sum;
}

}  // namespace clickatron::api
