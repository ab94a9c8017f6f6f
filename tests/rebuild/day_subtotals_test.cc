// DaySubtotalSource: a day record before each UTC day's group of subtotal
// hours, everything else passed on untouched; TextLineSource. Expected lines
// are written out by hand.
#include "day_subtotals.h"

#include <gtest/gtest.h>

#include <string>
#include <vector>

namespace clickatron::rebuild {
namespace {

std::vector<std::string> Drain(LineSource* source) {
  std::vector<std::string> out;
  std::string_view line;
  while (source->Next(&line)) out.emplace_back(line);
  return out;
}

std::vector<std::string> WithDays(std::vector<std::string> lines) {
  VectorLineSource input(std::move(lines));
  DaySubtotalSource days(&input);
  std::vector<std::string> out = Drain(&days);
  EXPECT_TRUE(days.status().ok()) << days.status().ToString();
  return out;
}

TEST(DaySubtotalSource, EachDayOfEachKeyGetsItsSumBeforeItsHours) {
  const std::vector<std::string> got = WithDays({
      "c.u|a.c3o5,US:1",
      "c.u|a.c3p0,JP:2 US:3",
      "c.u|a.c3p1,DE:4 US:-1",
      "c.u|a.c3pn,JP:5",
      "c.u|b.c3p1,US:7",
      "l|AAAAAAAAAAA=,http://x",
      "r.u|a.c3p2,AbCdEfGhIjK=:6",
      "u|a,c3o5:1 c3p0:5 c3p1:3 c3pn:5",
      "~c.u|a.c3p0,US:eAQ",
  });
  const std::vector<std::string> want = {
      "c.u|a.c3o,US:1",
      "c.u|a.c3o5,US:1",
      "c.u|a.c3p,DE:4 JP:7 US:2",
      "c.u|a.c3p0,JP:2 US:3",
      "c.u|a.c3p1,DE:4 US:-1",
      "c.u|a.c3pn,JP:5",
      "c.u|b.c3p,US:7",
      "c.u|b.c3p1,US:7",
      "l|AAAAAAAAAAA=,http://x",
      "r.u|a.c3p,AbCdEfGhIjK=:6",
      "r.u|a.c3p2,AbCdEfGhIjK=:6",
      "u|a,c3o5:1 c3p0:5 c3p1:3 c3pn:5",
      "~c.u|a.c3p0,US:eAQ",
  };
  EXPECT_EQ(got, want);
}

TEST(DaySubtotalSource, FiveCharacterCodesAndTheBoundaryBetweenEras) {
  EXPECT_EQ(WithDays({"c.u|k.vcvn,US:1", "c.u|k.w0110,US:2", "c.u|k.w0113,JP:3", "c.u|k.w0120,US:4"}),
            (std::vector<std::string>{"c.u|k.vcv,US:1", "c.u|k.vcvn,US:1", "c.u|k.w011,JP:3 US:2",
                                      "c.u|k.w0110,US:2", "c.u|k.w0113,JP:3", "c.u|k.w012,US:4",
                                      "c.u|k.w0120,US:4"}));
}

TEST(DaySubtotalSource, DayRecordsInTheInputAreMadeAgainFromTheHours) {
  VectorLineSource input({"c.u|a.c3p,US:999", "c.u|a.c3p0,US:1", "c.u|a.c3p1,US:2", "c.u|z.c3q,JP:5"});
  DaySubtotalSource days(&input);
  EXPECT_EQ(Drain(&days), (std::vector<std::string>{"c.u|a.c3p,US:3", "c.u|a.c3p0,US:1", "c.u|a.c3p1,US:2"}));
  EXPECT_TRUE(days.status().ok());
  EXPECT_EQ(days.days_written(), 1u);
  EXPECT_EQ(days.days_dropped(), 2u);  // one replaced, one without hours
}

TEST(DaySubtotalSource, AnOverflowingDaySumFails) {
  VectorLineSource input({"c.u|a.c3p0,US:9223372036854775807", "c.u|a.c3p1,US:1"});
  DaySubtotalSource days(&input);
  Drain(&days);
  EXPECT_FALSE(days.status().ok());
  EXPECT_NE(days.status().ToString().find("c.u|a.c3p"), std::string::npos) << days.status().ToString();
}

TEST(TextLineSource, LinesOfAWholeFile) {
  TextLineSource text("a,1\nb,2\n\nc,3\n", "file");
  EXPECT_EQ(Drain(&text), (std::vector<std::string>{"a,1", "b,2", "", "c,3"}));
  TextLineSource empty("", "empty");
  EXPECT_TRUE(Drain(&empty).empty());
}

}  // namespace
}  // namespace clickatron::rebuild
