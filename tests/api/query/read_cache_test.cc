// ReadCache: its charges and figures agree with an oracle over random
// operations, a value found is the last kept for its kind and key, kinds do
// not collide, an entry over a shard's share is refused, a shard's least
// recently used goes first (a Find refreshes), a found value outlives its
// eviction, capacity 0 keeps nothing, and threads sharing it keep it straight.
#include "query/cache/read_cache.h"

#include <gtest/gtest.h>

#include <array>
#include <atomic>
#include <cstring>
#include <map>
#include <memory>
#include <random>
#include <set>
#include <string>
#include <thread>
#include <utility>
#include <vector>

namespace clickatron::api::read_cache_test {
namespace {

constexpr size_t kShards = ReadCache::kShards;

// A kept value names what it was kept for, so a mix-up shows.
struct Val {
  CacheKind kind;
  int key;
  uint64_t version;
  size_t charge;
};
std::shared_ptr<const Val> Make(CacheKind kind, int key, uint64_t version, size_t charge) {
  return std::make_shared<const Val>(Val{kind, key, version, charge});
}
std::string KeyOf(int key) { return "key-" + std::to_string(key); }
CacheKind KindAt(size_t i) { return static_cast<CacheKind>(i % kCacheKinds); }
// What an entry costs: its owner's charge, its key after the kind's byte, the overhead.
size_t TotalOf(const std::string& key, size_t charge) { return charge + key.size() + 1 + ReadCache::kEntryOverhead; }
// The owner's charge that makes `key`'s entry cost `total`.
size_t ChargeFor(const std::string& key, size_t total) { return total - key.size() - 1 - ReadCache::kEntryOverhead; }
// Every kind's figures summed.
ReadCache::KindFigures Totals(const ReadCache& cache) {
  ReadCache::KindFigures sum;
  for (size_t k = 0; k < kCacheKinds; ++k) {
    const auto f = cache.Figures(KindAt(k));
    sum.inserts += f.inserts, sum.evictions += f.evictions, sum.bytes += f.bytes, sum.entries += f.entries;
    sum.not_kept += f.not_kept;
  }
  return sum;
}
// Every kept entry of `kinds` kinds and `keys` keys found: each kind's figures count exactly those.
void ExpectFiguresOfWhatIsFound(ReadCache& cache, size_t kinds, int keys) {
  for (size_t k = 0; k < kinds; ++k) {
    size_t entries = 0, bytes = 0;
    for (int key = 0; key < keys; ++key) {
      auto v = cache.Find<Val>(KindAt(k), KeyOf(key));
      if (!v) continue;
      EXPECT_TRUE(v->kind == KindAt(k) && v->key == key) << "kind " << k << " key " << key << ": another's value";
      ++entries, bytes += TotalOf(KeyOf(key), v->charge);
    }
    EXPECT_EQ(cache.Figures(KindAt(k)).entries, entries) << "kind " << k;
    EXPECT_EQ(cache.Figures(KindAt(k)).bytes, bytes) << "kind " << k;
  }
}

TEST(ReadCacheTest, ChargesAndFiguresAgreeWithAnOracleOverRandomOps) {
  constexpr size_t kShare = 2048;
  constexpr int kKeys = 16;
  ReadCache cache(kShards * kShare);
  ASSERT_EQ(cache.capacity() / kShards, kShare);
  // What the test last kept per (kind, key) and has not seen gone since: a Find
  // there gives exactly it or nothing (and once nothing, nothing until kept again).
  std::map<std::pair<size_t, int>, std::shared_ptr<const Val>> kept;
  std::array<uint64_t, kCacheKinds> inserted{}, dropped{};  // dropped: erased or replaced
  uint64_t refused = 0, hits = 0, version = 0;
  auto probe = [&](size_t k, int key) {
    auto found = cache.Find<Val>(KindAt(k), KeyOf(key));
    auto it = kept.find({k, key});
    if (it != kept.end() && !found) kept.erase(it);
    else EXPECT_EQ(found, it == kept.end() ? nullptr : it->second) << "kind " << k << " key " << key;
    return found;
  };
  std::mt19937 rng(20240611);
  for (int op = 0; op < 4000 && !HasFailure(); ++op) {
    SCOPED_TRACE(op);
    const size_t k = rng() % kCacheKinds;
    const int key = static_cast<int>(rng() % kKeys);
    const auto before = probe(k, key);
    auto expected = before;  // a Find drops and changes nothing
    const unsigned what = rng() % 10;
    if (what < 6) {
      const size_t charge = rng() % 2100;
      const bool fits = TotalOf(KeyOf(key), charge) <= kShare;
      auto value = Make(KindAt(k), key, ++version, charge);
      EXPECT_EQ(cache.Insert(KindAt(k), KeyOf(key), value, charge), fits);
      expected = fits ? value : before;  // a refusal keeps what was kept
      inserted[k] += fits, refused += !fits;
    } else if (what == 9) {
      cache.Erase(KindAt(k), KeyOf(key));
      expected = nullptr;
    } else {
      hits += before != nullptr;
    }
    if (expected != before) {  // an Insert or an Erase: what was kept for the key is dropped
      dropped[k] += before != nullptr;
      kept.erase({k, key});
      if (expected) kept[{k, key}] = expected;
    }
    EXPECT_EQ(probe(k, key), expected);
    EXPECT_EQ(cache.charged(), Totals(cache).bytes);
    EXPECT_LE(cache.charged(), cache.capacity());
    for (size_t i = 0; i < kCacheKinds; ++i) {
      const auto f = cache.Figures(KindAt(i));
      EXPECT_EQ(f.inserts, inserted[i]) << "kind " << i;
      EXPECT_EQ(f.entries + f.evictions + dropped[i], f.inserts) << "kind " << i;
      EXPECT_TRUE(f.entries > 0 || f.bytes == 0) << "kind " << i << ": bytes without entries";
    }
    if (op % 64 == 63) {
      for (size_t i = 0; i < kCacheKinds; ++i)
        for (int j = 0; j < kKeys; ++j) probe(i, j);  // none stale, none another's
      ExpectFiguresOfWhatIsFound(cache, kCacheKinds, kKeys);
    }
  }
  EXPECT_GT(Totals(cache).evictions, 0u) << "the sequence never filled a shard";
  EXPECT_GT(refused, 0u);
  EXPECT_EQ(Totals(cache).not_kept, refused);
  EXPECT_GT(hits, 0u);
}

TEST(ReadCacheTest, AnEntryOverItsShardsShareIsRefusedAndKeepsTheKeysOld) {
  constexpr size_t kShare = 1024;
  const CacheKind kind = CacheKind::kArchiveReply;
  ReadCache cache(kShards * kShare + kShards - 1);  // the remainder is no shard's
  const std::string key = "edge";
  ASSERT_TRUE(cache.Insert(kind, key, Make(kind, 0, 1, 0), ChargeFor(key, kShare)));
  EXPECT_EQ(cache.Figures(kind).bytes, kShare);
  EXPECT_EQ(cache.charged(), kShare);
  EXPECT_FALSE(cache.Insert(kind, key, Make(kind, 0, 2, 0), ChargeFor(key, kShare) + 1));
  auto kept = cache.Find<Val>(kind, key);
  ASSERT_NE(kept, nullptr) << "a refused replacement dropped the value it would have replaced";
  EXPECT_EQ(kept->version, 1u);
  EXPECT_FALSE(cache.Insert(kind, key, Make(kind, 0, 3, 0), size_t{1} << 40));
  ASSERT_NE(cache.Find<Val>(kind, key), nullptr);
  EXPECT_EQ(cache.Find<Val>(kind, key)->version, 1u);
  const auto f = cache.Figures(kind);
  EXPECT_EQ(f.inserts, 1u);
  EXPECT_EQ(f.evictions, 0u) << "a refusal is no eviction";
  EXPECT_EQ(f.entries, 1u);
  EXPECT_EQ(f.bytes, kShare);
  EXPECT_EQ(cache.charged(), kShare);
}

TEST(ReadCacheTest, KindsAreNamespacesOfKeys) {
  ReadCache cache(1 << 20);
  for (size_t k = 0; k < kCacheKinds; ++k) {
    for (int key : {0, 1}) ASSERT_TRUE(cache.Insert(KindAt(k), KeyOf(key), Make(KindAt(k), key, k, 10 * k), 10 * k));
  }
  cache.Erase(CacheKind::kLookup, KeyOf(0));
  EXPECT_EQ(cache.Find<Val>(CacheKind::kLookup, KeyOf(0)), nullptr);
  for (size_t k = 0; k < kCacheKinds; ++k) {
    auto v = cache.Find<Val>(KindAt(k), KeyOf(1));
    ASSERT_NE(v, nullptr) << "kind " << k;
    EXPECT_EQ(v->version, k) << "kind " << k;
    EXPECT_EQ(cache.Figures(KindAt(k)).entries, KindAt(k) == CacheKind::kLookup ? 1u : 2u) << "kind " << k;
  }
  ExpectFiguresOfWhatIsFound(cache, kCacheKinds, 2);
}

TEST(ReadCacheTest, AShardKeepsNoMoreThanItsShare) {
  ReadCache cache(kShards * 1024);  // an entry of 600 fills a share: one a shard
  constexpr uint64_t kCount = 500;
  const CacheKind kind = CacheKind::kLookup;
  for (int i = 0; i < static_cast<int>(kCount); ++i) {
    const size_t charge = ChargeFor(KeyOf(i), 600);
    ASSERT_TRUE(cache.Insert(kind, KeyOf(i), Make(kind, i, 0, charge), charge));
    const auto f = cache.Figures(kind);
    ASSERT_LE(f.entries, kShards) << "two entries of 600 in one share of 1024";
    ASSERT_EQ(f.bytes, f.entries * 600);
    ASSERT_EQ(f.entries + f.evictions, f.inserts);
    ASSERT_EQ(cache.charged(), f.bytes);
    ASSERT_NE(cache.Find<Val>(kind, KeyOf(i)), nullptr) << "the newest is always kept";
  }
  EXPECT_EQ(cache.Figures(kind).inserts, kCount);
  EXPECT_GE(cache.Figures(kind).evictions, kCount - kShards);
  ExpectFiguresOfWhatIsFound(cache, kCacheKinds, static_cast<int>(kCount));
}

TEST(ReadCacheTest, LeastRecentlyUsedOfAShardGoesFirstAndAFindRefreshes) {
  ReadCache cache(kShards * 1024);
  using Id = std::pair<CacheKind, std::string>;
  auto put = [&](const Id& id, size_t total) {
    return cache.Insert(id.first, id.second, std::make_shared<const std::string>(id.second), ChargeFor(id.second, total));
  };
  auto has = [&](const Id& id) { return cache.Find<std::string>(id.first, id.second) != nullptr; };
  // Two entries of 600 never share a share of 1024 and a's shard holds only a:
  // a candidate that drops a went to a's shard. Kinds mixed on purpose.
  std::vector<Id> mates{{CacheKind::kLookup, "a"}};
  ASSERT_TRUE(put(mates[0], 600));
  for (int i = 0; i < 4000 && mates.size() < 3; ++i) {
    const Id candidate{i % 2 ? CacheKind::kArchiveReply : CacheKind::kLookup, "c" + std::to_string(i)};
    ASSERT_TRUE(put(candidate, 600));
    if (has(mates[0])) continue;
    mates.push_back(candidate);
    cache.Erase(candidate.first, candidate.second);
    ASSERT_TRUE(put(mates[0], 600));
  }
  ASSERT_EQ(mates.size(), 3u) << "no three keys of one shard among 4000";
  const Id &x = mates[0], &y = mates[1], &z = mates[2];
  // Entries of 400: two fit a share, three do not.
  for (bool touch_x : {false, true}) {
    SCOPED_TRACE(touch_x ? "x found after y was kept" : "in the order kept");
    for (const Id& id : mates) cache.Erase(id.first, id.second);
    const uint64_t evictions = Totals(cache).evictions;
    ASSERT_TRUE(put(x, 400));
    ASSERT_TRUE(put(y, 400));
    if (touch_x) {
      ASSERT_TRUE(has(x));
    }
    ASSERT_TRUE(put(z, 400));
    const Id& gone = touch_x ? y : x;
    const Id& stays = touch_x ? x : y;
    EXPECT_FALSE(has(gone)) << gone.second << " was the least recently used";
    EXPECT_TRUE(has(stays)) << stays.second;
    EXPECT_TRUE(has(z));
    EXPECT_EQ(Totals(cache).evictions - evictions, 1u);
  }
}

TEST(ReadCacheTest, CapacityZeroKeepsNothing) {
  ReadCache cache(0);
  EXPECT_FALSE(cache.enabled());
  EXPECT_EQ(cache.capacity(), 0u);
  EXPECT_FALSE(cache.Insert(CacheKind::kLookup, "k", Make(CacheKind::kLookup, 0, 0, 0), 0));
  EXPECT_EQ(cache.Find<Val>(CacheKind::kLookup, "k"), nullptr);
  cache.Erase(CacheKind::kLookup, "k");
  const auto sum = Totals(cache);
  EXPECT_EQ(sum.inserts + sum.evictions + sum.bytes + sum.entries + cache.charged(), 0u);
  ReadCache tiny(kShards - 1);  // less than a byte a shard: no entry fits a share
  EXPECT_FALSE(tiny.Insert(CacheKind::kLookup, "k", Make(CacheKind::kLookup, 0, 0, 0), 0));
  EXPECT_EQ(tiny.Find<Val>(CacheKind::kLookup, "k"), nullptr);
  EXPECT_EQ(tiny.charged(), 0u);
}

TEST(ReadCacheTest, AFoundValueOutlivesItsEvictionAndErase) {
  ReadCache cache(kShards * 1024);
  const CacheKind kind = CacheKind::kLookup;
  std::shared_ptr<const Val> held[2];
  std::weak_ptr<const Val> watch[2];
  for (int key : {0, 1}) {
    ASSERT_TRUE(cache.Insert(kind, KeyOf(key), Make(kind, key, 7, 100), 100));
    ASSERT_NE(held[key] = cache.Find<Val>(kind, KeyOf(key)), nullptr);
    watch[key] = held[key];
  }
  cache.Erase(kind, KeyOf(1));
  // Entries of 1000 leave no room beside them: fill shards until key 0 is gone.
  for (int i = 100; i < 4000 && cache.Find<Val>(kind, KeyOf(0)); ++i)
    ASSERT_TRUE(cache.Insert(CacheKind::kArchiveReply, KeyOf(i), Make(CacheKind::kArchiveReply, i, 0, 0),
                             ChargeFor(KeyOf(i), 1000)));
  ASSERT_EQ(cache.Find<Val>(kind, KeyOf(0)), nullptr);
  EXPECT_EQ(cache.Figures(kind).evictions, 1u);
  for (int key : {0, 1}) {
    EXPECT_TRUE(held[key]->kind == kind && held[key]->key == key && held[key]->version == 7 && held[key]->charge == 100);
    held[key].reset();
    EXPECT_TRUE(watch[key].expired()) << "the cache still holds key " << key;
  }
}

TEST(ReadCacheTest, ThreadsSharingItKeepItsAccountsAndValuesStraight) {
  ReadCache cache(kShards * 4096);
  constexpr int kThreads = 4, kOps = 20000, kKeys = 64, kKinds = 4;
  std::atomic<uint64_t> mixups{0}, refused{0}, over{0}, hits{0};
  std::vector<std::thread> threads;
  for (int t = 0; t < kThreads; ++t) {
    threads.emplace_back([&, t] {
      std::mt19937 rng(1000 + t);
      for (int op = 0; op < kOps; ++op) {
        const CacheKind kind = KindAt(rng() % kKinds);
        const int key = static_cast<int>(rng() % kKeys);
        const unsigned what = rng() % 16;
        if (what < 7) {
          const size_t charge = rng() % 2000;  // always fits a share of 4096
          if (!cache.Insert(kind, KeyOf(key), Make(kind, key, t, charge), charge)) ++refused;
        } else if (what < 14) {
          auto v = cache.Find<Val>(kind, KeyOf(key));
          hits += v != nullptr;
          if (v && (v->kind != kind || v->key != key)) ++mixups;
        } else if (what == 14) {
          cache.Erase(kind, KeyOf(key));
        } else if (cache.charged() > cache.capacity()) {
          ++over;
        }
      }
    });
  }
  for (std::thread& thread : threads) thread.join();
  EXPECT_EQ(mixups.load(), 0u);
  EXPECT_EQ(refused.load(), 0u);
  EXPECT_EQ(over.load(), 0u);
  EXPECT_GT(hits.load(), 0u);
  const auto sum = Totals(cache);
  EXPECT_GT(sum.evictions, 0u);
  EXPECT_LE(sum.entries + sum.evictions, sum.inserts);
  EXPECT_EQ(cache.charged(), sum.bytes);
  EXPECT_LE(cache.charged(), cache.capacity());
  ExpectFiguresOfWhatIsFound(cache, kCacheKinds, kKeys);
}

// Admission::kSeenBefore: a full shard keeps a new key from its second
// offer on, never drops an entry for a first offer, and keeps replacing a
// key it holds; a shard with room keeps every key; the Bloom filter's bytes
// come out of the share.
TEST(ReadCacheTest, AFullShardKeepsANewKeyOnlyFromItsSecondOffer) {
  const CacheKind kind = CacheKind::kArchiveReply;
  ReadCache always(kShards * 1024);
  ReadCache cache(kShards * 1024, ReadCache::Admission::kSeenBefore);
  // A share of 1024 has two filters of 512 bits (128 bytes) taken from it.
  const std::string big = "big";
  EXPECT_TRUE(always.Insert(kind, big, Make(kind, 0, 0, 0), ChargeFor(big, 1000)));
  EXPECT_FALSE(cache.Insert(kind, big, Make(kind, 0, 0, 0), ChargeFor(big, 1000))) << "the filters are not charged";
  EXPECT_TRUE(cache.Insert(kind, big, Make(kind, 0, 0, 0), ChargeFor(big, 896)));
  cache.Erase(kind, big);

  // Entries of 600: one a shard. First offers of 200 keys (about 12 a shard,
  // far from the 64 after which a shard's filter is cleared).
  constexpr int kKeys = 200;
  std::vector<int> refused;
  std::set<std::string> kept_first;
  for (int i = 0; i < kKeys; ++i) {
    const uint64_t evictions = cache.Figures(kind).evictions;
    const std::string key = KeyOf(i);
    if (cache.Insert(kind, key, Make(kind, i, 1, ChargeFor(key, 600)), ChargeFor(key, 600))) {
      kept_first.insert(key);
      continue;
    }
    refused.push_back(i);
    EXPECT_EQ(cache.Find<Val>(kind, key), nullptr) << key;
    EXPECT_EQ(cache.Figures(kind).evictions, evictions) << key << ": a key not kept dropped another";
  }
  // Kept on a first offer: a shard's first key, and a key the filter
  // mistook for one offered before (a Bloom filter's false positive: rare).
  EXPECT_GE(kept_first.size(), kShards / 2);
  EXPECT_LE(kept_first.size(), kShards + 8);
  EXPECT_EQ(cache.Figures(kind).not_kept, refused.size() + 1);  // and "big" at 1000
  // Second offers: every one is kept, each dropping the shard's one entry.
  for (const int i : refused) {
    const std::string key = KeyOf(i);
    const uint64_t evictions = cache.Figures(kind).evictions;
    ASSERT_TRUE(cache.Insert(kind, key, Make(kind, i, 2, ChargeFor(key, 600)), ChargeFor(key, 600))) << key;
    ASSERT_NE(cache.Find<Val>(kind, key), nullptr) << key;
    EXPECT_EQ(cache.Find<Val>(kind, key)->version, 2u);
    EXPECT_EQ(cache.Figures(kind).evictions, evictions + 1) << key;
  }
  // A key held is replaced in a full shard without being offered before.
  const std::string held = KeyOf(refused.back());
  EXPECT_TRUE(cache.Insert(kind, held, Make(kind, refused.back(), 3, ChargeFor(held, 500)), ChargeFor(held, 500)));
  EXPECT_EQ(cache.Find<Val>(kind, held)->version, 3u);
  EXPECT_LE(cache.charged(), cache.capacity());
  EXPECT_EQ(cache.charged(), Totals(cache).bytes);
  ExpectFiguresOfWhatIsFound(cache, kCacheKinds, kKeys);
}

// What admission is for: busy keys read between scans of keys read once
// (a long tail, an export walking every key) stay kept. Each round reads
// 200 keys never read before, then the 16 busy ones, keeping what it
// misses, as a read path does. Each shard holds about six entries, and a
// round's scan offers it about twelve: kept as they come, they push out
// every busy key before it is read again.
TEST(ReadCacheTest, AScanOfKeysReadOnceDoesNotPushOutBusyKeys) {
  const CacheKind kind = CacheKind::kArchiveReply;
  constexpr int kBusy = 16, kRounds = 20, kScanPerRound = 200;
  auto busy_hits = [&](ReadCache& cache) {
    auto read = [&](const std::string& key) {
      if (cache.Find<Val>(kind, key)) return true;
      cache.Insert(kind, key, Make(kind, 0, 0, ChargeFor(key, 600)), ChargeFor(key, 600));
      return false;
    };
    for (int i = 0; i < kBusy; ++i) read("busy-" + std::to_string(i));
    int hits = 0, next = 0;
    for (int round = 0; round < kRounds; ++round) {
      for (int i = 0; i < kScanPerRound; ++i) read("once-" + std::to_string(next++));
      for (int i = 0; i < kBusy; ++i) hits += read("busy-" + std::to_string(i));
    }
    EXPECT_LE(cache.charged(), cache.capacity());
    return hits;
  };
  ReadCache always(kShards * 4096);
  ReadCache admitting(kShards * 4096, ReadCache::Admission::kSeenBefore);
  const int without = busy_hits(always), with = busy_hits(admitting);
  ::testing::Test::RecordProperty("busy_hits_without_admission", without);
  ::testing::Test::RecordProperty("busy_hits_with_admission", with);
  EXPECT_LE(without, kBusy * kRounds / 10) << "the scan did not push the busy keys out: nothing to show";
  EXPECT_GE(with, kBusy * kRounds * 9 / 10) << "busy keys pushed out by keys read once";
  EXPECT_GE(admitting.Figures(kind).not_kept, static_cast<uint64_t>(kRounds * kScanPerRound * 8 / 10));
}

// After a deploy every key is new (kept answers are keyed by their file)
// while the cache is full of the old file's entries, which no new key
// evicts until one is admitted. A working set that fits, read again and
// again in the same order (a dashboard's keys), is kept from its second
// read on: its second offers come within the shardful of offers a key's
// first is remembered for. (With one filter cleared after an eighth of a
// shard's entries in keys, it was refused round after round: 4% hits.)
TEST(ReadCacheTest, AWorkingSetThatFitsIsKeptFromItsSecondReadWhenTheCacheIsFullOfAnotherFile) {
  const CacheKind kind = CacheKind::kArchiveReply;
  ReadCache cache(kShards * 64 * 1024, ReadCache::Admission::kSeenBefore);
  auto read = [&](const std::string& key) {
    if (cache.Find<Val>(kind, key)) return true;
    cache.Insert(kind, key, Make(kind, 0, 0, ChargeFor(key, 400)), ChargeFor(key, 400));
    return false;
  };
  // The old file's answers: about 160 entries of 400 fit a share.
  for (int pass = 0; pass < 2; ++pass) {
    for (int i = 0; i < 4000; ++i) read("gen-1/key-" + std::to_string(i));
  }
  ASSERT_GT(cache.Figures(kind).entries, kShards * 140);
  // The new file's working set: 2,200 keys, about 137 a share.
  std::vector<int> hits;
  for (int round = 0; round < 4; ++round) {
    int n = 0;
    for (int i = 0; i < 2200; ++i) n += read("gen-2/key-" + std::to_string(i));
    hits.push_back(n);
  }
  EXPECT_EQ(hits[0], 0);
  EXPECT_GE(hits[2], 1980) << "round 2: " << hits[1];
  EXPECT_GE(hits[3], 1980);
  EXPECT_LE(cache.charged(), cache.capacity());
}

TEST(ReadCacheTest, EveryKindHasItsOwnName) {
  std::set<std::string> names;
  for (size_t k = 0; k < kCacheKinds; ++k) {
    const char* name = CacheKindName(KindAt(k));
    ASSERT_NE(name, nullptr);
    EXPECT_TRUE(std::strlen(name) > 0 && std::strcmp(name, "unknown") != 0) << "kind " << k << ": '" << name << "'";
    names.insert(name);
  }
  EXPECT_EQ(names.size(), kCacheKinds);
  EXPECT_STREQ(CacheKindName(CacheKind::kArchiveReply), "archive_reply");
}

}  // namespace
}  // namespace clickatron::api::read_cache_test
