// Counters across the 2031-12-31T23:00Z / 2032-01-01T00:00Z boundary, where
// hour codes go from the seed's 4 characters ("vcvn") to 5 ("w0110"), carried
// through every tier: a bulk load (`clickatron-rebuild load --now`) with hours
// on both sides, realtime lines POSTed straight to the owning shard for
// 2031-12-31 (Yesterday) and 2032-01-01 (Today) with the ring on a manual clock
// at 2032-01-01, and the nightly `clickatron-rebuild run --date 2031-12-31`.
// After each step /clicks (hour, day, week, mweek, month; several zones,
// rollup on and off, units=-1) and /breakdown must equal an oracle computed
// here with plain arithmetic over (unix hour -> count) maps and the test's
// own civil-date and hour-code helpers (no code of the project's); and the
// realtime /fwmatch and archive /get and /fwmatch must hold exactly the
// records expected, with 4-character codes for 2031 and 5 for 2032, sorted.
#include <gtest/gtest.h>
#include <zlib.h>

#include <fmt/format.h>

#include <algorithm>
#include <chrono>
#include <fstream>
#include <map>
#include <set>
#include <string>
#include <vector>

#include "clickatron/query_string.h"
#include "integration/cluster_fixture.h"

// A namespace of this file's own: its names beside those of the other files
// compiled with it in one unity file (tests/CMakeLists.txt).
namespace clickatron::integration::hour_code_boundary_test {
namespace {

using clickatron::testing::HttpGet;
using clickatron::testing::HttpPost;

// ---- the test's own calendar and hour codes ------------------------------

constexpr int64_t kHour = 3600;
constexpr int64_t kDay = 86400;

int64_t FloorDivide(int64_t a, int64_t b) { return a / b - ((a % b != 0) && ((a < 0) != (b < 0))); }

int64_t DaysOf(int y, unsigned m, unsigned d) {
  using namespace std::chrono;
  return sys_days{year{y} / month{m} / day{d}}.time_since_epoch().count();
}

// Unix seconds of y-m-d h:min UTC.
int64_t At(int y, unsigned m, unsigned d, int h, int min = 0) {
  return DaysOf(y, m, d) * kDay + h * kHour + min * 60;
}

std::chrono::year_month_day CivilOfDays(int64_t days) {
  using namespace std::chrono;
  return year_month_day{sys_days{std::chrono::days{days}}};
}

// The hour code as specified (ymdh.h's comment, the brief): 2000-2031 as
// b32(year-2000) b32(month) b32(day) b32(hour); other years an era mark then
// b32(year - era start), month, day, hour.
std::string HourCode(int64_t ts) {
  static constexpr char kDigits[] = "0123456789abcdefghijklmnopqrstuv";
  const int64_t days = FloorDivide(ts, kDay);
  const int hour = static_cast<int>((ts - days * kDay) / kHour);
  const auto ymd = CivilOfDays(days);
  const int y = static_cast<int>(ymd.year());
  std::string code;
  if (y >= 2000 && y <= 2031) {
    code.push_back(kDigits[y - 2000]);
  } else if (y >= 1970 && y <= 1999) {
    code += {'/', kDigits[y - 1970]};  // the history mark (docs/protocols.md)
  } else if (y >= 2032 && y <= 2063) {
    code += {'w', kDigits[y - 2032]};
  } else if (y >= 2064 && y <= 2095) {
    code += {'x', kDigits[y - 2064]};
  } else {
    code += {'y', kDigits[y - 2096]};
  }
  code.push_back(kDigits[static_cast<unsigned>(ymd.month())]);
  code.push_back(kDigits[static_cast<unsigned>(ymd.day())]);
  code.push_back(kDigits[hour]);
  return code;
}

// Start (unix s) of the unit holding `ts` at a fixed offset, by hand: shift to
// local time, floor to the unit there, shift back.
int64_t UnitStart(const std::string& unit, int64_t ts, int offset_hours) {
  const int64_t local = ts + offset_hours * kHour;
  const int64_t day = FloorDivide(local, kDay);
  int64_t start_local = 0;
  if (unit == "hour") {
    start_local = FloorDivide(local, kHour) * kHour;
  } else if (unit == "day") {
    start_local = day * kDay;
  } else if (unit == "week" || unit == "mweek") {
    const int64_t sunday_based = ((day + 4) % 7 + 7) % 7;  // 1970-01-01 was a Thursday
    const int64_t back = unit == "week" ? sunday_based : (sunday_based + 6) % 7;
    start_local = (day - back) * kDay;
  } else {  // month
    const auto ymd = CivilOfDays(day);
    start_local = DaysOf(static_cast<int>(ymd.year()), static_cast<unsigned>(ymd.month()), 1) * kDay;
  }
  return start_local - offset_hours * kHour;
}

// `units` unit starts ending with the one holding `reference`, newest first.
std::vector<int64_t> WindowStarts(const std::string& unit, int units, int offset, int64_t reference) {
  std::vector<int64_t> starts;
  for (int64_t s = UnitStart(unit, reference, offset); static_cast<int>(starts.size()) < units;
       s = UnitStart(unit, s - 1, offset)) {
    starts.push_back(s);
  }
  return starts;
}

// units=-1: from the reference unit back to the unit of `first_hour`, newest first.
std::vector<int64_t> StartsBackTo(const std::string& unit, int offset, int64_t reference, int64_t first_hour) {
  const int64_t first = UnitStart(unit, first_hour, offset);
  std::vector<int64_t> starts;
  for (int64_t s = UnitStart(unit, reference, offset); s >= first; s = UnitStart(unit, s - 1, offset)) {
    starts.push_back(s);
  }
  return starts;
}

// ---- the oracle ---------------------------------------------------------------

struct Click {
  std::string key;
  int64_t ts;
  int64_t value;
  std::string country;
};

// (unix hour -> count) per key, and per key (unix hour -> country -> count).
struct Tally {
  std::map<std::string, std::map<int64_t, int64_t>> totals;
  std::map<std::string, std::map<int64_t, std::map<std::string, int64_t>>> subtotals;

