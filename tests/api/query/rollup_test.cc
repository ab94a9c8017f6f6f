// Rollup arithmetic against the brute-force reference in read_oracle.h.
#include <gtest/gtest.h>

#include <fmt/format.h>

#include <algorithm>
#include <map>
#include <random>

#include "api/query/oracle.h"
#include "query/merge/rollup.h"

namespace clickatron::api {
namespace {

namespace oracle = clickatron::testing::oracle;

const char* kUnits[] = {"hour", "day", "week", "mweek", "month"};

// Unix seconds of a UTC civil time, by counting (independent of the code).
int64_t Utc(int64_t y, int64_t m, int64_t d, int64_t h = 0, int64_t min = 0) {
  int64_t days = 0;
  for (int64_t year = 1970; year < y; ++year) days += oracle::Leap(year) ? 366 : 365;
  for (int64_t month = 1; month < m; ++month) days += oracle::MonthLength(y, month);
  days += d - 1;
  return days * 86400 + h * 3600 + min * 60;
}

std::vector<oracle::UnitSum> Actual(const UnitWindow& window, const HourlyCounts& hours) {
  auto sums = SumByUnit(window, hours);
  EXPECT_TRUE(sums.ok()) << sums.status().ToString();
  std::vector<oracle::UnitSum> out;
  for (size_t i = window.size(); i-- > 0;) out.push_back({window.start(i), (*sums)[i]});
  return out;
}

void ExpectSame(const std::vector<oracle::UnitSum>& want, const std::vector<oracle::UnitSum>& got,
                const std::string& what) {
  ASSERT_EQ(want.size(), got.size()) << what;
  for (size_t i = 0; i < want.size(); ++i) {
    EXPECT_EQ(want[i].dt, got[i].dt) << what << " unit " << i;
    EXPECT_EQ(want[i].clicks, got[i].clicks) << what << " unit " << i;
  }
}

// The raw points the oracle reads.
std::map<int64_t, int64_t> Raw(const HourlyCounts& hours) { return {hours.begin(), hours.end()}; }

// Sparse random hours around the reference (some outside the window).
HourlyCounts RandomHours(std::mt19937_64& rng, int64_t reference_ts, int64_t span_hours, int count) {
  HourlyCounts hours;
  std::uniform_int_distribution<int64_t> offset(-span_hours, 48);
  std::uniform_int_distribution<int64_t> value(1, 1000);
  for (int i = 0; i < count; ++i) {
    EXPECT_TRUE(hours.Add((reference_ts / 3600 + offset(rng)) * 3600, value(rng)).ok());  // any order
  }
  return hours;
}

int64_t MaxUnits(const std::string& unit) {
  if (unit == "hour") return 60;
  if (unit == "day") return 40;
  if (unit == "month") return 14;
  return 12;
}

int64_t HoursPerUnit(const std::string& unit) {
  if (unit == "hour") return 1;
  if (unit == "day") return 24;
  if (unit == "month") return 31 * 24;
  return 7 * 24;
}

TEST(ReadRollupTest, EveryUnitAndOffsetMatchesBruteForce) {
  std::mt19937_64 rng(12345);
  // Leap days, year ends, month ends, the YMDH range edges.
  const int64_t references[] = {
      Utc(2012, 2, 29, 12, 30), Utc(2016, 3, 1, 0, 10), Utc(2020, 12, 31, 23, 59), Utc(2024, 1, 1, 2),
      Utc(2028, 2, 29, 23),     Utc(2000, 1, 3, 5),     Utc(2031, 12, 31, 11),     Utc(2019, 7, 14, 9),
  };
  for (const char* unit_name : kUnits) {
    const Unit unit = *ParseUnit(unit_name);
    for (int offset = -12; offset <= 14; ++offset) {
      for (int64_t ref : references) {
        std::uniform_int_distribution<int64_t> n(1, MaxUnits(unit_name));
        const int64_t units = n(rng);
        const HourlyCounts hours = RandomHours(rng, ref, (units + 1) * HoursPerUnit(unit_name), 200);
        auto window = UnitWindow::Ending(unit, offset, ref, units, 1'000'000);
        ASSERT_TRUE(window.ok()) << window.status().ToString();
        const std::string what = fmt::format("unit={} offset={} ref={} units={}", unit_name, offset, ref, units);
        ExpectSame(oracle::Rollup(unit_name, offset, ref, units, Raw(hours)), Actual(*window, hours), what);
        // The rollup is the sum of the series.
        int64_t total = 0;
        for (const auto& u : oracle::Rollup(unit_name, offset, ref, units, Raw(hours))) total += u.clicks;
        auto sum = SumWindow(*window, hours);
        ASSERT_TRUE(sum.ok());
        EXPECT_EQ(total, *sum) << what;
      }
    }
  }
}

TEST(ReadRollupTest, UnitsMinusOneSpansFromFirstDataToReference) {
  std::mt19937_64 rng(777);
  for (const char* unit_name : kUnits) {
    const Unit unit = *ParseUnit(unit_name);
    for (int offset : {-12, -5, 0, 1, 9, 14}) {
      const int64_t ref = Utc(2024, 3, 2, 7, 15);
      const HourlyCounts hours = RandomHours(rng, ref, 10 * HoursPerUnit(unit_name), 50);
      const int64_t first = hours.begin()->first;
      auto window = UnitWindow::Spanning(unit, offset, first, ref, 1'000'000);
      ASSERT_TRUE(window.ok());
      const std::string what = fmt::format("unit={} offset={}", unit_name, offset);
      const auto want = oracle::Rollup(unit_name, offset, ref, -1, Raw(hours), first);
      ExpectSame(want, Actual(*window, hours), what);
      // The oldest unit holds the first data point.
      ASSERT_FALSE(want.empty());
      EXPECT_LE(want.back().dt, first) << what;
      EXPECT_NE(want.back().clicks, 0) << what;
    }
  }
}

TEST(ReadRollupTest, UnitsMinusOneWithDataOnlyAfterReferenceIsEmpty) {
  const int64_t ref = Utc(2020, 5, 5, 5);
  auto window = UnitWindow::Spanning(Unit::kDay, 0, Utc(2020, 5, 7, 1), ref, 1000);
  ASSERT_TRUE(window.ok());
  EXPECT_TRUE(window->empty());
  auto sum = SumWindow(*window, HourlyCounts{{Utc(2020, 5, 7, 1), 3}});
  ASSERT_TRUE(sum.ok());
  EXPECT_EQ(*sum, 0);
}

TEST(ReadRollupTest, EmptyDataGivesZeroUnits) {
  auto window = UnitWindow::Ending(Unit::kWeek, -5, Utc(2016, 2, 29, 3), 6, 100000);
  ASSERT_TRUE(window.ok());
  const auto got = Actual(*window, {});
  ASSERT_EQ(got.size(), 6u);
  for (const auto& u : got) EXPECT_EQ(u.clicks, 0);
  ExpectSame(oracle::Rollup("week", -5, Utc(2016, 2, 29, 3), 6, {}), got, "empty");
}

TEST(ReadRollupTest, WeekStartsSundayAndMweekMonday) {
  // Weeks start on Sunday, mweek on Monday. 2012-03-25 is a Sunday
  // (the seed's c3p1); 2012-03-28 is a Wednesday in that week.
  const int64_t wednesday = Utc(2012, 3, 28, 15);
  auto week = UnitWindow::Ending(Unit::kWeek, 0, wednesday, 1, 1000);
  auto mweek = UnitWindow::Ending(Unit::kMweek, 0, wednesday, 1, 1000);
  ASSERT_TRUE(week.ok() && mweek.ok());
  EXPECT_EQ(week->start(0), Utc(2012, 3, 25));
  EXPECT_EQ(mweek->start(0), Utc(2012, 3, 26));
  EXPECT_EQ(week->end_ts() - week->begin_ts(), 7 * 86400);
}

TEST(ReadRollupTest, MonthLengthsFollowTheCalendar) {
  // February of leap and common years, and 30/31-day months.
  struct Case {
    int64_t y, m, days;
  } cases[] = {{2012, 2, 29}, {2016, 2, 29}, {2020, 2, 29}, {2024, 2, 29}, {2028, 2, 29},
               {2013, 2, 28}, {2000, 2, 29}, {2021, 4, 30}, {2021, 12, 31}};
  for (const auto& c : cases) {
    auto w = UnitWindow::Ending(Unit::kMonth, 3, Utc(c.y, c.m, 10), 1, 1000);
    ASSERT_TRUE(w.ok());
    EXPECT_EQ(w->end_ts() - w->begin_ts(), c.days * 86400) << c.y << "-" << c.m;
    EXPECT_EQ(w->start(0), Utc(c.y, c.m, 1) - 3 * 3600) << c.y << "-" << c.m;
  }
}

TEST(ReadRollupTest, OffsetMovesDayBoundaries) {
  // 2024-02-29 23:00 UTC is already March 1st at UTC+1, still Feb 29 at UTC-12.
  const int64_t hour = Utc(2024, 2, 29, 23);
  HourlyCounts hours{{hour, 5}};
  auto plus1 = UnitWindow::Ending(Unit::kDay, 1, Utc(2024, 3, 1, 12), 1, 1000);
  auto minus12 = UnitWindow::Ending(Unit::kDay, -12, Utc(2024, 3, 1, 0), 1, 1000);
  ASSERT_TRUE(plus1.ok() && minus12.ok());
  EXPECT_EQ(*SumWindow(*plus1, hours), 5);
  EXPECT_EQ(minus12->start(0), Utc(2024, 2, 29, 12));
  EXPECT_EQ(*SumWindow(*minus12, hours), 5);
}

TEST(ReadRollupTest, WindowWiderThanMaxHoursIsRefused) {
  auto days = UnitWindow::Ending(Unit::kDay, 0, Utc(2020, 1, 1), 31, 30 * 24);
  ASSERT_FALSE(days.ok());
  EXPECT_EQ(days.status().reason(), "WINDOW_TOO_LARGE");
  EXPECT_TRUE(UnitWindow::Ending(Unit::kDay, 0, Utc(2020, 1, 1), 30, 30 * 24).ok());
  // A huge unit count is refused before anything is built.
  auto huge = UnitWindow::Ending(Unit::kDay, 0, Utc(2020, 1, 1), int64_t{1} << 60, 43920);
  EXPECT_EQ(huge.status().reason(), "WINDOW_TOO_LARGE");
  // The message counts units as units, not as hours they would span.
  EXPECT_NE(huge.status().message().find("1152921504606846976 units of a day"), std::string::npos)
      << huge.status().ToString();
  auto spanning = UnitWindow::Spanning(Unit::kMonth, 0, Utc(2001, 1, 1), Utc(2020, 1, 1), 43920);
  EXPECT_EQ(spanning.status().reason(), "WINDOW_TOO_LARGE");
}

TEST(ReadRollupTest, SumOverflowIsAnErrorNotAWrappedNumber) {
  auto w = UnitWindow::Ending(Unit::kDay, 0, Utc(2020, 1, 1, 12), 1, 100);
  HourlyCounts hours{{Utc(2020, 1, 1, 1), INT64_MAX}, {Utc(2020, 1, 1, 2), 1}};
  EXPECT_FALSE(SumByUnit(*w, hours).ok());
  EXPECT_FALSE(SumWindow(*w, hours).ok());
}

TEST(ReadRollupTest, BreakdownSumsMatchPerKeyReference) {
  std::mt19937_64 rng(99);
  const int64_t ref = Utc(2020, 12, 31, 20);
  const std::vector<std::string> keys = {"US", "JP", "DE", "h0aMB8AuNw4="};
  HourlyBreakdown breakdown;
  std::map<std::string, std::map<int64_t, int64_t>> per_key;
  std::uniform_int_distribution<int64_t> hour(-24 * 20, 24);
  std::uniform_int_distribution<size_t> pick(0, keys.size() - 1);
  for (int i = 0; i < 300; ++i) {
    const int64_t h = (ref / 3600 + hour(rng)) * 3600;
    const std::string& k = keys[pick(rng)];
    breakdown.push_back({h, k, 2});  // repeats of (hour, key) sum in the rollup
    per_key[k][h] += 2;
  }
  for (const char* unit_name : kUnits) {
    auto w = UnitWindow::Ending(*ParseUnit(unit_name), -7, ref, 3, 100000);
    ASSERT_TRUE(w.ok());
    auto by_unit = SumBreakdownByUnit(*w, breakdown);
    auto whole = SumBreakdownWindow(*w, breakdown);
    ASSERT_TRUE(by_unit.ok() && whole.ok());
    for (const auto& [k, hours] : per_key) {
      const auto want = oracle::Rollup(unit_name, -7, ref, 3, hours);
      int64_t want_total = 0;
      for (size_t i = 0; i < want.size(); ++i) {
        const ValueSums& unit_counts = (*by_unit)[w->size() - 1 - i];
        const int64_t got = unit_counts.count(k) ? unit_counts.at(k) : 0;
        EXPECT_EQ(want[i].clicks, got) << unit_name << " " << k << " unit " << i;
        want_total += want[i].clicks;
      }
      EXPECT_EQ(want_total, whole->count(k) ? whole->at(k) : 0) << unit_name << " " << k;
    }
  }
}

TEST(ReadRollupTest, ZeroSumKeysAreDropped) {
  auto w = UnitWindow::Ending(Unit::kDay, 0, Utc(2020, 1, 1, 12), 1, 100);
  HourlyBreakdown b{{Utc(2020, 1, 1, 1), "US", 3}, {Utc(2020, 1, 1, 1), "JP", 1}, {Utc(2020, 1, 1, 2), "US", -3}};
  auto whole = SumBreakdownWindow(*w, b);
  ASSERT_TRUE(whole.ok());
  EXPECT_EQ(whole->size(), 1u);
  EXPECT_EQ(whole->count("JP"), 1u);
}

TEST(ReadRollupTest, BreakdownSumOverflowIsAnError) {
  auto w = UnitWindow::Ending(Unit::kDay, 0, Utc(2020, 1, 1, 12), 1, 100);
  const HourlyBreakdown b{{Utc(2020, 1, 1, 1), "US", INT64_MAX}, {Utc(2020, 1, 1, 3), "US", 1}};
  EXPECT_EQ(SumBreakdownWindow(*w, b).status().code(), StatusCode::kOutOfRange);
  EXPECT_EQ(SumBreakdownByUnit(*w, b).status().code(), StatusCode::kOutOfRange);
}

TEST(ReadRollupTest, TopByClicksOrdersByClicksThenValue) {
  KeyCounts counts{{"b", 5}, {"a", 5}, {"c", 9}, {"d", 1}, {"e", 5}};
  auto top = TopByClicks(counts, 3);
  ASSERT_EQ(top.size(), 3u);
  EXPECT_EQ(top[0], (std::pair<std::string, int64_t>{"c", 9}));
  EXPECT_EQ(top[1], (std::pair<std::string, int64_t>{"a", 5}));
  EXPECT_EQ(top[2], (std::pair<std::string, int64_t>{"b", 5}));
  EXPECT_EQ(TopByClicks(counts, 100).size(), 5u);
}

TEST(ReadRollupTest, TopCandidatesTakeTiesAtTheCutByStoredKey) {
  ValueSums counts{{"b", 5}, {"a", 5}, {"c", 9}, {"d", 1}, {"e", 5}};
  auto sorted = [](std::vector<std::string> v) {
    std::sort(v.begin(), v.end());
    return v;
  };
  EXPECT_EQ(sorted(TopCandidates(counts, 2)), (std::vector<std::string>{"a", "c"}));
  EXPECT_EQ(sorted(TopCandidates(counts, 3)), (std::vector<std::string>{"a", "b", "c"}));
  EXPECT_EQ(TopCandidates(counts, 1), (std::vector<std::string>{"c"}));
  EXPECT_EQ(sorted(TopCandidates(counts, 10)), (std::vector<std::string>{"a", "b", "c", "d", "e"}));
  EXPECT_TRUE(TopCandidates(counts, 0).empty());
}

// A long tail of values seen once each, all tied: a top list asks for as
// many keys (and so lookups of hashed ones) as it has rows, checked
// against a sort of every value.
TEST(ReadRollupTest, TopCandidatesOfALongTailOfTiesAreTheLimitOnly) {
  std::vector<std::string> names;
  for (int i = 0; i < 5000; ++i) names.push_back(fmt::format("v{:05}", (i * 7919) % 5000));
  ValueSums counts;
  for (const std::string& n : names) counts[n] = 1;
  counts["v04999"] = 3;
  counts["v02500"] = 2;
  std::vector<std::pair<int64_t, std::string>> all;
  for (const auto& [k, n] : counts) all.emplace_back(-n, std::string(k));
  std::sort(all.begin(), all.end());
  std::vector<std::string> expected;
  for (size_t i = 0; i < 10; ++i) expected.push_back(all[i].second);
  std::vector<std::string> got = TopCandidates(counts, 10);
  std::sort(got.begin(), got.end());
  std::sort(expected.begin(), expected.end());
  EXPECT_EQ(got, expected);
}

TEST(ReadRollupTest, UnitNamesRoundTripAndMinuteIsNotAUnit) {
  for (const char* name : kUnits) {
    auto unit = ParseUnit(name);
    ASSERT_TRUE(unit.has_value()) << name;
    EXPECT_EQ(UnitName(*unit), name);
  }
  EXPECT_FALSE(ParseUnit("minute").has_value());
  EXPECT_FALSE(ParseUnit("Day").has_value());
}

// compare=: expected windows worked out by hand (unix seconds from python's
// calendar.timegm in the comments' dates).
UnitWindow Compared(const UnitWindow& current, Compare how) {
  auto w = ComparedWindow(current, how, 1'000'000);
  EXPECT_TRUE(w.ok()) << w.status().ToString();
  return *w;
}

TEST(ReadRollupTest, ComparePreviousOfMarchIsFebruary) {
  auto march = UnitWindow::Ending(Unit::kMonth, 0, 1710460800 /* 2024-03-15 */, 1, 100000);
  ASSERT_TRUE(march.ok());
  const UnitWindow feb = Compared(*march, Compare::kPrevious);
  ASSERT_EQ(feb.size(), 1u);
  EXPECT_EQ(feb.start(0), 1706745600);  // 2024-02-01
  EXPECT_EQ(feb.end_ts(), 1709251200);  // 2024-03-01: 29 days, not 31
}

TEST(ReadRollupTest, ComparePreviousIsTheUnitsJustBefore) {
  auto days = UnitWindow::Ending(Unit::kDay, 0, 1710460800 + 3600 /* 2024-03-15 01:00 */, 7, 100000);
  ASSERT_TRUE(days.ok());
  const UnitWindow before = Compared(*days, Compare::kPrevious);
  ASSERT_EQ(before.size(), 7u);
  EXPECT_EQ(before.end_ts(), days->begin_ts());
  EXPECT_EQ(before.start(0), 1710460800 - 13 * 86400);  // 2024-03-02
}

TEST(ReadRollupTest, CompareYearKeepsAWeekOnItsSunday) {
  // The week of Wednesday 2024-03-13 starts Sunday 2024-03-10; a year
  // earlier, 2023-03-10 is a Friday, in the week of Sunday 2023-03-05.
  auto week = UnitWindow::Ending(Unit::kWeek, 0, 1710028800 + 3 * 86400, 1, 100000);
  ASSERT_TRUE(week.ok());
  ASSERT_EQ(week->start(0), 1710028800);
  const UnitWindow then = Compared(*week, Compare::kYear);
  ASSERT_EQ(then.size(), 1u);
  EXPECT_EQ(then.start(0), 1677974400);  // 2023-03-05
  EXPECT_EQ(then.end_ts(), 1678579200);  // 2023-03-12
}

TEST(ReadRollupTest, CompareYearOfFebruary29IsFebruary28) {
  auto day = UnitWindow::Ending(Unit::kDay, 0, 1709164800 + 7200 /* 2024-02-29 02:00 */, 1, 100000);
  ASSERT_TRUE(day.ok());
  const UnitWindow then = Compared(*day, Compare::kYear);
  ASSERT_EQ(then.size(), 1u);
  EXPECT_EQ(then.start(0), 1677542400);  // 2023-02-28
}

TEST(ReadRollupTest, CompareYearWorksInTheQueryOffset) {
  // At -5 the day of 2024-03-01 03:00 UTC is local 2024-02-29; a year
  // earlier that is local 2023-02-28, which starts at 05:00 UTC.
  auto day = UnitWindow::Ending(Unit::kDay, -5, 1709251200 + 3 * 3600, 1, 100000);
  ASSERT_TRUE(day.ok());
  ASSERT_EQ(day->start(0), 1709164800 + 5 * 3600);
  const UnitWindow then = Compared(*day, Compare::kYear);
  EXPECT_EQ(then.start(0), 1677542400 + 5 * 3600);
}

TEST(ReadRollupTest, CompareOfAnEmptyWindowIsEmpty) {
  auto empty = UnitWindow::Spanning(Unit::kDay, 0, 1710460800 + 10 * 86400, 1710460800, 100000);
  ASSERT_TRUE(empty.ok());
  ASSERT_TRUE(empty->empty());
  EXPECT_TRUE(Compared(*empty, Compare::kYear).empty());
}

}  // namespace
}  // namespace clickatron::api
