// RetentionSource (retention_rollup.h): a namespace's hours before
// hourly_from rolled into their day's anchor (the day's start + 12 h in the
// policy's zone), summed or united, hours before kept_from dropped, its day
// and span records dropped; every other line passed on untouched; the output
// sorted, and a second pass over it a no-op.
//
// The first test's input and expected lines are written out by hand (2026
// hour codes: 'q' is 2026, then month, day and hour in base 32, so "q33c" is
// 2026-03-03T12:00Z). The others build their input from tables of hours and
// compute what should come out with a small oracle of their own: the day of
// an hour is looked up in a hand-written list of the zone's day starts (or,
// for a fixed offset, floor((t + offset) / 86400)), its anchor is that start
// + 12 h, and sketches are expected to equal one sketch every visitor of the
// day was added to (unique_sketch.h: a sketch's text is a function of its
// set), never a union made the way the code does it.
#include "retention_rollup.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <cstdint>
#include <functional>
#include <limits>
#include <map>
#include <optional>
#include <set>
#include <string>
#include <vector>

#include "clickatron/record.h"
#include "clickatron/retention.h"
#include "clickatron/timezone.h"
#include "clickatron/unique_sketch.h"
#include "clickatron/ymdh.h"
#include "sortmerge/line_io.h"

namespace clickatron::rebuild::retention_rollup_test {
namespace {

constexpr int64_t kHour = 3600;
constexpr int64_t kDay = 86400;

// Days since 1970-01-01 (`date -u -d DATE +%s` / 86400).
constexpr int64_t kMar01 = 20513;  // 2026-03-01

std::string KeyOf(const std::string& line) { return line.substr(0, line.find(',')); }

// The archive's order: key + "," bytewise.
bool ArchiveLess(const std::string& a, const std::string& b) { return KeyOf(a) + "," < KeyOf(b) + ","; }

// Sorted, and no key twice: what RetentionSource requires of its input.
void ExpectArchiveOrder(const std::vector<std::string>& lines, const char* what) {
  for (size_t i = 1; i < lines.size(); ++i) {
    EXPECT_TRUE(ArchiveLess(lines[i - 1], lines[i])) << what << ": \"" << lines[i - 1] << "\" then \"" << lines[i]
                                                     << "\"";
  }
}

std::string Code(int64_t t) {
  auto code = YmdhFromUnix(t);
  EXPECT_TRUE(code.ok()) << code.status().ToString();
  return code.ok() ? *code : std::string("?");
}

std::string DayCode(int64_t day) {
  auto code = DayCodeFromDays(day);
  EXPECT_TRUE(code.ok()) << code.status().ToString();
  return code.ok() ? *code : std::string("?");
}

// A visitor's hash as the API makes it (XXH3 of a token): HyperLogLog's
// estimate needs well-mixed hashes.
uint64_t Visitor(uint64_t n) { return HashVisitor("visitor-" + std::to_string(n)); }

UniqueSketch SketchOf(const std::set<uint64_t>& visitors) {
  UniqueSketch s;
  for (uint64_t v : visitors) s.Add(Visitor(v));
  return s;
}
std::string Sketch(const std::set<uint64_t>& visitors) { return SketchOf(visitors).ToText(); }
std::set<uint64_t> Range(uint64_t a, uint64_t b) {
  std::set<uint64_t> out;
  for (uint64_t v = a; v < b; ++v) out.insert(v);
  return out;
}

RetentionSource::Rule MakeRule(std::string ns, std::string zone_name, int64_t hourly_from,
                               std::optional<int64_t> kept_from, TimeZoneDb& zones) {
  auto zone = RetentionZone::Open(zone_name, zones);
  EXPECT_TRUE(zone.ok()) << zone.status().ToString();
  return RetentionSource::Rule{AppliedRetention{std::move(ns), std::move(zone_name), hourly_from, kept_from},
                               zone.ok() ? *zone : RetentionZone()};
}

struct Rolled {
  std::vector<std::string> lines;
  std::map<std::string, RetentionSource::Counts> counts;
  Status status;
};

Rolled Roll(std::vector<std::string> input, const std::vector<RetentionSource::Rule>& rules) {
  VectorLineSource source(std::move(input), "input");
  RetentionSource rolled(&source, rules);
  Rolled run;
  std::string_view line;
  while (rolled.Next(&line)) run.lines.emplace_back(line);
  run.counts = rolled.counts();
  run.status = rolled.status();
  return run;
}

// ---------------------------------------------------------------- by hand, UTC

// ns u: UTC, hours kept from 2026-03-05 (q350), nothing before 2026-03-02 (q320).
TEST(RetentionSourceTest, UtcDaysRolledByHand) {
  TimeZoneDb zones;
  const int64_t kept_from = (kMar01 + 1) * kDay;     // 2026-03-02T00:00Z
  const int64_t hourly_from = (kMar01 + 4) * kDay;   // 2026-03-05T00:00Z
  ASSERT_EQ(Code(kept_from), "q320");
  ASSERT_EQ(Code(hourly_from), "q350");
  ASSERT_EQ(DayCode(kMar01 + 2), "q33");

  // Visitors of the unique records.
  const std::set<uint64_t> jp = Range(100, 103), us_a = Range(0, 10), us_b = Range(5, 20);
  const std::set<uint64_t> u1 = Range(0, 40), u2 = Range(30, 70), u3 = Range(1, 2), u4 = Range(7, 9);
  std::set<uint64_t> us_ab = us_a, u12 = u1;
  us_ab.insert(us_b.begin(), us_b.end());
  u12.insert(u2.begin(), u2.end());
  ASSERT_EQ(us_ab.size(), 20u);
  ASSERT_EQ(u12.size(), 70u);

  const std::vector<std::string> input = {
      "c.u|a.q313,US:5",              // before kept_from: dropped
      "c.u|a.q32,JP:1 US:4",          // a day record: dropped
      "c.u|a.q320,JP:1",              // 03-02: rolled to q32c
      "c.u|a.q32n,US:4",
      "c.u|a.q33,DE:2 JP:3 US:-1",    // day record
      "c.u|a.q335,DE:2 US:1",         // 03-03: rolled to q33c
      "c.u|a.q33c,JP:3",              // (its anchor)
      "c.u|a.q33h,US:-2",
      "c.u|a.q34,US:6",               // day record
      "c.u|a.q340,US:6",              // 03-04: one hour, moved to q34c
      "c.u|a.q350,JP:7",              // hourly: untouched
      "c.u|a.q35z1,JP:7 US:6",        // a span record (03-04 and 03-05): dropped
      "c.u|b.q33a,US:1",              // another key, the same day: its own record
      "c.v|a.q31,US:5",               // namespace v has no rule: untouched, day records too
      "c.v|a.q313,US:5",
      "l|AAAAAAAAAAA=,http://x,y",    // lookups: untouched
      "u.v|a.q313,US:2",              // subtotal namespace "u" of namespace v: not u's
      "uu|a,q310:1",                  // namespace uu is not u
      "u|a,q310:100 q320:1 q321:2 q33c:3 q33d:4 q340:5 q34n:6 q350:7 q36a:8",
      "u|b,q310:1 q31n:2",            // every column before kept_from: the line goes
      "u|c,q350:1 q35n:2",            // every column hourly
      "u|d,q32c:5",                   // already rolled
      "v|a,q310:1 q320:2",
      "~c.u|a.q33,US:" + Sketch(us_ab),          // a day unique subtotal: dropped
      "~c.u|a.q330,JP:" + Sketch(jp) + " US:" + Sketch(us_a),
      "~c.u|a.q331,US:" + Sketch(us_b),
      "~u|a.q310," + Sketch(u3),                 // before kept_from
      "~u|a.q33," + Sketch(u12),                 // a day unique total: dropped
      "~u|a.q330," + Sketch(u1),
      "~u|a.q33n," + Sketch(u2),
      "~u|a.q350," + Sketch(u3),                 // hourly
      "~v|a.q330," + Sketch(u4),
  };
  ExpectArchiveOrder(input, "input");

  const std::vector<std::string> want = {
      "c.u|a.q32c,JP:1 US:4",
      "c.u|a.q33c,DE:2 JP:3 US:-1",
      "c.u|a.q34c,US:6",
      "c.u|a.q350,JP:7",
      "c.u|b.q33c,US:1",
      "c.v|a.q31,US:5",
      "c.v|a.q313,US:5",
      "l|AAAAAAAAAAA=,http://x,y",
      "u.v|a.q313,US:2",
      "uu|a,q310:1",
      "u|a,q32c:3 q33c:7 q34c:11 q350:7 q36a:8",
      "u|c,q350:1 q35n:2",
      "u|d,q32c:5",
      "v|a,q310:1 q320:2",
      "~c.u|a.q33c,JP:" + Sketch(jp) + " US:" + Sketch(us_ab),
      "~u|a.q33c," + Sketch(u12),
      "~u|a.q350," + Sketch(u3),
      "~v|a.q330," + Sketch(u4),
  };
  ExpectArchiveOrder(want, "want");

  const std::vector<RetentionSource::Rule> rules = {MakeRule("u", "UTC", hourly_from, kept_from, zones)};
  const Rolled first = Roll(input, rules);
  ASSERT_TRUE(first.status.ok()) << first.status.ToString();
  EXPECT_EQ(first.lines, want);

  // The united sketches count each visitor once.
  for (const std::string& line : first.lines) {
    if (line.starts_with("~u|a.q33c,")) {
      auto sketch = UniqueSketch::FromText(line.substr(line.find(',') + 1));
      ASSERT_TRUE(sketch.ok()) << sketch.status().ToString();
      EXPECT_EQ(sketch->Estimate(), 70u);
      EXPECT_TRUE(sketch->exact());
    }
  }

  // Counts: only for u. Dropped: c.u|a.q313, u|a's q310, u|b's two, ~u|a.q310.
  // Rolled (not anchors): c.u|a q320 q32n q335 q33h q340, c.u|b q33a, u|a q320
  // q321 q33d q340 q34n, ~c.u|a q330 q331, ~u|a q330 q33n. Anchors: c.u|a's
  // three days, c.u|b's one, u|a's three, u|d's one, one for each unique key.
  ASSERT_EQ(first.counts.size(), 1u);
  ASSERT_EQ(first.counts.count("u"), 1u);
  EXPECT_EQ(first.counts.at("u").hours_dropped, 5u);
  EXPECT_EQ(first.counts.at("u").hours_rolled, 15u);
  EXPECT_EQ(first.counts.at("u").anchors_written, 10u);

  // Again: nothing changes; the anchors are written again, nothing rolled or dropped.
  const Rolled second = Roll(first.lines, rules);
  ASSERT_TRUE(second.status.ok()) << second.status.ToString();
  EXPECT_EQ(second.lines, want);
  ASSERT_EQ(second.counts.count("u"), 1u);
  EXPECT_EQ(second.counts.at("u").hours_dropped, 0u);
  EXPECT_EQ(second.counts.at("u").hours_rolled, 0u);
  EXPECT_EQ(second.counts.at("u").anchors_written, 10u);
}

// Kept day and span records (a night rolling up whole UTC days): they pass
// through in their places, each day's hours roll into its noon between its
// day record and the spans that end with it.
TEST(RetentionSourceTest, DayAndSpanRecordsKeptInTheirPlaces) {
  TimeZoneDb zones;
  const int64_t hourly_from = (kMar01 + 4) * kDay;  // 2026-03-05T00:00Z
  const std::string d2 = DayCode(kMar01 + 1), d3 = DayCode(kMar01 + 2), d5 = DayCode(kMar01 + 4);
  const std::string noon2 = Code((kMar01 + 1) * kDay + 12 * kHour), noon3 = Code((kMar01 + 2) * kDay + 12 * kHour);
  // A span record that ends with 03-03 (after its hours).
  const std::string span = d3 + "z1";
  const std::vector<std::string> input = {
      "c.u|a." + d2 + ",JP:1 US:4",
      "c.u|a." + Code((kMar01 + 1) * kDay) + ",JP:1",
      "c.u|a." + Code((kMar01 + 1) * kDay + 23 * kHour) + ",US:4",
      "c.u|a." + d3 + ",DE:2",
      "c.u|a." + Code((kMar01 + 2) * kDay + 5 * kHour) + ",DE:2",
      "c.u|a." + span + ",DE:2 JP:1 US:4",
      "c.u|a." + d5 + ",US:7",
      "c.u|a." + Code((kMar01 + 4) * kDay + 3 * kHour) + ",US:7",
  };
  ExpectArchiveOrder(input, "input");
  const std::vector<std::string> want = {
      "c.u|a." + d2 + ",JP:1 US:4",
      "c.u|a." + noon2 + ",JP:1 US:4",
      "c.u|a." + d3 + ",DE:2",
      "c.u|a." + noon3 + ",DE:2",
      "c.u|a." + span + ",DE:2 JP:1 US:4",
      "c.u|a." + d5 + ",US:7",
      "c.u|a." + Code((kMar01 + 4) * kDay + 3 * kHour) + ",US:7",
  };
  VectorLineSource source(input, "input");
  RetentionSource kept(&source, {MakeRule("u", "UTC", hourly_from, std::nullopt, zones)}, /*keep_day_records=*/true);
  std::vector<std::string> got;
  std::string_view line;
  while (kept.Next(&line)) got.emplace_back(line);
  ASSERT_TRUE(kept.status().ok()) << kept.status().ToString();
  EXPECT_EQ(got, want);
  ExpectArchiveOrder(got, "output");
  EXPECT_EQ(kept.counts().at("u").hours_rolled, 3u);
}

TEST(RetentionSourceTest, NoRulesOrNoLinesOfTheRulesNamespacePassEverything) {
  TimeZoneDb zones;
  const std::vector<std::string> input = {"c.v|a.q31,US:5", "c.v|a.q313,US:5", "l|AAAAAAAAAAA=,x", "v|a,q310:1 q320:2"};
  const Rolled none = Roll(input, {});
  ASSERT_TRUE(none.status.ok());
  EXPECT_EQ(none.lines, input);
  EXPECT_TRUE(none.counts.empty());
  const Rolled other = Roll(input, {MakeRule("u", "UTC", (kMar01 + 4) * kDay, std::nullopt, zones)});
  ASSERT_TRUE(other.status.ok());
  EXPECT_EQ(other.lines, input);
  // Every rule has its counts, nothing counted.
  ASSERT_EQ(other.counts.size(), 1u);
  EXPECT_EQ(other.counts.at("u").hours_rolled + other.counts.at("u").anchors_written +
                other.counts.at("u").hours_dropped,
            0u);
  EXPECT_TRUE(Roll({}, {MakeRule("u", "UTC", 0, std::nullopt, zones)}).lines.empty());
}

TEST(RetentionSourceTest, ADaySumThatOverflowsFails) {
  TimeZoneDb zones;
  const std::vector<std::string> input = {
      "u|a,q320:" + std::to_string(std::numeric_limits<int64_t>::max()) + " q321:1",
  };
  const Rolled run = Roll(input, {MakeRule("u", "UTC", (kMar01 + 4) * kDay, std::nullopt, zones)});
  EXPECT_FALSE(run.status.ok());
  EXPECT_TRUE(run.lines.empty());
  EXPECT_NE(run.status.message().find("u|a"), std::string::npos) << run.status.message();
}

// ---------------------------------------------------------------- an oracle of the test's own

// Records of hours, as tables.
struct Data {
  // "ns|tkey" -> hour -> count.
  std::map<std::string, std::map<int64_t, int64_t>> totals;
  // "sns.ns|tkey." -> hour -> skey -> count.
  std::map<std::string, std::map<int64_t, std::map<std::string, int64_t>>> subtotals;
  // "~ns|tkey." -> hour -> visitors.
  std::map<std::string, std::map<int64_t, std::set<uint64_t>>> uniques;
};

std::string TotalLine(const std::string& key, const std::map<int64_t, int64_t>& columns) {
  std::string line = key + ",";
  for (const auto& [hour, count] : columns) {
    if (line.back() != ',') line += ' ';
    line += Code(hour) + ":" + std::to_string(count);
  }
  return line;
}

std::string SubtotalLine(const std::string& prefix, int64_t hour, const std::map<std::string, int64_t>& columns) {
  std::string line = prefix + Code(hour) + ",";
  for (const auto& [skey, count] : columns) {
    if (line.back() != ',') line += ' ';
    line += skey + ":" + std::to_string(count);
  }
  return line;
}

// The archive lines of `data`, sorted; with a day record for every UTC day
// a subtotal or unique key has hours on (for the source to drop).
std::vector<std::string> InputLines(const Data& data) {
  std::vector<std::string> lines;
  for (const auto& [key, columns] : data.totals) lines.push_back(TotalLine(key, columns));
  for (const auto& [prefix, hours] : data.subtotals) {
    std::set<int64_t> days;
    for (const auto& [hour, columns] : hours) {
      lines.push_back(SubtotalLine(prefix, hour, columns));
      days.insert(FloorDiv(hour, kDay));
    }
    for (int64_t day : days) lines.push_back(prefix + DayCode(day) + ",US:999999");
  }
  for (const auto& [prefix, hours] : data.uniques) {
    std::set<int64_t> days;
    for (const auto& [hour, visitors] : hours) {
      lines.push_back(prefix + Code(hour) + "," + Sketch(visitors));
      days.insert(FloorDiv(hour, kDay));
    }
    for (int64_t day : days) lines.push_back(prefix + DayCode(day) + "," + Sketch({999999}));
  }
  std::sort(lines.begin(), lines.end(), ArchiveLess);
  return lines;
}

struct Expected {
  std::vector<std::string> lines;
  RetentionSource::Counts counts;
};

// What a rule of `anchor_of` (hour -> its day's anchor), hourly_from and
// kept_from leaves of `data` (all of it the rule's namespace).
Expected Oracle(const Data& data, const std::function<int64_t(int64_t)>& anchor_of, int64_t hourly_from,
                std::optional<int64_t> kept_from) {
  Expected out;
  // Where one record's hour goes (nullopt: dropped), counting as the source
  // counts: hours dropped, hours moved, and each anchor the record gets once.
  struct Placer {
    Expected& out;
    const std::function<int64_t(int64_t)>& anchor_of;
    int64_t hourly_from;
    std::optional<int64_t> kept_from;
    std::set<int64_t> anchors;
    std::optional<int64_t> Place(int64_t hour) {
      if (kept_from && hour < *kept_from) {
        ++out.counts.hours_dropped;
        return std::nullopt;
      }
      if (hour >= hourly_from) return hour;
      const int64_t anchor = anchor_of(hour);
      if (anchors.insert(anchor).second) ++out.counts.anchors_written;
      if (anchor != hour) ++out.counts.hours_rolled;
      return anchor;
    }
  };
  for (const auto& [key, columns] : data.totals) {
    Placer placer{out, anchor_of, hourly_from, kept_from, {}};
    std::map<int64_t, int64_t> kept;
    for (const auto& [hour, count] : columns) {
      if (const std::optional<int64_t> at = placer.Place(hour)) kept[*at] += count;
    }
    if (!kept.empty()) out.lines.push_back(TotalLine(key, kept));
  }
  for (const auto& [prefix, hours] : data.subtotals) {
    Placer placer{out, anchor_of, hourly_from, kept_from, {}};
    std::map<int64_t, std::map<std::string, int64_t>> kept;
    for (const auto& [hour, columns] : hours) {
      const std::optional<int64_t> at = placer.Place(hour);
      if (!at) continue;
      for (const auto& [skey, count] : columns) kept[*at][skey] += count;
    }
    for (const auto& [hour, columns] : kept) out.lines.push_back(SubtotalLine(prefix, hour, columns));
  }
  for (const auto& [prefix, hours] : data.uniques) {
    Placer placer{out, anchor_of, hourly_from, kept_from, {}};
    std::map<int64_t, std::set<uint64_t>> kept;
    for (const auto& [hour, visitors] : hours) {
      if (const std::optional<int64_t> at = placer.Place(hour)) kept[*at].insert(visitors.begin(), visitors.end());
    }
    for (const auto& [hour, visitors] : kept) out.lines.push_back(prefix + Code(hour) + "," + Sketch(visitors));
  }
  std::sort(out.lines.begin(), out.lines.end(), ArchiveLess);
  return out;
}

// Every hour of [from, to) in one total, one subtotal and one unique key of
// ns u: the total's count is the hour's number from `from` plus one, the
// subtotal counts 1 under US for every hour (so a day's US is its length in
// hours) and the total's count under JP, and the unique hour has visitors
// n .. n+2 for the hour's number n (so neighbouring hours overlap).
Data EveryHour(int64_t from, int64_t to) {
  Data data;
  for (int64_t t = from, n = 0; t < to; t += kHour, ++n) {
    data.totals["u|a"][t] = n + 1;
    data.subtotals["c.u|a."][t] = {{"JP", n + 1}, {"US", 1}};
    data.uniques["~u|a."][t] = Range(static_cast<uint64_t>(n), static_cast<uint64_t>(n + 3));
  }
  return data;
}

void CheckAgainstOracle(const Data& data, const RetentionSource::Rule& rule,
                        const std::function<int64_t(int64_t)>& anchor_of) {
  const std::vector<std::string> input = InputLines(data);
  ExpectArchiveOrder(input, "input");
  const Expected want = Oracle(data, anchor_of, rule.applied.hourly_from, rule.applied.kept_from);
  const Rolled first = Roll(input, {rule});
  ASSERT_TRUE(first.status.ok()) << first.status.ToString();
  EXPECT_EQ(first.lines, want.lines);
  ExpectArchiveOrder(first.lines, "output");
  ASSERT_EQ(first.counts.count(rule.applied.ns), 1u);
  const RetentionSource::Counts& got = first.counts.at(rule.applied.ns);
  EXPECT_EQ(got.hours_rolled, want.counts.hours_rolled);
  EXPECT_EQ(got.hours_dropped, want.counts.hours_dropped);
  EXPECT_EQ(got.anchors_written, want.counts.anchors_written);
  const Rolled second = Roll(first.lines, {rule});
  ASSERT_TRUE(second.status.ok()) << second.status.ToString();
  EXPECT_EQ(second.lines, first.lines);
  EXPECT_EQ(second.counts.at(rule.applied.ns).hours_rolled, 0u);
  EXPECT_EQ(second.counts.at(rule.applied.ns).hours_dropped, 0u);
}

// The counter value of `line` under column `name` (or nullopt).
std::optional<int64_t> ColumnOf(const std::vector<std::string>& lines, const std::string& key,
                                const std::string& name) {
  for (const std::string& line : lines) {
    if (KeyOf(line) != key) continue;
    const std::string value = " " + line.substr(line.find(',') + 1) + " ";
    const size_t at = value.find(" " + name + ":");
    if (at == std::string::npos) return std::nullopt;
    const size_t begin = at + name.size() + 2;
    return std::stoll(value.substr(begin, value.find(' ', begin) - begin));
  }
  return std::nullopt;
}

// The anchor of an hour from a hand-written list of a zone's day starts.
std::function<int64_t(int64_t)> AnchorFromStarts(std::vector<int64_t> starts) {
  return [starts = std::move(starts)](int64_t hour) {
    auto next = std::upper_bound(starts.begin(), starts.end(), hour);
    EXPECT_TRUE(next != starts.begin() && next != starts.end()) << "hour " << hour << " outside the table";
    return *(next - 1) + 12 * kHour;
  };
}

TEST(RetentionSourceTest, UtcAgainstTheOracleWithKeptFrom) {
  TimeZoneDb zones;
  const int64_t hourly_from = (kMar01 + 5) * kDay;
  const int64_t kept_from = (kMar01 + 2) * kDay;
  const Data data = EveryHour(kMar01 * kDay - 7 * kHour, (kMar01 + 7) * kDay + 3 * kHour);
  CheckAgainstOracle(data, MakeRule("u", "UTC", hourly_from, kept_from, zones),
                     [](int64_t hour) { return FloorDiv(hour, kDay) * kDay + 12 * kHour; });
}

// America/New_York across the spring change: 2026-03-08 (EST, 05:00Z) to
// 2026-03-09 (EDT, 04:00Z) is a day of 23 hours.
TEST(RetentionSourceTest, NewYorkSpringDayOfTwentyThreeHours) {
  TimeZoneDb zones;
  const int64_t mar05 = 20517, mar10 = 20522;
  std::vector<int64_t> starts;
  for (int64_t day = mar05; day <= mar10 + 1; ++day) {
    starts.push_back(day * kDay + (day <= mar05 + 3 ? 5 : 4) * kHour);  // EST through 03-08, EDT after
  }
  const int64_t hourly_from = starts[5];  // 2026-03-10T04:00Z
  ASSERT_EQ(hourly_from, mar10 * kDay + 4 * kHour);
  const Data data = EveryHour((mar05 + 1) * kDay, mar10 * kDay + 12 * kHour);  // from 2026-03-06T00:00Z
  const RetentionSource::Rule rule = MakeRule("u", "America/New_York", hourly_from, std::nullopt, zones);
  CheckAgainstOracle(data, rule, AnchorFromStarts(starts));

  // And by hand: the subtotal's US is each day's length in hours, at its anchor.
  const Rolled run = Roll(InputLines(data), {rule});
  const int64_t mar08_start = (mar05 + 3) * kDay + 5 * kHour;   // 2026-03-08T05:00Z
  const int64_t mar09_start = (mar05 + 4) * kDay + 4 * kHour;   // 2026-03-09T04:00Z
  EXPECT_EQ(ColumnOf(run.lines, "c.u|a." + Code(mar08_start + 12 * kHour), "US"), 23);
  EXPECT_EQ(ColumnOf(run.lines, "c.u|a." + Code(mar09_start + 12 * kHour), "US"), 24);
  // 2026-03-06T00:00Z .. 04:00Z are the last 5 hours of 03-05 in New York.
  EXPECT_EQ(ColumnOf(run.lines, "c.u|a." + Code(mar05 * kDay + 5 * kHour + 12 * kHour), "US"), 5);
  // The total: 03-08 (from 03-08T05:00Z, 2 * 24 + 5 hours after the first)
  // holds the hours numbered 53 .. 75, counted n + 1.
  int64_t sum = 0;
  for (int64_t n = 53; n < 53 + 23; ++n) sum += n + 1;
  EXPECT_EQ(ColumnOf(run.lines, "u|a", Code(mar08_start + 12 * kHour)), sum);
  EXPECT_EQ(ColumnOf(run.lines, "u|a", Code(mar08_start)), std::nullopt);
  EXPECT_EQ(ColumnOf(run.lines, "u|a", Code(hourly_from)), 4 * 24 + 4 + 1);  // untouched
}

// America/New_York across the autumn change: 2026-11-01 (EDT, 04:00Z) to
// 2026-11-02 (EST, 05:00Z) is a day of 25 hours; and kept_from.
TEST(RetentionSourceTest, NewYorkAutumnDayOfTwentyFiveHours) {
  TimeZoneDb zones;
  const int64_t oct30 = 20756, nov03 = 20760;
  std::vector<int64_t> starts;
  for (int64_t day = oct30; day <= nov03 + 1; ++day) {
    starts.push_back(day * kDay + (day <= oct30 + 2 ? 4 : 5) * kHour);  // EDT through 11-01, EST after
  }
  const int64_t kept_from = starts[1];     // 2026-10-31T04:00Z
  const int64_t hourly_from = starts[4];   // 2026-11-03T05:00Z
  const Data data = EveryHour(oct30 * kDay, nov03 * kDay + 20 * kHour);
  const RetentionSource::Rule rule = MakeRule("u", "America/New_York", hourly_from, kept_from, zones);
  CheckAgainstOracle(data, rule, AnchorFromStarts(starts));
  const Rolled run = Roll(InputLines(data), {rule});
  const int64_t nov01_start = (oct30 + 2) * kDay + 4 * kHour;
  EXPECT_EQ(ColumnOf(run.lines, "c.u|a." + Code(nov01_start + 12 * kHour), "US"), 25);
  EXPECT_EQ(ColumnOf(run.lines, "c.u|a." + Code(kept_from + 12 * kHour), "US"), 24);
  // Nothing before kept_from: the first subtotal record is 10-31's anchor.
  for (const std::string& line : run.lines) {
    if (!line.starts_with("c.u|a.")) continue;
    EXPECT_EQ(KeyOf(line), "c.u|a." + Code(kept_from + 12 * kHour));
    break;
  }
}

// UTC+9: a day is 15:00Z to 15:00Z, across two UTC days (and their day
// records), its anchor 03:00Z; the first hours of a UTC day roll into an
// anchor before them.
TEST(RetentionSourceTest, PlusNineDaysCrossUtcDays) {
  TimeZoneDb zones;
  const int64_t jan09 = 20462, jan12 = 20465;  // 2026-01-09, 2026-01-12
  const int64_t hourly_from = jan12 * kDay - 9 * kHour;  // 2026-01-12 in +9: 2026-01-11T15:00Z
  const int64_t kept_from = jan09 * kDay - 9 * kHour;    // 2026-01-09 in +9: 2026-01-08T15:00Z
  const auto anchor_of = [](int64_t hour) {
    return FloorDiv(hour + 9 * kHour, kDay) * kDay - 9 * kHour + 12 * kHour;
  };
  const Data data = EveryHour((jan09 - 1) * kDay, (jan12 + 1) * kDay);
  const RetentionSource::Rule rule = MakeRule("u", "+9", hourly_from, kept_from, zones);
  CheckAgainstOracle(data, rule, anchor_of);
  const Rolled run = Roll(InputLines(data), {rule});
  // 2026-01-10 in +9: 01-09T15:00Z .. 01-10T15:00Z, anchor 01-10T03:00Z.
  EXPECT_EQ(ColumnOf(run.lines, "c.u|a." + Code((jan09 + 1) * kDay + 3 * kHour), "US"), 24);
  EXPECT_EQ(ColumnOf(run.lines, "u|a", Code(jan09 * kDay + 14 * kHour)), std::nullopt);  // rolled
}

// A day of +9 across the boundary of hour code eras (2031-12-31T15:00Z ..
// 2032-01-01T15:00Z: "vcvf" .. "w011e"), its anchor "w0113".
TEST(RetentionSourceTest, ADayAcrossTheEraBoundary) {
  TimeZoneDb zones;
  const int64_t dec30_2031 = 22643, jan02_2032 = 22646;
  const int64_t hourly_from = jan02_2032 * kDay - 9 * kHour;
  const auto anchor_of = [](int64_t hour) {
    return FloorDiv(hour + 9 * kHour, kDay) * kDay - 9 * kHour + 12 * kHour;
  };
  const Data data = EveryHour(dec30_2031 * kDay, jan02_2032 * kDay + 6 * kHour);
  const RetentionSource::Rule rule = MakeRule("u", "+9", hourly_from, std::nullopt, zones);
  CheckAgainstOracle(data, rule, anchor_of);
  const Rolled run = Roll(InputLines(data), {rule});
  EXPECT_EQ(ColumnOf(run.lines, "c.u|a.w0113", "US"), 24);
}

// 1970-01-01T00:00Z..05:00Z are of the UTC-5 day 1969-12-31, whose middle
// has no hour code: they go to the first hour that has one (a rebuild must
// not fail on data stamped at the epoch).
TEST(RetentionSourceTest, TheFirstHoursOfTheEpochWestOfUtc) {
  TimeZoneDb zones;
  const Data data = EveryHour(0, 2 * kDay);
  const RetentionSource::Rule rule = MakeRule("u", "-5", 2 * kDay + 5 * kHour, std::nullopt, zones);
  const auto anchor_of = [](int64_t hour) {
    return std::max<int64_t>(0, FloorDiv(hour - 5 * kHour, kDay) * kDay + 5 * kHour + 12 * kHour);
  };
  CheckAgainstOracle(data, rule, anchor_of);
  const Rolled run = Roll(InputLines(data), {rule});
  ASSERT_TRUE(run.status.ok()) << run.status.ToString();
  EXPECT_EQ(ColumnOf(run.lines, "c.u|a." + Code(0), "US"), 5);  // the five hours before 05:00Z
}

// Sketches large enough for the dense form: the union is the register-wise
// max, the same sketch as every visitor added to one.
TEST(RetentionSourceTest, DenseSketchesUniteLikeOneSketch) {
  TimeZoneDb zones;
  Data data;
  const int64_t day = (kMar01 + 2) * kDay;
  data.uniques["~u|a."][day + 1 * kHour] = Range(0, 2000);
  data.uniques["~u|a."][day + 5 * kHour] = Range(1500, 4000);
  data.uniques["~u|a."][day + 20 * kHour] = Range(10, 20);
  data.uniques["~u|b."][day + 2 * kHour] = Range(0, 1000);
  data.uniques["~u|b."][day + 3 * kHour] = Range(1000, 2000);  // two explicit ones, a dense union
  const RetentionSource::Rule rule = MakeRule("u", "UTC", (kMar01 + 5) * kDay, std::nullopt, zones);
  CheckAgainstOracle(data, rule, [](int64_t hour) { return FloorDiv(hour, kDay) * kDay + 12 * kHour; });
  const Rolled run = Roll(InputLines(data), {rule});
  ASSERT_EQ(run.lines.size(), 2u);
  for (const auto& [line, distinct] : {std::pair{run.lines[0], 4000.0}, std::pair{run.lines[1], 2000.0}}) {
    auto sketch = UniqueSketch::FromText(line.substr(line.find(',') + 1));
    ASSERT_TRUE(sketch.ok()) << sketch.status().ToString();
    EXPECT_FALSE(sketch->exact());
    // HyperLogLog at precision 14: 0.81% standard error.
    EXPECT_NEAR(static_cast<double>(sketch->Estimate()), distinct, distinct * 0.03) << KeyOf(line);
  }
}

}  // namespace
}  // namespace clickatron::rebuild::retention_rollup_test
