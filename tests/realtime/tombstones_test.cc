// Tombstone matching and batch filtering (realtime/tombstones.h).
#include "tombstones.h"

#include <gtest/gtest.h>

#include <nlohmann/json.hpp>

#include "clickatron/ymdh.h"

namespace clickatron::realtime::tombstones_test {
namespace {

constexpr int64_t kDay = 15424;  // 2012-03-25
std::string Hour(int64_t day, int hour) { return *YmdhFromUnix(day * kSecondsPerDay + hour * kSecondsPerHour); }

Tombstone DayOf(const std::string& tkey, std::string lookup = "") {
  Tombstone t;
  t.id = "d";
  t.ns = "u";
  t.tkey = tkey;
  t.lookup = std::move(lookup);
  t.from_unix = kDay * kSecondsPerDay;
  t.to_unix = (kDay + 1) * kSecondsPerDay;
  return t;
}

TEST(Tombstone, MatchesEveryRecordOfItsKeyAndHoursOnly) {
  const Tombstone t = DayOf("k", "l|h0aMB8AuNw4=");
  const std::string in = Hour(kDay, 4), out = Hour(kDay + 1, 0);
  EXPECT_TRUE(t.Matches("u|k." + in));
  EXPECT_TRUE(t.Matches("c.u|k.US." + in));
  EXPECT_TRUE(t.Matches("~u|k." + in));
  EXPECT_TRUE(t.Matches("~c.u|k.US." + in));
  EXPECT_TRUE(t.Matches("l|h0aMB8AuNw4="));
  EXPECT_FALSE(t.Matches("u|k." + out));
  EXPECT_FALSE(t.Matches("u|kk." + in));
  EXPECT_FALSE(t.Matches("uu|k." + in));
  EXPECT_FALSE(t.Matches("c.v|k.US." + in));
  EXPECT_FALSE(t.Matches("l|AAAAAAAAAAA="));
  const Tombstone whole = DayOf("");
  EXPECT_TRUE(whole.Matches("u|anything." + in));
  EXPECT_TRUE(whole.Matches("r.u|x.y." + in));
  EXPECT_FALSE(whole.Matches("v|anything." + in));
  EXPECT_FALSE(whole.Matches("l|h0aMB8AuNw4="));
}

TEST(Tombstone, ReadsBackWhatItWrites) {
  Tombstone t = DayOf("k", "l|h0aMB8AuNw4=");
  t.epoch = 7;
  t.cut = std::map<std::string, uint64_t>{{"api-0", 12}};
  auto back = Tombstone::FromJson(t.ToJson());
  ASSERT_TRUE(back.ok()) << back.status().ToString();
  EXPECT_EQ(back->ToJson(), t.ToJson());
  nlohmann::json bad = t.ToJson();
  bad["to"] = t.from_unix;
  EXPECT_FALSE(Tombstone::FromJson(bad).ok());
}

TEST(Tombstone, APendingOneRefusesCountersButNeverForALookup) {
  const std::string in = Hour(kDay, 4);
  const std::string body = "u|other." + in + ",1\nl|h0aMB8AuNw4=,http://www.facebook.com/\n";
  auto batch = ParseBatch(body);
  ASSERT_TRUE(batch.ok()) << batch.status().ToString();
  Tombstone pending = DayOf("k", "l|h0aMB8AuNw4=");
  Tombstone cut = DayOf("other");
  cut.id = "d2";
  cut.deleted = true;
  cut.cut = std::map<std::string, uint64_t>{{"api-0", 5}};
  const std::vector<Tombstone> set = {pending, cut};
  uint64_t dropped = 0;
  // The lookup of a pending tombstone is dropped, not a reason to refuse;
  // the counter under a cut at or below it is dropped too.
  EXPECT_EQ(FilterBatch(set, "api-0", 5, &*batch, &dropped), TombstoneVerdict::kApply);
  EXPECT_EQ(dropped, 2u);
  EXPECT_TRUE(batch->lines.empty());
  // Above the cut the counter stays.
  const std::string later_body = "u|other." + in + ",1\n";  // the batch's lines are views into it
  auto later = ParseBatch(later_body);
  ASSERT_TRUE(later.ok());
  EXPECT_EQ(FilterBatch(set, "api-0", 6, &*later, &dropped), TombstoneVerdict::kApply);
  EXPECT_EQ(later->lines.size(), 1u);
  // A counter the pending one matches: refused.
  const std::string refused_body = "u|k." + in + ",1\n";
  auto refused = ParseBatch(refused_body);
  ASSERT_TRUE(refused.ok());
  EXPECT_EQ(FilterBatch(set, "api-0", 6, &*refused, &dropped), TombstoneVerdict::kRefuse);
}

}  // namespace
}  // namespace clickatron::realtime::tombstones_test
