// Unique records read through the realtime scan cache, which keeps them as
// sketch text: a scan answered from the cache sends exactly what one read
// from the store sends, for explicit and dense sketches, and visitors held in
// memory since the last checkpoint are united with the kept text. The oracle
// is the test's own: a sketch of each hour's visitor set, built token by
// token, as text.
#include <gtest/gtest.h>

#include <deque>
#include <map>
#include <set>

#include "apply_batch.h"
#include "clickatron/unique_sketch.h"
#include "clickatron/ymdh.h"
#include "multi_prefix_scan.h"
#include "ring.h"
#include "small_store.h"
#include "testutil/testutil.h"

namespace clickatron::realtime {
namespace {

using clickatron::testing::TempDir;

const int64_t kToday = DaysFromCivil({2024, 3, 10});

std::string Hour(int hour) { return *YmdhFromUnix(kToday * kSecondsPerDay + hour * kSecondsPerHour); }

std::string SketchText(const std::set<std::string>& tokens) {
  UniqueSketch sketch;
  for (const std::string& t : tokens) sketch.Add(HashVisitor(t));
  return sketch.ToText();
}

class CachedSketchTextTest : public ::testing::Test {
 protected:
  void SetUp() override {
    const Status opened = testing::OpenSmallRing(
        tmp_.path(), kToday, ScanCacheOptions{.max_bytes = 4 << 20, .min_records = 0}, &store_, &ring_);
    ASSERT_TRUE(opened.ok()) << opened.ToString();
    // Ten hours of a key: a few visitors an hour, and hour 5 with enough
    // (3,000) for the dense form.
    for (int hour = 0; hour < 10; ++hour) {
      const int visitors = hour == 5 ? 3000 : 3 + hour;
      for (int v = 0; v < visitors; ++v) visitors_[hour].insert("v" + std::to_string(hour * 7 + v));
    }
    std::string body;
    for (const auto& [hour, tokens] : visitors_) body += Lines(hour, tokens);
    Apply(body);
    ring_->checkpointer().Start();  // into the store: what the cache keeps
    ASSERT_EQ(ring_->checkpointer().memory_keys(), 0u);
  }

  // An increment's lines as the API sends them: the counter, then its
  // unique record right after.
  static std::string Lines(int hour, const std::set<std::string>& tokens) {
    return "u|s." + Hour(hour) + ",1\n~u|s." + Hour(hour) + "," + SketchText(tokens) + "\n";
  }

  void Apply(const std::string& body) {
    bodies_.push_back(body);
    auto batch = ParseBatch(bodies_.back());
    ASSERT_TRUE(batch.ok()) << batch.status().ToString();
    ASSERT_TRUE(ring_->Apply("test", ++seq_, *batch).ok());
  }

  std::string Expected() const {
    std::string out;
    for (const auto& [hour, tokens] : visitors_) out += "~u|s." + Hour(hour) + "," + SketchText(tokens) + "\n";
    return out;
  }

  // Every line of a scan of the key's unique records: through the ring and
  // its cache, or with `uncached` from the store and tables alone.
  std::string Scan(bool uncached = false) {
    const std::vector<std::string> prefixes = DisjointPrefixes({"~u|s."});
    auto scan = uncached ? ScanPrefixes(ring_->checkpointer().View(), ring_->ReadableDays(), prefixes)
                         : ring_->ScanMany(prefixes, std::nullopt);
    EXPECT_TRUE(scan.ok()) << scan.status().ToString();
    if (!scan.ok()) return "";
    std::unique_ptr<LineSource> source = std::move(scan).value();
    std::string out;
    while (source->Fill(&out, 1 << 20)) {
    }
    EXPECT_TRUE(source->status().ok()) << source->status().ToString();
    return out;
  }

  TempDir tmp_;
  std::unique_ptr<ShardStore> store_;
  std::unique_ptr<Ring> ring_;
  std::deque<std::string> bodies_;
  uint64_t seq_ = 0;
  std::map<int, std::set<std::string>> visitors_;  // the oracle, by hour of kToday
};

TEST_F(CachedSketchTextTest, AKeptScanSendsTheStoresSketchesAsText) {
  const std::string expected = Expected();
  ASSERT_NE(expected.find(",d"), std::string::npos) << "hour 5 is dense";
  const ScanCache::Figures fresh = ring_->scan_cache_figures();
  EXPECT_EQ(Scan(), expected);  // read from the store, and kept
  EXPECT_GT(ring_->scan_cache_figures().entries, fresh.entries);
  const ScanCache::Figures kept = ring_->scan_cache_figures();
  EXPECT_EQ(Scan(), expected);  // answered from what was kept
  EXPECT_GT(ring_->scan_cache_figures().hits, kept.hits);
  EXPECT_EQ(Scan(/*uncached=*/true), expected);
}

TEST_F(CachedSketchTextTest, VisitorsHeldInMemoryAreUnitedWithTheKeptText) {
  ASSERT_EQ(Scan(), Expected());  // kept
  // New and repeated visitors for an explicit hour and the dense one, held
  // in memory (no checkpoint: the kept records stay current).
  std::set<std::string> more3 = {"v21", "new-a", "new-b"};   // v21 is already hour 3's
  std::set<std::string> more5 = {"v35", "new-c"};
  Apply(Lines(3, more3) + Lines(5, more5));
  visitors_[3].insert(more3.begin(), more3.end());
  visitors_[5].insert(more5.begin(), more5.end());
  const ScanCache::Figures before = ring_->scan_cache_figures();
  EXPECT_EQ(Scan(), Expected());
  EXPECT_GT(ring_->scan_cache_figures().hits, before.hits);
  EXPECT_EQ(Scan(/*uncached=*/true), Expected());
}

}  // namespace
}  // namespace clickatron::realtime