  void Add(const Click& c) {
    const int64_t hour = FloorDivide(c.ts, kHour) * kHour;
    totals[c.key][hour] += c.value;
    subtotals[c.key][hour][c.country] += c.value;
  }
  void AddTally(const Tally& other, int64_t end_ts) {  // hours before end_ts only
    for (const auto& [key, hours] : other.totals) {
      for (const auto& [h, n] : hours) {
        if (h < end_ts) totals[key][h] += n;
      }
    }
    for (const auto& [key, hours] : other.subtotals) {
      for (const auto& [h, skeys] : hours) {
        if (h >= end_ts) continue;
        for (const auto& [s, n] : skeys) subtotals[key][h][s] += n;
      }
    }
  }
  const std::map<int64_t, int64_t>& Hours(const std::string& key) const {
    static const std::map<int64_t, int64_t> kNone;
    auto it = totals.find(key);
    return it == totals.end() ? kNone : it->second;
  }

  std::vector<std::pair<int64_t, int64_t>> Series(const std::string& key, const std::string& unit, int offset,
                                                  const std::vector<int64_t>& starts) const {
    std::map<int64_t, int64_t> sums;
    for (const auto& [h, n] : Hours(key)) sums[UnitStart(unit, h, offset)] += n;
    std::vector<std::pair<int64_t, int64_t>> out;
    for (int64_t s : starts) out.emplace_back(s, sums.count(s) ? sums.at(s) : 0);
    return out;
  }

