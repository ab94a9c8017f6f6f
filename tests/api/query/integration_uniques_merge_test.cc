// /uniques over archive + realtime on real daemons, against plain sets of
// the visitors' tokens (the dataset's oracle), over archive files with day
// unique records (every UTC day with unique hours has the union of its hours,
// and the manifest says so, as the rebuild writes them) and over files whose
// manifests make no such promise (from before them, or brought in by hand;
// these carry wrong day records, which must never be read). Every unit, offsets
// from -12 to +14, windows that start and end mid-day, rolled up, per
// subtotal value and compared with the previous window. Visitor counts stay
// small, so sketches are exact and so must every answer be.
//
// The hot key has visitors on most of its hours, from a small pool (so a
// day's union is much smaller than the sum of its hours); some days have
// clicks and no visitors at all, and some hours of visited days have clicks
// only (the total's hours are the index of what the reader asks for).
//
// A third run has the API's read cache on and asks every query three times:
// the first answer comes from the replicas, the second from kept text
// (decoded and kept then), the third from the kept sketches; all three must
// be the oracle's.
#include <gtest/gtest.h>

#include <limits>

#include <random>
#include <set>

#include "api/query/cluster_fixture.h"

// A namespace of this file's own: its names beside those of the other files
// compiled with it in one unity file (tests/CMakeLists.txt).
namespace clickatron::api::testing::integration_uniques_merge_test {
namespace {

constexpr int64_t kDay = 86400;
constexpr int64_t kHour = 3600;

const std::vector<std::string> kCountries = {"US", "JP", "DE"};
const std::string kHotKey = "jehiah";
const std::string kHashedKey = "http://bit.ly/a-long-link-key";  // stored as a hash
const std::string kSparseKey = "sparse1";

struct Files {
  bool cached;  // the API's read cache on, each query asked three times
};
void PrintTo(const Files& f, std::ostream* os) { *os << (f.cached ? "cached" : "uncached"); }

class IntegrationUniquesMergeTest : public ReadClusterTest, public ::testing::WithParamInterface<Files> {
 protected:
  int ReadCacheMb() const override { return GetParam().cached ? 16 : 0; }
  int Asks() const { return GetParam().cached ? 3 : 1; }

  // Days D-40 .. D+1 (archive only before D-1, D-1 in both, later realtime).
  void BuildDataset() override {
    std::mt19937_64 rng(14);
    const auto add = [&](const std::string& key, int64_t hour, int visitors, int pool) {
      const std::vector<ReadDataset::Sub> subs = {{"c", kCountries[rng() % kCountries.size()]}};
      data_.AddAtRing("u", key, hour, 1 + static_cast<int64_t>(rng() % 3), subs, today_);
      for (int v = 0; v < visitors; ++v) {
        data_.AddVisitorAtRing("u", key, hour, fmt::format("visitor-{}", rng() % pool), subs, today_);
      }
    };
    const int64_t first = (today_ - 40) * kDay;
    const int64_t end = (today_ + 2) * kDay;
    for (int64_t h = first; h < end; h += kHour) {
      if (rng() % 4 == 0) continue;
      const int64_t day = FloorDiv(h, kDay);
      // Every fifth day has clicks and no visitors; other days, a hour in
      // five has clicks only. The first day has none, whatever today is:
      // the key's clicks start before its visitors (UnitsMinusOne…).
      const bool no_visitors = day == first / kDay || day % 5 == 0 || rng() % 5 == 0;
      add(kHotKey, h, no_visitors ? 0 : 1 + static_cast<int>(rng() % 3), 40);
    }
    for (int i = 0; i < 60; ++i) {
      add(kHashedKey, first + static_cast<int64_t>(rng() % ((end - first) / kHour)) * kHour, 1, 15);
    }
    for (int64_t h : {first + 5 * kHour, (today_ - 1) * kDay + 3 * kHour, today_ * kDay + 7 * kHour}) {
      add(kSparseKey, h, 2, 4);
    }
  }

