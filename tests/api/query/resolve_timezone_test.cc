// The `timezone` parameter: "-5", "+9", "0" or a zone name, resolved to a
// whole-hour offset at the window's reference time (query_params.h).
#include <gtest/gtest.h>

#include <string>

#include "query/answer/query_params.h"
#include "clickatron/timezone.h"

namespace clickatron::api {
namespace {

TEST(ResolveTimezoneTest, NewYorkIsMinusFiveInJanuaryAndMinusFourInJuly) {
  TimeZoneDb db;
  // 2012-01-15 12:00 UTC and 2012-07-15 12:00 UTC.
  EXPECT_EQ(*ResolveTimezone("America/New_York", 1326628800, db), -5);
  EXPECT_EQ(*ResolveTimezone("America/New_York", 1342353600, db), -4);
}

TEST(ResolveTimezoneTest, UtcAndEtcZones) {
  TimeZoneDb db;
  EXPECT_EQ(*ResolveTimezone("UTC", 1342353600, db), 0);
  // POSIX sign convention: Etc/GMT+5 is five hours *behind* UTC.
  EXPECT_EQ(*ResolveTimezone("Etc/GMT+5", 1342353600, db), -5);
  EXPECT_EQ(*ResolveTimezone("Etc/GMT-14", 1342353600, db), 14);
}

TEST(ResolveTimezoneTest, HalfHourZonesAreRefused) {
  // Hourly data cannot serve a unit boundary at :30.
  TimeZoneDb db;
  auto kolkata = ResolveTimezone("Asia/Kolkata", 1342353600, db);
  ASSERT_FALSE(kolkata.ok());
  EXPECT_EQ(kolkata.status().reason(), "INVALID_TIMEZONE");
  EXPECT_NE(kolkata.status().message().find("+05:30"), std::string::npos) << kolkata.status().message();
  // The offset itself: said to be refused for its minutes, not unknown.
  for (const std::string offset : {"+05:30", "-03:30", " 05:45"}) {
    auto r = ResolveTimezone(offset, 1342353600, db);
    ASSERT_FALSE(r.ok()) << offset;
    EXPECT_EQ(r.status().reason(), "INVALID_TIMEZONE") << offset;
    EXPECT_NE(r.status().message().find("an offset with minutes cannot be served"), std::string::npos)
        << r.status().message();
  }
}

// ISO 8601's form of a whole-hour offset, as retention's zones take it.
TEST(ResolveTimezoneTest, AWholeHourOffsetWithZeroMinutesIsTaken) {
  TimeZoneDb db;
  EXPECT_EQ(*ResolveTimezone("+05:00", 1342353600, db), 5);
  EXPECT_EQ(*ResolveTimezone("-05:00", 1342353600, db), -5);
  EXPECT_EQ(*ResolveTimezone("+00:00", 1342353600, db), 0);
  EXPECT_EQ(*ResolveTimezone("+14:00", 1342353600, db), 14);
  // Forms that are not it: NumericOffsetsInRange's refusals.
  // Sent with an unescaped '+': the hint says how to send it.
  auto r = ResolveTimezone(" 05:00", 1342353600, db);
  ASSERT_FALSE(r.ok());
  EXPECT_NE(r.status().message().find("%2B05:00"), std::string::npos) << r.status().message();
}

TEST(ResolveTimezoneTest, BadNamesAreInvalidTimezone) {
  TimeZoneDb db;
  for (const std::string bad : {"Not/A_Zone", "../../etc/passwd", "/etc/passwd", "America//New_York", "America/",
                                "zone.tab", "", "Europe/London\n"}) {
    auto r = ResolveTimezone(bad, 1342353600, db);
    ASSERT_FALSE(r.ok()) << bad;
    EXPECT_EQ(r.status().reason(), "INVALID_TIMEZONE") << bad;
  }
}

// "+9" typed into a URL arrives as " 9" (form decoding): still refused, the
// message saying how to send it.
TEST(ResolveTimezoneTest, APlusDecodedAsASpaceIsRefusedWithAHint) {
  TimeZoneDb db;
  auto r = ResolveTimezone(" 9", 1342353600, db);
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.status().reason(), "INVALID_TIMEZONE");
  EXPECT_NE(r.status().message().find("send +9 as %2B9"), std::string::npos) << r.status().message();
  r = ResolveTimezone("Not/A_Zone", 1342353600, db);
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.status().message().find("%2B"), std::string::npos) << r.status().message();
}

TEST(ResolveTimezoneTest, NumericOffsetsInRange) {
  TimeZoneDb db;
  EXPECT_EQ(*ResolveTimezone("-12", 0, db), -12);
  EXPECT_EQ(*ResolveTimezone("+14", 0, db), 14);
  EXPECT_EQ(*ResolveTimezone("5", 0, db), 5);
  for (const std::string bad : {"-13", "15", "+-5", "5.5", "99999999999999999999", "-", "-13:00", "+15:00", "+5:0",
                                "+-5:00", "05:00:00", ":00"}) {
    auto r = ResolveTimezone(bad, 0, db);
    ASSERT_FALSE(r.ok()) << bad;
    EXPECT_EQ(r.status().reason(), "INVALID_TIMEZONE") << bad;
  }
}

}  // namespace
}  // namespace clickatron::api
