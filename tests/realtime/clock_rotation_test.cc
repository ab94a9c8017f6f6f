// The ring following the clock: it turns when the clock's UTC date passes
// Today (at midnight to the second, straight to the clock's day after missed
// ones), and never for a clock that reads the same day or an earlier one.
#include "clock_rotation.h"

#include <gtest/gtest.h>

#include "clickatron/ymdh.h"
#include "small_store.h"
#include "testutil/testutil.h"

// A namespace of this file's own: its names beside those of the other files
// compiled with it in one unity file (tests/CMakeLists.txt).
namespace clickatron::realtime::clock_rotation_test {
namespace {

using namespace std::chrono_literals;
using clickatron::testing::TempDir;

const int64_t kDay = DaysFromCivil({2024, 3, 10});

class ClockRotationTest : public ::testing::Test {
 protected:
  void SetUp() override {
    const Status opened = testing::OpenSmallRing(tmp_.path(), clock_.TodayUtc(), {}, &store_, &ring_);
    ASSERT_TRUE(opened.ok()) << opened.ToString();
  }

  TempDir tmp_;
  // One second before the ring's first midnight.
  ManualClock clock_{(kDay + 1) * kSecondsPerDay - 1};
  std::unique_ptr<ShardStore> store_;
  std::unique_ptr<Ring> ring_;
};

TEST_F(ClockRotationTest, TurnsAtMidnightByTheClock) {
  ASSERT_EQ(ring_->today(), kDay);
  auto none = RotateToClockDay(*ring_, clock_);
  ASSERT_TRUE(none.ok()) << none.status().ToString();
  EXPECT_FALSE(none->has_value()) << "turned before midnight";
  EXPECT_EQ(ring_->today(), kDay);

  clock_.Advance(1s);
  auto turned = RotateToClockDay(*ring_, clock_);
  ASSERT_TRUE(turned.ok()) << turned.status().ToString();
  ASSERT_TRUE(turned->has_value()) << "did not turn at midnight";
  EXPECT_EQ((*turned)->from, kDay);
  EXPECT_EQ((*turned)->to, kDay + 1);
  EXPECT_EQ(ring_->today(), kDay + 1);

  // The rest of the day: no second turn.
  clock_.Advance(23h);
  auto again = RotateToClockDay(*ring_, clock_);
  ASSERT_TRUE(again.ok());
  EXPECT_FALSE(again->has_value());
  EXPECT_EQ(ring_->today(), kDay + 1);
}

TEST_F(ClockRotationTest, MissedDaysAreSkippedStraightToTheClocksDay) {
  clock_.Advance(1s + 72h);  // down over three midnights, back on the fourth day
  auto turned = RotateToClockDay(*ring_, clock_);
  ASSERT_TRUE(turned.ok()) << turned.status().ToString();
  ASSERT_TRUE(turned->has_value());
  EXPECT_EQ((*turned)->to, kDay + 4);
  EXPECT_EQ(ring_->today(), kDay + 4);
}

TEST_F(ClockRotationTest, AClockSteppedBackLeavesTheRing) {
  clock_.Advance(1s);
  ASSERT_TRUE(RotateToClockDay(*ring_, clock_).ok());
  ASSERT_EQ(ring_->today(), kDay + 1);
  clock_.Advance(-48h);
  auto none = RotateToClockDay(*ring_, clock_);
  ASSERT_TRUE(none.ok()) << none.status().ToString();
  EXPECT_FALSE(none->has_value());
  EXPECT_EQ(ring_->today(), kDay + 1);
}

}  // namespace
}  // namespace clickatron::realtime::clock_rotation_test