  // The oracle's distinct visitors per unit (newest first) of the window:
  // a visitor counts in a unit when it visited any hour of it.
  std::vector<oracle::UnitSum> Expected(const std::string& key, const std::string& skey, const std::string& unit,
                                        int64_t units, int tz, int64_t ref) const {
    return ExpectedVisitors(unit, tz, ref, units, data_.VisitorHours(skey.empty() ? "" : "c", "u", key, skey));
  }
  // The distinct visitors over the whole window.
  int64_t ExpectedOverWindow(const std::string& key, const std::string& skey, const std::string& unit,
                             int64_t units, int tz, int64_t ref) const {
    int64_t n = 0;
    for (const auto& [token, hours] : data_.VisitorHours(skey.empty() ? "" : "c", "u", key, skey)) {
      int64_t visits = 0;
      for (const auto& u : oracle::Rollup(unit, tz, ref, units, hours)) visits += u.clicks;
      n += visits > 0 ? 1 : 0;
    }
    return n;
  }

  std::string Target(const std::string& key, const std::string& skey, const std::string& unit, int64_t units,
                     int tz, int64_t ref) const {
    std::string t = fmt::format("/uniques?ns=u&key={}&unit={}&units={}&timezone={}&unit_reference_ts={}", Enc(key),
                                unit, units, tz, ref);
    if (!skey.empty()) t += "&sns=c&skey=" + skey;
    return t;
  }

  void ExpectUniques(const std::string& key, const std::string& skey, const std::string& unit, int64_t units, int tz,
                     int64_t ref) {
    const std::string target = Target(key, skey, unit, units, tz, ref);
    const nlohmann::json want = ExpectedUniqueSeries(Expected(key, skey, unit, units, tz, ref));
    const int64_t over_window = ExpectedOverWindow(key, skey, unit, units, tz, ref);
    for (int ask = 1; ask <= Asks(); ++ask) {
      auto j = cluster_.Api(target);
      ASSERT_EQ(j["http_status"], 200) << target << " " << j.dump();
      EXPECT_EQ(j["data"]["uniques"], want) << target << " (ask " << ask << ")";
      auto r = cluster_.Api(target + "&rollup=true");
      ASSERT_EQ(r["http_status"], 200) << target << " " << r.dump();
      EXPECT_EQ(r["data"]["uniques"], over_window) << target << "&rollup=true (ask " << ask << ")";
    }
  }