  std::vector<std::pair<std::string, int64_t>> Breakdown(const std::string& key, const std::string& unit, int offset,
                                                         const std::vector<int64_t>& starts, size_t limit) const {
    const std::set<int64_t> window(starts.begin(), starts.end());
    std::map<std::string, int64_t> sums;
    if (auto it = subtotals.find(key); it != subtotals.end()) {
      for (const auto& [h, skeys] : it->second) {
        if (!window.count(UnitStart(unit, h, offset))) continue;
        for (const auto& [s, n] : skeys) sums[s] += n;
      }
    }
    std::vector<std::pair<std::string, int64_t>> out;
    for (const auto& [s, n] : sums) {
      if (n != 0) out.emplace_back(s, n);
    }
    std::sort(out.begin(), out.end(), [](const auto& a, const auto& b) {
      return a.second != b.second ? a.second > b.second : a.first < b.first;
    });
    if (out.size() > limit) out.resize(limit);
    return out;
  }
};

std::string Join(const std::vector<std::string>& parts, size_t max = 12) {
  std::string out;
  for (size_t i = 0; i < parts.size() && i < max; ++i) out += "\n  " + parts[i];
  if (parts.size() > max) out += fmt::format("\n  … and {} more", parts.size() - max);
  return out;
}

uint32_t ShardOf(const std::string& shard_key, uint32_t shards) {
  return static_cast<uint32_t>(crc32(0, reinterpret_cast<const Bytef*>(shard_key.data()),
                                     static_cast<uInt>(shard_key.size()))) %
         shards;
}

// ---- the data -------------------------------------------------------------------

const std::string kBoundary = "boundary";  // loaded history + realtime, crc32 -> shard 0
const std::string kMidnight = "midnight";  // realtime only, crc32 -> shard 1
const std::vector<std::string> kKeys = {kBoundary, kMidnight};
const int64_t kNewYear = At(2032, 1, 1, 0);  // the first 5-character hour

struct Zone {
  std::string param;  // as sent in timezone=
  int offset;         // hours, as in force in January 2032
};
const std::vector<Zone> kZones = {
    {"0", 0}, {"-5", -5}, {"9", 9}, {"America/New_York", -5}, {"Asia/Tokyo", 9}};
struct Shape {
  std::string unit;
  int units;
};
const std::vector<Shape> kShapes = {{"hour", 48}, {"day", 7}, {"week", 3}, {"mweek", 3}, {"month", 4}};
// Two references in January 2032 (UTC): one just after the boundary (the hour
// window reaches back over it), one at the end of the month (in +9 it is
// already February).
const std::vector<int64_t> kReferences = {At(2032, 1, 1, 12, 30), At(2032, 1, 31, 23, 30)};

class HourCodeBoundaryTest : public ::testing::Test {
 protected:
  void SetUp() override {
    std::string error;
    ASSERT_TRUE(cluster_.StartAll(&error)) << error;
    // The shards never applied a batch: the manual clock may start them anywhere.
    ASSERT_TRUE(cluster_.RotateAll("2032-01-01", &error)) << error;
  }

  std::string RealtimeMember(const std::string& key) const {
    return fmt::format("realtime-{}", ShardOf("u|" + key, static_cast<uint32_t>(cluster_.config().realtime_shards)));
  }
  std::string ArchiveMember(const std::string& key) const {
    return fmt::format("archive-{}", ShardOf("u|" + key, static_cast<uint32_t>(cluster_.config().archive_shards)));
  }

  // Bulk-loads `clicks` as realtime-format lines (a total and a country
  // subtotal each) with `load --now`.
  void Load(const std::vector<Click>& clicks) {
    std::string text;
    for (const Click& c : clicks) {
      const std::string code = HourCode(c.ts);
      text += fmt::format("u|{}.{},{}\n", c.key, code, c.value);
      text += fmt::format("c.u|{}.{}.{},{}\n", c.key, c.country, code, c.value);
      loaded_.Add(c);
      all_.Add(c);
    }
    const std::string file = cluster_.dir() + "/boundary-history.csv";
    std::ofstream(file) << text;
    std::string output;
    ASSERT_EQ(cluster_.Load({"--now", file}, &output), 0) << output;
  }

  // POSTs `clicks` as realtime lines straight to the shard owning each key,
  // one batch per shard (lines combined per key as the API would).
  void SendRealtime(const std::vector<Click>& clicks) {
    std::map<std::string, std::map<std::string, int64_t>> lines;  // member -> key -> delta
    for (const Click& c : clicks) {
      const std::string code = HourCode(c.ts);
      const std::string member = RealtimeMember(c.key);
      lines[member][fmt::format("u|{}.{}", c.key, code)] += c.value;
      lines[member][fmt::format("c.u|{}.{}.{}", c.key, c.country, code)] += c.value;
      realtime_.Add(c);
      all_.Add(c);
    }
    for (const auto& [member, records] : lines) {
      std::string body;
      for (const auto& [key, delta] : records) body += fmt::format("{},{}\n", key, delta);
      const int seq = ++seq_[member];
      auto r = HttpPost(cluster_.member(member).listen, fmt::format("/incr?source=loader&seq={}", seq),
                        body, 10000);
      ASSERT_EQ(r.status_code, 200) << member << ": " << r.body << r.transport.ToString();
      auto j = nlohmann::json::parse(r.body, nullptr, false);
      ASSERT_FALSE(j.is_discarded()) << r.body;
      EXPECT_EQ(j["data"]["applied"], records.size()) << r.body;
      EXPECT_EQ(j["data"]["duplicate"], false) << r.body;
    }
  }

