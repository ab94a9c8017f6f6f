// /clicks, /breakdown and /uniques parameter validation: each bad parameter is refused
// with the reason that names it (docs/protocols.md).
#include <gtest/gtest.h>

#include "clickatron/query_string.h"
#include "query/answer/query_params.h"

namespace clickatron::api {
namespace {

constexpr int64_t kNow = 1333249200;  // 2012-04-01T03:00:00Z

QueryArgs Args(std::string_view query) {
  QueryArgs args;
  EXPECT_TRUE(ParseQueryString(query, &args).ok()) << query;
  return args;
}

std::string SeriesReason(std::string_view query) {
  TimeZoneDb zones;
  auto p = ParseSeriesParams(Args(query), kNow, zones);
  return p.ok() ? "OK" : p.status().reason();
}

std::string BreakdownReason(std::string_view query) {
  TimeZoneDb zones;
  auto p = ParseBreakdownParams(Args(query), kNow, zones);
  return p.ok() ? "OK" : p.status().reason();
}

TEST(ReadQueryParamsTest, Defaults) {
  TimeZoneDb zones;
  auto p = ParseSeriesParams(Args("ns=u&key=jehiah"), kNow, zones);
  ASSERT_TRUE(p.ok()) << p.status().ToString();
  EXPECT_EQ(p->ns, "u");
  EXPECT_EQ(p->key, "jehiah");
  EXPECT_EQ(p->window.unit, Unit::kDay);
  EXPECT_EQ(p->window.units, -1);
  EXPECT_EQ(p->window.tz_offset, 0);
  EXPECT_EQ(p->window.reference_ts, kNow);
  EXPECT_EQ(p->window.reference_echo, "now");
  EXPECT_FALSE(p->window.rollup);
  auto b = ParseBreakdownParams(Args("sns=c&ns=u&key=jehiah"), kNow, zones);
  ASSERT_TRUE(b.ok());
  EXPECT_EQ(b->limit, 100);
  EXPECT_TRUE(b->window.rollup);
}

TEST(ReadQueryParamsTest, EverythingGiven) {
  TimeZoneDb zones;
  auto p = ParseSeriesParams(
      Args("ns=u&key=http%3A%2F%2Fbit.ly%2Fx&unit=mweek&units=7&timezone=-5&unit_reference_ts=1300000000&rollup=true"),
      kNow, zones);
  ASSERT_TRUE(p.ok()) << p.status().ToString();
  EXPECT_EQ(p->key, "http://bit.ly/x");
  EXPECT_EQ(p->window.unit, Unit::kMweek);
  EXPECT_EQ(p->window.units, 7);
  EXPECT_EQ(p->window.tz_offset, -5);
  EXPECT_EQ(p->window.reference_ts, 1300000000);
  EXPECT_EQ(p->window.reference_echo, 1300000000);  // echoed as given: a number
  EXPECT_TRUE(p->window.rollup);
}

TEST(ReadQueryParamsTest, TimezoneAliasesAndZoneNames) {
  TimeZoneDb zones;
  auto a = ParseSeriesParams(Args("ns=u&key=k&hour_offset=9"), kNow, zones);
  auto b = ParseSeriesParams(Args("ns=u&key=k&tz_offset=-3"), kNow, zones);
  ASSERT_TRUE(a.ok() && b.ok());
  EXPECT_EQ(a->window.tz_offset, 9);
  EXPECT_EQ(b->window.tz_offset, -3);
  // Resolved at unit_reference_ts, not at "now": July is daylight time.
  auto ny = ParseSeriesParams(Args("ns=u&key=k&timezone=America/New_York&unit_reference_ts=1342353600"), kNow, zones);
  ASSERT_TRUE(ny.ok());
  EXPECT_EQ(ny->window.tz_offset, -4);
  auto ny_jan = ParseSeriesParams(Args("ns=u&key=k&timezone=America/New_York&unit_reference_ts=1326628800"), kNow, zones);
  EXPECT_EQ(ny_jan->window.tz_offset, -5);
  EXPECT_EQ(SeriesReason("ns=u&key=k&timezone=2&hour_offset=2"), "OK");
  EXPECT_EQ(SeriesReason("ns=u&key=k&timezone=2&hour_offset=3"), "INVALID_TIMEZONE");
  // Aliases are compared as the offsets they name, not as text.
  EXPECT_EQ(SeriesReason("ns=u&key=k&timezone=UTC&tz_offset=0"), "OK");
  EXPECT_EQ(SeriesReason("ns=u&key=k&timezone=Etc/GMT-9&hour_offset=9"), "OK");  // POSIX sign: GMT-9 is UTC+9
  EXPECT_EQ(SeriesReason("ns=u&key=k&timezone=UTC&tz_offset=1"), "INVALID_TIMEZONE");
  // At the reference time: New York is UTC-4 in July and UTC-5 in January.
  EXPECT_EQ(SeriesReason("ns=u&key=k&timezone=America/New_York&tz_offset=-4&unit_reference_ts=1342353600"), "OK");
  EXPECT_EQ(SeriesReason("ns=u&key=k&timezone=America/New_York&tz_offset=-4&unit_reference_ts=1326628800"),
            "INVALID_TIMEZONE");
}

TEST(ReadQueryParamsTest, EachBadParameterIsNamed) {
  EXPECT_EQ(SeriesReason("key=k"), "MISSING_ARG_NS");
  EXPECT_EQ(SeriesReason("ns=&key=k"), "MISSING_ARG_NS");
  EXPECT_EQ(SeriesReason("ns=u"), "MISSING_ARG_KEY");
  EXPECT_EQ(SeriesReason("ns=l&key=k"), "INVALID_NS");
  EXPECT_EQ(SeriesReason("ns=toolongns&key=k"), "INVALID_NS");
  EXPECT_EQ(SeriesReason("ns=u%7C&key=k"), "INVALID_NS");
  EXPECT_EQ(SeriesReason("ns=u&key=a%0Ab"), "INVALID_KEY");
  EXPECT_EQ(SeriesReason("ns=u&key=k&unit=minute"), "INVALID_UNIT");
  EXPECT_EQ(SeriesReason("ns=u&key=k&unit="), "INVALID_UNIT");
  EXPECT_EQ(SeriesReason("ns=u&key=k&units=0"), "INVALID_UNITS");
  EXPECT_EQ(SeriesReason("ns=u&key=k&units=-2"), "INVALID_UNITS");
  EXPECT_EQ(SeriesReason("ns=u&key=k&units=abc"), "INVALID_UNITS");
  EXPECT_EQ(SeriesReason("ns=u&key=k&units=1.5"), "INVALID_UNITS");
  EXPECT_EQ(SeriesReason("ns=u&key=k&units=99999999999999999999999"), "WINDOW_TOO_LARGE");
  EXPECT_EQ(SeriesReason("ns=u&key=k&timezone=Asia/Kolkata"), "INVALID_TIMEZONE");
  EXPECT_EQ(SeriesReason("ns=u&key=k&timezone=Mars/Olympus"), "INVALID_TIMEZONE");
  EXPECT_EQ(SeriesReason("ns=u&key=k&tz_offset=15"), "INVALID_TIMEZONE");
  EXPECT_EQ(SeriesReason("ns=u&key=k&unit_reference_ts=yesterday"), "INVALID_UNIT_REFERENCE_TS");
  EXPECT_EQ(SeriesReason("ns=u&key=k&unit_reference_ts=12.5"), "INVALID_UNIT_REFERENCE_TS");
  EXPECT_EQ(SeriesReason("ns=u&key=k&unit_reference_ts="), "INVALID_UNIT_REFERENCE_TS");
  EXPECT_EQ(SeriesReason("ns=u&key=k&rollup=yes"), "INVALID_ROLLUP");
  EXPECT_EQ(BreakdownReason("ns=u&key=k"), "MISSING_ARG_SNS");
  EXPECT_EQ(BreakdownReason("sns=l&ns=u&key=k"), "INVALID_SNS");
  EXPECT_EQ(BreakdownReason("sns=c&ns=u&key=k&limit=0"), "INVALID_LIMIT");
  EXPECT_EQ(BreakdownReason("sns=c&ns=u&key=k&limit=1001"), "INVALID_LIMIT");
  EXPECT_EQ(BreakdownReason("sns=c&ns=u&key=k&limit=ten"), "INVALID_LIMIT");
  EXPECT_EQ(BreakdownReason("sns=c&ns=u&key=k&limit=1000"), "OK");
  EXPECT_EQ(BreakdownReason("sns=c&ns=u&key=k&limit=1"), "OK");
}

// One subtotal value's series: sns= and skey= together, skey= not empty.
TEST(ReadQueryParamsTest, OneSubtotalValueNeedsBothNames) {
  TimeZoneDb zones;
  auto p = ParseSeriesParams(Args("ns=u&key=k&sns=c&skey=JP"), kNow, zones);
  ASSERT_TRUE(p.ok()) << p.status().ToString();
  EXPECT_EQ(p->sns, "c");
  EXPECT_EQ(p->skey, "JP");
  EXPECT_EQ(SeriesReason("ns=u&key=k&sns=c"), "MISSING_ARG_SKEY");
  EXPECT_EQ(SeriesReason("ns=u&key=k&skey=JP"), "MISSING_ARG_SNS");
  EXPECT_EQ(SeriesReason("ns=u&key=k&sns=c&skey="), "INVALID_SKEY");
  EXPECT_EQ(SeriesReason("ns=u&key=k&sns=l&skey=JP"), "INVALID_SNS");
}

// A parameter given twice is refused with its own reason, not read as its
// first value; the three names of the time zone may stand once each.
TEST(ReadQueryParamsTest, AParameterGivenTwiceIsRefused) {
  EXPECT_EQ(SeriesReason("ns=u&ns=v&key=k"), "INVALID_NS");
  EXPECT_EQ(SeriesReason("ns=u&key=a&key=b"), "INVALID_KEY");
  EXPECT_EQ(SeriesReason("ns=u&key=k&unit=day&unit=hour"), "INVALID_UNIT");
  EXPECT_EQ(SeriesReason("ns=u&key=k&units=1&units=2"), "INVALID_UNITS");
  EXPECT_EQ(SeriesReason("ns=u&key=k&timezone=5&timezone=6"), "INVALID_TIMEZONE");
  EXPECT_EQ(SeriesReason("ns=u&key=k&timezone=5&timezone=5"), "INVALID_TIMEZONE");
  EXPECT_EQ(SeriesReason("ns=u&key=k&unit_reference_ts=1&unit_reference_ts=2"), "INVALID_UNIT_REFERENCE_TS");
  EXPECT_EQ(SeriesReason("ns=u&key=k&rollup=true&rollup=false"), "INVALID_ROLLUP");
  EXPECT_EQ(SeriesReason("ns=u&key=k&compare=previous&compare=year"), "INVALID_COMPARE");
  EXPECT_EQ(SeriesReason("ns=u&key=k&sns=c&skey=JP&skey=US"), "INVALID_SKEY");
  EXPECT_EQ(BreakdownReason("sns=c&sns=d&ns=u&key=k"), "INVALID_SNS");
  EXPECT_EQ(BreakdownReason("sns=c&ns=u&key=k&limit=1&limit=2"), "INVALID_LIMIT");
  EXPECT_EQ(BreakdownReason("sns=c&ns=u&key=k&uniques=true&uniques=true"), "INVALID_UNIQUES");
  EXPECT_EQ(SeriesReason("ns=u&key=k&timezone=5&hour_offset=5&tz_offset=5"), "OK");
  // Checked where each is parsed: the first problem in the documented order.
  EXPECT_EQ(SeriesReason("ns=u&key=k&unit=minute&units=1&units=2"), "INVALID_UNIT");
  // Parameters a read does not take are not its to police.
  EXPECT_EQ(SeriesReason("ns=u&key=k&_=1&_=2&limit=1&limit=2"), "OK");
  EXPECT_EQ(BreakdownReason("sns=c&ns=u&key=k&skey=a&skey=b"), "OK");
}

TEST(ReadQueryParamsTest, FarAwayReferenceYearsAreNumbersNotErrors) {
  // Outside 2000..2031 no data can exist, but the query is still valid.
  EXPECT_EQ(SeriesReason("ns=u&key=k&unit_reference_ts=0"), "OK");
  EXPECT_EQ(SeriesReason("ns=u&key=k&unit_reference_ts=-86400"), "OK");
  EXPECT_EQ(SeriesReason("ns=u&key=k&unit_reference_ts=4102444800"), "OK");  // 2100
  EXPECT_EQ(SeriesReason("ns=u&key=k&unit_reference_ts=now"), "OK");
}

}  // namespace
}  // namespace clickatron::api
