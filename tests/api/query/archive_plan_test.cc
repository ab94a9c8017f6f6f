// PlanArchiveReads: which archive records a window reads, as tables of
// windows, zones and units; then random windows, where every archived hour
// must be read exactly once (as itself or inside one span), no span may hold
// a split or lie outside the window, and spans stay few.
#include "query/plan/archive_plan.h"

#include <gtest/gtest.h>

#include <map>
#include <random>
#include <set>

namespace clickatron::api {
namespace {

constexpr int64_t kH = 3600;
constexpr int64_t kD = 86400;
const int64_t kDay0 = DaysFromCivil({2024, 1, 1});  // 19723: odd, so spans do not start on it

// Every hour of days [first, first + n).
std::vector<int64_t> EveryHour(int64_t first, int64_t n) {
  std::vector<int64_t> hours;
  for (int64_t h = first * kD; h < (first + n) * kD; h += kH) hours.push_back(h);
  return hours;
}

TEST(ArchivePlan, OneUtcDayInsideOneSumIsOneRecord) {
  const auto hours = EveryHour(kDay0, 1);
  EXPECT_EQ(PlanArchiveReads(hours, {kDay0 * kD, (kDay0 + 1) * kD}, kMaxSpanLevel),
            (ArchivePlan{{}, {DaySpan{kDay0, 0}}}));
  // No split known (hourly units): hour by hour.
  EXPECT_EQ(PlanArchiveReads(hours, {}, kMaxSpanLevel), (ArchivePlan{hours, {}}));
}

// PlanWholeDaySpans: the spans of every whole UTC day between splits,
// with no data to go by (days worked out by hand: kDay0 is odd, kDay0 + 1
// a multiple of 4).
TEST(ArchivePlan, WholeDaySpansCoverEveryWholeDayWithoutData) {
  const int64_t begin = kDay0 * kD + 5 * kH, end = (kDay0 + 3) * kD + 2 * kH;  // whole: kDay0 + 1, kDay0 + 2
  EXPECT_EQ(PlanWholeDaySpans({begin, end}, begin, end, {}, kMaxSpanLevel), (std::vector<DaySpan>{{kDay0 + 1, 1}}));
  // Day records only.
  EXPECT_EQ(PlanWholeDaySpans({begin, end}, begin, end, {}, 0),
            (std::vector<DaySpan>{{kDay0 + 1, 0}, {kDay0 + 2, 0}}));
  // A split between the two days: one sum each.
  EXPECT_EQ(PlanWholeDaySpans({begin, (kDay0 + 2) * kD, end}, begin, end, {}, kMaxSpanLevel),
            (std::vector<DaySpan>{{kDay0 + 1, 0}, {kDay0 + 2, 0}}));
  // An hour of kDay0 + 1 excluded (deleted, or the gap between windows):
  // that day is read by its hours, kDay0 + 2 still whole.
  const std::vector<std::pair<int64_t, int64_t>> excluded = {{(kDay0 + 1) * kD + 3 * kH, (kDay0 + 1) * kD + 4 * kH}};
  EXPECT_EQ(PlanWholeDaySpans({begin, end}, begin, end, excluded, kMaxSpanLevel),
            (std::vector<DaySpan>{{kDay0 + 2, 0}}));
  // Splits beyond the window reach no further than it.
  EXPECT_EQ(PlanWholeDaySpans({begin - 40 * kD, end + 40 * kD}, begin, end, {}, kMaxSpanLevel),
            (std::vector<DaySpan>{{kDay0 + 1, 1}}));
  // A window with no whole UTC day: nothing.
  EXPECT_TRUE(PlanWholeDaySpans({begin, begin + 20 * kH}, begin, begin + 20 * kH, {}, kMaxSpanLevel).empty());
}

// With data in every hour, the spans planned without data are those planned
// with it, for random windows, splits and exclusions: reading them early
// reads what reading them later would.
TEST(ArchivePlan, WholeDaySpansAreThePlansSpansWhenEveryHourHasData) {
  std::mt19937_64 rng(50);
  for (int round = 0; round < 300; ++round) {
    const int64_t begin = kDay0 * kD + static_cast<int64_t>(rng() % 48) * kH;
    const int64_t end = begin + static_cast<int64_t>(24 + rng() % (24 * 200)) * kH;
    std::vector<int64_t> splits = {begin, end};
    const auto some_hour = [&] { return begin + static_cast<int64_t>(rng() % ((end - begin) / kH)) * kH; };
    for (int i = static_cast<int>(rng() % 4); i > 0; --i) splits.push_back(some_hour());
    std::vector<std::pair<int64_t, int64_t>> excluded;
    std::vector<int64_t> hours;
    for (int64_t h = begin; h < end; h += kH) hours.push_back(h);
    if (rng() % 2) {
      const int64_t from = some_hour();
      const int64_t to = std::min(end, from + static_cast<int64_t>(1 + rng() % 100) * kH);
      excluded.emplace_back(from, to);
      // What PlanArchiveReads is given in that case: the split ends, and no
      // hour inside (the gather never reads them).
      splits.push_back(from);
      splits.push_back(to);
      std::erase_if(hours, [&](int64_t h) { return h >= from && h < to; });
    }
    const std::vector<DaySpan> early = PlanWholeDaySpans(splits, begin, end, excluded, kMaxSpanLevel);
    const ArchivePlan plan = PlanArchiveReads(hours, splits, kMaxSpanLevel);
    EXPECT_EQ(early, plan.spans) << "round " << round;
  }
}

TEST(ArchivePlan, AlignedSpansCoverALongRunLongestFirst) {
  // 2024-01-01 (day 19723) .. 2024-03-01 exclusive: 60 days, one sum.
  const int64_t end = DaysFromCivil({2024, 3, 1});
  const auto hours = EveryHour(kDay0, end - kDay0);
  const ArchivePlan plan = PlanArchiveReads(hours, {kDay0 * kD, end * kD}, kMaxSpanLevel);
  // 19723 (1 day), 19724..19727 (4), 19728..19743 (16), 19744..19775 (32),
  // 19776..19779 (4), 19780..19781 (2), 19782 (1): 60 days.
  EXPECT_EQ(plan, (ArchivePlan{{},
                               {DaySpan{19723, 0}, DaySpan{19724, 2}, DaySpan{19728, 4}, DaySpan{19744, 5},
                                DaySpan{19776, 2}, DaySpan{19780, 1}, DaySpan{19782, 0}}}));
  // Day records only: 60 of them.
  EXPECT_EQ(PlanArchiveReads(hours, {kDay0 * kD, end * kD}, 0).spans.size(), 60u);
}

TEST(ArchivePlan, EdgeHoursInAnotherZoneAreReadAsHours) {
  // Three local days in UTC-5 (05:00Z to 05:00Z), one sum: the two whole UTC
  // days inside are a span of 2 (19724 is even), the 19 hours before them
  // and the 5 after are hours.
  const int64_t begin = kDay0 * kD + 5 * kH, end = (kDay0 + 3) * kD + 5 * kH;
  std::vector<int64_t> hours;
  for (int64_t h = begin; h < end; h += kH) hours.push_back(h);
  const ArchivePlan plan = PlanArchiveReads(hours, {begin, end}, kMaxSpanLevel);
  EXPECT_EQ(plan.spans, (std::vector<DaySpan>{{kDay0 + 1, 1}}));
  ASSERT_EQ(plan.hours.size(), 19u + 5u);
  EXPECT_EQ(plan.hours.front(), begin);
  EXPECT_EQ(plan.hours.back(), end - kH);
  // Per local day (rollup=false): no UTC day lies inside one, all hours.
  EXPECT_EQ(PlanArchiveReads(hours, {begin, begin + kD, begin + 2 * kD, end}, kMaxSpanLevel).hours, hours);
}

TEST(ArchivePlan, ASpanOfOneHourIsThatHourAndOneOfNoneIsNothing) {
  // Four UTC days, one sum: day 0 has 1 hour, day 1 none, days 2-3 three.
  const int64_t first = DaysFromCivil({2024, 1, 4});  // 19726: a multiple of 2
  const std::vector<int64_t> hours = {first * kD + 7 * kH, (first + 2) * kD, (first + 2) * kD + kH,
                                      (first + 3) * kD + 9 * kH};
  const ArchivePlan plan = PlanArchiveReads(hours, {first * kD, (first + 4) * kD}, kMaxSpanLevel);
  // 19726 % 4 == 2: spans 19726..19727 (one hour: read as it) and 19728..19729.
  EXPECT_EQ(plan, (ArchivePlan{{first * kD + 7 * kH}, {DaySpan{first + 2, 1}}}));
}

TEST(ArchivePlan, SumsSplitAtDayBoundariesKeepTheirOwnSpans) {
  // rollup=false by UTC day over 4 days: one record per day, never a span
  // across two units.
  const auto hours = EveryHour(kDay0 + 1, 4);
  std::vector<int64_t> splits;
  for (int64_t d = kDay0 + 1; d <= kDay0 + 5; ++d) splits.push_back(d * kD);
  const ArchivePlan plan = PlanArchiveReads(hours, splits, kMaxSpanLevel);
  ASSERT_EQ(plan.spans.size(), 4u);
  for (const DaySpan& span : plan.spans) EXPECT_EQ(span.level, 0);
  EXPECT_TRUE(plan.hours.empty());
}

TEST(ArchivePlan, NoSpanReachesPastTheLastYearOfHourCodes) {
  // The last 10 days of 2127 in a sum that runs on past it: 2128-01-01 is
  // day 57708, 108 past a multiple of 128, so longer spans there would end
  // in 2128 with no code. Nothing but the plan's own cap stops them.
  const int64_t first = DaysFromCivil({2127, 12, 22});
  const auto hours = EveryHour(first, 10);
  const ArchivePlan plan = PlanArchiveReads(hours, {first * kD, (first + 200) * kD}, kMaxSpanLevel);
  int64_t days = 0;
  for (const DaySpan& span : plan.spans) {
    EXPECT_TRUE(SpanCode(span).ok()) << span.first_day << " " << span.level;
    days += span.days();
  }
  EXPECT_EQ(days, 10);
  EXPECT_TRUE(plan.hours.empty());
}

TEST(ArchivePlan, RandomWindowsReadEveryHourOnceAndNoSpanCrossesASplit) {
  std::mt19937_64 rng(3);
  for (int round = 0; round < 300; ++round) {
    const int64_t base = kDay0 * kD + static_cast<int64_t>(rng() % (400 * 24)) * kH;
    const int64_t length = static_cast<int64_t>(1 + rng() % (500 * 24)) * kH;
    std::vector<int64_t> splits = {base, base + length};
    const int extra = static_cast<int>(rng() % 4);
    for (int i = 0; i < extra; ++i) splits.push_back(base + static_cast<int64_t>(rng() % (length / kH)) * kH);
    std::vector<int64_t> hours;
    const int density = 1 + static_cast<int>(rng() % 20);
    for (int64_t h = base; h < base + length; h += kH) {
      if (static_cast<int>(rng() % 20) < density) hours.push_back(h);
    }
    const int level = static_cast<int>(rng() % (kMaxSpanLevel + 1));
    const ArchivePlan plan = PlanArchiveReads(hours, splits, level);
    std::map<int64_t, int> reads;
    for (int64_t h : plan.hours) ++reads[h];
    for (const DaySpan& span : plan.spans) {
      ASSERT_LE(span.level, level);
      ASSERT_EQ(SpanHolding(span.first_day, span.level), span) << "aligned";
      const int64_t begin = span.first_day * kD, end = (span.last_day() + 1) * kD;
      ASSERT_GE(begin, base);
      ASSERT_LE(end, base + length);
      for (int64_t s : splits) ASSERT_FALSE(s > begin && s < end) << "a split inside a span";
      int inside = 0;
      for (int64_t h : hours) {
        if (h >= begin && h < end) ++reads[h], ++inside;
      }
      ASSERT_GE(inside, 2) << "a span read for fewer than two hours";
    }
    for (int64_t h : hours) ASSERT_EQ(reads[h], 1) << "hour " << h << " round " << round;
    ASSERT_EQ(reads.size(), hours.size()) << "nothing but archived hours is read";
    // At most two spans per level per stretch between splits, and the
    // stretch's days beyond the top level.
    const size_t stretches = std::set<int64_t>(splits.begin(), splits.end()).size() - 1;
    ASSERT_LE(plan.spans.size(), stretches * (2 * static_cast<size_t>(level) + 1 + static_cast<size_t>(length / kD >> level)));
  }
}

}  // namespace
}  // namespace clickatron::api
