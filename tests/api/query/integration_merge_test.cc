// The read path end to end: clickatron-realtime x2, clickatron-archive x2 and
// clickatron-api on loopback. The archive files are written by the test
// (last_day = D-1), realtime data goes in through realtime /incr with the
// ring turned to Today = D, and the day D-1 sits in both (deployed but not
// yet cleared). Every answer is compared with the dataset's own oracle, over
// archive files with day subtotal records (as the rebuild writes them: every
// day with hours), with those of the older rule (days of two or more hours)
// and over files of hours only (as before them). One subtotal namespace ("p")
// is on only some of the hot key's hours: days without it, days with one
// hour of it, days with several.
#include <gtest/gtest.h>

#include <limits>
#include <random>

#include "api/query/cluster_fixture.h"

// A namespace of this file's own: its names beside those of the other files
// compiled with it in one unity file (tests/CMakeLists.txt).
namespace clickatron::api::testing::integration_merge_test {
namespace {

constexpr int64_t kDay = 86400;
constexpr int64_t kHour = 3600;

const std::vector<std::string> kCountries = {"US", "JP", "DE", "FR", "BR"};
const std::vector<std::string> kReferrers = {"direct", "http://www.facebook.com/", "http://twitter.com/some/path",
                                             "https://news.ycombinator.com/item?id=1"};
const std::vector<std::string> kPlans = {"free", "pro", "team"};
const std::string kRealtimeOnlyReferrer = "http://realtime-only.example/x";
const std::string kArchiveOnlyReferrer = "http://archive-only.example/y";
const std::string kHotKey = "jehiah";
const std::string kHashedKey = "http://bit.ly/a-long-link-key";  // stored as a hash
const std::string kSparseKey = "sparse1";
const std::string kEmptyKey = "nothing-here";

// Whether the API keeps archive answers between queries (its read cache on).
struct MergeParam {
  bool cached;
};

class IntegrationReadMergeTest : public ReadClusterTest, public ::testing::WithParamInterface<MergeParam> {
 protected:
  int ReadCacheMb() const override { return GetParam().cached ? 16 : 0; }

  // Hours on days D-40 .. D+1: days < D-1 in the archive only, D-1 in both,
  // D and D+1 in realtime only.
  void BuildDataset() override {
    std::mt19937_64 rng(2024);
    std::uniform_int_distribution<int64_t> value(1, 5);
    const auto add = [&](const std::string& key, int64_t hour, bool with_plan = false) {
      const int64_t day = FloorDiv(hour, kDay);
      std::string referrer = kReferrers[rng() % kReferrers.size()];
      if (day < today_ - 1 && rng() % 7 == 0) referrer = kArchiveOnlyReferrer;
      if (day >= today_ && rng() % 5 == 0) referrer = kRealtimeOnlyReferrer;
      std::vector<ReadDataset::Sub> subs = {{"c", kCountries[rng() % kCountries.size()]}, {"r", referrer}};
      if (with_plan) subs.push_back({"p", kPlans[rng() % kPlans.size()]});
      data_.AddAtRing("u", key, hour, value(rng), subs, today_);
    };
    const int64_t first = (today_ - 40) * kDay;
    const int64_t end = (today_ + 2) * kDay;
    // "p" by day, in turn: on none of the key's hours, on its first hour of
    // the day only, on about a third of them (twice).
    int64_t day_seen = -1;
    for (int64_t h = first; h < end; h += kHour) {
      if (rng() % 4 == 0) continue;  // dense
      const int64_t day = FloorDiv(h, kDay);
      const bool first_of_day = day != day_seen;
      day_seen = day;
      const int64_t turn = ((day % 4) + 4) % 4;
      add(kHotKey, h, (turn == 1 && first_of_day) || (turn >= 2 && rng() % 3 == 0));
    }
    for (int i = 0; i < 40; ++i) add(kHashedKey, first + static_cast<int64_t>(rng() % ((end - first) / kHour)) * kHour);
    for (int64_t h : {first + 5 * kHour, (today_ - 1) * kDay + 3 * kHour, today_ * kDay + 7 * kHour}) add(kSparseKey, h);
  }

