// SketchTextCache: a text comes back as its own decoding whether kept or
// not, a text seen again is not decoded again (the figures say which), a
// bad text is refused and not kept, and a read cache of 0 bytes keeps
// nothing. (Which entries go first is the read cache's: read_cache_test.cc.)
#include "query/cache/sketch_text_cache.h"

#include <gtest/gtest.h>

#include <string>

namespace clickatron::api {
namespace {

// The text of a sketch of visitors first .. first+count-1.
std::string TextOf(uint64_t first, uint64_t count) {
  UniqueSketch s;
  for (uint64_t i = first; i < first + count; ++i) s.Add(HashVisitor("visitor-" + std::to_string(i)));
  return s.ToText();
}

TEST(SketchTextCacheTest, KeptSketchIsTheTextsOwnAndIsNotDecodedAgain) {
  ReadStats stats;
  ReadCache read_cache(1 << 20);
  SketchTextCache cache(read_cache, stats);
  const std::string hour = TextOf(0, 50);
  auto first = cache.Decode(hour, "realtime unique");
  ASSERT_TRUE(first.ok()) << first.status().message();
  EXPECT_EQ((*first)->ToText(), hour);
  EXPECT_EQ((*first)->Estimate(), 50u);
  EXPECT_EQ(stats.sketch_cache_misses.load(), 1u);
  EXPECT_EQ(stats.sketch_cache_hits.load(), 0u);

  auto again = cache.Decode(hour, "realtime unique");
  ASSERT_TRUE(again.ok());
  EXPECT_EQ(again->get(), first->get()) << "the kept sketch, shared";
  EXPECT_EQ(stats.sketch_cache_hits.load(), 1u);
  EXPECT_EQ(stats.sketch_cache_misses.load(), 1u);

  // The same hour with one more visitor is another text: decoded anew.
  const std::string grown = TextOf(0, 51);
  auto changed = cache.Decode(grown, "realtime unique");
  ASSERT_TRUE(changed.ok());
  EXPECT_EQ((*changed)->Estimate(), 51u);
  EXPECT_EQ(stats.sketch_cache_misses.load(), 2u);
  EXPECT_EQ(read_cache.Figures(CacheKind::kSketchText).entries, 2u);
}

TEST(SketchTextCacheTest, DenseSketchesAreKeptAndChargedTheirRegisters) {
  ReadStats stats;
  ReadCache read_cache(1 << 20);
  SketchTextCache cache(read_cache, stats);
  const std::string dense = TextOf(0, 5000);
  ASSERT_EQ(dense.front(), 'd');
  auto sketch = cache.Decode(dense, "realtime unique");
  ASSERT_TRUE(sketch.ok());
  EXPECT_EQ((*sketch)->ToText(), dense);
  EXPECT_GE(read_cache.Figures(CacheKind::kSketchText).bytes, dense.size() + kSketchRegisters);
  ASSERT_TRUE(cache.Decode(dense, "realtime unique").ok());
  EXPECT_EQ(stats.sketch_cache_hits.load(), 1u);
}

TEST(SketchTextCacheTest, BadTextIsCorruptionAndNotKept) {
  ReadStats stats;
  ReadCache read_cache(1 << 20);
  SketchTextCache cache(read_cache, stats);
  for (const std::string bad : {"x123", "e!!", "", "dAAAA"}) {
    auto sketch = cache.Decode(bad, "realtime unique");
    ASSERT_FALSE(sketch.ok()) << bad;
    EXPECT_EQ(sketch.status().code(), StatusCode::kCorruption) << bad;
    EXPECT_NE(sketch.status().message().find("realtime unique"), std::string::npos) << sketch.status().message();
  }
  EXPECT_EQ(read_cache.Figures(CacheKind::kSketchText).entries, 0u);
  EXPECT_EQ(read_cache.Figures(CacheKind::kSketchText).bytes, 0u);
}

TEST(SketchTextCacheTest, BudgetOfZeroKeepsNothingAndCountsNothing) {
  ReadStats stats;
  ReadCache read_cache(0);
  SketchTextCache cache(read_cache, stats);
  const std::string hour = TextOf(0, 50);
  for (int i = 0; i < 3; ++i) {
    auto sketch = cache.Decode(hour, "realtime unique");
    ASSERT_TRUE(sketch.ok());
    EXPECT_EQ((*sketch)->Estimate(), 50u);
  }
  EXPECT_EQ(read_cache.Figures(CacheKind::kSketchText).entries, 0u);
  EXPECT_EQ(stats.sketch_cache_hits.load() + stats.sketch_cache_misses.load(), 0u);
}

}  // namespace
}  // namespace clickatron::api
