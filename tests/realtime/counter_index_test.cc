#include "counter_index.h"

#include <gtest/gtest.h>

#include <set>
#include <string>
#include <vector>

#include "table_arena.h"

namespace clickatron::realtime::counter_index_test {
namespace {

std::string KeyOf(int i) { return "c.b|k" + std::to_string(i) + ".US.2026120614"; }

// Many keys through several doublings: each is made once, found again at
// the address it was made at, and its bytes are its own copy.
TEST(CounterIndexTest, KeysMadeOnceAndFoundAgainAcrossGrowth) {
  TableArena arena;
  CounterIndex index(&arena);
  std::vector<CounterEntry*> made;
  for (int i = 0; i < 20000; ++i) {
    std::string key = KeyOf(i);
    bool is_new = false;
    CounterEntry* entry = index.FindOrMake(key, CounterIndex::Hash(key), &is_new);
    ASSERT_TRUE(is_new) << key;
    entry->delta = i + 1;
    key.assign(key.size(), 'x');  // the index holds a copy, not the caller's bytes
    made.push_back(entry);
  }
  EXPECT_EQ(index.size(), 20000u);
  for (int i = 0; i < 20000; ++i) {
    const std::string key = KeyOf(i);
    bool is_new = true;
    EXPECT_EQ(index.FindOrMake(key, CounterIndex::Hash(key), &is_new), made[i]);
    EXPECT_FALSE(is_new);
    const CounterEntry* found = index.Find(key, CounterIndex::Hash(key));
    ASSERT_NE(found, nullptr);
    EXPECT_EQ(found->key, key);
    EXPECT_EQ(found->delta, i + 1);
  }
  EXPECT_EQ(index.Find("c.b|k20000.US.2026120614", CounterIndex::Hash("c.b|k20000.US.2026120614")), nullptr);
  EXPECT_EQ(index.size(), 20000u);
}

// Keys that share a hash (forced here) sit in one probe run: each is told
// apart by its bytes, and a missing key with that hash is not found.
TEST(CounterIndexTest, KeysOfOneHashAreToldApartByTheirBytes) {
  TableArena arena;
  CounterIndex index(&arena);
  constexpr uint64_t kSameHash = 12345;
  for (int i = 0; i < 100; ++i) {
    bool is_new = false;
    index.FindOrMake(KeyOf(i), kSameHash, &is_new)->delta = i;
    ASSERT_TRUE(is_new);
  }
  for (int i = 0; i < 100; ++i) {
    const CounterEntry* entry = index.Find(KeyOf(i), kSameHash);
    ASSERT_NE(entry, nullptr);
    EXPECT_EQ(entry->delta, i);
  }
  EXPECT_EQ(index.Find(KeyOf(100), kSameHash), nullptr);
  EXPECT_EQ(index.Find(KeyOf(5), kSameHash + 1), nullptr);  // the bytes match, the stored hash does not
}

// ForEach visits every entry once; Reserve makes room without losing any.
TEST(CounterIndexTest, ForEachVisitsEveryEntryOnceAfterReserve) {
  TableArena arena;
  CounterIndex index(&arena);
  EXPECT_EQ(index.Find("absent", CounterIndex::Hash("absent")), nullptr);  // empty, no slots yet
  for (int i = 0; i < 300; ++i) {
    bool is_new = false;
    index.FindOrMake(KeyOf(i), CounterIndex::Hash(KeyOf(i)), &is_new);
  }
  index.Reserve(5000);
  std::set<std::string> seen;
  size_t visits = 0;
  index.ForEach([&](const CounterEntry& entry) {
    ++visits;
    seen.emplace(entry.key);
  });
  EXPECT_EQ(visits, 300u);
  EXPECT_EQ(seen.size(), 300u);
  EXPECT_TRUE(seen.count(KeyOf(0)) && seen.count(KeyOf(299)));
}

// Past a huge page of slots the index lives in blocks of its own, which go
// as soon as they are outgrown: 300,000 keys end in one 8 MiB block, with
// the 2 and 4 MiB ones before it given back to the kernel.
TEST(CounterIndexTest, OutgrownSlotBlocksAreGivenBack) {
  TableArena arena;
  CounterIndex index(&arena);
  constexpr int kKeys = 300'000;
  size_t entry_bytes = 0;
  for (int i = 0; i < kKeys; ++i) {
    const std::string key = KeyOf(i);
    bool is_new = false;
    index.FindOrMake(key, CounterIndex::Hash(key), &is_new)->delta = i;
    ASSERT_TRUE(is_new);
    entry_bytes += (sizeof(CounterEntry) + key.size() + alignof(CounterEntry) - 1) / alignof(CounterEntry) *
                   alignof(CounterEntry);
  }
  int missing = 0;
  for (int i = 0; i < kKeys; i += 7) {
    const CounterEntry* entry = index.Find(KeyOf(i), CounterIndex::Hash(KeyOf(i)));
    missing += entry == nullptr || entry->delta != i ? 1 : 0;
  }
  EXPECT_EQ(missing, 0);
  // Entries, the 8 MiB block, the arrays below a huge page (2 MiB in all)
  // and a chunk's slack; the outgrown blocks would add 6 MiB more.
  constexpr size_t kMiB = size_t{1} << 20;
  EXPECT_LE(arena.bytes(), entry_bytes + 8 * kMiB + 2 * kMiB + 2 * kMiB);
  EXPECT_GE(arena.bytes(), entry_bytes + 8 * kMiB);
}

}  // namespace
}  // namespace clickatron::realtime::counter_index_test