  // Every /clicks shape × zone × reference × rollup, and /breakdown across
  // the boundary, against all_. Returns the differences.
  std::vector<std::string> CompareQueries() const {
    std::vector<std::string> diffs;
    for (const std::string& key : kKeys) {
      for (int64_t reference : kReferences) {
        for (const Shape& shape : kShapes) {
          for (const Zone& zone : kZones) {
            const auto starts = WindowStarts(shape.unit, shape.units, zone.offset, reference);
            const auto expected = all_.Series(key, shape.unit, zone.offset, starts);
            const std::string base =
                fmt::format("/clicks?ns=u&key={}&unit={}&units={}&timezone={}&unit_reference_ts={}",
                            PercentEncode(key), shape.unit, shape.units, PercentEncode(zone.param), reference);
            CompareSeries(base, expected, zone.offset, &diffs);
            int64_t sum = 0;
            for (const auto& [s, n] : expected) sum += n;
            CompareRollup(base + "&rollup=true", sum, &diffs);
          }
        }
      }
      // /breakdown sns=c over the three days around the boundary, and over
      // the 48 hours before the first reference.
      for (const Zone& zone : kZones) {
        for (const Shape& shape : {Shape{"day", 3}, Shape{"hour", 48}}) {
          const int64_t reference = kReferences[0];
          const auto starts = WindowStarts(shape.unit, shape.units, zone.offset, reference);
          const auto expected = all_.Breakdown(key, shape.unit, zone.offset, starts, 10);
          const std::string q =
              fmt::format("/breakdown?sns=c&ns=u&key={}&unit={}&units={}&timezone={}&unit_reference_ts={}&limit=10",
                          PercentEncode(key), shape.unit, shape.units, PercentEncode(zone.param), reference);
          int status = 0;
          auto j = cluster_.ApiGet(q, &status);
          const auto& got = j.is_object() && j["data"].is_object() ? j["data"]["breakdown"] : nlohmann::json();
          bool same = status == 200 && got.is_array() && got.size() == expected.size();
          for (size_t i = 0; same && i < expected.size(); ++i) {
            same = got[i]["value"] == expected[i].first && got[i]["clicks"] == expected[i].second;
          }
          if (!same) {
            nlohmann::json want = nlohmann::json::array();
            for (const auto& [v, n] : expected) want.push_back({{"value", v}, {"clicks", n}});
            diffs.push_back(fmt::format("{} -> HTTP {} {}, expected breakdown {}", q, status, j.dump(), want.dump()));
          }
        }
      }
    }
    return diffs;
  }

  void CompareSeries(const std::string& q, const std::vector<std::pair<int64_t, int64_t>>& expected, int offset,
                     std::vector<std::string>* diffs) const {
    int status = 0;
    auto j = cluster_.ApiGet(q, &status);
    if (status != 200 || !j.is_object()) {
      diffs->push_back(fmt::format("{} -> HTTP {} {}", q, status, j.dump()));
      return;
    }
    if (j["data"]["tz_offset"] != offset) {
      diffs->push_back(fmt::format("{} -> tz_offset {}, expected {}", q, j["data"]["tz_offset"].dump(), offset));
    }
    const auto& got = j["data"]["clicks"];
    if (!got.is_array() || got.size() != expected.size()) {
      diffs->push_back(fmt::format("{} -> {} points, expected {}: {}", q, got.is_array() ? got.size() : 0,
                                   expected.size(), got.dump()));
      return;
    }
    for (size_t i = 0; i < expected.size(); ++i) {
      if (got[i]["dt"] != expected[i].first || got[i]["clicks"] != expected[i].second) {
        diffs->push_back(fmt::format("{} -> point {} is {}, expected dt={} ({}) clicks={}", q, i, got[i].dump(),
                                     expected[i].first, HourCode(expected[i].first), expected[i].second));
      }
    }
  }

  void CompareRollup(const std::string& q, int64_t expected, std::vector<std::string>* diffs) const {
    int status = 0;
    auto j = cluster_.ApiGet(q, &status);
    if (status != 200 || !j.is_object() || j["data"]["clicks"] != expected) {
      diffs->push_back(fmt::format("{} -> HTTP {} {}, expected clicks={}", q, status, j.dump(), expected));
    }
  }

  void ExpectQueriesMatch(const std::string& step) {
    const auto diffs = CompareQueries();
    EXPECT_TRUE(diffs.empty()) << "after " << step << ": " << diffs.size() << " differences:" << Join(diffs);
  }

