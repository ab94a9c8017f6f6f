// The API node's one cache ([api] read_cache_mb): everything its read loops
// keep between queries, charged once, under one capacity.
//
// Why one: the read path grew a cache per kind of answer, each with its own
// share of the setting or a constant of its own, and the sum of those shares
// was not the setting (64 MiB of archive_cache_mb cost 112 MiB, the fixed
// ones 24 MiB more, each divided again per read loop). Here every kept thing
// (an archive answer, whole or decoded, a lookup value) is an
// entry of one map with one capacity, in the manner of LevelDB's Cache:
// Insert(key, value, charge), least recently used out first, whatever its
// kind. A kind is a namespace of keys and the name its figures go under.
//
// What an entry is charged: the charge its owner gives (its value's heap),
// plus its key and a fixed overhead for the nodes that hold it
// (kEntryOverhead). The sum of those is never above the capacity.
//
// Values are shared and immutable once kept: Find hands out a shared_ptr, so
// a value dropped for room while a query still reads it lives until that
// query lets go (briefly outside the budget, as a LevelDB handle is).
//
// Entries never go stale: every kind's key names what its value is a
// function of (an archive answer's key names the file it came from, a
// lookup's its hash), so nothing is ever invalidated, only
// dropped for room (or Erase'd when a value is found bad). The one
// exception is damage: a file whose bytes changed in place keeps its name,
// so its owner retires it (Retire) and never uses its entries again; they
// age out.
//
// Admission (Admission::kSeenBefore, the API node's): a shard that would
// have to drop entries to keep a key keeps it only if that key was offered
// once before, recently. A key read once and never again (most of a long
// tail of keys, or a scan over all of them) then costs two bits, not an
// entry that pushes out a busy key's and is pushed out in turn. Those
// sightings are two Bloom filters per shard, as TinyLFU's doorkeeper: a
// key is noted in the current one; when it has taken as many keys as the
// shard can hold entries (at kMinEntryBytes each), the older is cleared and
// becomes the current. So a key's second offer is remembered for at least
// one shardful of other keys' offers: a working set that fits the cache is
// kept from its second read on, also when the cache is full of entries of
// another generation's file, which no key of the new one ever evicts
// first. Eight bits a key a filter, taken from the shard's share (1.2 to
// 2.5% of it). A shard with room keeps every key, as before.
//
// Thread-safety: thread-safe; one per API node, shared by its read loops.
// The map is split into kShards parts by key hash, each with its own lock
// and a 1/kShards share of the capacity, so loops rarely wait on each other.
#pragma once

#include <array>
#include <atomic>
#include <cstddef>
#include <cstdint>
#include <memory>
#include <mutex>
#include <string>
#include <string_view>
#include <vector>

namespace clickatron::api {

enum class CacheKind : uint8_t {
  kArchiveReply,   // an archive replica's answer for one key of one file
  kLookup,         // a lookup record's value, by its hash
};
inline constexpr size_t kCacheKinds = 2;
// "archive_reply", "lookup", …: the name in /stats and the label in /metrics.
const char* CacheKindName(CacheKind kind);

class ReadCache {
 public:
  enum class Admission : uint8_t {
    kAlways,      // every key that fits is kept (dropping others for room)
    kSeenBefore,  // when room must be made, only a key offered before is kept
  };
  // capacity_bytes 0: nothing is kept (every Find misses).
  explicit ReadCache(size_t capacity_bytes, Admission admission = Admission::kAlways);
  ~ReadCache();
  ReadCache(const ReadCache&) = delete;
  ReadCache& operator=(const ReadCache&) = delete;

  bool enabled() const { return capacity_ > 0; }
  size_t capacity() const { return capacity_; }

  // The value kept for `key` of `kind`, now the most recently used; null
  // when absent. T must be the type that kind was inserted with.
  template <typename T>
  std::shared_ptr<const T> Find(CacheKind kind, std::string_view key) {
    return std::static_pointer_cast<const T>(FindAny(kind, key));
  }
  // Keeps (or replaces) `value` for `key` of `kind`, charged `charge` bytes
  // beyond its key and kEntryOverhead, dropping the least recently used of
  // its shard until they fit. An entry charged more than a shard's share is
  // not kept, and what was kept for the key stays: false then. So is a key
  // not admitted (Admission::kSeenBefore) the first time.
  template <typename T>
  bool Insert(CacheKind kind, std::string_view key, std::shared_ptr<const T> value, size_t charge) {
    return InsertAny(kind, key, std::move(value), charge);
  }
  void Erase(CacheKind kind, std::string_view key);

  // What an entry costs beyond its key and its owner's charge: the entry's
  // header (64 bytes), its share of the buckets (at most two buckets of 16
  // bytes while the shard holds its most entries; the buckets never shrink,
  // as unordered_map's did not), the shared value's control block and
  // malloc's headers, with room to spare.
  static constexpr size_t kEntryOverhead = 160;
  // The smallest entry (its overhead and the kind's byte: an empty key and
  // value): how many entries a shard can hold at most, which its sighting
  // filters are sized for.
  static constexpr size_t kMinEntryBytes = kEntryOverhead + 1;
  static constexpr size_t kShards = 16;

