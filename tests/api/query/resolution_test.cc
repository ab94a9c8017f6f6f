// CheckResolution and WithResolution (query/answer/resolution.h): what a query may
// read of a namespace's rolled-up days. A window reaching no rolled day is
// answered as ever (no "resolution"); one over rolled days is answered when
// its units are whole days of the policy's zone, with a "resolution" object
// naming the boundaries, and refused (RESOLUTION_EXPIRED) by hour, by the
// days of another offset, or from before what is kept at all.
//
// Instants are days since 1970 (`date -u -d DATE +%s` / 86400) times 86400.
#include "query/answer/resolution.h"

#include <gtest/gtest.h>

#include <string>

#include <nlohmann/json.hpp>

#include "clickatron/retention.h"
#include "clickatron/timezone.h"
#include "query/answer/query_params.h"

namespace clickatron::api::resolution_test {
namespace {

constexpr int64_t kHour = 3600;
constexpr int64_t kDay = 86400;
constexpr int64_t kMar01 = 20513;  // 2026-03-01; US DST begins 03-08 at 07:00Z
constexpr int64_t kApr01 = 20544;  // 2026-04-01
constexpr int64_t kSep07 = 20703;  // 2026-09-07
constexpr int64_t kDec05 = 20792;  // 2026-12-05

WindowParams Window(Unit unit, int tz_offset) {
  WindowParams w;
  w.unit = unit;
  w.tz_offset = tz_offset;
  return w;
}

const AppliedRetention kUtc{"u", "UTC", kSep07 * kDay, std::nullopt};

TEST(CheckResolutionTest, NothingRolledNoResolution) {
  TimeZoneDb zones;
  // No boundaries.
  auto none = CheckResolution(nullptr, 0, kDec05 * kDay, Window(Unit::kHour, 3), zones);
  ASSERT_TRUE(none.ok()) << none.status().ToString();
  EXPECT_TRUE(none->is_null());
  // A window from hourly_from on, by any unit and offset.
  for (int64_t begin : {kSep07 * kDay, kSep07 * kDay + kHour, kDec05 * kDay}) {
    auto r = CheckResolution(&kUtc, begin, (kDec05 + 1) * kDay, Window(Unit::kHour, -7), zones);
    ASSERT_TRUE(r.ok()) << r.status().ToString();
    EXPECT_TRUE(r->is_null()) << begin;
  }
  // An empty window.
  auto empty = CheckResolution(&kUtc, kMar01 * kDay, kMar01 * kDay, Window(Unit::kHour, 0), zones);
  ASSERT_TRUE(empty.ok());
  EXPECT_TRUE(empty->is_null());
}

TEST(CheckResolutionTest, WholeDaysOfTheZoneOverRolledDays) {
  TimeZoneDb zones;
  for (Unit unit : {Unit::kDay, Unit::kWeek, Unit::kMweek, Unit::kMonth}) {
    auto r = CheckResolution(&kUtc, kMar01 * kDay, (kDec05 + 1) * kDay, Window(unit, 0), zones);
    ASSERT_TRUE(r.ok()) << r.status().ToString();
    EXPECT_EQ(*r, nlohmann::json::parse(R"({"hourly_from":1788739200,"zone":"UTC"})"));
  }
  // A window ending before hourly_from too.
  auto before = CheckResolution(&kUtc, kMar01 * kDay, kApr01 * kDay, Window(Unit::kDay, 0), zones);
  ASSERT_TRUE(before.ok()) << before.status().ToString();
  EXPECT_EQ((*before)["hourly_from"], kSep07 * kDay);

  // With kept_from, a window from it on: named too.
  const AppliedRetention kept{"u", "UTC", kSep07 * kDay, kMar01 * kDay};
  for (int64_t begin : {kMar01 * kDay, kApr01 * kDay}) {
    auto r = CheckResolution(&kept, begin, (kDec05 + 1) * kDay, Window(Unit::kMonth, 0), zones);
    ASSERT_TRUE(r.ok()) << r.status().ToString();
    EXPECT_EQ(*r, nlohmann::json::parse(R"({"hourly_from":1788739200,"zone":"UTC","kept_from":1772323200})"));
  }
}

void ExpectExpired(const Result<nlohmann::json>& r, std::initializer_list<std::string_view> mentions) {
  ASSERT_FALSE(r.ok()) << (r.ok() ? r->dump() : "");
  EXPECT_EQ(r.status().reason(), "RESOLUTION_EXPIRED") << r.status().ToString();
  EXPECT_EQ(r.status().code(), StatusCode::kInvalidArgument) << r.status().ToString();
  EXPECT_EQ(r.status().HttpStatus(), 400);
  for (std::string_view m : mentions) {
    EXPECT_NE(r.status().message().find(m), std::string::npos) << "\"" << m << "\" in " << r.status().message();
  }
}

TEST(CheckResolutionTest, HoursOfRolledDaysAreGone) {
  TimeZoneDb zones;
  ExpectExpired(CheckResolution(&kUtc, kMar01 * kDay, (kDec05 + 1) * kDay, Window(Unit::kHour, 0), zones),
                {"u", "hourly until 2026-09-07T00:00:00Z"});
  // Even the last hour before the boundary.
  ExpectExpired(CheckResolution(&kUtc, kSep07 * kDay - kHour, (kDec05 + 1) * kDay, Window(Unit::kHour, 0), zones),
                {"hourly until"});
}

TEST(CheckResolutionTest, DaysOfAnotherOffsetAreRefused) {
  TimeZoneDb zones;
  for (int tz : {-5, 1, 9}) {
    ExpectExpired(CheckResolution(&kUtc, kMar01 * kDay, (kDec05 + 1) * kDay, Window(Unit::kDay, tz), zones),
                  {"hourly until 2026-09-07T00:00:00Z", "UTC"});
  }
  const AppliedRetention plus9{"u", "+9", kSep07 * kDay - 9 * kHour, std::nullopt};
  auto ok9 = CheckResolution(&plus9, kMar01 * kDay - 9 * kHour, kDec05 * kDay, Window(Unit::kWeek, 9), zones);
  ASSERT_TRUE(ok9.ok()) << ok9.status().ToString();
  EXPECT_EQ((*ok9)["zone"], "+9");
  ExpectExpired(CheckResolution(&plus9, kMar01 * kDay, kDec05 * kDay, Window(Unit::kWeek, 0), zones),
                {"hourly until", "+9"});
}

TEST(CheckResolutionTest, NewYorkTakesBothOfItsOffsets) {
  TimeZoneDb zones;
  // Rolled before 2026-04-01 in New York (EDT: 04:00Z).
  const AppliedRetention ny{"u", "America/New_York", kApr01 * kDay + 4 * kHour, std::nullopt};
  // A window across the spring change: days of UTC-5 and of UTC-4 are both New York's days.
  const int64_t begin = kMar01 * kDay + 5 * kHour, end = (kApr01 + 10) * kDay;
  for (int tz : {-5, -4}) {
    auto r = CheckResolution(&ny, begin, end, Window(Unit::kDay, tz), zones);
    ASSERT_TRUE(r.ok()) << tz << ": " << r.status().ToString();
    EXPECT_EQ(*r, (nlohmann::json{{"hourly_from", kApr01 * kDay + 4 * kHour}, {"zone", "America/New_York"}}));
  }
  for (int tz : {-6, -3, 0}) {
    ExpectExpired(CheckResolution(&ny, begin, end, Window(Unit::kDay, tz), zones),
                  {"hourly until", "America/New_York"});
  }
  // A window whose rolled part is all EST (before 03-08T07:00Z): UTC-4's days are not New York's there.
  const int64_t est_end = kMar01 * kDay + 6 * kDay;
  ASSERT_TRUE(CheckResolution(&ny, begin, est_end, Window(Unit::kDay, -5), zones).ok());
  ExpectExpired(CheckResolution(&ny, begin, est_end, Window(Unit::kDay, -4), zones), {"America/New_York"});
  // And all EDT: the rolled part is [2026-03-20, hourly_from), whatever the window's end.
  const int64_t edt_begin = (kMar01 + 19) * kDay + 4 * kHour;
  ASSERT_TRUE(CheckResolution(&ny, edt_begin, (kApr01 + 60) * kDay, Window(Unit::kDay, -4), zones).ok());
  ExpectExpired(CheckResolution(&ny, edt_begin, (kApr01 + 60) * kDay, Window(Unit::kDay, -5), zones),
                {"America/New_York"});
}

// Before kept_from nothing is kept: a window reaching there is answered
// (units=-1 windows begin at a unit start before it all the time), and the
// answer says from when anything is kept. The hourly rules still hold.
TEST(CheckResolutionTest, AWindowBeforeKeptFromIsAnsweredAndSaysSo) {
  TimeZoneDb zones;
  const AppliedRetention kept{"u", "UTC", kSep07 * kDay, kApr01 * kDay};
  const nlohmann::json want = {{"hourly_from", kSep07 * kDay}, {"zone", "UTC"}, {"kept_from", kApr01 * kDay}};
  auto day = CheckResolution(&kept, kMar01 * kDay, (kDec05 + 1) * kDay, Window(Unit::kDay, 0), zones);
  ASSERT_TRUE(day.ok()) << day.status().ToString();
  EXPECT_EQ(*day, want);
  auto month = CheckResolution(&kept, kApr01 * kDay - kHour, kApr01 * kDay + kDay, Window(Unit::kMonth, 0), zones);
  ASSERT_TRUE(month.ok()) << month.status().ToString();
  EXPECT_EQ(*month, want);
  ExpectExpired(CheckResolution(&kept, kMar01 * kDay, (kDec05 + 1) * kDay, Window(Unit::kHour, 0), zones),
                {"u", "nothing kept before 2026-04-01T00:00:00Z"});
}

// The offsets that count are those of the rolled-up days that are kept:
// before kept_from nothing is, whatever New York's offset was there.
TEST(CheckResolutionTest, OnlyTheKeptRolledDaysSayWhichOffsetsFit) {
  TimeZoneDb zones;
  // Kept from 2026-03-01 05:00Z (EST), hourly from 2026-04-01 (EDT).
  const AppliedRetention ny{"u", "America/New_York", kApr01 * kDay + 4 * kHour, kMar01 * kDay + 5 * kHour};
  // Wholly before kept_from, in summer 2025 (EDT): answered, nothing counts.
  const int64_t summer = (kMar01 - 240) * kDay;
  for (int tz : {-4, -5, 0}) {
    auto r = CheckResolution(&ny, summer, summer + 30 * kDay, Window(Unit::kDay, tz), zones);
    ASSERT_TRUE(r.ok()) << tz << ": " << r.status().ToString();
    EXPECT_EQ((*r)["kept_from"], kMar01 * kDay + 5 * kHour);
  }
  // From summer 2025 into the kept EST days only: UTC-4 fitted the dropped
  // summer, not a kept day.
  const int64_t est_end = (kMar01 + 6) * kDay;
  ASSERT_TRUE(CheckResolution(&ny, summer, est_end, Window(Unit::kDay, -5), zones).ok());
  ExpectExpired(CheckResolution(&ny, summer, est_end, Window(Unit::kDay, -4), zones), {"America/New_York"});
  // Hours before hourly_from stay refused, kept or not.
  ExpectExpired(CheckResolution(&ny, summer, summer + kDay, Window(Unit::kHour, -4), zones), {"unit=hour"});
}

TEST(WithResolutionTest, AddsTheFieldOnlyWhenThereIsOne) {
  const nlohmann::json resolution = {{"hourly_from", 1788739200}, {"zone", "UTC"}};
  const std::string empty = WithResolution("{}", resolution);
  EXPECT_EQ(nlohmann::json::parse(empty), (nlohmann::json{{"resolution", resolution}})) << empty;
  const std::string one = WithResolution("{\"a\":1}", resolution);
  EXPECT_EQ(nlohmann::json::parse(one), (nlohmann::json{{"a", 1}, {"resolution", resolution}})) << one;
  EXPECT_EQ(one.rfind("{\"a\":1,", 0), 0u) << one;  // what was there stays first, as it was
  const std::string nested = WithResolution(R"({"data":[{"x":{}}],"b":"}"})", resolution);
  EXPECT_EQ(nlohmann::json::parse(nested),
            nlohmann::json::parse(R"({"data":[{"x":{}}],"b":"}","resolution":{"hourly_from":1788739200,"zone":"UTC"}})"))
      << nested;
  EXPECT_EQ(WithResolution("{\"a\":1}", nlohmann::json()), "{\"a\":1}");
  EXPECT_EQ(WithResolution("{}", nlohmann::json()), "{}");
}

}  // namespace
}  // namespace clickatron::api::resolution_test
