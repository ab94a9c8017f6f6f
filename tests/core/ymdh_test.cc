// YMDH codes and calendar helpers.
//
// Known answers (unix seconds, day numbers, weekdays) were computed outside
// this code with python3: calendar.timegm((2012,3,25,1,0,0)) == 1332637200,
// (date(2000,3,1) - date(1970,1,1)).days == 11017, and so on.
#include "clickatron/ymdh.h"

#include <gtest/gtest.h>

#include <random>

namespace clickatron {
namespace {

std::string Encode(int64_t s) {
  Result<std::string> r = YmdhFromUnix(s);
  EXPECT_TRUE(r.ok()) << r.status().ToString();
  return r.ok() ? *r : "";
}

TEST(Ymdh, SeedExample) {
  EXPECT_EQ(Encode(1332637200), "c3p1");  // 2012-03-25 01:00 UTC, from the seed
  Result<int64_t> back = UnixFromYmdh("c3p1");
  ASSERT_TRUE(back.ok());
  EXPECT_EQ(*back, 1332637200);
}

TEST(Ymdh, FloorsToTheHour) {
  EXPECT_EQ(Encode(1332637200 + 3599), "c3p1");
  EXPECT_EQ(Encode(1332637200 + 3600), "c3p2");
  EXPECT_EQ(Encode(1332637200 - 1), "c3p0");
}

TEST(Ymdh, RangeEdges) {
  EXPECT_EQ(Encode(946684800), "0110");          // 2000-01-01T00:00:00Z: the seed's codes, unchanged
  EXPECT_EQ(Encode(1956524400), "vcvn");         // 2031-12-31T23:00:00Z
  EXPECT_EQ(Encode(1956524400 + 3599), "vcvn");
  EXPECT_EQ(Encode(0), "/0110");                 // 1970-01-01T00:00:00Z: the first code
  EXPECT_EQ(Encode(4985967600 + 3599), "yvcvn");  // 2127-12-31T23:59:59Z: the last
  for (int64_t s : {int64_t{-1}, int64_t{4985971200} /* 2128 */, INT64_MIN, INT64_MAX}) {
    Result<std::string> r = YmdhFromUnix(s);
    ASSERT_FALSE(r.ok()) << s << " -> " << *r;
    EXPECT_EQ(r.status().code(), StatusCode::kOutOfRange) << s;
  }
  EXPECT_EQ(kEndOfHourCodes, DaysFromCivil({kMaxYmdhYear + 1, 1, 1}) * kSecondsPerDay);
  EXPECT_EQ(kEndOfHourCodes, 4985971200);  // python3 calendar.timegm((2128, 1, 1, 0, 0, 0))
}

// Unix seconds from python3's calendar.timegm, codes by the rule in ymdh.h.
TEST(Ymdh, CodesPastTheSeedsYears) {
  const std::pair<int64_t, const char*> known[] = {
      {1956528000, "w0110"},  // 2032-01-01T00:00:00Z, the hour after "vcvn"
      {1956531600, "w0111"},
      {2056320000, "w3310"},  // "2035-02-29" to timegm is 2035-03-01 (no Feb 29 that year)
      {2966367600, "wvcvn"},  // 2063-12-31T23
      {2966371200, "x0110"},  // 2064-01-01T00
      {4102441200, "y3cvn"},  // 2099-12-31T23
      {946681200, "/tcvn"},   // 1999-12-31T23, the hour before "0110"
  };
  for (const auto& [unix, code] : known) {
    EXPECT_EQ(Encode(unix), code) << unix;
    Result<int64_t> back = UnixFromYmdh(code);
    ASSERT_TRUE(back.ok()) << code << ": " << back.status().ToString();
    EXPECT_EQ(*back, unix) << code;
  }
}

// Every hour from 1970 through 2127: decode(encode(t)) == t, and each code
// sorts bytewise after the one before, also as "code," and "code:" in lines,
// and none is a prefix of the next.
TEST(Ymdh, EveryHourRoundTripsAndSortsInTimeOrder) {
  std::string previous;
  for (int64_t t = 0; t < 4985971200; t += kSecondsPerHour) {
    Result<std::string> code = YmdhFromUnix(t);
    ASSERT_TRUE(code.ok()) << t;
    Result<int64_t> back = UnixFromYmdh(*code);
    ASSERT_TRUE(back.ok() && *back == t) << *code;
    if (!previous.empty()) {
      ASSERT_LT(previous, *code) << t;
      ASSERT_LT(previous + ",", *code + ",") << t;
      ASSERT_LT(previous + ":", *code + ":") << t;
      ASSERT_FALSE(code->starts_with(previous)) << t;
    }
    previous = std::move(code).value();
  }
}

// Day codes: pinned examples, then every day from 1970 through 2127: it
// round-trips, is no hour code, sorts after every hour of the day before and
// before every hour of its own day (as "code," in lines).
TEST(DayCode, ExamplesAndEveryDayInOrderBesideItsHours) {
  EXPECT_EQ(*DayCodeFromDays(DaysFromCivil({2012, 3, 25})), "c3p");
  EXPECT_EQ(*DayCodeFromDays(DaysFromCivil({2032, 1, 1})), "w011");
  EXPECT_EQ(*DayCodeFromDays(DaysFromCivil({1999, 12, 31})), "/tcv");
  EXPECT_EQ(*DaysFromDayCode("c3p"), DaysFromCivil({2012, 3, 25}));
  std::string last_hour_before;
  for (int64_t day = 0; day < 4985971200 / kSecondsPerDay; ++day) {
    Result<std::string> code = DayCodeFromDays(day);
    ASSERT_TRUE(code.ok()) << day;
    ASSERT_TRUE(LooksLikeDayCode(*code)) << *code;
    ASSERT_FALSE(LooksLikeYmdh(*code)) << *code;
    Result<int64_t> back = DaysFromDayCode(*code);
    ASSERT_TRUE(back.ok() && *back == day) << *code;
    const std::string first_hour = *YmdhFromUnix(day * kSecondsPerDay);
    ASSERT_FALSE(LooksLikeDayCode(first_hour)) << first_hour;
    if (!last_hour_before.empty()) {
      ASSERT_LT(last_hour_before + ",", *code + ",") << day;
    }
    ASSERT_LT(*code + ",", first_hour + ",") << day;
    last_hour_before = *YmdhFromUnix(day * kSecondsPerDay + 23 * kSecondsPerHour);
  }
}

TEST(DayCode, RefusesWhatIsNoDay) {
  for (const char* bad : {"", "c3", "c3p1", "c0p" /* month 0 */, "c2u" /* 2012-02-30 */, "C3P", "z011", "w01",
                          "w011n", "/u11" /* 2000 is "0.." */, "c3p,"}) {
    EXPECT_FALSE(DaysFromDayCode(bad).ok()) << "accepted " << bad;
  }
  EXPECT_FALSE(DayCodeFromDays(-1).ok());
  EXPECT_FALSE(DayCodeFromDays(int64_t{1} << 62).ok());
}

// Span codes: pinned examples, then every span of every level from 1970
// through 2127: it round-trips, is neither an hour nor a day code, and as
// "code," sorts after every hour of its last day and before the next day's
// day code; spans end on the last day of a run of 2^level days counted from
// 1970-01-01 (worked out here by plain division).
TEST(SpanCode, ExamplesAndEverySpanBesideItsLastDay) {
  const int64_t march25 = DaysFromCivil({2012, 3, 25});  // day 15424 = 8 * 1928
  EXPECT_EQ(*SpanCode({march25, 0}), "c3p");
  EXPECT_EQ(*SpanCode({march25, 3}), "c41z3");  // 8 days: 03-25 .. 04-01, named by 04-01
  EXPECT_EQ(*SpanCode(SpanHolding(march25, 1)), "c3qz1");  // 03-25 and 03-26
  EXPECT_EQ(SpanHolding(march25, 1).first_day, march25);
  EXPECT_EQ(*SpanFromCode("c3qz1"), (DaySpan{march25, 1}));
  EXPECT_EQ(*SpanFromCode("c3p"), (DaySpan{march25, 0}));
  const int64_t last_day = 4985971200 / kSecondsPerDay - 1;  // 2127-12-31
  for (int level = 1; level <= kMaxSpanLevel; ++level) {
    const int64_t length = int64_t{1} << level;
    for (int64_t first = 0; first + length - 1 <= last_day; first += length) {
      const DaySpan span{first, level};
      Result<std::string> code = SpanCode(span);
      ASSERT_TRUE(code.ok()) << first << " " << level;
      ASSERT_TRUE(LooksLikeSpanCode(*code)) << *code;
      ASSERT_FALSE(LooksLikeYmdh(*code)) << *code;
      ASSERT_FALSE(LooksLikeDayCode(*code)) << *code;
      Result<DaySpan> back = SpanFromCode(*code);
      ASSERT_TRUE(back.ok() && *back == span) << *code;
      for (int64_t d = first; d < first + length; d += std::max<int64_t>(1, length / 4)) {
        ASSERT_EQ(SpanHolding(d, level), span) << *code << " " << d;
      }
      const std::string last_hour = *YmdhFromUnix((first + length - 1) * kSecondsPerDay + 23 * kSecondsPerHour);
      ASSERT_LT(last_hour + ",", *code + ",") << *code;
      if (first + length <= last_day) {
        ASSERT_LT(*code + ",", *DayCodeFromDays(first + length) + ",") << *code;
      }
    }
  }
  // A span that would end after 2127 has no code.
  EXPECT_FALSE(SpanCode(SpanHolding(last_day, kMaxSpanLevel)).ok());
}

TEST(SpanCode, RefusesWhatIsNoSpan) {
  // "c3pz3" ends 2012-03-25, which no 8-day span does; level 0 and 8 do not
  // exist after 'z'; a day code with junk; an hour code with 'z'.
  for (const char* bad : {"c3pz3", "c3qz0", "c3qz8", "c3qz", "c3qzz1", "c3q0z1", "C3QZ1", "z3qz1", "c3qy1", ""}) {
    EXPECT_FALSE(SpanFromCode(bad).ok()) << "accepted " << bad;
  }
  EXPECT_FALSE(SpanCode({DaysFromCivil({2012, 3, 25}) + 1, 1}).ok()) << "an unaligned span";
  EXPECT_FALSE(SpanCode({0, kMaxSpanLevel + 1}).ok());
}

TEST(Ymdh, DecodeRejectsInvalidCodes) {
  for (const char* bad : {"", "c3p", "c3p10", "C3P1", "c3P1", "c3pw", "c3p-", "c3p ",
                          "w011", "z0110", "W0110", "/u110" /* 2000 is "0..." */, "-0110", "w0d10", "w0110 ",
                          "w2u10" /* 2034-02-30 */, "w0s10", "w011o" /* hour 24 */, "/0/10",
                          "c0p1",   // month 0
                          "cdp1",   // month 13
                          "c300",   // day 0
                          "c2u0",   // 2012-02-30
                          "d2t0",   // 2013-02-29
                          "c4v0",   // 2012-04-31
                          "c3po",   // hour 24
                          "c3pv"})  // hour 31
  {
    Result<int64_t> r = UnixFromYmdh(bad);
    EXPECT_FALSE(r.ok()) << "accepted " << bad;
    if (!r.ok()) {
      EXPECT_EQ(r.status().code(), StatusCode::kInvalidArgument) << bad;
    }
  }
  EXPECT_TRUE(UnixFromYmdh("c4u0").ok());  // 2012-04-30
  EXPECT_TRUE(UnixFromYmdh("c2t0").ok());  // 2012-02-29, leap year
  EXPECT_TRUE(UnixFromYmdh("02t0").ok());  // 2000-02-29, leap (divisible by 400)
  EXPECT_TRUE(UnixFromYmdh("c3pn").ok());  // hour 23
}

TEST(Ymdh, DecodeErrorNamesTheCode) {
  Result<int64_t> r = UnixFromYmdh("c2u0");
  ASSERT_FALSE(r.ok());
  EXPECT_NE(r.status().message().find("c2u0"), std::string::npos) << r.status().message();
}

TEST(Ymdh, LooksLikeYmdh) {
  EXPECT_TRUE(LooksLikeYmdh("c3p1"));
  EXPECT_TRUE(LooksLikeYmdh("vvvv"));  // syntactic only
  EXPECT_FALSE(LooksLikeYmdh("c3pw"));
  EXPECT_FALSE(LooksLikeYmdh("c3p"));
  EXPECT_FALSE(LooksLikeYmdh("C3P1"));
}

TEST(Civil, KnownDays) {
  EXPECT_EQ(DaysFromCivil({1970, 1, 1}), 0);
  EXPECT_EQ(DaysFromCivil({1969, 12, 31}), -1);
  EXPECT_EQ(DaysFromCivil({2000, 3, 1}), 11017);
  EXPECT_EQ(DaysFromCivil({2012, 3, 25}), 15424);
  EXPECT_EQ(DaysFromCivil({1600, 2, 29}), -135081);
  EXPECT_EQ(DaysFromCivil({2400, 12, 31}), 157419);
  EXPECT_EQ(CivilFromDays(15424), (CivilDate{2012, 3, 25}));
  EXPECT_EQ(CivilFromDays(-135081), (CivilDate{1600, 2, 29}));
}

TEST(Civil, Weekdays) {
  EXPECT_EQ(WeekdayFromDays(0), 4);       // Thursday
  EXPECT_EQ(WeekdayFromDays(-1), 3);      // Wednesday
  EXPECT_EQ(WeekdayFromDays(15424), 0);   // 2012-03-25, a Sunday
  EXPECT_EQ(WeekdayFromDays(11017), 3);   // 2000-03-01, a Wednesday
  EXPECT_EQ(WeekdayFromDays(-135081), 2); // 1600-02-29, a Tuesday
}

TEST(Civil, DaysInMonth) {
  EXPECT_EQ(DaysInMonth(2012, 2), 29);
  EXPECT_EQ(DaysInMonth(2013, 2), 28);
  EXPECT_EQ(DaysInMonth(2000, 2), 29);
  EXPECT_EQ(DaysInMonth(1900, 2), 28);
  EXPECT_EQ(DaysInMonth(2012, 4), 30);
  EXPECT_EQ(DaysInMonth(2012, 12), 31);
  EXPECT_EQ(DaysInMonth(2012, 13), 0);
}

TEST(Civil, RoundTripOverFourCenturies) {
  // Walking day by day checks the two functions against each other and
  // against the calendar's own successor rule.
  CivilDate expect{1800, 1, 1};
  for (int64_t d = DaysFromCivil(expect); expect.year < 2200; ++d) {
    ASSERT_EQ(CivilFromDays(d), expect) << d;
    ASSERT_EQ(DaysFromCivil(expect), d);
    if (++expect.day > DaysInMonth(expect.year, expect.month)) {
      expect.day = 1;
      if (++expect.month > 12) {
        expect.month = 1;
        ++expect.year;
      }
    }
  }
}

TEST(Dates, ParseAndFormat) {
  Result<int64_t> d = ParseDate("2012-03-25");
  ASSERT_TRUE(d.ok());
  EXPECT_EQ(*d, 15424);
  EXPECT_EQ(FormatDate(15424), "2012-03-25");
  EXPECT_EQ(FormatDate(0), "1970-01-01");
  for (const char* bad : {"2012-3-25", "2012-02-30", "2012-13-01", "2012-00-10", "2012/03/25",
                          "2012-03-25 ", "", "20120325", "2012-03-2x", "-012-03-25"}) {
    EXPECT_FALSE(ParseDate(bad).ok()) << bad;
  }
}

TEST(Timestamps, Parse) {
  const auto parse = [](std::string_view text) -> int64_t {
    Result<int64_t> r = ParseTimestamp(text);
    EXPECT_TRUE(r.ok()) << text << ": " << r.status().ToString();
    return r.ok() ? *r : -999;
  };
  EXPECT_EQ(parse("2012-03-25T01:00:00Z"), 1332637200);
  EXPECT_EQ(parse("2012-03-25T01:00:00+00:00"), 1332637200);
  EXPECT_EQ(parse("2012-03-24T20:00:00-05:00"), 1332637200);
  EXPECT_EQ(parse("2012-03-25T06:30:00+05:30"), 1332637200);
  // RFC 3339 section 5.6: 't' and 'z' may be lower case.
  EXPECT_EQ(parse("2012-03-25t01:00:00z"), 1332637200);
  EXPECT_EQ(parse("2012-03-25T01:00:00z"), 1332637200);
  EXPECT_EQ(parse("1332637200"), 1332637200);
  EXPECT_EQ(parse("0"), 0);
  EXPECT_EQ(parse("-3600"), -3600);
  for (const char* bad : {"", "+1332637200", "1332637200.5", "99999999999999999999", "-",
                          "2012-03-25T01:00:00", "2012-03-25T01:00:00.000Z", "2012-03-25 01:00:00Z",
                          "2012-03-25T24:00:00Z", "2012-03-25T01:60:00Z", "2012-03-25T01:00:60Z",
                          "2012-02-30T01:00:00Z", "2012-03-25T01:00:00+5:00", "2012-03-25x01:00:00Z",
                          "12 ", " 12", "0x10"}) {
    EXPECT_FALSE(ParseTimestamp(bad).ok()) << bad;
  }
}

TEST(Timestamps, Format) {
  EXPECT_EQ(FormatIsoTime(1332637200), "2012-03-25T01:00:00Z");
  EXPECT_EQ(FormatIsoTime(0), "1970-01-01T00:00:00Z");
  EXPECT_EQ(FormatIsoTime(-1), "1969-12-31T23:59:59Z");
  EXPECT_EQ(FormatIsoTime(1332637200 + 3723), "2012-03-25T02:02:03Z");
}

TEST(YmdhProperty, EveryHourOfRandomDaysRoundTripsInOrder) {
  std::mt19937 rng(20120325);
  const int64_t first_day = DaysFromCivil({kMinYmdhYear, 1, 1});
  const int64_t last_day = DaysFromCivil({kMaxYmdhYear, 12, 31});
  std::uniform_int_distribution<int64_t> pick_day(first_day, last_day);
  std::vector<int64_t> days = {first_day, last_day};
  for (int i = 0; i < 500; ++i) days.push_back(pick_day(rng));
  for (int64_t day : days) {
    const CivilDate date = CivilFromDays(day);
    std::string previous;
    for (int hour = 0; hour < 24; ++hour) {
      const int64_t start = day * kSecondsPerDay + hour * kSecondsPerHour;
      Result<std::string> code = YmdhFromUnix(start + (hour * 37) % 3600);
      ASSERT_TRUE(code.ok()) << start;
      // Each digit is the calendar field itself, read straight off the date.
      const char* digits = "0123456789abcdefghijklmnopqrstuv";
      std::string year;  // the rule of ymdh.h, written out again
      if (date.year < 2000) {
        year = {'/', digits[date.year - 1970]};
      } else if (date.year < 2032) {
        year = {digits[date.year - 2000]};
      } else {
        year = {static_cast<char>('w' + (date.year - 2032) / 32), digits[(date.year - 2032) % 32]};
      }
      ASSERT_EQ(*code, year + std::string({digits[date.month], digits[date.day], digits[hour]}));
      Result<int64_t> back = UnixFromYmdh(*code);
      ASSERT_TRUE(back.ok()) << *code;
      ASSERT_EQ(*back, start) << *code;
      ASSERT_LT(previous, *code);  // bytewise order is time order
      previous = *code;
    }
  }
  // Across random pairs, too.
  std::uniform_int_distribution<int64_t> pick_second(first_day * kSecondsPerDay,
                                                     (last_day + 1) * kSecondsPerDay - 1);
  for (int i = 0; i < 5000; ++i) {
    const int64_t a = pick_second(rng), b = pick_second(rng);
    const std::string ca = *YmdhFromUnix(a), cb = *YmdhFromUnix(b);
    ASSERT_EQ(ca < cb, FloorDiv(a, 3600) < FloorDiv(b, 3600)) << a << " " << b;
  }
}

}  // namespace
}  // namespace clickatron