  struct KindFigures {
    uint64_t inserts = 0;    // entries kept
    uint64_t evictions = 0;  // entries dropped for room
    uint64_t not_kept = 0;   // Inserts that kept nothing: too large, or not admitted
    size_t bytes = 0;        // charged by the kind's entries kept now
    size_t entries = 0;
  };
  KindFigures Figures(CacheKind kind) const;

  // Scopes whose entries must not be used any more (an archive file found
  // damaged: archive_reply_cache.h names its scope). For the node's life:
  // a repaired file is only trusted again as another generation.
  void Retire(std::string scope);
  bool AnyRetired() const { return retired_.load(std::memory_order_acquire) != nullptr; }
  // Lock-free: every cached read asks once a file was retired.
  bool Retired(std::string_view scope) const;
  // The sum of every entry's charge; never above capacity().
  size_t charged() const;

 private:
  // One kept thing, in one allocation with its key's bytes after it (as in
  // LevelDB's LRUHandle): a lookup touches the bucket and the entry, and an
  // insert allocates once.
  struct Entry {
    Entry* next_hash = nullptr;  // the bucket's chain
    Entry* next = nullptr;  // the shard's recency ring: toward newer entries
    Entry* prev = nullptr;  //   and toward older ones
    uint64_t hash = 0;
    std::shared_ptr<const void> value;
    size_t charge = 0;  // all of it: the owner's, the key's, kEntryOverhead
    uint32_t key_size = 0;
    CacheKind kind = CacheKind::kArchiveReply;
    std::string_view key() const { return {reinterpret_cast<const char*>(this + 1), key_size}; }
  };
  struct Shard {
    Shard() { ring.next = ring.prev = &ring; }
    mutable std::mutex mu;
    size_t charged = 0;
    // A dummy entry: ring.next is the least recently used, ring.prev the most
    // (LevelDB's lru_).
    Entry ring;
    // A bucket's chain (by next_hash) and one bit per entry in it (TagOf
    // its hash): a lookup whose bit is clear misses without touching an
    // entry. On a busy node most lookups miss (keys read once), and the
    // first entry's hash was where a miss waited for memory.
    struct Bucket {
      Entry* head = nullptr;
      uint64_t tags = 0;
    };
    std::vector<Bucket> buckets;  // a power of two of them
    size_t entries = 0;
    // Keys offered while the shard was full and not kept (Admission::kSeenBefore):
    // two Bloom filters of sighting_bits_ each, two bits a key; `current`
    // takes new keys, the other holds the window before (SightedBefore).
    std::vector<uint64_t> sightings;
    size_t current = 0;  // 0 or 1
    size_t sighted = 0;  // keys noted in the current one
  };
  struct KindCounters {
    std::atomic<uint64_t> inserts{0};
    std::atomic<uint64_t> evictions{0};
    std::atomic<uint64_t> not_kept{0};
    std::atomic<int64_t> bytes{0};
    std::atomic<int64_t> entries{0};
  };

  std::shared_ptr<const void> FindAny(CacheKind kind, std::string_view key);
  bool InsertAny(CacheKind kind, std::string_view key, std::shared_ptr<const void> value, size_t charge);
  Shard& ShardOf(uint64_t hash);
  // The entry of (kind, key, hash) in `shard` (its lock held), or null.
  static Entry* Lookup(Shard& shard, CacheKind kind, std::string_view key, uint64_t hash);
  static uint64_t TagOf(uint64_t hash) { return uint64_t{1} << (hash >> 58); }
  static Shard::Bucket& BucketOf(Shard& shard, uint64_t hash) {
    return shard.buckets[hash & (shard.buckets.size() - 1)];
  }
  // Takes `e` out of `shard`'s bucket and ring (its lock held) and counts it
  // off its kind; the caller frees it once the lock is let go (a value's last
  // release may free many sketches).
  void Unlink(Shard& shard, Entry* e);
  static void LinkNewest(Shard& shard, Entry* e);
  static void Grow(Shard& shard);
  static void Free(Entry* e);
  // Whether `hash` was sighted in `shard` before; sights it if not (its lock held).
  bool SightedBefore(Shard& shard, uint64_t hash) const;
  // A block of the sightings: 256 bits of each filter (one cache line).
  static constexpr size_t kSightingBlockWords = 8;

  const size_t capacity_;
  // Each of a shard's two Bloom filters' bits (0: Admission::kAlways), a
  // power of two.
  const size_t sighting_bits_;
  const size_t shard_capacity_;
  // Retired scopes, copied on write: readers load the newest list, writers
  // (a damaged file: a handful in a node's life) add to a copy under the
  // lock. Every list stays until the cache goes, so none is freed under a
  // reader.
  std::mutex retire_mu_;
  std::vector<std::unique_ptr<const std::vector<std::string>>> retired_lists_;  // under retire_mu_
  std::atomic<const std::vector<std::string>*> retired_{nullptr};
  std::array<Shard, kShards> shards_;
  std::array<KindCounters, kCacheKinds> kinds_;
};

}  // namespace clickatron::api
