// The flat hourly counts and the bisection of long archive totals (a hot key
// holds years of hours), each against a reference built in the test.
#include <gtest/gtest.h>

#include <map>
#include <random>
#include <string>
#include <vector>

#include "clickatron/ymdh.h"
#include "query/merge/hourly_counts.h"
#include "query/merge/read_records.h"

namespace clickatron::api {
namespace {

std::map<int64_t, int64_t> AsMap(const HourlyCounts& hours) {
  return std::map<int64_t, int64_t>(hours.begin(), hours.end());
}

TEST(HourlyCountsTest, AddsInAnyOrderLikeAMap) {
  std::mt19937_64 rng(11);
  std::uniform_int_distribution<int64_t> hour(0, 200);
  std::uniform_int_distribution<int64_t> count(1, 9);
  HourlyCounts hours;
  std::map<int64_t, int64_t> want;
  for (int i = 0; i < 2000; ++i) {
    const int64_t h = hour(rng) * 3600;
    const int64_t c = count(rng);
    ASSERT_TRUE(hours.Add(h, c).ok());
    want[h] += c;
  }
  EXPECT_EQ(AsMap(hours), want);
  // Sorted, one entry per hour.
  for (auto it = hours.begin(); it + 1 != hours.end(); ++it) EXPECT_LT(it->first, (it + 1)->first);
  EXPECT_EQ(hours.LowerBound(50 * 3600 + 1)->first, want.lower_bound(50 * 3600 + 1)->first);
}

TEST(HourlyCountsTest, OverflowIsAnErrorAndKeepsTheOldCount) {
  HourlyCounts hours{{3600, INT64_MAX}};
  EXPECT_EQ(hours.Add(3600, 1).code(), StatusCode::kOutOfRange);
  EXPECT_EQ(AsMap(hours), (std::map<int64_t, int64_t>{{3600, INT64_MAX}}));
}

// An archive total of a hot key: most hours of three years, counts of 1 to 7
// digits so that bisection probes land anywhere inside columns.
struct LongTotal {
  std::string value;
  std::map<int64_t, int64_t> hours;
};

LongTotal MakeLongTotal(std::mt19937_64& rng, int64_t first_hour_ts, int64_t hour_count) {
  std::bernoulli_distribution present(0.8);
  std::uniform_int_distribution<int> digits(1, 7);
  LongTotal t;
  for (int64_t i = 0; i < hour_count; ++i) {
    if (!present(rng)) continue;
    const int64_t ts = first_hour_ts + i * 3600;
    int64_t count = 1;
    for (int d = digits(rng); d > 1; --d) count *= 10;
    count += i % 9;
    t.hours[ts] = count;
    if (!t.value.empty()) t.value += ' ';
    t.value += *YmdhFromUnix(ts) + ":" + std::to_string(count);
  }
  return t;
}

TEST(ArchiveTotalBisectionTest, AnySpanOfALongRecordMatchesTheReference) {
  std::mt19937_64 rng(5);
  const int64_t first = *ParseDate("2021-01-01") * kSecondsPerDay;
  const int64_t hour_count = 3 * 365 * 24;
  const LongTotal total = MakeLongTotal(rng, first, hour_count);
  std::uniform_int_distribution<int64_t> at(-100, hour_count + 100);
  std::uniform_int_distribution<int64_t> length(0, 24 * 40);
  for (int round = 0; round < 300; ++round) {
    // Hour-aligned spans and, one in four, spans that start or end mid-hour.
    int64_t begin = first + at(rng) * 3600;
    int64_t end = begin + length(rng) * 3600;
    if (round % 4 == 0) {
      begin += 1800;
      end -= 60;
    }
    std::map<int64_t, int64_t> want(total.hours.lower_bound(begin), total.hours.lower_bound(end));
    HourlyCounts got;
    ASSERT_TRUE(AddArchiveTotalColumns(total.value + "\n", &got, HourSpan{begin, end}).ok());
    ASSERT_EQ(AsMap(got), want) << "span [" << begin << ", " << end << ")";
  }
  HourlyCounts all;
  ASSERT_TRUE(AddArchiveTotalColumns(total.value, &all).ok());
  EXPECT_EQ(AsMap(all), total.hours);
}

TEST(ArchiveTotalBisectionTest, ColumnsOutOfOrderAreCorruption) {
  HourlyCounts hours;
  // c41l (21:00) before c413 (03:00) of the same day.
  EXPECT_EQ(AddArchiveTotalColumns("c41l:5 c413:2", &hours).code(), StatusCode::kCorruption);
}

TEST(ArchiveTotalBisectionTest, EdgesOfSpansAndValues) {
  std::mt19937_64 rng(9);
  const int64_t first = *ParseDate("2000-01-01") * kSecondsPerDay;  // the first YMDH hour
  const LongTotal total = MakeLongTotal(rng, first, 2000);
  const int64_t last = total.hours.rbegin()->first;
  const auto expect_span = [&](int64_t begin, int64_t end) {
    HourlyCounts got;
    ASSERT_TRUE(AddArchiveTotalColumns(total.value, &got, HourSpan{begin, end}).ok());
    const std::map<int64_t, int64_t> want(total.hours.lower_bound(begin), total.hours.lower_bound(end));
    EXPECT_EQ(AsMap(got), want) << "[" << begin << ", " << end << ")";
  };
  expect_span(0, first);                        // wholly before the YMDH years
  expect_span(0, first + 3600);                 // up to the first hour
  expect_span(first, first + 1);                // the first hour alone
  expect_span(last, last + 3600);               // the last column alone
  expect_span(last + 3600, 4102444800 + 7200);  // after every column, past 2031
  HourlyCounts none;
  EXPECT_TRUE(AddArchiveTotalColumns("", &none, HourSpan{first, last}).ok());
  EXPECT_TRUE(AddArchiveTotalColumns("\n", &none, HourSpan{first, last}).ok());
  EXPECT_TRUE(none.empty());
  HourlyCounts one;
  ASSERT_TRUE(AddArchiveTotalColumns(*YmdhFromUnix(first) + ":3", &one, HourSpan{first, first + 3600}).ok());
  EXPECT_EQ(AsMap(one), (std::map<int64_t, int64_t>{{first, 3}}));
}

// AddAscending is Add of each entry in turn: one copy after the hours held,
// else entry by entry (an hour held already sums, an earlier one is inserted).
TEST(HourlyCountsTest, AddAscendingIsAddOfEach) {
  const std::vector<std::pair<int64_t, int64_t>> run = {{7200, 1}, {10800, 2}, {14400, 3}};
  for (const HourlyCounts& start : {HourlyCounts{}, HourlyCounts{{0, 5}, {3600, 6}},
                                    HourlyCounts{{10800, 4}, {18000, 1}}, HourlyCounts{{14400, 9}}}) {
    HourlyCounts bulk = start, one_by_one = start;
    ASSERT_TRUE(bulk.AddAscending(run.begin(), run.end()).ok());
    for (const auto& [hour, count] : run) ASSERT_TRUE(one_by_one.Add(hour, count).ok());
    EXPECT_EQ(bulk, one_by_one);
  }
  HourlyCounts summed{{10800, 4}};
  ASSERT_TRUE(summed.AddAscending(run.begin(), run.end()).ok());
  EXPECT_EQ(AsMap(summed), (std::map<int64_t, int64_t>{{7200, 1}, {10800, 6}, {14400, 3}}));
  HourlyCounts full{{10800, INT64_MAX}};
  EXPECT_EQ(full.AddAscending(run.begin(), run.end()).code(), StatusCode::kOutOfRange);
  HourlyCounts empty;
  EXPECT_TRUE(empty.AddAscending(run.end(), run.end()).ok());
  EXPECT_TRUE(empty.empty());
}

TEST(HourlyCountsTest, EraseInTakesOutExactlyTheHoursOfTheRange) {
  HourlyCounts hours{{0, 1}, {3600, 2}, {7200, 3}, {10800, 4}};
  hours.EraseIn(3600, 10800);  // the end is not erased
  EXPECT_EQ(hours, (HourlyCounts{{0, 1}, {10800, 4}}));
  hours.EraseIn(20000, 30000);  // nothing there
  EXPECT_EQ(hours, (HourlyCounts{{0, 1}, {10800, 4}}));
  hours.EraseIn(-3600, 3600);  // from before the first
  EXPECT_EQ(hours, (HourlyCounts{{10800, 4}}));
}

TEST(ArchiveTotalBisectionTest, DamageAfterTheSpanIsStillReported) {
  std::mt19937_64 rng(3);
  const int64_t first = *ParseDate("2022-06-01") * kSecondsPerDay;
  const LongTotal total = MakeLongTotal(rng, first, 3000);
  const HourSpan early{first, first + 48 * 3600};  // the span is at the start, the damage at the end
  for (const std::string& tail : {std::string(" ") + *YmdhFromUnix(first) + ":1",  // out of order
                                  std::string(" zzzz:1"), std::string(" v11h"), std::string(" v11h:")}) {
    HourlyCounts hours;
    EXPECT_EQ(AddArchiveTotalColumns(total.value + tail, &hours, early).code(), StatusCode::kCorruption) << tail;
  }
}

}  // namespace
}  // namespace clickatron::api
