// DayRecordSource: a day record before each UTC day's group of subtotal
// hours (their sum) and of unique hours (their union), everything else
// passed on untouched; merged into a previous generation, the day records
// stay the sums (unions) of their days' hours (late data into hours the
// previous generation has, new days, one-hour days); TextLineSource.
// Expected counter lines are written out by hand; expected sketches are built
// by adding each day's visitors to one sketch, never by uniting. Span records
// (spans longer than a day) are left out of what these tests compare:
// span_records_test.cc tests them.
#include "day_records.h"

#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "archive_merge.h"
#include "clickatron/record.h"
#include "clickatron/unique_sketch.h"
#include "clickatron/ymdh.h"
#include "sortmerge/merge.h"
#include "testutil/testutil.h"

namespace clickatron::rebuild {
namespace {

// A span record of more than one day (ymdh.h's span codes).
bool IsLongSpan(std::string_view line) {
  const std::string_view key = LineKey(line);
  const std::string_view code = key.substr(key.rfind('.') + 1);
  return key.find('.') != std::string_view::npos && LooksLikeSpanCode(code) && !LooksLikeDayCode(code);
}

std::vector<std::string> Drain(LineSource* source) {
  std::vector<std::string> out;
  std::string_view line;
  while (source->Next(&line)) {
    if (!IsLongSpan(line)) out.emplace_back(line);
  }
  return out;
}

// A file's lines without its long spans.
std::string WithoutLongSpans(const std::string& file) {
  std::string out;
  size_t at = 0;
  while (at < file.size()) {
    const size_t end = file.find('\n', at);
    const std::string_view line(file.data() + at, end - at);
    if (!IsLongSpan(line)) out.append(line).push_back('\n');
    at = end + 1;
  }
  return out;
}

// The file a rebuild writes from `previous_lines` (a generation whose day
// records are whole) and `new_lines` passed through a DayRecordSource, and
// the day records the source made.
struct Merged {
  std::string file;
  uint64_t subtotal_days = 0, unique_days = 0;
};
Merged MergeWithDays(const std::vector<std::string>& previous_lines, std::vector<std::string> new_lines) {
  std::string previous;
  for (const std::string& line : previous_lines) previous += line + "\n";
  clickatron::testing::TempDir tmp;
  VectorLineSource added(std::move(new_lines), "new");
  MergingSource merged({&added});
  DayRecordSource days(&merged);
  auto writer = ShardFileWriter::Create(tmp / "out.csv");
  EXPECT_TRUE(writer.ok());
  if (!writer.ok()) return {};
  ArchiveMergeStats stats;
  const Status st = MergeIntoArchive(previous, &days, writer->get(), {}, &stats);
  EXPECT_TRUE(st.ok()) << st.ToString();
  EXPECT_TRUE((*writer)->Finish().ok());
  return Merged{WithoutLongSpans(clickatron::testing::ReadAll(tmp / "out.csv")), days.subtotal_days_written(),
                days.unique_days_written()};
}

std::vector<std::string> WithDays(std::vector<std::string> lines) {
  VectorLineSource input(std::move(lines));
  DayRecordSource days(&input);
  std::vector<std::string> out = Drain(&days);
  EXPECT_TRUE(days.status().ok()) << days.status().ToString();
  return out;
}

// The text of a sketch of visitors (hashes) a..b-1 and any `more`, each added.
std::string Visitors(uint64_t a, uint64_t b, std::vector<uint64_t> more = {}) {
  UniqueSketch s;
  for (uint64_t h = a; h < b; ++h) s.Add(h * 0x9E3779B97F4A7C15ULL);
  for (uint64_t h : more) s.Add(h * 0x9E3779B97F4A7C15ULL);
  return s.ToText();
}

TEST(DayRecordSource, EachDayWithHoursGetsItsSumBeforeItsHours) {
  const std::vector<std::string> got = WithDays({
      "c.u|a.c3o5,US:1",  // the only hour of its day: a day record all the same
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
      "c.u|a.c3o,US:1",
      "c.u|a.c3o5,US:1",
      "c.u|a.c3p,DE:4 JP:7 US:2",
      "c.u|a.c3p0,JP:2 US:3",
      "c.u|a.c3p1,DE:4 US:-1",
      "c.u|a.c3pn,JP:5",
      "c.u|b.c3p,US:7",
      "c.u|b.c3p1,US:7",
      "l|AAAAAAAAAAA=,http://x",
      "r.u|a.c3p,AbCdEfGhIjK=:7 ZZZZZZZZZZZ=:2",
      "r.u|a.c3p2,AbCdEfGhIjK=:6",
      "r.u|a.c3p3,AbCdEfGhIjK=:1 ZZZZZZZZZZZ=:2",
      "u|a,c3o5:1 c3p0:5 c3p1:3 c3pn:5",
      "~c.u|a.c3p,US:eAQ",  // unique hours too: the union of the same visitor is one visitor
      "~c.u|a.c3p0,US:eAQ",
      "~c.u|a.c3p1,US:eAQ",
  };
  EXPECT_EQ(got, want);
}

TEST(DayRecordSource, FiveCharacterCodesAndTheBoundaryBetweenEras) {
  EXPECT_EQ(WithDays({"c.u|k.vcvm,US:1", "c.u|k.vcvn,US:1", "c.u|k.w0110,US:2", "c.u|k.w0113,JP:3",
                      "c.u|k.w0120,US:4"}),
            (std::vector<std::string>{"c.u|k.vcv,US:2", "c.u|k.vcvm,US:1", "c.u|k.vcvn,US:1",
                                      "c.u|k.w011,JP:3 US:2", "c.u|k.w0110,US:2", "c.u|k.w0113,JP:3",
                                      "c.u|k.w012,US:4", "c.u|k.w0120,US:4"}));
}

// The new lines' day records merged into a previous generation whose day
// records are whole give exactly the day records of all the hours: late data
// into an hour the previous generation has (of a one-hour day and of a longer
// one), a new hour of a day it has, a day it lacks, a key it lacks.
TEST(DayRecordSource, MergedIntoThePreviousGenerationEveryDayRecordIsItsDaysSum) {
  const std::vector<std::string> previous_lines = {
      "c.u|a.c3o,US:5",       "c.u|a.c3o3,US:5",
      "c.u|a.c3p,JP:1 US:5",  "c.u|a.c3p0,US:2",  "c.u|a.c3p1,JP:1 US:3",
      "c.u|b.c3p,JP:9",       "c.u|b.c3p4,JP:9",
      "u|a,c3o3:5 c3p0:2 c3p1:4", "u|b,c3p4:9",
  };
  const std::vector<std::string> new_lines = {
      "c.u|a.c3o3,US:1",  // late data into the previous one-hour day's hour
      "c.u|a.c3p1,US:2",  // late data into an hour of a longer day
      "c.u|a.c3p2,DE:1",  // a new hour of a day the previous generation has
      "c.u|a.c3q0,US:4",  // a day it lacks
      "c.u|c.c3p1,FR:4",  // a key it lacks
      "u|a,c3o3:1 c3p1:2 c3p2:1 c3q0:4",
      "u|c,c3p1:4",
  };
  const Merged out = MergeWithDays(previous_lines, new_lines);
  EXPECT_EQ(out.subtotal_days, 4u);
  // As if built from scratch: every hour summed, and each day's record the
  // sum of its hours (also a day of one hour).
  EXPECT_EQ(out.file,
            "c.u|a.c3o,US:6\n"
            "c.u|a.c3o3,US:6\n"
            "c.u|a.c3p,DE:1 JP:1 US:7\n"
            "c.u|a.c3p0,US:2\n"
            "c.u|a.c3p1,JP:1 US:5\n"
            "c.u|a.c3p2,DE:1\n"
            "c.u|a.c3q,US:4\n"
            "c.u|a.c3q0,US:4\n"
            "c.u|b.c3p,JP:9\n"
            "c.u|b.c3p4,JP:9\n"
            "c.u|c.c3p,FR:4\n"
            "c.u|c.c3p1,FR:4\n"
            "u|a,c3o3:6 c3p0:2 c3p1:6 c3p2:1 c3q0:4\n"
            "u|b,c3p4:9\n"
            "u|c,c3p1:4\n");
}

TEST(DayRecordSource, DayRecordsInTheInputAreMadeAgainFromTheHours) {
  VectorLineSource input({"c.u|a.c3p,US:999", "c.u|a.c3p0,US:1", "c.u|a.c3p1,US:2", "c.u|z.c3q,JP:5",
                          "~u|a.c3p," + Visitors(0, 50), "~u|a.c3p3," + Visitors(1, 2), "~u|b.c3p," + Visitors(0, 1)});
  DayRecordSource days(&input);
  EXPECT_EQ(Drain(&days), (std::vector<std::string>{"c.u|a.c3p,US:3", "c.u|a.c3p0,US:1", "c.u|a.c3p1,US:2",
                                                    "~u|a.c3p," + Visitors(1, 2), "~u|a.c3p3," + Visitors(1, 2)}));
  EXPECT_TRUE(days.status().ok());
  EXPECT_EQ(days.subtotal_days_written(), 1u);
  EXPECT_EQ(days.unique_days_written(), 1u);
  EXPECT_EQ(days.days_dropped(), 4u);  // two replaced, two without hours
}

TEST(DayRecordSource, UniqueHoursGetTheirDaysUnionBeforeThem) {
  // Hours of unique totals and subtotals, a day past the explicit form's
  // limit (2,000 distinct visitors over its hours: the day is dense, its
  // hours explicit), one-hour days, two keys, and a counter in between.
  const std::vector<std::string> got = WithDays({
      "u|a,c3p0:1 c3p1:1",
      "~c.u|a.c3p0,JP:" + Visitors(0, 3) + " US:" + Visitors(10, 12),
      "~c.u|a.c3p1,US:" + Visitors(11, 15),
      "~c.u|a.c3q5,US:" + Visitors(20, 21),
      "~u|a.c3p0," + Visitors(0, 1000),
      "~u|a.c3p1," + Visitors(500, 1500),
      "~u|a.c3p7," + Visitors(1000, 2000),
      "~u|b.c3p3," + Visitors(7, 8),
  });
  const std::vector<std::string> want = {
      "u|a,c3p0:1 c3p1:1",
      "~c.u|a.c3p,JP:" + Visitors(0, 3) + " US:" + Visitors(10, 15),
      "~c.u|a.c3p0,JP:" + Visitors(0, 3) + " US:" + Visitors(10, 12),
      "~c.u|a.c3p1,US:" + Visitors(11, 15),
      "~c.u|a.c3q,US:" + Visitors(20, 21),
      "~c.u|a.c3q5,US:" + Visitors(20, 21),
      "~u|a.c3p," + Visitors(0, 2000),
      "~u|a.c3p0," + Visitors(0, 1000),
      "~u|a.c3p1," + Visitors(500, 1500),
      "~u|a.c3p7," + Visitors(1000, 2000),
      "~u|b.c3p," + Visitors(7, 8),
      "~u|b.c3p3," + Visitors(7, 8),
  };
  EXPECT_EQ(got, want);
  EXPECT_EQ(want[6][9], 'd') << "the day of 2,000 visitors is dense";
  EXPECT_EQ(want[7][10], 'e') << "its hours are explicit";
}

// Merged into a previous generation with whole day unique records, new hours
// (late visitors into an hour it has, a new hour of a day it has, a new day)
// leave every day record the union of its day's hours.
TEST(DayRecordSource, MergedIntoThePreviousGenerationEveryDayUniqueRecordIsItsDaysUnion) {
  const Merged out = MergeWithDays(
      {
          "u|a,c3p0:1 c3p1:1",
          "~c.u|a.c3p,US:" + Visitors(0, 4),
          "~c.u|a.c3p0,US:" + Visitors(0, 2),
          "~c.u|a.c3p1,US:" + Visitors(2, 4),
          "~u|a.c3p," + Visitors(0, 4),
          "~u|a.c3p0," + Visitors(0, 2),
          "~u|a.c3p1," + Visitors(2, 4),
      },
      {"u|a,c3p1:1 c3p2:1 c3q0:1", "~c.u|a.c3p1,JP:" + Visitors(50, 52), "~c.u|a.c3p2,US:" + Visitors(3, 6),
       "~u|a.c3p1," + Visitors(3, 9), "~u|a.c3p2," + Visitors(100, 101), "~u|a.c3q0," + Visitors(0, 1)});
  EXPECT_EQ(out.unique_days, 3u);
  EXPECT_EQ(out.file,
            "u|a,c3p0:1 c3p1:2 c3p2:1 c3q0:1\n"
            "~c.u|a.c3p,JP:" + Visitors(50, 52) + " US:" + Visitors(0, 6) + "\n"
            "~c.u|a.c3p0,US:" + Visitors(0, 2) + "\n"
            "~c.u|a.c3p1,JP:" + Visitors(50, 52) + " US:" + Visitors(2, 4) + "\n"
            "~c.u|a.c3p2,US:" + Visitors(3, 6) + "\n"
            "~u|a.c3p," + Visitors(0, 9, {100}) + "\n"
            "~u|a.c3p0," + Visitors(0, 2) + "\n"
            "~u|a.c3p1," + Visitors(2, 9) + "\n"
            "~u|a.c3p2," + Visitors(100, 101) + "\n"
            "~u|a.c3q," + Visitors(0, 1) + "\n"
            "~u|a.c3q0," + Visitors(0, 1) + "\n");
}

TEST(DayRecordSource, AnOverflowingDaySumFails) {
  VectorLineSource input({"c.u|a.c3p0,US:9223372036854775807", "c.u|a.c3p1,US:1"});
  DayRecordSource days(&input);
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
