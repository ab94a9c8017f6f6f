// DaySubtotalSource: a day record before each UTC day's group of two or more
// subtotal hours (counting the previous generation's), everything else passed
// on untouched; SortedFileCursor; TextLineSource. Expected lines are written
// out by hand.
#include "day_subtotals.h"

#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "archive_merge.h"

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

TEST(DaySubtotalSource, EachDayOfTwoHoursOrMoreGetsItsSumBeforeItsHours) {
  const std::vector<std::string> got = WithDays({
      "c.u|a.c3o5,US:1",  // the only hour of its day: no day record
      "c.u|a.c3p0,JP:2 US:3",
      "c.u|a.c3p1,DE:4 US:-1",
      "c.u|a.c3pn,JP:5",
      "c.u|b.c3p1,US:7",
      "l|AAAAAAAAAAA=,http://x",
      "r.u|a.c3p2,AbCdEfGhIjK=:6",
      "r.u|a.c3p3,AbCdEfGhIjK=:1 ZZZZZZZZZZZ=:2",
      "u|a,c3o5:1 c3p0:5 c3p1:3 c3pn:5",
      "~c.u|a.c3p0,US:eAQ",
      "~c.u|a.c3p1,US:eAQ",
  });
  const std::vector<std::string> want = {
      "c.u|a.c3o5,US:1",
      "c.u|a.c3p,DE:4 JP:7 US:2",
      "c.u|a.c3p0,JP:2 US:3",
      "c.u|a.c3p1,DE:4 US:-1",
      "c.u|a.c3pn,JP:5",
      "c.u|b.c3p1,US:7",
      "l|AAAAAAAAAAA=,http://x",
      "r.u|a.c3p,AbCdEfGhIjK=:7 ZZZZZZZZZZZ=:2",
      "r.u|a.c3p2,AbCdEfGhIjK=:6",
      "r.u|a.c3p3,AbCdEfGhIjK=:1 ZZZZZZZZZZZ=:2",
      "u|a,c3o5:1 c3p0:5 c3p1:3 c3pn:5",
      "~c.u|a.c3p0,US:eAQ",
      "~c.u|a.c3p1,US:eAQ",
  };
  EXPECT_EQ(got, want);
}

TEST(DaySubtotalSource, FiveCharacterCodesAndTheBoundaryBetweenEras) {
  EXPECT_EQ(WithDays({"c.u|k.vcvm,US:1", "c.u|k.vcvn,US:1", "c.u|k.w0110,US:2", "c.u|k.w0113,JP:3",
                      "c.u|k.w0120,US:4"}),
            (std::vector<std::string>{"c.u|k.vcv,US:2", "c.u|k.vcvm,US:1", "c.u|k.vcvn,US:1",
                                      "c.u|k.w011,JP:3 US:2", "c.u|k.w0110,US:2", "c.u|k.w0113,JP:3",
                                      "c.u|k.w0120,US:4"}));
}

// Against a previous generation: where it has the day's record, the new one
// is an addition (the merge adds the two); where it has one hour of the day
// and no record, the record is made of that hour and the new ones.
TEST(DaySubtotalSource, ConsultsThePreviousGenerationForEachDay) {
  const std::string previous =
      "c.u|a.c3p,US:5\n"
      "c.u|a.c3p0,US:2\n"
      "c.u|a.c3p1,US:3\n"
      "c.u|b.c3p4,JP:9\n"
      "c.u|c.c3p7,DE:1\n"
      "u|a,c3p0:2 c3p1:3\n";
  SortedFileCursor cursor(previous);
  std::vector<std::string> asked;
  VectorLineSource input({"c.u|a.c3p2,US:1", "c.u|b.c3p5,JP:1", "c.u|d.c3p1,FR:4"});
  DaySubtotalSource days(&input, [&](std::string_view day_key) {
    asked.emplace_back(day_key);
    return cursor.LinesWithPrefix(day_key, 1);
  });
  EXPECT_EQ(Drain(&days), (std::vector<std::string>{
                              "c.u|a.c3p,US:1",   // added to US:5 by the merge
                              "c.u|a.c3p2,US:1",
                              "c.u|b.c3p,JP:10",  // b's previous hour and the new one
                              "c.u|b.c3p5,JP:1",
                              "c.u|d.c3p1,FR:4",  // one hour in all: none
                          }));
  EXPECT_TRUE(days.status().ok()) << days.status().ToString();
  EXPECT_EQ(asked, (std::vector<std::string>{"c.u|a.c3p", "c.u|b.c3p", "c.u|d.c3p"}));
}

TEST(SortedFileCursor, BlocksByPrefixInIncreasingOrder) {
  const std::string file = "a.c3p,1\na.c3p0,2\na.c3p1,3\na.c3q0,4\nab.c3p0,5\nb,6\n";
  SortedFileCursor cursor(file);
  EXPECT_EQ(cursor.LinesWithPrefix("a.c3o", 1), "");
  EXPECT_EQ(cursor.LinesWithPrefix("a.c3p", 1), "a.c3p,1\na.c3p0,2\na.c3p1,3\n");
  EXPECT_EQ(cursor.LinesWithPrefix("a.c3q", 1), "a.c3q0,4\n");
  EXPECT_EQ(cursor.LinesWithPrefix("ab.c3p", 0), "");
  EXPECT_EQ(cursor.LinesWithPrefix("b", 0), "b,6\n");
  EXPECT_EQ(cursor.LinesWithPrefix("c", 5), "");
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
