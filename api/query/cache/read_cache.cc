// The API node's one cache; see read_cache.h.
#include "query/cache/read_cache.h"

#include <algorithm>
#include <cstring>
#include <limits>
#include <memory>
#include <new>

#include "clickatron/text_hash.h"

namespace clickatron::api {

const char* CacheKindName(CacheKind kind) {
  switch (kind) {
    case CacheKind::kArchiveReply:
      return "archive_reply";
    case CacheKind::kLookup:
      return "lookup";
  }
  return "unknown";
}

namespace {

// Eight bits for each entry a shard can hold at most (its share over
// kMinEntryBytes), a power of two from 512 to 2^30 (a shardful up to a
// cache of about 300 GiB): filled to an eighth, two bits a key, a key never
// offered passes as offered about once in fifteen (either filter may say so).
size_t SightingBits(size_t capacity_bytes, ReadCache::Admission admission) {
  if (admission == ReadCache::Admission::kAlways || capacity_bytes == 0) return 0;
  const size_t wanted = capacity_bytes / ReadCache::kShards / ReadCache::kMinEntryBytes * 8;
  size_t bits = 512;
  while (bits < wanted && bits < (size_t{1} << 30)) bits *= 2;
  return bits;
}

}  // namespace

// The filter's bytes come out of each shard's share: the setting bounds both.
ReadCache::ReadCache(size_t capacity_bytes, Admission admission)
    : capacity_(capacity_bytes),
      sighting_bits_(SightingBits(capacity_bytes, admission)),
      shard_capacity_(capacity_bytes / kShards - std::min(capacity_bytes / kShards, 2 * sighting_bits_ / 8)) {
  for (Shard& shard : shards_) shard.sightings.assign(2 * sighting_bits_ / 64, 0);
}

ReadCache::~ReadCache() {
  for (Shard& shard : shards_) {
    for (Entry* e = shard.ring.next; e != &shard.ring;) {
      Entry* next = e->next;
      Free(e);
      e = next;
    }
  }
}

// The hash's high half picks the shard, its low bits the bucket: the two
// never follow each other.
ReadCache::Shard& ReadCache::ShardOf(uint64_t hash) { return shards_[(hash >> 32) % kShards]; }

ReadCache::Entry* ReadCache::Lookup(Shard& shard, CacheKind kind, std::string_view key, uint64_t hash) {
  const Shard::Bucket& bucket = BucketOf(shard, hash);
  if ((bucket.tags & TagOf(hash)) == 0) return nullptr;
  for (Entry* e = bucket.head; e != nullptr; e = e->next_hash) {
    if (e->hash == hash && e->kind == kind && e->key() == key) return e;
  }
  return nullptr;
}

void ReadCache::Grow(Shard& shard) {
  std::vector<Shard::Bucket> buckets(std::max<size_t>(16, shard.buckets.size() * 2));
  for (const Shard::Bucket& old : shard.buckets) {
    for (Entry* e = old.head; e != nullptr;) {
      Entry* next = e->next_hash;
      Shard::Bucket& bucket = buckets[e->hash & (buckets.size() - 1)];
      e->next_hash = bucket.head;
      bucket.head = e;
      bucket.tags |= TagOf(e->hash);
      e = next;
    }
  }
  shard.buckets.swap(buckets);
}

void ReadCache::Unlink(Shard& shard, Entry* e) {
  Shard::Bucket& bucket = BucketOf(shard, e->hash);
  Entry** slot = &bucket.head;
  while (*slot != e) slot = &(*slot)->next_hash;
  *slot = e->next_hash;
  // The tags of what stays (two entries may share a bit).
  bucket.tags = 0;
  for (const Entry* o = bucket.head; o != nullptr; o = o->next_hash) bucket.tags |= TagOf(o->hash);
  e->next->prev = e->prev;
  e->prev->next = e->next;
  --shard.entries;
  shard.charged -= e->charge;
  KindCounters& kind = kinds_[static_cast<uint8_t>(e->kind)];
  kind.bytes.fetch_sub(static_cast<int64_t>(e->charge), std::memory_order_relaxed);
  kind.entries.fetch_sub(1, std::memory_order_relaxed);
}

void ReadCache::LinkNewest(Shard& shard, Entry* e) {
  e->next = &shard.ring;
  e->prev = shard.ring.prev;
  e->prev->next = e;
  shard.ring.prev = e;
}

bool ReadCache::SightedBefore(Shard& shard, uint64_t hash) const {
  // Blocked: a key's two bits in both filters lie in one 64-byte block (the
  // first four words filter 0's 256 bits, the last four filter 1's), so a
  // sighting costs one cache line, not four: on a busy node nearly every
  // key offered is new, and the four lines were a cache miss each (1.7% of
  // the API's samples in the live benchmark). The block and the two bits
  // come from a remix of the hash: its own low and high bits already chose
  // the bucket and the shard.
  const uint64_t mixed = hash * 0x9E3779B97F4A7C15ULL;
  const size_t blocks = sighting_bits_ / 256;  // a power of two
  uint64_t* block = &shard.sightings[((mixed >> 34) & (blocks - 1)) * kSightingBlockWords];
  const uint64_t a = (mixed >> 4) & 255, b = (mixed >> 12) & 255;
  auto has = [&](size_t filter, uint64_t at) { return (block[filter * 4 + at / 64] & (uint64_t{1} << (at % 64))) != 0; };
  for (size_t filter : {size_t{0}, size_t{1}}) {
    if (has(filter, a) && has(filter, b)) return true;
  }
  // The current filter has taken a shardful of keys: the older one is
  // cleared and takes the next ones (what the current holds stays seen).
  if (shard.sighted >= sighting_bits_ / 8) {
    shard.current ^= 1;
    for (size_t i = 0; i < blocks; ++i) {
      std::fill_n(shard.sightings.begin() + static_cast<std::ptrdiff_t>(i * kSightingBlockWords + shard.current * 4),
                  4, 0);
    }
    shard.sighted = 0;
  }
  block[shard.current * 4 + a / 64] |= uint64_t{1} << (a % 64);
  block[shard.current * 4 + b / 64] |= uint64_t{1} << (b % 64);
  ++shard.sighted;
  return false;
}

void ReadCache::Free(Entry* e) {
  e->~Entry();
  ::operator delete(static_cast<void*>(e));
}

std::shared_ptr<const void> ReadCache::FindAny(CacheKind kind, std::string_view key) {
  if (capacity_ == 0) return nullptr;
  const uint64_t hash = HashText(key, static_cast<uint64_t>(kind));
  Shard& shard = ShardOf(hash);
  std::lock_guard lock(shard.mu);
  if (shard.buckets.empty()) return nullptr;
  Entry* e = Lookup(shard, kind, key, hash);
  if (e == nullptr) return nullptr;
  e->next->prev = e->prev;
  e->prev->next = e->next;
  LinkNewest(shard, e);
  return e->value;
}

bool ReadCache::InsertAny(CacheKind kind, std::string_view key, std::shared_ptr<const void> value, size_t charge) {
  if (capacity_ == 0) return false;
  // Saturated: a charge past any shard's share must not wrap into a small
  // one. The kind is charged as a byte of the key.
  const size_t total =
      charge > shard_capacity_ ? std::numeric_limits<size_t>::max() : charge + key.size() + 1 + kEntryOverhead;
  // Refused before anything is dropped: what was kept for the key stays (a
  // larger form of a value, such as its decoded one, leaves the smaller).
  KindCounters& counters = kinds_[static_cast<uint8_t>(kind)];
  if (total > shard_capacity_ || key.size() > std::numeric_limits<uint32_t>::max()) {
    counters.not_kept.fetch_add(1, std::memory_order_relaxed);
    return false;
  }
  const uint64_t hash = HashText(key, static_cast<uint64_t>(kind));
  // Made before the lock is taken, freed (with what they drop) after it;
  // owned here until it is linked in.
  void* memory = ::operator new(sizeof(Entry) + key.size());
  std::unique_ptr<Entry, void (*)(Entry*)> entry(new (memory) Entry, &Free);
  if (!key.empty()) std::memcpy(static_cast<char*>(memory) + sizeof(Entry), key.data(), key.size());
  entry->key_size = static_cast<uint32_t>(key.size());
  entry->kind = kind;
  entry->hash = hash;
  entry->value = std::move(value);
  entry->charge = total;
  Entry* released = nullptr;  // chained by next_hash
  Shard& shard = ShardOf(hash);
  {
    std::lock_guard lock(shard.mu);
    // Room for one more in the buckets first: nothing is unlinked yet if the
    // allocation fails.
    if (shard.entries + 1 > shard.buckets.size()) Grow(shard);
    Entry* old = Lookup(shard, kind, key, hash);
    // A new key that would push others out must have been offered before
    // (its entry is freed after the lock, as dropped ones are).
    if (old == nullptr && sighting_bits_ != 0 && shard.charged + total > shard_capacity_ &&
        !SightedBefore(shard, hash)) {
      counters.not_kept.fetch_add(1, std::memory_order_relaxed);
      return false;
    }
    if (old != nullptr) {
      Unlink(shard, old);
      old->next_hash = released;
      released = old;
    }
    while (shard.charged + total > shard_capacity_) {
      Entry* lru = shard.ring.next;  // never the ring itself: total fits an empty shard
      kinds_[static_cast<uint8_t>(lru->kind)].evictions.fetch_add(1, std::memory_order_relaxed);
      Unlink(shard, lru);
      lru->next_hash = released;
      released = lru;
    }
    Shard::Bucket& bucket = BucketOf(shard, hash);
    entry->next_hash = bucket.head;
    bucket.head = entry.get();
    bucket.tags |= TagOf(hash);
    LinkNewest(shard, entry.release());
    ++shard.entries;
    shard.charged += total;
    // Counted under the lock, as what Unlink takes off is.
    counters.inserts.fetch_add(1, std::memory_order_relaxed);
    counters.bytes.fetch_add(static_cast<int64_t>(total), std::memory_order_relaxed);
    counters.entries.fetch_add(1, std::memory_order_relaxed);
  }
  while (released != nullptr) {
    Entry* next = released->next_hash;
    Free(released);
    released = next;
  }
  return true;
}

void ReadCache::Erase(CacheKind kind, std::string_view key) {
  if (capacity_ == 0) return;
  const uint64_t hash = HashText(key, static_cast<uint64_t>(kind));
  Shard& shard = ShardOf(hash);
  Entry* erased = nullptr;  // freed after the lock
  {
    std::lock_guard lock(shard.mu);
    if (shard.buckets.empty()) return;
    erased = Lookup(shard, kind, key, hash);
    if (erased != nullptr) Unlink(shard, erased);
  }
  if (erased != nullptr) Free(erased);
}

ReadCache::KindFigures ReadCache::Figures(CacheKind kind) const {
  const KindCounters& c = kinds_[static_cast<uint8_t>(kind)];
  return KindFigures{c.inserts.load(std::memory_order_relaxed), c.evictions.load(std::memory_order_relaxed),
                     c.not_kept.load(std::memory_order_relaxed),
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

void ReadCache::Retire(std::string scope) {
  std::lock_guard lock(retire_mu_);
  const std::vector<std::string>* now = retired_.load(std::memory_order_acquire);
  if (now != nullptr && std::find(now->begin(), now->end(), scope) != now->end()) return;
  auto next = std::make_unique<std::vector<std::string>>(now != nullptr ? *now : std::vector<std::string>{});
  next->push_back(std::move(scope));
  retired_.store(next.get(), std::memory_order_release);
  retired_lists_.push_back(std::move(next));
}

bool ReadCache::Retired(std::string_view scope) const {
  const std::vector<std::string>* list = retired_.load(std::memory_order_acquire);
  return list != nullptr && std::find(list->begin(), list->end(), scope) != list->end();
}

}  // namespace clickatron::api
