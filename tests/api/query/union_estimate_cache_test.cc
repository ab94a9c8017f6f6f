// UnionEstimateCache: a union's estimate is its visitors' count (exact
// sketches, counted by the test's own sets), the first time and when kept;
// the same sketches again are a hit, a part that is another object a miss
// with its own right figure; small unions and a read cache of 0 bytes keep
// nothing; an entry keeps its parts alive (no address in its key can be
// reused). Which entries go first is the read cache's (read_cache_test.cc).
#include "query/cache/union_estimate_cache.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <set>

#include <fmt/format.h>

namespace clickatron::api {
namespace {

// Hour sketches of visitors v-(10i) .. v-(10i+24): neighbours share 15.
struct Hours {
  std::vector<std::shared_ptr<const UniqueSketch>> sketches;
  std::set<std::string> visitors;  // all of them: the union's exact count
};
Hours MakeHours(int count, int first_hour = 0) {
  Hours out;
  for (int i = first_hour; i < first_hour + count; ++i) {
    UniqueSketch sketch;
    for (int v = 10 * i; v < 10 * i + 25; ++v) {
      const std::string token = fmt::format("v-{}", v);
      out.visitors.insert(token);
      sketch.Add(HashVisitor(token));
    }
    out.sketches.push_back(std::make_shared<const UniqueSketch>(std::move(sketch)));
  }
  return out;
}
std::vector<const std::shared_ptr<const UniqueSketch>*> PartsOf(const Hours& hours) {
  std::vector<const std::shared_ptr<const UniqueSketch>*> parts;
  for (const auto& s : hours.sketches) parts.push_back(&s);
  return parts;
}

TEST(UnionEstimateCacheTest, TheSameSketchesAgainAreAHitWithTheSameFigure) {
  ReadStats stats;
  ReadCache read_cache(1 << 20);
  UnionEstimateCache cache(read_cache, stats);
  const Hours day = MakeHours(24);
  EXPECT_EQ(cache.Estimate(PartsOf(day)), day.visitors.size());
  EXPECT_EQ(stats.union_cache_misses.load(), 1u);
  EXPECT_EQ(cache.Estimate(PartsOf(day)), day.visitors.size());
  EXPECT_EQ(stats.union_cache_hits.load(), 1u);
  EXPECT_EQ(read_cache.Figures(CacheKind::kUnionEstimate).entries, 1u);
}

TEST(UnionEstimateCacheTest, APartThatIsAnotherObjectIsUnitedAgain) {
  ReadStats stats;
  ReadCache read_cache(1 << 20);
  UnionEstimateCache cache(read_cache, stats);
  Hours day = MakeHours(24);
  ASSERT_EQ(cache.Estimate(PartsOf(day)), day.visitors.size());
  // The current hour gained visitors: its sketch is a new object.
  UniqueSketch grown = *day.sketches.back();
  for (int v = 0; v < 40; ++v) {
    const std::string token = fmt::format("late-{}", v);
    day.visitors.insert(token);
    grown.Add(HashVisitor(token));
  }
  day.sketches.back() = std::make_shared<const UniqueSketch>(std::move(grown));
  EXPECT_EQ(cache.Estimate(PartsOf(day)), day.visitors.size());
  EXPECT_EQ(stats.union_cache_hits.load(), 0u);
  EXPECT_EQ(stats.union_cache_misses.load(), 2u);
  // The same objects in another order are another key, with the same figure.
  Hours reversed = day;
  std::reverse(reversed.sketches.begin(), reversed.sketches.end());
  EXPECT_EQ(cache.Estimate(PartsOf(reversed)), day.visitors.size());
  EXPECT_EQ(stats.union_cache_misses.load(), 3u);
}

TEST(UnionEstimateCacheTest, AnEntryKeepsItsPartsAlive) {
  ReadStats stats;
  ReadCache read_cache(1 << 20);
  UnionEstimateCache cache(read_cache, stats);
  std::vector<std::weak_ptr<const UniqueSketch>> watched;
  {
    const Hours day = MakeHours(5);
    for (const auto& s : day.sketches) watched.push_back(s);
    cache.Estimate(PartsOf(day));
  }
  for (const auto& w : watched) EXPECT_FALSE(w.expired()) << "a freed part's address could name another sketch";
  EXPECT_GT(read_cache.Figures(CacheKind::kUnionEstimate).bytes, 5 * 25 * sizeof(uint64_t)) << "charged for the sketches it keeps";
}

TEST(UnionEstimateCacheTest, SmallUnionsAndABudgetOfZeroKeepNothing) {
  ReadStats stats;
  ReadCache read_cache(1 << 20);
  UnionEstimateCache cache(read_cache, stats);
  const Hours two = MakeHours(UnionEstimateCache::kMinParts - 1);
  EXPECT_EQ(cache.Estimate(PartsOf(two)), two.visitors.size());
  EXPECT_EQ(read_cache.Figures(CacheKind::kUnionEstimate).entries, 0u);

  ReadCache nothing(0);
  UnionEstimateCache off(nothing, stats);
  const Hours day = MakeHours(24);
  EXPECT_EQ(off.Estimate(PartsOf(day)), day.visitors.size());
  EXPECT_EQ(off.Estimate(PartsOf(day)), day.visitors.size());
  EXPECT_EQ(nothing.Figures(CacheKind::kUnionEstimate).entries, 0u);
  EXPECT_EQ(stats.union_cache_hits.load() + stats.union_cache_misses.load(), 0u);
}

}  // namespace
}  // namespace clickatron::api