  void ExpectClicks(const std::string& key, const std::string& unit, int64_t units, int tz, int64_t ref) {
    const std::string target = fmt::format("/clicks?ns=u&key={}&unit={}&units={}&timezone={}&unit_reference_ts={}",
                                           Enc(key), unit, units, tz, ref);
    auto j = cluster_.Api(target);
    ASSERT_EQ(j["http_status"], 200) << target << " " << j.dump();
    const auto hours = data_.Hours("u", key);
    const int64_t first = hours.empty() ? ref + 400 * kDay : hours.begin()->first;
    const auto want = oracle::Rollup(unit, tz, ref, units, hours, first);
    EXPECT_EQ(j["data"]["clicks"], ExpectedSeries(want)) << target;
    EXPECT_EQ(j["data"]["unit"], unit);
    EXPECT_EQ(j["data"]["units"], units);
    EXPECT_EQ(j["data"]["tz_offset"], tz);
    EXPECT_EQ(j["data"]["unit_reference_ts"], ref);
    // rollup=true is the sum of the series.
    auto r = cluster_.Api(target + "&rollup=true");
    int64_t sum = 0;
    for (const auto& u : want) sum += u.clicks;
    EXPECT_EQ(r["data"]["clicks"], sum) << target;
  }

  void ExpectBreakdown(const std::string& sns, const std::string& key, const std::string& unit, int64_t units, int tz,
                       int64_t ref, size_t limit, bool rollup) {
    const std::string target =
        fmt::format("/breakdown?sns={}&ns=u&key={}&unit={}&units={}&timezone={}&unit_reference_ts={}&limit={}&rollup={}",
                    sns, Enc(key), unit, units, tz, ref, limit, rollup ? "true" : "false");
    auto j = cluster_.Api(target);
    ASSERT_EQ(j["http_status"], 200) << target << " " << j.dump();
    // Per value, the oracle's per-unit sums.
    // units=-1 spans from the key's first hour with data.
    const auto total = data_.Hours("u", key);
    const int64_t first = total.empty() ? ref + 400 * kDay : total.begin()->first;
    std::map<std::string, std::vector<oracle::UnitSum>> per_value;
    for (const auto& [value, hours] : data_.SubHours(sns, "u", key)) {
      per_value[value] = oracle::Rollup(unit, tz, ref, units, hours, first);
    }
    // The key's total per unit: "none" is what of it no value holds.
    const auto totals = oracle::Rollup(unit, tz, ref, units, total, first);
    // "other" and "none" of one unit's (or the window's) per-value sums.
    const auto left_out = [&](const std::map<std::string, int64_t>& sums, int64_t key_total) {
      const nlohmann::json top = ExpectedTop(sums, limit);
      int64_t all = 0, shown = 0;
      for (const auto& [value, clicks] : sums) all += clicks;
      for (const auto& row : top) shown += row["clicks"].get<int64_t>();
      return std::pair<int64_t, int64_t>{all - shown, key_total - all};
    };
    if (rollup) {
      std::map<std::string, int64_t> sums;
      for (const auto& [value, series] : per_value) {
        for (const auto& u : series) sums[value] += u.clicks;
      }
      EXPECT_EQ(j["data"]["breakdown"], ExpectedTop(sums, limit)) << target;
      int64_t key_total = 0;
      for (const auto& u : totals) key_total += u.clicks;
      const auto [other, none] = left_out(sums, key_total);
      EXPECT_EQ(j["data"]["other"], other) << target;
      EXPECT_EQ(j["data"]["none"], none) << target;
    } else {
      nlohmann::json want = nlohmann::json::array();
      for (size_t i = 0; i < totals.size(); ++i) {
        std::map<std::string, int64_t> sums;
        for (const auto& [value, series] : per_value) sums[value] = series[i].clicks;
        const auto [other, none] = left_out(sums, totals[i].clicks);
        want.push_back(
            {{"dt", totals[i].dt}, {"breakdown", ExpectedTop(sums, limit)}, {"other", other}, {"none", none}});
      }
      EXPECT_EQ(j["data"]["breakdown"], want) << target;
    }
  }
};

TEST_P(IntegrationReadMergeTest, SeriesMatchOracleInEveryUnitAndOffset) {
  const std::vector<std::pair<std::string, int64_t>> units = {
      {"hour", 60}, {"day", 45}, {"week", 7}, {"mweek", 7}, {"month", 3}};
  const int64_t refs[] = {(today_ + 1) * kDay + 10 * kHour, (today_ - 1) * kDay + 5 * kHour + 1800};
  for (const std::string& key : {kHotKey, kHashedKey, kSparseKey}) {
    for (const auto& [unit, n] : units) {
      for (int tz : {-12, -5, 0, 9, 14}) {
        for (int64_t ref : refs) ExpectClicks(key, unit, n, tz, ref);
      }
    }
  }
}

TEST_P(IntegrationReadMergeTest, OverlapDayIsCountedOnce) {
  // D-1 is both in the archive and in realtime Yesterday.
  const int64_t ref = (today_ - 1) * kDay + 12 * kHour;
  auto j = cluster_.Api(fmt::format("/clicks?ns=u&key={}&unit=day&units=1&unit_reference_ts={}&rollup=true",
                                    kHotKey, ref));
  ASSERT_EQ(j["http_status"], 200) << j.dump();
  int64_t want = 0;
  for (const auto& [hour, count] : data_.Hours("u", kHotKey)) {
    if (FloorDiv(hour, kDay) == today_ - 1) want += count;
  }
  ASSERT_GT(want, 0);
  EXPECT_EQ(j["data"]["clicks"], want);
  ExpectBreakdown("c", kHotKey, "day", 1, 0, ref, 100, true);
  ExpectBreakdown("r", kHotKey, "hour", 24, 0, ref, 100, false);
}

TEST_P(IntegrationReadMergeTest, UnitsMinusOneAndEmptyKeys) {
  const int64_t ref = (today_ + 1) * kDay + 23 * kHour;
  for (const std::string& key : {kHotKey, kSparseKey, kHashedKey, kEmptyKey}) {
    for (const char* unit : {"day", "week", "month"}) ExpectClicks(key, unit, -1, -5, ref);
  }
  // An empty key over a fixed window: every unit present, with 0.
  ExpectClicks(kEmptyKey, "day", 5, 0, ref);
  ExpectBreakdown("c", kEmptyKey, "day", 5, 0, ref, 10, true);
  ExpectBreakdown("c", kSparseKey, "day", -1, 0, ref, 10, false);
}

TEST_P(IntegrationReadMergeTest, BreakdownsMatchOracleWithExpandedValues) {
  const int64_t ref = (today_ + 1) * kDay + 10 * kHour;
  for (const std::string& key : {kHotKey, kHashedKey}) {
    for (const char* sns : {"c", "r", "p"}) {
      for (int tz : {0, -5}) {
        ExpectBreakdown(sns, key, "day", 45, tz, ref, 100, true);
        ExpectBreakdown(sns, key, "day", 45, tz, ref, 2, true);
        ExpectBreakdown(sns, key, "week", 4, tz, ref, 3, false);
      }
    }
  }
  // Hashed referrers come back as full values, from realtime-only and
  // archive-only lookup records alike.
  auto j = cluster_.Api(fmt::format("/breakdown?sns=r&ns=u&key={}&unit=day&units=45&unit_reference_ts={}", kHotKey, ref));
  std::set<std::string> values;
  for (const auto& e : j["data"]["breakdown"]) values.insert(e["value"].get<std::string>());
  EXPECT_TRUE(values.count(kRealtimeOnlyReferrer)) << j.dump();
  EXPECT_TRUE(values.count(kArchiveOnlyReferrer)) << j.dump();
  EXPECT_TRUE(values.count("http://www.facebook.com/")) << j.dump();
}

// Every unit, every whole-hour offset, both rollups, windows that start and
// end mid-day (in UTC for most offsets), also a week and a month, and the
// earlier window of compare=previous: a UTC day read as one record must land
// in the one sum that holds all of its hours.
TEST_P(IntegrationReadMergeTest, BreakdownsMatchOracleInEveryUnitAndOffset) {
  const std::vector<std::pair<std::string, int64_t>> units = {
      {"hour", 50}, {"day", 38}, {"week", 5}, {"mweek", 5}, {"month", 2}};
  const int64_t refs[] = {(today_ + 1) * kDay + 10 * kHour, (today_ - 3) * kDay + 17 * kHour + 1800};
  for (const auto& [unit, n] : units) {
    for (int tz = -12; tz <= 14; ++tz) {
      for (int64_t ref : refs) {
        ExpectBreakdown("c", kHotKey, unit, n, tz, ref, 100, true);
        if (tz % 4 == 0) ExpectBreakdown("c", kHotKey, unit, n, tz, ref, 100, false);
      }
    }
  }
  // compare=previous: the earlier window's rows beside the current ones.
  for (int tz : {-12, -7, 0, 5, 14}) {
    const int64_t ref = (today_ + 1) * kDay + 10 * kHour;
    const std::string target = fmt::format(
        "/breakdown?sns=c&ns=u&key={}&unit=day&units=14&timezone={}&unit_reference_ts={}&compare=previous",
        kHotKey, tz, ref);
    auto j = cluster_.Api(target);
    ASSERT_EQ(j["http_status"], 200) << target << " " << j.dump();
    const auto total = data_.Hours("u", kHotKey);
    // Rollup lists units newest first: the current window's oldest is its last.
    const int64_t current_start = oracle::Rollup("day", tz, ref, 14, {}).back().dt;
    std::map<std::string, int64_t> current, earlier;
    for (const auto& [value, hours] : data_.SubHours("c", "u", kHotKey)) {
      for (const auto& u : oracle::Rollup("day", tz, ref, 28, hours, total.begin()->first)) {
        (u.dt >= current_start ? current : earlier)[value] += u.clicks;
      }
    }
    ASSERT_EQ(j["data"]["breakdown"].size(), ExpectedTop(current, 100).size()) << target;
    for (const auto& row : j["data"]["breakdown"]) {
      const std::string value = row["value"];
      EXPECT_EQ(row["clicks"], current[value]) << target << " " << value;
      EXPECT_EQ(row["compare"]["clicks"], earlier[value]) << target << " " << value;
    }
  }
}

// "other" (the values beyond the top `limit`) and "none" (the key's clicks
// with no value in the namespace: "p" is on only some of its hours) per unit
// and over the window, in three offsets, with the oracle's sums; the
// "complete" markers of every answer are checked by the fixture.
TEST_P(IntegrationReadMergeTest, OtherAndNoneMatchOracleInThreeZones) {
  const int64_t ref = (today_ + 1) * kDay + 10 * kHour;
  for (int tz : {-5, 0, 9}) {
    for (const char* sns : {"p", "r"}) {
      for (size_t limit : {1, 2}) {
        ExpectBreakdown(sns, kHotKey, "day", 12, tz, ref, limit, false);
        ExpectBreakdown(sns, kHotKey, "day", 12, tz, ref, limit, true);
        ExpectBreakdown(sns, kHotKey, "week", 3, tz, ref, limit, false);
      }
    }
  }
  // The hot key's window has clicks without a plan and values beyond one:
  // both figures are tested above, not only their zeros.
  auto j = cluster_.Api(fmt::format(
      "/breakdown?sns=p&ns=u&key={}&unit=day&units=30&unit_reference_ts={}&limit=1&rollup=true", kHotKey, ref));
  ASSERT_EQ(j["http_status"], 200) << j.dump();
  EXPECT_GT(j["data"]["other"].get<int64_t>(), 0) << j.dump();
  EXPECT_GT(j["data"]["none"].get<int64_t>(), 0) << j.dump();
}

// A namespace on only some hours of a key: the key's total says which days
// to ask as day records, the namespace has no hour on some of them and one on
// others. A file as the rebuild writes it answers all of it in one mget
// (a day record it lacks is a day without hours of the namespace); one of the
// older rule reads its one-hour days again by their hours, one of hours only
// every day. The answers are the oracle's in every case.
TEST_P(IntegrationReadMergeTest, ANamespaceOnSomeHoursIsExactWithoutReadingHoursAgain) {
  const int64_t refs[] = {(today_ + 1) * kDay + 10 * kHour, (today_ - 3) * kDay + 17 * kHour + 1800};
  for (const auto& [unit, n] : std::vector<std::pair<std::string, int64_t>>{{"day", 38}, {"week", 5}, {"month", 2}}) {
    for (int tz : {-12, -7, -1, 0, 3, 9, 14}) {
      for (int64_t ref : refs) {
        ExpectBreakdown("p", kHotKey, unit, n, tz, ref, 100, true);
        ExpectBreakdown("p", kHotKey, unit, n, tz, ref, 100, false);
      }
    }
  }
  ExpectBreakdown("p", kHotKey, "day", -1, 0, refs[0], 100, true);
  EXPECT_GT(cluster_.ReadFigure("spans_read"), 0) << "runs of whole days read as span records";
  // Once the node has seen the archive's last day, a breakdown asks its
  // whole days' records beside the total, in one round trip.
  EXPECT_GT(cluster_.ReadFigure("early_span_reads"), 0) << "spans asked beside the total";
}

// POST /delete hides what it deletes at once, from the archive and realtime
// alike: the hot key's hours from mid-morning of one archived day to the
// afternoon of another, then from an afternoon three days back into the
// days realtime holds, a hashed key over all its data, and at last every
// key of the namespace over two and a half days. Each time every answer, in
// three offsets, is the oracle's with those hours forgotten. Asked before
// the first deletion too, so nothing kept from then answers after it.
TEST_P(IntegrationReadMergeTest, ADeletionHidesItsHoursFromEveryAnswer) {
  const int64_t ref = (today_ + 1) * kDay + 10 * kHour;
  const auto expect_all = [&](const std::string& when) {
    SCOPED_TRACE(when);
    for (int tz : {-5, 0, 9}) {
      ExpectClicks(kHotKey, "day", 45, tz, ref);
      ExpectClicks(kHotKey, "hour", 120, tz, ref);
      ExpectClicks(kHashedKey, "week", 8, tz, ref);
      ExpectClicks(kSparseKey, "day", 45, tz, ref);
      for (const char* sns : {"c", "r", "p"}) {
        ExpectBreakdown(sns, kHotKey, "day", 45, tz, ref, 100, false);
        ExpectBreakdown(sns, kHotKey, "week", 7, tz, ref, 3, true);
      }
    }
  };
  expect_all("before any deletion");
  const auto remove = [&](const std::string& key, int64_t from, int64_t to) {
    ASSERT_FALSE(cluster_.Delete(fmt::format("ns=u{}&from={}&to={}", key.empty() ? "" : "&key=" + Enc(key), from, to))
                     .empty());
    data_.Forget("u", key, from, to);
  };
  remove(kHotKey, (today_ - 30) * kDay + 5 * kHour, (today_ - 21) * kDay + 17 * kHour);
  expect_all("archived hours of one key");
  remove(kHotKey, (today_ - 3) * kDay + 14 * kHour, today_ * kDay + 3 * kHour);
  expect_all("archived and realtime hours of one key");
  // The hashed key for all time (neither from nor to): its lookup record
  // goes too, so /lookup no longer answers its full value.
  const std::string hash = StoreKeyPart(kHashedKey).stored;
  ASSERT_EQ(cluster_.Api("/lookup?hash=" + Enc(hash))["http_status"], 200);
  ASSERT_FALSE(cluster_.Delete("ns=u&key=" + Enc(kHashedKey)).empty());
  data_.Forget("u", kHashedKey, std::numeric_limits<int64_t>::min(), std::numeric_limits<int64_t>::max());
  expect_all("a hashed key's every hour");
  EXPECT_EQ(cluster_.Api("/lookup?hash=" + Enc(hash))["http_status"], 404);
  remove("", (today_ - 10) * kDay, (today_ - 8) * kDay + 12 * kHour);
  expect_all("every key of the namespace");
  EXPECT_TRUE(data_.Hours("u", kHashedKey).empty());
}

// A named zone across a DST change answers as the offset it has at the
// reference, also for breakdowns read by day records.
TEST_P(IntegrationReadMergeTest, BreakdownInANamedZoneIsItsOffsetAtTheReference) {
  for (int64_t ref : {(today_ + 1) * kDay + 10 * kHour, (today_ - 20) * kDay + 3 * kHour}) {
    auto named = cluster_.Api(fmt::format(
        "/breakdown?sns=c&ns=u&key={}&unit=day&units=30&timezone=America/New_York&unit_reference_ts={}", kHotKey, ref));
    ASSERT_EQ(named["http_status"], 200) << named.dump();
    const int tz = named["data"]["tz_offset"].get<int>();
    EXPECT_TRUE(tz == -5 || tz == -4) << tz;
    ExpectBreakdown("c", kHotKey, "day", 30, tz, ref, 100, true);
    auto numeric = cluster_.Api(fmt::format(
        "/breakdown?sns=c&ns=u&key={}&unit=day&units=30&timezone={}&unit_reference_ts={}", kHotKey, tz, ref));
    EXPECT_EQ(named["data"]["breakdown"], numeric["data"]["breakdown"]);
  }
}

TEST_P(IntegrationReadMergeTest, TimeZoneNamesResolveAtTheReference) {
  const int64_t ref = (today_ + 1) * kDay + 10 * kHour;
  auto named = cluster_.Api(fmt::format(
      "/clicks?ns=u&key={}&unit=day&units=10&timezone=America/New_York&unit_reference_ts={}", kHotKey, ref));
  ASSERT_EQ(named["http_status"], 200) << named.dump();
  const int tz = named["data"]["tz_offset"].get<int>();
  EXPECT_TRUE(tz == -5 || tz == -4) << tz;
  auto numeric = cluster_.Api(
      fmt::format("/clicks?ns=u&key={}&unit=day&units=10&hour_offset={}&unit_reference_ts={}", kHotKey, tz, ref));
  EXPECT_EQ(named["data"]["clicks"], numeric["data"]["clicks"]);
  auto kolkata = cluster_.Api(fmt::format("/clicks?ns=u&key={}&timezone=Asia/Kolkata", kHotKey));
  EXPECT_EQ(kolkata["http_status"], 400);
  EXPECT_EQ(kolkata["status_txt"], "INVALID_TIMEZONE");
}

TEST_P(IntegrationReadMergeTest, LookupEndpoint) {
  for (const std::string& value : {kRealtimeOnlyReferrer, kArchiveOnlyReferrer, kHashedKey}) {
    const std::string hash = Hash12(value);
    auto j = cluster_.Api("/lookup?hash=" + Enc(hash));
    ASSERT_EQ(j["http_status"], 200) << value << " " << j.dump();
    EXPECT_EQ(j["data"]["hash"], hash);
    EXPECT_EQ(j["data"]["value"], value);
  }
  auto missing = cluster_.Api("/lookup?hash=" + Enc(Hash12("never stored anywhere")));
  EXPECT_EQ(missing["http_status"], 404);
  EXPECT_EQ(missing["status_txt"], "NOT_FOUND");
  EXPECT_EQ(cluster_.Api("/lookup?hash=short")["status_txt"], "INVALID_HASH");
  EXPECT_EQ(cluster_.Api("/lookup")["status_txt"], "MISSING_ARG_HASH");
  // A hash given twice is refused, as every query's parameters are: the
  // first is not taken silently.
  const std::string known = Enc(Hash12(kHashedKey));
  EXPECT_EQ(cluster_.Api("/lookup?hash=" + known + "&hash=" + Enc(Hash12("another")))["status_txt"], "INVALID_HASH");
}

TEST_P(IntegrationReadMergeTest, BadParametersAndFarAwayYears) {
  const auto reason = [&](const std::string& target) {
    auto j = cluster_.Api(target);
    EXPECT_EQ(j["http_status"], 400) << target;
    EXPECT_TRUE(j["data"].is_null()) << target;
    return j["status_txt"].get<std::string>();
  };
  EXPECT_EQ(reason("/clicks?ns=u&key=jehiah&unit=minute"), "INVALID_UNIT");
  EXPECT_EQ(reason("/clicks?key=jehiah"), "MISSING_ARG_NS");
  EXPECT_EQ(reason("/clicks?ns=u"), "MISSING_ARG_KEY");
  EXPECT_EQ(reason("/clicks?ns=u&key=jehiah&unit=hour&units=43921"), "WINDOW_TOO_LARGE");
  EXPECT_EQ(reason("/clicks?ns=u&key=jehiah&unit_reference_ts=soon"), "INVALID_UNIT_REFERENCE_TS");
  EXPECT_EQ(reason("/breakdown?ns=u&key=jehiah"), "MISSING_ARG_SNS");
  EXPECT_EQ(reason("/breakdown?sns=c&ns=u&key=jehiah&limit=0"), "INVALID_LIMIT");
  // 1970: no data can exist there; an empty series, not an error.
  auto j = cluster_.Api("/clicks?ns=u&key=jehiah&unit=day&units=3&unit_reference_ts=345600");
  ASSERT_EQ(j["http_status"], 200);
  EXPECT_EQ(j["data"]["clicks"], ExpectedSeries(oracle::Rollup("day", 0, 345600, 3, {})));
}

TEST_P(IntegrationReadMergeTest, StatsCountGatherRequests) {
  ExpectClicks(kHotKey, "day", 3, 0, today_ * kDay);
  auto stats = cluster_.Api("/stats");
  ASSERT_EQ(stats["http_status"], 200);
  const auto& read = stats["data"]["read"];
  EXPECT_GE(read["archive_requests"].get<int64_t>(), 2);
  EXPECT_GE(read["realtime_requests"].get<int64_t>(), 2);
  EXPECT_EQ(read["unavailable"].get<int64_t>(), 0);
}

INSTANTIATE_TEST_SUITE_P(ArchiveFiles, IntegrationReadMergeTest,
                         ::testing::Values(MergeParam{false}, MergeParam{true}),
                         [](const ::testing::TestParamInfo<MergeParam>& info) {
                           return std::string(info.param.cached ? "Cached" : "Uncached");
                         });

}  // namespace
}  // namespace clickatron::api::testing::integration_merge_test