  // What a realtime /fwmatch must answer for `prefix` over the realtime
  // tally's hours in [begin, end): "key,value" lines, sorted.
  std::string RealtimeLines(const std::string& key, bool subtotals, int64_t begin, int64_t end) const {
    std::vector<std::string> lines;
    if (!subtotals) {
      for (const auto& [h, n] : realtime_.Hours(key)) {
        if (h >= begin && h < end) lines.push_back(fmt::format("u|{}.{},{}", key, HourCode(h), n));
      }
    } else if (auto it = realtime_.subtotals.find(key); it != realtime_.subtotals.end()) {
      for (const auto& [h, skeys] : it->second) {
        if (h < begin || h >= end) continue;
        for (const auto& [s, n] : skeys) lines.push_back(fmt::format("c.u|{}.{}.{},{}", key, s, HourCode(h), n));
      }
    }
    std::sort(lines.begin(), lines.end());
    std::string out;
    for (const std::string& l : lines) out += l + "\n";
    return out;
  }

  Cluster cluster_;
  Tally loaded_;    // bulk-loaded history
  Tally realtime_;  // POSTed to the realtime shards
  Tally all_;       // everything: what queries must show
  std::map<std::string, int> seq_;
};

TEST_F(HourCodeBoundaryTest, CountersCarryAcrossThe2032BoundaryThroughLoadRealtimeAndRebuild) {
  // The test's own helpers, pinned to hand-checked values first.
  ASSERT_EQ(At(2032, 1, 1, 0), 1956528000);
  ASSERT_EQ(HourCode(At(2012, 3, 25, 1)), "c3p1");
  ASSERT_EQ(HourCode(At(2031, 12, 31, 23)), "vcvn");
  ASSERT_EQ(HourCode(kNewYear), "w0110");
  ASSERT_EQ(HourCode(At(2032, 1, 1, 1)), "w0111");
  ASSERT_EQ(UnitStart("week", At(2032, 1, 1, 12), 0), 1956182400);   // Sunday 2031-12-28
  ASSERT_EQ(UnitStart("mweek", At(2032, 1, 1, 12), 0), 1956268800);  // Monday 2031-12-29
  ASSERT_EQ(UnitStart("month", At(2032, 1, 1, 3), -5), 1953849600 + 5 * kHour);  // 2031-12-01 local -5
  ASSERT_EQ(UnitStart("day", At(2031, 12, 31, 15), 9), kNewYear - 9 * kHour);    // 2032-01-01 local +9
  ASSERT_EQ(ShardOf("u|" + kBoundary, 2), 0u);
  ASSERT_EQ(ShardOf("u|" + kMidnight, 2), 1u);
  ASSERT_EQ(cluster_.config().realtime_shards, 2);
  ASSERT_EQ(cluster_.config().archive_shards, 2);
  {
    auto r = HttpGet(cluster_.member("realtime-0").listen, "/ring");
    auto ring = nlohmann::json::parse(r.body, nullptr, false);
    ASSERT_FALSE(ring.is_discarded()) << r.body;
    ASSERT_EQ(ring["data"]["today"], "2032-01-01") << r.body;
  }

  // 1. History on both sides of the boundary, bulk-loaded into the archive.
  // Hours chosen to sit on unit edges: 2031-11-15T03Z is 11-14 in -5,
  // 2031-12-27T23Z is Sunday 12-28 in +9, 2031-12-28T04Z Saturday in -5,
  // 2032-01-04T02Z Saturday 01-03 in -5, 2032-01-31T23Z February in +9,
  // 2032-02-01T03Z January in -5.
  Load({
      {kBoundary, At(2031, 11, 15, 3, 10), 7, "US"},
      {kBoundary, At(2031, 12, 1, 2), 4, "JP"},
      {kBoundary, At(2031, 12, 27, 23, 59), 3, "DE"},
      {kBoundary, At(2031, 12, 28, 4), 5, "US"},
      {kBoundary, At(2031, 12, 29, 0), 2, "JP"},
      {kBoundary, At(2031, 12, 31, 0), 6, "US"},
      {kBoundary, At(2031, 12, 31, 5, 30), 1, "DE"},
      {kBoundary, At(2031, 12, 31, 14, 59), 8, "JP"},
      {kBoundary, At(2031, 12, 31, 15), 9, "US"},
      {kBoundary, At(2031, 12, 31, 18), 10, "DE"},
      {kBoundary, At(2031, 12, 31, 23, 59), 11, "US"},
      {kBoundary, At(2032, 1, 1, 0), 12, "JP"},
      {kBoundary, At(2032, 1, 1, 1, 1), 13, "US"},
      {kBoundary, At(2032, 1, 1, 4, 59), 14, "DE"},
      {kBoundary, At(2032, 1, 1, 5), 15, "US"},
      {kBoundary, At(2032, 1, 1, 12), 16, "JP"},
      {kBoundary, At(2032, 1, 1, 23, 45), 17, "US"},
      {kBoundary, At(2032, 1, 2, 10), 18, "DE"},
      {kBoundary, At(2032, 1, 4, 2), 19, "JP"},
      {kBoundary, At(2032, 1, 5, 5), 20, "US"},
      {kBoundary, At(2032, 1, 31, 23), 21, "DE"},
      {kBoundary, At(2032, 2, 1, 3), 22, "JP"},
      {kBoundary, At(2032, 2, 10, 10), 23, "US"},
  });
  ExpectQueriesMatch("load --now of history across the boundary");

  // 2. Realtime lines for Yesterday (2031-12-31) and Today (2032-01-01),
  // some on hours the load also has (different clicks: they add), and one
  // for Tomorrow.
  SendRealtime({
      {kBoundary, At(2031, 12, 31, 5), 100, "US"},
      {kBoundary, At(2031, 12, 31, 20), 101, "BR"},
      {kBoundary, At(2031, 12, 31, 22), 102, "JP"},
      {kBoundary, At(2031, 12, 31, 23), 103, "BR"},
      {kBoundary, At(2031, 12, 31, 23, 30), 1, "US"},
      {kBoundary, At(2032, 1, 1, 0), 104, "BR"},
      {kBoundary, At(2032, 1, 1, 1), 105, "US"},
      {kBoundary, At(2032, 1, 1, 3), 106, "DE"},
      {kBoundary, At(2032, 1, 1, 5), 107, "BR"},
      {kBoundary, At(2032, 1, 1, 23), 108, "JP"},
      {kMidnight, At(2031, 12, 31, 22), 30, "US"},
      {kMidnight, At(2031, 12, 31, 23), 31, "FR"},
      {kMidnight, At(2032, 1, 1, 0), 32, "FR"},
      {kMidnight, At(2032, 1, 1, 2), 33, "US"},
      {kMidnight, At(2032, 1, 2, 1), 34, "FR"},
  });
  SendRealtime({
      {kBoundary, At(2031, 12, 31, 23, 50), 2, "JP"},
      {kBoundary, At(2032, 1, 1, 0, 10), 3, "US"},
      {kMidnight, At(2031, 12, 31, 23, 10), 4, "US"},
      {kMidnight, At(2032, 1, 1, 0, 5), 5, "US"},
  });
  ExpectQueriesMatch("realtime lines for 2031-12-31 and 2032-01-01 beside the loaded history");

  // The shards hold the 2032 records under 5-character codes, 2031 under 4.
  for (const std::string& key : kKeys) {
    const HostPort shard = cluster_.member(RealtimeMember(key)).listen;
    for (bool subtotals : {false, true}) {
      const std::string prefix = subtotals ? "c.u|" + key + "." : "u|" + key + ".";
      auto today = HttpGet(shard, "/fwmatch?key=" + PercentEncode(prefix) + "&date=2032-01-01");
      EXPECT_EQ(today.status_code, 200) << today.body;
      EXPECT_EQ(today.body, RealtimeLines(key, subtotals, kNewYear, kNewYear + kDay)) << prefix;
      auto every = HttpGet(shard, "/fwmatch?key=" + PercentEncode(prefix));
      EXPECT_EQ(every.body, RealtimeLines(key, subtotals, 0, INT64_MAX)) << prefix;
    }
  }
  {
    auto r = HttpGet(cluster_.member("realtime-0").listen, "/fwmatch?key=" + PercentEncode("u|boundary.w"));
    EXPECT_NE(r.body.find("u|boundary.w0110,107\n"), std::string::npos) << r.body;  // 104 + 3
    EXPECT_EQ(r.body.find("u|boundary.v"), std::string::npos) << r.body;
  }

  // 3. The nightly run of 2031-12-31: that day goes to the archive beside
  // the loaded history; 2032-01-01 stays in realtime.
  std::string output;
  ASSERT_EQ(cluster_.Rebuild("2031-12-31", &output), 0) << output;
  for (const char* member : {"archive-0", "archive-1"}) {
    auto r = HttpGet(cluster_.member(member).listen, "/manifest");
    auto m = nlohmann::json::parse(r.body, nullptr, false);
    ASSERT_FALSE(m.is_discarded()) << r.body;
    EXPECT_EQ(m["data"]["last_day"], "2031-12-31") << member << " " << r.body;
    EXPECT_EQ(m["data"]["generation"], 2) << member << " " << r.body;
  }
  ExpectQueriesMatch("the nightly run of 2031-12-31");

  // units=-1: back to the first unit with data.
  {
    std::vector<std::string> diffs;
    struct SinceFirst {
      std::string key, unit;
      Zone zone;
      int64_t reference;
    };
    const std::vector<SinceFirst> cases = {
        {kBoundary, "day", kZones[0], kReferences[0]},  {kBoundary, "day", kZones[1], kReferences[0]},
        {kBoundary, "day", kZones[3], kReferences[0]},  {kBoundary, "month", kZones[2], kReferences[1]},
        {kBoundary, "week", kZones[1], kReferences[1]}, {kBoundary, "hour", kZones[0], kReferences[0]},
        {kMidnight, "hour", kZones[0], kReferences[0]}, {kMidnight, "day", kZones[1], kReferences[0]},
        {kMidnight, "mweek", kZones[4], kReferences[1]},
    };
    for (const SinceFirst& c : cases) {
      const int64_t first_hour = all_.Hours(c.key).begin()->first;
      const auto starts = StartsBackTo(c.unit, c.zone.offset, c.reference, first_hour);
      const std::string base = fmt::format("/clicks?ns=u&key={}&unit={}&units=-1&timezone={}&unit_reference_ts={}",
                                           PercentEncode(c.key), c.unit, PercentEncode(c.zone.param), c.reference);
      const auto expected = all_.Series(c.key, c.unit, c.zone.offset, starts);
      CompareSeries(base, expected, c.zone.offset, &diffs);
      int64_t sum = 0;
      for (const auto& [s, n] : expected) sum += n;
      CompareRollup(base + "&rollup=true", sum, &diffs);
    }
    // Pinned by hand: "boundary" from 2031-11-15 (UTC) to 2032-01-01 is 48 days.
    EXPECT_EQ(StartsBackTo("day", 0, kReferences[0], At(2031, 11, 15, 3)).size(), 48u);
    EXPECT_TRUE(diffs.empty()) << "units=-1: " << diffs.size() << " differences:" << Join(diffs);
  }

  // The widest window a query may span (max_query_hours: 5 years of days),
  // ending in 2034, reaches back over the boundary into 2029: every click of
  // both keys is inside it.
  for (const std::string& key : kKeys) {
    int64_t sum = 0;
    for (const auto& [h, n] : all_.Hours(key)) sum += n;
    std::vector<std::string> diffs;
    CompareRollup(fmt::format("/clicks?ns=u&key={}&unit=day&units=1830&timezone=0&unit_reference_ts={}&rollup=true",
                              PercentEncode(key), At(2034, 6, 30, 12)),
                  sum, &diffs);
    EXPECT_TRUE(diffs.empty()) << "5-year window: " << Join(diffs);
  }

  // The archive: the total's columns and the subtotal records, 2031 hours
  // under 4-character codes before the 2032 hours under 5, sorted.
  Tally archived = loaded_;
  archived.AddTally(realtime_, kNewYear);  // 2031-12-31 folded in; 2032 stays in realtime
  for (const std::string& key : kKeys) {
    const HostPort replica = cluster_.member(ArchiveMember(key)).listen;
    std::string columns;  // in time order: the archive must hold them so, 4-character codes first
    for (const auto& [h, n] : archived.Hours(key)) {
      columns += fmt::format("{}{}:{}", columns.empty() ? "" : " ", HourCode(h), n);
    }
    auto total = HttpGet(replica, "/get?key=" + PercentEncode("u|" + key));
    EXPECT_EQ(total.status_code, 200) << key;
    EXPECT_EQ(total.body, columns + "\n") << key;
    EXPECT_EQ(total.Header("X-Archive-Last-Day"), "2031-12-31");

    // Each hour's record, and each UTC day's sum of them (every day with hours,
    // also a day of one hour) under the day's code (the hour code without its
    // hour character), and each span of 2^k days (k = 1..7, counted from
    // 1970-01-01) holding such a day, under its last day's code, 'z' and k,
    // in key+"," order.
    std::map<int64_t, std::map<std::string, int64_t>> days;  // day start -> skey -> clicks
    std::vector<std::pair<std::string, std::string>> lines;  // key + ",", line
    const auto add_line = [&](const std::string& code, const std::map<std::string, int64_t>& skeys) {
      std::string line = fmt::format("c.u|{}.{},", key, code);
      bool first = true;
      for (const auto& [s, n] : skeys) {  // columns by skey
        line += fmt::format("{}{}:{}", first ? "" : " ", s, n);
        first = false;
      }
      lines.emplace_back(line.substr(0, line.find(',') + 1), line);
    };
    for (const auto& [h, skeys] : archived.subtotals[key]) {
      add_line(HourCode(h), skeys);
      for (const auto& [s, n] : skeys) days[h - h % 86400][s] += n;
    }
    std::map<std::string, std::map<std::string, int64_t>> spans;  // span code -> skey -> clicks
    for (const auto& [day, skeys] : days) {
      const std::string hour_code = HourCode(day);
      add_line(hour_code.substr(0, hour_code.size() - 1), skeys);
      const int64_t number = day / 86400;
      for (int64_t length = 2, level = 1; level <= 7; length *= 2, ++level) {
        const std::string last = HourCode((number / length * length + length - 1) * 86400);
        for (const auto& [sk, n] : skeys) spans[last.substr(0, last.size() - 1) + "z" + std::to_string(level)][sk] += n;
      }
    }
    for (const auto& [code, skeys] : spans) add_line(code, skeys);
    std::sort(lines.begin(), lines.end());
    std::string expected;
    for (const auto& l : lines) expected += l.second + "\n";
    auto subs = HttpGet(replica, "/fwmatch?key=" + PercentEncode("c.u|" + key + "."));
    EXPECT_EQ(subs.status_code, 200) << key;
    EXPECT_EQ(subs.body, expected) << key;
    // The shape the brief pins down: 2031-12-31 with 4 characters, 2032 with 5,
    // in that order.
    size_t last_2031 = 0, first_2032 = std::string::npos;
    std::vector<std::string> got_keys;
    for (size_t pos = 0; pos < subs.body.size();) {
      const size_t nl = subs.body.find('\n', pos);
      const std::string line = subs.body.substr(pos, nl - pos);
      pos = nl == std::string::npos ? subs.body.size() : nl + 1;
      const std::string k = line.substr(0, line.find(','));
      const std::string code = k.substr(k.rfind('.') + 1);
      got_keys.push_back(k + ",");
      if (code.size() == 3 || (code.size() == 4 && code.starts_with("w"))) continue;  // a day subtotal
      if (code[code.size() - 2] == 'z') continue;                                     // a span
      if (code.starts_with("vcv")) {
        EXPECT_EQ(code.size(), 4u) << line;
        last_2031 = got_keys.size();
      } else if (code.starts_with("w0")) {
        EXPECT_EQ(code.size(), 5u) << line;
        if (first_2032 == std::string::npos) first_2032 = got_keys.size();
      }
    }
    EXPECT_TRUE(std::is_sorted(got_keys.begin(), got_keys.end())) << subs.body;
    EXPECT_GT(last_2031, 0u) << key << ": no 2031-12-31 subtotal record\n" << subs.body;
    if (key == kBoundary) {
      ASSERT_NE(first_2032, std::string::npos) << "no 2032 subtotal record\n" << subs.body;
      EXPECT_LT(last_2031, first_2032) << subs.body;
      EXPECT_NE(subs.body.find("c.u|boundary.vcvn,BR:103 JP:2 US:12\n"), std::string::npos) << subs.body;
      EXPECT_NE(subs.body.find("c.u|boundary.w0110,JP:12\n"), std::string::npos) << subs.body;
    }
  }

  // Realtime still holds 2032-01-01 (5-character codes) after the run.
  for (const std::string& key : kKeys) {
    auto today = HttpGet(cluster_.member(RealtimeMember(key)).listen,
                         "/fwmatch?key=" + PercentEncode("u|" + key + ".") + "&date=2032-01-01");
    EXPECT_EQ(today.body, RealtimeLines(key, false, kNewYear, kNewYear + kDay)) << key;
  }
}

}  // namespace
}  // namespace clickatron::integration::hour_code_boundary_test