  int64_t DayUniquesRead() { return cluster_.ReadFigure("day_uniques_read"); }
  // With the cache on, later asks read kept records' decoded sketches.
  void ExpectDecodedHitsOnlyWhenCached() {
    if (GetParam().cached) {
      EXPECT_GT(cluster_.ReadFigure("archive_cache_decoded_hits"), 0);
    } else {
      EXPECT_EQ(cluster_.ReadFigure("archive_cache_decoded_hits"), 0);
    }
  }
};

TEST_P(IntegrationUniquesMergeTest, EveryUnitAndOffsetMatchesTheSetsOfVisitors) {
  const int64_t at_midnight = today_ * kDay;
  const int64_t mid_day = today_ * kDay - 5 * kHour - 1234;  // windows ending (and starting) mid-day
  for (int64_t ref : {at_midnight, mid_day}) {
    for (int tz : {-12, -5, 0, 3, 9, 14}) {
      ExpectUniques(kHotKey, "", "day", 30, tz, ref);
      ExpectUniques(kHotKey, "", "hour", 50, tz, ref);
      ExpectUniques(kHotKey, "", "week", 5, tz, ref);
      ExpectUniques(kHotKey, "", "month", 2, tz, ref);
      ExpectUniques(kHotKey, "JP", "day", 30, tz, ref);
      ExpectUniques(kHashedKey, "", "day", 42, tz, ref);
    }
  }
  ExpectUniques(kSparseKey, "", "day", 45, 0, at_midnight);
  ExpectUniques(kSparseKey, "US", "week", 8, -5, at_midnight);
  // Whole UTC days inside a unit are read as their day records exactly when
  // the file has one for every day with visitors.
  EXPECT_GT(DayUniquesRead(), 0);
  ExpectDecodedHitsOnlyWhenCached();
  // The months' and rolled-up windows' runs of whole UTC days were read as
  // span records.
  EXPECT_GT(cluster_.ReadFigure("spans_read"), 0);
}

// POST /delete takes a key's visitors away with its clicks, from the archive
// and realtime alike, the visitors of its subtotal values too: first hours
// inside archived days, then whole UTC days (their ends are unit
// boundaries, so a window kept before the deletion would fit the query
// after it) running into realtime's days. Every answer is the oracle's with
// those hours forgotten; asked before, so kept windows and day unions exist.
TEST_P(IntegrationUniquesMergeTest, ADeletionTakesAwayItsVisitors) {
  const int64_t at_midnight = today_ * kDay;
  const auto expect_all = [&](const std::string& when) {
    SCOPED_TRACE(when);
    for (int tz : {-5, 0, 9}) {
      ExpectUniques(kHotKey, "", "day", 30, tz, at_midnight);
      ExpectUniques(kHotKey, "", "hour", 72, tz, at_midnight);
      ExpectUniques(kHotKey, "", "week", 5, tz, at_midnight);
      ExpectUniques(kHotKey, "JP", "day", 30, tz, at_midnight);
      ExpectUniques(kHashedKey, "", "day", 42, tz, at_midnight);
    }
  };
  expect_all("before any deletion");
  const auto remove = [&](int64_t from, int64_t to) {
    ASSERT_FALSE(cluster_.Delete(fmt::format("ns=u&key={}&from={}&to={}", kHotKey, from, to)).empty());
    data_.Forget("u", kHotKey, from, to);
  };
  remove((today_ - 25) * kDay + 7 * kHour, (today_ - 19) * kDay + 20 * kHour);
  expect_all("hours inside archived days");
  remove((today_ - 4) * kDay, (today_ + 1) * kDay);
  expect_all("whole days into realtime's");
}

// Realtime is asked for each UTC day's hours of a record as one union
// (unite=day) exactly when every day read lies inside one unit: UTC days,
// not hours or days of another offset; the answers are the sets' either way.
TEST_P(IntegrationUniquesMergeTest, RealtimeUnitesDaysOnlyForUnitsOfWholeUtcDays) {
  const int64_t at_midnight = today_ * kDay;
  const int64_t before = cluster_.ReadFigure("realtime_united_reads");
  ExpectUniques(kHotKey, "", "hour", 50, 0, at_midnight);
  ExpectUniques(kHotKey, "", "day", 30, 5, at_midnight);
  ExpectUniques(kHotKey, "", "day", 3, 0, at_midnight - 7 * kHour);  // mid-day in UTC: the units are whole days
  EXPECT_EQ(cluster_.ReadFigure("realtime_united_reads"), before + 2 * Asks());
  ExpectUniques(kHotKey, "", "day", 30, 0, at_midnight);
  ExpectUniques(kHotKey, "JP", "week", 5, 0, at_midnight);
  EXPECT_EQ(cluster_.ReadFigure("realtime_united_reads"), before + 6 * Asks());  // each a series and its rollup
}

// The same for a breakdown's visitors: each value's UTC days united by
// realtime exactly when the window and its units are whole UTC days; every
// row's count, per unit or over the window, is the visitor sets'.
TEST_P(IntegrationUniquesMergeTest, ABreakdownsVisitorsAreUnitedOnlyOverWholeUtcDays) {
  const int64_t at_midnight = today_ * kDay;
  const auto ask = [&](const std::string& unit, int64_t units, int tz, int64_t ref, bool rollup,
                       const std::string& extra = "") {
    const std::string target = fmt::format(
        "/breakdown?sns=c&ns=u&key={}&unit={}&units={}&timezone={}&unit_reference_ts={}&uniques=true&rollup={}{}",
        Enc(kHotKey), unit, units, tz, ref, rollup ? "true" : "false", extra);
    auto j = cluster_.Api(target);
    ASSERT_EQ(j["http_status"], 200) << target << " " << j.dump();
    const nlohmann::json& breakdown = j["data"]["breakdown"];
    ASSERT_TRUE(breakdown.is_array()) << j.dump();
    if (rollup) {
      ASSERT_FALSE(breakdown.empty()) << target;
      for (const auto& row : breakdown) {
        EXPECT_EQ(row["uniques"], ExpectedOverWindow(kHotKey, row["value"], unit, units, tz, ref)) << target;
      }
      return;
    }
    // Per unit, newest first: [{"breakdown": rows, "dt": T}, ...].
    ASSERT_EQ(breakdown.size(), static_cast<size_t>(units)) << target;
    size_t rows = 0;
    for (const std::string& value : kCountries) {
      const std::vector<oracle::UnitSum> want = Expected(kHotKey, value, unit, units, tz, ref);
      for (size_t i = 0; i < breakdown.size(); ++i) {
        ASSERT_EQ(breakdown[i]["dt"], want[i].dt) << target;
        for (const auto& row : breakdown[i]["breakdown"]) {
          if (row["value"] != value) continue;
          EXPECT_EQ(row["uniques"], want[i].clicks) << target << " " << value << " unit " << i;
          ++rows;
        }
      }
    }
    EXPECT_GT(rows, static_cast<size_t>(units)) << target << ": the units have rows to check";
  };
  const int64_t before = cluster_.ReadFigure("realtime_united_reads");
  ask("day", 30, 5, at_midnight, true);               // days of another offset
  ask("hour", 50, 0, at_midnight - 7 * kHour, true);  // a window that ends mid-day in UTC
  ask("day", 7, 5, at_midnight, false);
  EXPECT_EQ(cluster_.ReadFigure("realtime_united_reads"), before);
  ask("day", 30, 0, at_midnight, true);
  ask("day", 3, 0, at_midnight - 7 * kHour, true);  // the reference's day is whole: so is the window
  ask("week", 5, 0, at_midnight, false);
  ask("day", 7, 0, at_midnight + kDay, false);  // today's and yesterday's units too
  ask("day", 14, 0, at_midnight, true, "&compare=previous");  // visitors of the current window only
  EXPECT_EQ(cluster_.ReadFigure("realtime_united_reads"), before + 5);
}

// A sparse key's /uniques takes two archive round trips: the total's get
// (its archived hours say which unique records exist), then those records.
// The second is queued with other queries' gets (one coalesced request per
// replica), not sent as a request of its own: a lone query's two records go
// out together as one mget through the coalescer, and the answer stays exact.
TEST_P(IntegrationUniquesMergeTest, ASparseKeysSecondRoundTripGoesThroughTheCoalescer) {
  const int64_t requests = cluster_.ReadFigure("archive_coalesced_requests");
  const int64_t keys = cluster_.ReadFigure("archive_coalesced_keys");
  // Two archived hours with visitors (D-40 and D-1) in the window, on days
  // no other unit shares: two unique records, read by hour or by day.
  const std::string target = Target(kSparseKey, "", "day", 45, 0, today_ * kDay) + "&rollup=true";
  auto j = cluster_.Api(target);
  ASSERT_EQ(j["http_status"], 200) << target << " " << j.dump();
  EXPECT_EQ(j["data"]["uniques"], ExpectedOverWindow(kSparseKey, "", "day", 45, 0, today_ * kDay)) << target;
  EXPECT_EQ(cluster_.ReadFigure("archive_coalesced_requests") - requests, 1);
  EXPECT_EQ(cluster_.ReadFigure("archive_coalesced_keys") - keys, 2);
}

// Every served file has a day and a span unique record for every day and
// aligned span with visitors: the cluster's very first query reads a busy
// key's whole days as their day records (not ~720 hour sketches), and the
// same 30 days rolled up as at most 8 day and span records (aligned spans of
// 1 to 16 days, at most two of each length), never more records than days.
TEST_P(IntegrationUniquesMergeTest, AWindowsFirstQueryReadsDayAndSpanRecords) {
  const std::string target = Target(kHotKey, "", "day", 30, 0, today_ * kDay);
  auto j = cluster_.Api(target);
  ASSERT_EQ(j["http_status"], 200) << target << " " << j.dump();
  const nlohmann::json want = ExpectedUniqueSeries(Expected(kHotKey, "", "day", 30, 0, today_ * kDay));
  EXPECT_EQ(j["data"]["uniques"], want) << target;
  const int64_t days_read = DayUniquesRead();
  EXPECT_GT(days_read, 0) << "whole days read as day records from the first query on";
  EXPECT_EQ(cluster_.ReadFigure("spans_read"), 0) << "each day is a unit of its own";

  auto r = cluster_.Api(target + "&rollup=true");
  ASSERT_EQ(r["http_status"], 200) << target << " " << r.dump();
  EXPECT_EQ(r["data"]["uniques"], ExpectedOverWindow(kHotKey, "", "day", 30, 0, today_ * kDay)) << target;
  const int64_t spans = cluster_.ReadFigure("spans_read");
  const int64_t days = DayUniquesRead() - days_read;
  EXPECT_GT(spans, 0) << "runs of whole days read as span records";
  EXPECT_LE(spans + days, 8) << "a 30-day run is at most two aligned spans of each length";
}

TEST_P(IntegrationUniquesMergeTest, ComparedWithThePreviousWindow) {
  // compare=previous: the 14 (or 3) days before, a window of its own.
  struct Compare {
    const char* name;
    int units;
    int64_t back_days;
  };
  for (const Compare& c : {Compare{"previous", 14, 14}, Compare{"previous", 3, 3}}) {
  for (int tz : {0, -5}) {
    for (bool rollup : {false, true}) {
      const int64_t ref = today_ * kDay + 2 * kHour;
      const std::string target = Target(kHotKey, "", "day", c.units, tz, ref) + "&compare=" + c.name + "&rollup=" +
                                  (rollup ? "true" : "false");
      auto j = cluster_.Api(target);
      ASSERT_EQ(j["http_status"], 200) << target << " " << j.dump();
      // The earlier window, as its own query.
      const int64_t earlier_ref = ref - c.back_days * kDay;
      if (rollup) {
        EXPECT_EQ(j["data"]["uniques"], ExpectedOverWindow(kHotKey, "", "day", c.units, tz, ref)) << target;
        EXPECT_EQ(j["data"]["compare"]["uniques"],
                  ExpectedOverWindow(kHotKey, "", "day", c.units, tz, earlier_ref))
            << target;
      } else {
        const nlohmann::json now = ExpectedUniqueSeries(Expected(kHotKey, "", "day", c.units, tz, ref));
        const nlohmann::json earlier = ExpectedUniqueSeries(Expected(kHotKey, "", "day", c.units, tz, earlier_ref));
        EXPECT_EQ(j["data"]["uniques"], now) << target;
        EXPECT_EQ(j["data"]["compare"]["uniques"], earlier) << target;
      }
    }
  }
  }
}

TEST_P(IntegrationUniquesMergeTest, UnitsMinusOneReadsFromTheFirstHour) {
  const std::string target = fmt::format("/uniques?ns=u&key={}&unit=week&units=-1&unit_reference_ts={}",
                                         Enc(kHotKey), today_ * kDay);
  auto j = cluster_.Api(target);
  ASSERT_EQ(j["http_status"], 200) << target << " " << j.dump();
  // The key's series starts at its first hour with visitors, not its first
  // hour with clicks (a probe read leading zeros for a key whose clicks came
  // years before its visitors), as a value's does.
  const auto key_visitor_hours = data_.VisitorHours("", "u", kHotKey, "");
  int64_t first = std::numeric_limits<int64_t>::max();
  for (const auto& [token, hours] : key_visitor_hours) first = std::min(first, hours.begin()->first);
  ASSERT_GT(first, data_.Hours("u", kHotKey).begin()->first) << "clicks start with visitors: nothing is tested";
  EXPECT_EQ(j["data"]["uniques"],
            ExpectedUniqueSeries(ExpectedVisitors("week", 0, today_ * kDay, -1, key_visitor_hours, first)))
      << target;
  const std::string by_hour = Target(kHotKey, "", "hour", -1, 0, today_ * kDay);
  auto h = cluster_.Api(by_hour);
  ASSERT_EQ(h["http_status"], 200) << by_hour << " " << h.dump();
  EXPECT_EQ(h["data"]["uniques"],
            ExpectedUniqueSeries(ExpectedVisitors("hour", 0, today_ * kDay, -1, key_visitor_hours, first)))
      << by_hour;
  // A value's series starts at that value's first hour, as /clicks with
  // sns= and skey= does (it started at the key's: a probe read leading zeros).
  int later = 0;
  for (const std::string& value : kCountries) {
    const auto visitor_hours = data_.VisitorHours("c", "u", kHotKey, value);
    ASSERT_FALSE(visitor_hours.empty()) << value;
    int64_t value_first = std::numeric_limits<int64_t>::max();
    for (const auto& [token, hours] : visitor_hours) value_first = std::min(value_first, hours.begin()->first);
    later += value_first > first ? 1 : 0;
    const std::string of_value = Target(kHotKey, value, "hour", -1, 0, today_ * kDay);
    auto v = cluster_.Api(of_value);
    ASSERT_EQ(v["http_status"], 200) << of_value << " " << v.dump();
    EXPECT_EQ(v["data"]["uniques"],
              ExpectedUniqueSeries(ExpectedVisitors("hour", 0, today_ * kDay, -1, visitor_hours, value_first)))
        << of_value;
  }
  ASSERT_GT(later, 0) << "every value's first hour is the key's: nothing was tested";
}

// /breakdown?uniques=true: each country's distinct visitors over the window
// (day unique subtotal records for its whole days when the file has them).
// The first query of the cluster finds out whether the file has them while
// it reads; later ones know.
TEST_P(IntegrationUniquesMergeTest, BreakdownRowsCountEachValuesVisitors) {
  const int64_t at_midnight = today_ * kDay;
  const int64_t mid_day = today_ * kDay - 5 * kHour - 1234;
  for (int64_t ref : {at_midnight, mid_day}) {
    for (int tz : {0, -5, 9}) {
      for (const std::string& key : {kHotKey, kHashedKey}) {
        const std::string target = fmt::format(
            "/breakdown?sns=c&ns=u&key={}&unit=day&units=30&timezone={}&unit_reference_ts={}&uniques=true&limit=10",
            Enc(key), tz, ref);
        for (int ask = 1; ask <= Asks(); ++ask) {
          auto j = cluster_.Api(target);
          ASSERT_EQ(j["http_status"], 200) << target << " " << j.dump();
          const auto& rows = j["data"]["breakdown"];
          ASSERT_TRUE(rows.is_array()) << j.dump();
          std::set<std::string> seen;
          for (const auto& row : rows) {
            const std::string value = row["value"];
            seen.insert(value);
            EXPECT_EQ(row["uniques"], ExpectedOverWindow(key, value, "day", 30, tz, ref))
                << target << " " << value << " (ask " << ask << ")";
          }
          for (const std::string& c : kCountries) {
            if (!seen.count(c)) {
              EXPECT_EQ(ExpectedOverWindow(key, c, "day", 30, tz, ref), 0) << target << " " << c;
            }
          }
        }
      }
    }
  }
  // The window's run of whole UTC days was read as span records (visitors
  // and subtotals alike), never day by day.
  EXPECT_GT(cluster_.ReadFigure("spans_read"), 0);
  ExpectDecodedHitsOnlyWhenCached();
}

// A realtime hour whose visitors change between two asks: the next answer
// counts the new visitor (nothing of a realtime answer is kept).
TEST_P(IntegrationUniquesMergeTest, ARealtimeHoursNewVisitorCountsAtTheNextAsk) {
  const int64_t end_of_today = (today_ + 1) * kDay;
  ExpectUniques(kHotKey, "", "hour", 30, 0, end_of_today);

  // A new visitor in an hour of today, sent to the key's realtime shard as
  // a shard takes it (the oracle learns it too).
  const int64_t hour = today_ * kDay + 5 * kHour;
  const std::string token = "a visitor no other hour has";
  data_.AddVisitorAtRing("u", kHotKey, hour, token, {}, today_);
  UniqueSketch one;
  one.Add(HashVisitor(token));
  const std::string key = fmt::format("{}u|{}.{}", kUniqueMark, kHotKey, *YmdhFromUnix(hour));
  auto shard_key = ShardKeyOfRealtimeKey(key);
  ASSERT_TRUE(shard_key.ok()) << key;
  const int shard = static_cast<int>(ShardOf(*shard_key, cluster_.spec().realtime_shards));
  auto r = HttpPost(cluster_.Peer(fmt::format("realtime-{}", shard)), fmt::format("/incr?source={}&seq=2", ReadCluster::kLoader),
                    fmt::format("{},{}\n", key, one.ToText()));
  ASSERT_EQ(r.status_code, 200) << r.body;
  ExpectUniques(kHotKey, "", "hour", 30, 0, end_of_today);
}

INSTANTIATE_TEST_SUITE_P(ArchiveFiles, IntegrationUniquesMergeTest,
                         ::testing::Values(Files{false}, Files{true}),
                         [](const ::testing::TestParamInfo<Files>& info) {
                           return std::string(info.param.cached ? "Cached" : "Uncached");
                         });

}  // namespace
}  // namespace clickatron::api::testing::integration_uniques_merge_test
