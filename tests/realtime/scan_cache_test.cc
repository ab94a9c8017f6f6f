// ScanCache: kept records answer only a scan of the same day, prefix and
// store version; a scan of an older version does not replace newer
// records; the byte budget bounds what is kept; 0 turns it off; scans of
// fewer than min_records are not kept; a day found empty is known so for
// its store version only; records united for unite=day are made once and
// charged. And the
// cursor over kept records seeks and walks them in key order.
#include "scan_cache.h"

#include <gtest/gtest.h>

#include <memory>
#include <optional>
#include <string>

#include "clickatron/unique_sketch.h"
#include "clickatron/ymdh.h"

namespace clickatron::realtime {
namespace {

std::shared_ptr<CachedRecords> RecordsOf(std::initializer_list<std::pair<std::string, std::string>> records) {
  auto out = std::make_shared<CachedRecords>();
  for (const auto& [key, value] : records) out->Add(key, value);
  return out;
}

TEST(ScanCacheTest, AnswersOnlyTheSameDayPrefixAndVersion) {
  ScanCache cache(ScanCacheOptions{.max_bytes = 1 << 20, .min_records = 1});
  cache.Put(10, "u|a.", 3, RecordsOf({{"u|a.x", "1"}}));
  ASSERT_NE(cache.Find(10, "u|a.", 3), nullptr);
  EXPECT_EQ(cache.Find(10, "u|a.", 3)->key(0), "u|a.x");
  EXPECT_EQ(cache.Find(10, "u|a.", 4), nullptr);  // the store changed since
  EXPECT_EQ(cache.Find(11, "u|a.", 3), nullptr);
  EXPECT_EQ(cache.Find(10, "u|a", 3), nullptr);
  EXPECT_EQ(cache.figures().hits, 2u);
  EXPECT_EQ(cache.figures().misses, 3u);
}

TEST(ScanCacheTest, AnOlderScanDoesNotReplaceNewerRecords) {
  ScanCache cache(ScanCacheOptions{.max_bytes = 1 << 20, .min_records = 1});
  cache.Put(10, "u|a.", 5, RecordsOf({{"u|a.x", "new"}}));
  cache.Put(10, "u|a.", 4, RecordsOf({{"u|a.x", "old"}}));
  ASSERT_NE(cache.Find(10, "u|a.", 5), nullptr);
  EXPECT_EQ(cache.Find(10, "u|a.", 5)->value(0), "new");
  cache.Put(10, "u|a.", 6, RecordsOf({{"u|a.x", "newer"}}));
  EXPECT_EQ(cache.Find(10, "u|a.", 5), nullptr);
  EXPECT_EQ(cache.Find(10, "u|a.", 6)->value(0), "newer");
}

// Once a scan of a newer store version has looked, an older scan's records
// would be stale at once: not kept. A newer scan's lookup drops older records.
TEST(ScanCacheTest, RecordsOlderThanTheNewestVersionSeenAreNotKept) {
  ScanCache cache(ScanCacheOptions{.max_bytes = 1 << 20, .min_records = 1});
  cache.Put(10, "u|a.", 3, RecordsOf({{"u|a.x", "1"}}));
  EXPECT_EQ(cache.figures().entries, 1u);
  EXPECT_EQ(cache.Find(10, "u|b.", 4), nullptr);  // a scan of version 4 began
  cache.Put(10, "u|b.", 3, RecordsOf({{"u|b.x", "1"}}));
  EXPECT_EQ(cache.Find(10, "u|b.", 3), nullptr);
  EXPECT_EQ(cache.Find(10, "u|a.", 4), nullptr);  // drops u|a.'s version-3 records
  EXPECT_EQ(cache.figures().entries, 0u);
  EXPECT_EQ(cache.figures().bytes, 0u);
}

// A recording past an eighth of the budget stops keeping records and is
// not kept: a scan of a large prefix streams in bounded memory.
TEST(ScanCacheTest, ARecordingPastAnEighthOfTheBudgetIsNotKept) {
  ScanCache cache(ScanCacheOptions{.max_bytes = 8 * 1000, .min_records = 1});
  std::shared_ptr<CachedRecords> big = cache.NewRecording();
  for (int i = 0; i < 100 && !big->overflowed(); ++i) big->Add("k" + std::to_string(1000 + i), "vvvvvvvv");
  EXPECT_TRUE(big->overflowed());
  EXPECT_LE(big->bytes(), 1000u);
  cache.Put(10, "k", 1, big);
  EXPECT_EQ(cache.Find(10, "k", 1), nullptr);
  std::shared_ptr<CachedRecords> small = cache.NewRecording();
  small->Add("k1", "v");
  EXPECT_FALSE(small->overflowed());
  cache.Put(10, "k", 1, small);
  EXPECT_NE(cache.Find(10, "k", 1), nullptr);
  EXPECT_EQ(cache.figures().budget_bytes, 8000u);
}

TEST(ScanCacheTest, TheBudgetBoundsWhatIsKeptAndZeroTurnsItOff) {
  const std::string value(1000, 'v');
  ScanCache cache(ScanCacheOptions{.max_bytes = 8 * (1000 + ScanCache::kEntryOverhead + 64), .min_records = 1});
  for (int i = 0; i < 100; ++i) cache.Put(10, "p" + std::to_string(i), 1, RecordsOf({{"k", value}}));
  EXPECT_LE(cache.figures().bytes, 8 * (1000 + ScanCache::kEntryOverhead + 64));
  EXPECT_GE(cache.figures().entries, 1u);
  EXPECT_LT(cache.figures().entries, 100u);
  EXPECT_NE(cache.Find(10, "p99", 1), nullptr);  // the last ones stay
  EXPECT_EQ(cache.Find(10, "p0", 1), nullptr);

  ScanCache off(ScanCacheOptions{.max_bytes = 0, .min_records = 1});
  EXPECT_FALSE(off.enabled());
  off.Put(10, "p", 1, RecordsOf({{"k", "v"}}));
  EXPECT_EQ(off.Find(10, "p", 1), nullptr);
  EXPECT_EQ(off.figures().entries, 0u);
}

TEST(ScanCacheTest, ScansOfFewerThanMinRecordsAreNotKept) {
  ScanCache cache(ScanCacheOptions{.max_bytes = 1 << 20, .min_records = 3});
  cache.Put(10, "few.", 1, RecordsOf({{"few.a", "1"}, {"few.b", "2"}}));
  cache.Put(10, "none.", 1, RecordsOf({}));
  cache.Put(10, "enough.", 1, RecordsOf({{"enough.a", "1"}, {"enough.b", "2"}, {"enough.c", "3"}}));
  EXPECT_EQ(cache.Find(10, "few.", 1), nullptr);
  EXPECT_EQ(cache.Find(10, "none.", 1), nullptr);
  ASSERT_NE(cache.Find(10, "enough.", 1), nullptr);
  EXPECT_EQ(cache.figures().entries, 1u);
}

// A day's emptiness is known for the version it was found at only, and a
// fact of a newer version replaces older ones (which are never asked again).
TEST(ScanCacheTest, ADaysEmptinessHoldsForItsVersionOnly) {
  ScanCache cache(ScanCacheOptions{.max_bytes = 1 << 20});
  EXPECT_EQ(cache.DayEmpty(11, 3), std::nullopt);
  cache.NoteDayEmpty(11, 3, true);
  cache.NoteDayEmpty(10, 3, false);
  EXPECT_EQ(cache.DayEmpty(11, 3), std::optional<bool>(true));
  EXPECT_EQ(cache.DayEmpty(10, 3), std::optional<bool>(false));
  EXPECT_EQ(cache.DayEmpty(11, 4), std::nullopt);  // the store changed since
  cache.NoteDayEmpty(11, 4, false);
  EXPECT_EQ(cache.DayEmpty(11, 4), std::optional<bool>(false));
  EXPECT_EQ(cache.DayEmpty(10, 3), std::nullopt);  // dropped: older than a version seen
  cache.NoteDayEmpty(12, 3, true);                 // a scan that began before version 4
  EXPECT_EQ(cache.DayEmpty(12, 3), std::nullopt);

  ScanCache off(ScanCacheOptions{.max_bytes = 0});
  off.NoteDayEmpty(11, 3, true);
  EXPECT_EQ(off.DayEmpty(11, 3), std::nullopt);
}

// A unite=day read of kept records gets each unique record's hours of one
// UTC day as one record, the union of their visitors keyed by the first
// hour, made once and then kept (and charged) beside the hours; other
// records stay as they are.
TEST(ScanCacheTest, UnitedRecordsAreMadeOnceAndCharged) {
  const auto sketch = [](std::initializer_list<const char*> tokens) {
    UniqueSketch s;
    for (const char* t : tokens) s.Add(HashVisitor(t));
    return s;
  };
  const std::string day = *DayCodeFromDays(DaysFromCivil({2024, 3, 10}));
  const std::string next_day = *DayCodeFromDays(DaysFromCivil({2024, 3, 11}));
  auto hours = std::make_shared<CachedRecords>();
  hours->Add("u|a." + day + "3", std::string(8, '\0'));  // a counter: as it is
  hours->Add("~u|a." + day + "3", sketch({"v1", "v2"}).ToBinary());
  hours->Add("~u|a." + day + "7", sketch({"v2", "v3"}).ToBinary());
  hours->Add("~u|a." + day + "9", sketch({"v4"}).ToBinary());
  hours->Add("~u|a." + next_day + "0", sketch({"v1"}).ToBinary());
  hours->Add("~u|b." + day + "0", sketch({"v5"}).ToBinary());
  ScanCache cache(ScanCacheOptions{.max_bytes = 1 << 20, .min_records = 1});
  cache.Put(10, "", 1, hours);
  const size_t hours_only = cache.figures().bytes;
  CachedRecordsPtr united = cache.FindUnited(10, "", 1);
  ASSERT_NE(united, nullptr);
  ASSERT_EQ(united->size(), 4u);
  EXPECT_EQ(united->key(0), "u|a." + day + "3");
  EXPECT_EQ(united->value(0), std::string(8, '\0'));
  EXPECT_FALSE(united->value_is_text(0));
  EXPECT_EQ(united->key(1), "~u|a." + day + "3");
  EXPECT_TRUE(united->value_is_text(1));
  EXPECT_EQ(united->value(1), sketch({"v1", "v2", "v3", "v4"}).ToText());
  EXPECT_EQ(united->key(2), "~u|a." + next_day + "0");
  EXPECT_EQ(united->value(2), sketch({"v1"}).ToText());
  EXPECT_EQ(united->key(3), "~u|b." + day + "0");
  EXPECT_GT(cache.figures().bytes, hours_only);
  EXPECT_EQ(cache.FindUnited(10, "", 1), united);  // kept
  EXPECT_EQ(cache.Find(10, "", 1), hours);         // the hours too
  EXPECT_EQ(cache.FindUnited(10, "", 2), nullptr);  // another version: a miss, as Find's

  // Hours whose sketches do not decode do not unite: a miss (the store is
  // read, which reports them), not a hit.
  auto bad = std::make_shared<CachedRecords>();
  bad->Add("~u|a." + day + "1", "not a sketch");
  bad->Add("~u|a." + day + "2", "not one either");
  cache.Put(11, "", 2, bad);
  const ScanCache::Figures before = cache.figures();
  EXPECT_EQ(cache.FindUnited(11, "", 2), nullptr);
  EXPECT_EQ(cache.figures().hits, before.hits);
  EXPECT_EQ(cache.figures().misses, before.misses + 1);
}

TEST(ScanCacheTest, TheCursorSeeksAndWalksInKeyOrder) {
  std::unique_ptr<StoreCursor> c = NewCachedRecordsCursor(RecordsOf({{"a", "1"}, {"b", ""}, {"d", "44"}}));
  c->Seek("b");
  ASSERT_TRUE(c->Valid());
  EXPECT_EQ(c->key(), "b");
  EXPECT_EQ(c->raw_value(), "");
  c->Next();
  ASSERT_TRUE(c->Valid());
  EXPECT_EQ(c->key(), "d");
  EXPECT_EQ(c->raw_value(), "44");
  c->Next();
  EXPECT_FALSE(c->Valid());
  c->Seek("c");
  EXPECT_EQ(c->key(), "d");
  c->Seek("e");
  EXPECT_FALSE(c->Valid());
  c->Seek("");
  EXPECT_EQ(c->key(), "a");
  EXPECT_TRUE(c->status().ok());
}

}  // namespace
}  // namespace clickatron::realtime
