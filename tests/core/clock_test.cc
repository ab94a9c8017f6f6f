// Clock: the system clock reads the real time; a ManualClock reads what it
// was set to, floors to whole seconds and UTC days, and moves only when told.
#include "clickatron/clock.h"

#include <gtest/gtest.h>

#include <chrono>
#include <ctime>

#include "clickatron/ymdh.h"

namespace clickatron {
namespace {

using namespace std::chrono_literals;

TEST(Clock, SystemClockReadsTheRealTime) {
  // Bounds from the same clock source: glibc's time() reads the coarse
  // clock, which can still show the previous second for a few ms after
  // system_clock has turned it (one CI run saw now = after + 1).
  const auto unix_now = [] {
    return std::chrono::duration_cast<std::chrono::seconds>(std::chrono::system_clock::now().time_since_epoch()).count();
  };
  const int64_t before = unix_now();
  const int64_t now = SystemClock::Instance().NowUnixSeconds();
  const int64_t after = unix_now();
  EXPECT_LE(before, now);
  EXPECT_LE(now, after);
  EXPECT_EQ(SystemClock::Instance().TodayUtc(), FloorDiv(now, kSecondsPerDay));
}

TEST(Clock, ManualClockStandsStillUntilMoved) {
  const int64_t noon = DaysFromCivil({2026, 3, 21}) * kSecondsPerDay + 12 * kSecondsPerHour;
  ManualClock clock(noon);
  EXPECT_EQ(clock.NowUnixSeconds(), noon);
  EXPECT_EQ(clock.NowUnixSeconds(), noon);
  clock.Advance(90min);
  EXPECT_EQ(clock.NowUnixSeconds(), noon + 5400);
  clock.SetUnixSeconds(noon - 3600);
  EXPECT_EQ(clock.NowUnixSeconds(), noon - 3600);  // it may be set back
}

TEST(Clock, ManualClockFloorsToWholeSecondsAndUtcDays) {
  const int64_t midnight = DaysFromCivil({2026, 3, 22}) * kSecondsPerDay;
  ManualClock clock(midnight - 1);
  EXPECT_EQ(clock.TodayUtc(), FloorDiv(midnight, kSecondsPerDay) - 1);
  clock.Advance(999ms);
  EXPECT_EQ(clock.NowUnixSeconds(), midnight - 1);  // not rounded up
  EXPECT_EQ(clock.TodayUtc(), FloorDiv(midnight, kSecondsPerDay) - 1);
  clock.Advance(1ms);
  EXPECT_EQ(clock.NowUnixSeconds(), midnight);
  EXPECT_EQ(clock.TodayUtc(), FloorDiv(midnight, kSecondsPerDay));
  // Before the epoch, floored too: one second before 1970-01-01 is day -1.
  clock.SetUnixSeconds(-1);
  EXPECT_EQ(clock.TodayUtc(), -1);
  clock.Advance(500ms);
  EXPECT_EQ(clock.NowUnixSeconds(), -1);
}

}  // namespace
}  // namespace clickatron
