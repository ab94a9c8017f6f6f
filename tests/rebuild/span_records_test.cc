// Span records (DayRecordSource, ymdh.h's span codes): for random hours of
// subtotal and unique records over most of a year, every aligned span of
// 2^k days (k = 1 .. kMaxSpanLevel) that holds one of their days gets one
// record, the sum (union) of its hours, right after its last day's hours;
// nothing else is added. The oracle groups hours into spans by plain
// division of day numbers and builds each sketch by adding visitors one by
// one. And a generation merged into a previous one is byte for byte the
// file built from all the hours at once.
#include <gtest/gtest.h>

#include <map>
#include <random>
#include <set>
#include <string>
#include <vector>

#include "archive_merge.h"
#include "clickatron/record.h"
#include "clickatron/unique_sketch.h"
#include "clickatron/ymdh.h"
#include "day_records.h"
#include "sortmerge/merge.h"
#include "testutil/testutil.h"

namespace clickatron::rebuild {
namespace {

// One record's hours: hour (unix s) -> column -> clicks, or -> visitors.
using CounterHours = std::map<int64_t, std::map<std::string, int64_t>>;
using VisitorHours = std::map<int64_t, std::set<uint64_t>>;

std::string CounterLine(const std::string& key, const std::map<std::string, int64_t>& columns) {
  std::string line = key + ",";
  bool first = true;
  for (const auto& [name, n] : columns) {
    line += (first ? "" : " ") + name + ":" + std::to_string(n);
    first = false;
  }
  return line;
}

std::string SketchLine(const std::string& key, const std::set<uint64_t>& visitors) {
  UniqueSketch s;
  for (uint64_t v : visitors) s.Add(v * 0x9E3779B97F4A7C15ULL);
  return key + "," + s.ToText();
}

std::string DayCode(int64_t day) { return *DayCodeFromDays(day); }

// The lines the rebuild should hold for these hours: each hour, each day's
// sum before its hours, each span's sum after its last day's hours; sorted.
std::vector<std::string> Expected(const std::string& counter_prefix, const CounterHours& counters,
                                  const std::string& unique_prefix, const VisitorHours& visitors) {
  std::vector<std::string> lines;
  // days and spans: key -> columns / visitors
  std::map<std::string, std::map<std::string, int64_t>> counter_sums;
  std::map<std::string, std::set<uint64_t>> visitor_sums;
  const auto spans_of = [](int64_t hour, const std::string& prefix) {
    std::vector<std::string> keys;
    const int64_t day = hour / 86400;
    keys.push_back(prefix + DayCode(day));
    for (int level = 1; level <= kMaxSpanLevel; ++level) {
      const int64_t length = int64_t{1} << level;
      const int64_t last = day / length * length + length - 1;
      keys.push_back(prefix + DayCode(last) + "z" + std::to_string(level));
    }
    return keys;
  };
  for (const auto& [hour, columns] : counters) {
    lines.push_back(CounterLine(counter_prefix + *YmdhFromUnix(hour), columns));
    for (const std::string& key : spans_of(hour, counter_prefix)) {
      for (const auto& [name, n] : columns) counter_sums[key][name] += n;
    }
  }
  for (const auto& [hour, who] : visitors) {
    lines.push_back(SketchLine(unique_prefix + *YmdhFromUnix(hour), who));
    for (const std::string& key : spans_of(hour, unique_prefix)) visitor_sums[key].insert(who.begin(), who.end());
  }
  for (const auto& [key, columns] : counter_sums) lines.push_back(CounterLine(key, columns));
  for (const auto& [key, who] : visitor_sums) lines.push_back(SketchLine(key, who));
  std::sort(lines.begin(), lines.end(),
            [](const std::string& a, const std::string& b) { return CompareArchiveKeys(LineKey(a), LineKey(b)) < 0; });
  return lines;
}

// Only the hour lines of Expected's input, sorted, as the rebuild's new lines.
std::vector<std::string> HourLines(const std::string& counter_prefix, const CounterHours& counters,
                                   const std::string& unique_prefix, const VisitorHours& visitors) {
  std::vector<std::string> lines;
  for (const auto& [hour, columns] : counters) lines.push_back(CounterLine(counter_prefix + *YmdhFromUnix(hour), columns));
  for (const auto& [hour, who] : visitors) lines.push_back(SketchLine(unique_prefix + *YmdhFromUnix(hour), who));
  std::sort(lines.begin(), lines.end(),
            [](const std::string& a, const std::string& b) { return CompareArchiveKeys(LineKey(a), LineKey(b)) < 0; });
  return lines;
}

std::vector<std::string> ThroughSource(std::vector<std::string> lines, uint64_t* spans = nullptr) {
  VectorLineSource input(std::move(lines));
  DayRecordSource days(&input);
  std::vector<std::string> out;
  std::string_view line;
  while (days.Next(&line)) out.emplace_back(line);
  EXPECT_TRUE(days.status().ok()) << days.status().ToString();
  if (spans != nullptr) *spans = days.spans_written();
  return out;
}

// Random hours of one key from `first_day` for `days` days: a few days busy,
// most empty or with an hour or two.
void RandomHours(std::mt19937_64& rng, int64_t first_day, int64_t days, CounterHours* counters,
                 VisitorHours* visitors) {
  const std::vector<std::string> countries = {"DE", "JP", "US", "FR"};
  for (int64_t d = first_day; d < first_day + days; ++d) {
    if (rng() % 3 != 0) continue;
    const int hours = 1 + static_cast<int>(rng() % 4);
    for (int h = 0; h < hours; ++h) {
      const int64_t hour = d * 86400 + static_cast<int64_t>(rng() % 24) * 3600;
      (*counters)[hour][countries[rng() % countries.size()]] += 1 + static_cast<int64_t>(rng() % 5);
      (*visitors)[hour].insert(rng() % 40);
    }
  }
}

TEST(SpanRecords, EverySpanWithHoursHoldsTheirSumAfterItsLastDay) {
  std::mt19937_64 rng(77);
  CounterHours counters;
  VisitorHours visitors;
  // 300 days from 2011-12-20: across a year's end and many spans of every level.
  RandomHours(rng, DaysFromCivil({2011, 12, 20}), 300, &counters, &visitors);
  ASSERT_GT(counters.size(), 100u);
  uint64_t spans = 0;
  const std::vector<std::string> got =
      ThroughSource(HourLines("c.u|k.", counters, "~u|k.", visitors), &spans);
  const std::vector<std::string> want = Expected("c.u|k.", counters, "~u|k.", visitors);
  EXPECT_EQ(got, want);
  EXPECT_GT(spans, 0u);
  for (size_t i = 1; i < got.size(); ++i) ASSERT_LT(CompareArchiveKeys(LineKey(got[i - 1]), LineKey(got[i])), 0) << i;
}

TEST(SpanRecords, AcrossTheEraBoundaryAndBetweenKeys) {
  // Hours either side of 2032-01-01 (4- and 5-character codes) for two keys,
  // and a total and a lookup between them, passed on untouched.
  CounterHours a, b;
  VisitorHours no_visitors;
  const int64_t boundary = DaysFromCivil({2032, 1, 1}) * 86400;
  a[boundary - 3600]["US"] = 1;
  a[boundary]["US"] = 2;
  a[boundary + 40 * 86400]["JP"] = 3;
  b[boundary - 200 * 86400]["DE"] = 4;
  std::vector<std::string> input = HourLines("c.u|a.", a, "", {});
  for (const std::string& line : HourLines("c.u|b.", b, "", {})) input.push_back(line);
  input.push_back("l|AAAAAAAAAAA=,http://x");
  input.push_back("u|a,vcvn:1 w0110:2");
  std::vector<std::string> want = Expected("c.u|a.", a, "~none.", no_visitors);
  for (const std::string& line : Expected("c.u|b.", b, "~none.", no_visitors)) want.push_back(line);
  want.push_back("l|AAAAAAAAAAA=,http://x");
  want.push_back("u|a,vcvn:1 w0110:2");
  EXPECT_EQ(ThroughSource(input), want);
}

// Day and span records in the input are dropped and made again, so a file
// read in full (an older format's conversion) comes out as if built afresh.
TEST(SpanRecords, RecordsInTheInputAreMadeAgainFromTheHours) {
  std::mt19937_64 rng(5);
  CounterHours counters;
  VisitorHours visitors;
  RandomHours(rng, DaysFromCivil({2020, 2, 1}), 90, &counters, &visitors);
  const std::vector<std::string> built = Expected("c.u|k.", counters, "~u|k.", visitors);
  std::vector<std::string> damaged = built;
  for (std::string& line : damaged) {
    if (line.find("z3,") != std::string::npos) line = line.substr(0, line.find(',')) + ",XX:1";
  }
  EXPECT_EQ(ThroughSource(damaged), built);
}

// A previous generation built from old hours, merged with new ones (late
// hours into its days and spans, new days, a new key): the file equals the
// one built from all hours at once.
TEST(SpanRecords, MergedIntoThePreviousGenerationEqualsBuildingEverythingAtOnce) {
  std::mt19937_64 rng(11);
  CounterHours old_counters, new_counters, all_counters;
  VisitorHours old_visitors, new_visitors, all_visitors;
  const int64_t first = DaysFromCivil({2023, 5, 1});
  RandomHours(rng, first, 200, &old_counters, &old_visitors);
  RandomHours(rng, first + 150, 60, &new_counters, &new_visitors);  // late data, then new days
  for (const auto* part : {&old_counters, &new_counters}) {
    for (const auto& [hour, columns] : *part) {
      for (const auto& [name, n] : columns) all_counters[hour][name] += n;
    }
  }
  for (const auto* part : {&old_visitors, &new_visitors}) {
    for (const auto& [hour, who] : *part) all_visitors[hour].insert(who.begin(), who.end());
  }
  std::string previous;
  for (const std::string& line : ThroughSource(HourLines("c.u|k.", old_counters, "~u|k.", old_visitors))) {
    previous += line + "\n";
  }
  clickatron::testing::TempDir tmp;
  VectorLineSource added(HourLines("c.u|k.", new_counters, "~u|k.", new_visitors), "new");
  MergingSource merged({&added});
  DayRecordSource days(&merged);
  auto writer = ShardFileWriter::Create(tmp / "out.csv");
  ASSERT_TRUE(writer.ok());
  ArchiveMergeStats stats;
  const Status st = MergeIntoArchive(previous, &days, writer->get(), {}, &stats);
  ASSERT_TRUE(st.ok()) << st.ToString();
  ASSERT_TRUE((*writer)->Finish().ok());
  std::string want;
  for (const std::string& line : Expected("c.u|k.", all_counters, "~u|k.", all_visitors)) want += line + "\n";
  EXPECT_EQ(clickatron::testing::ReadAll(tmp / "out.csv"), want);
}

}  // namespace
}  // namespace clickatron::rebuild
