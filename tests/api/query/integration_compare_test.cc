// compare=previous|year end to end: clickatron-realtime x2, clickatron-archive
// x2 and clickatron-api on loopback, loaded as in integration_merge_test
// (archive files written by the test with last_day = D-1, realtime through
// /incr with the ring at Today = D, D-1 in both). Every answer is checked
// against expectations computed here from the dataset's own (hour -> count)
// maps: windows by read_oracle.h's hour-by-hour walk, the earlier windows and
// New York's offset by this file's own calendar helpers, never by the code
// under test.
//
// Data: two stretches of dense hours, 2022-11-01 .. 2025-02-01 (fixed 2024
// windows and their 2023 counterparts, with every hour between them too) and
// D-500 .. D+2 (recent windows, across the archive/realtime split).
#include <gtest/gtest.h>

#include <cmath>
#include <random>

#include "api/query/cluster_fixture.h"

// A namespace of this file's own: its names beside those of the other files
// compiled with it in one unity file (tests/CMakeLists.txt).
namespace clickatron::api::testing::integration_compare_test {
namespace {

constexpr int64_t kDay = 86400;
constexpr int64_t kHour = 3600;

const std::string kKey = "cmp";        // dense in both stretches
const std::string kFreshKey = "fresh";  // 2023-07..09 and 2024-03..05 only
const std::string kEmptyKey = "never-clicked";

// ---- this file's own civil calendar (plain counting) --------------------------

int64_t DaysSinceEpoch(int64_t y, int64_t m, int64_t d) {
  int64_t days = 0;
  for (int64_t yy = 1970; yy < y; ++yy) days += oracle::Leap(yy) ? 366 : 365;
  for (int64_t mm = 1; mm < m; ++mm) days += oracle::MonthLength(y, mm);
  return days + d - 1;
}
int64_t Ts(int64_t y, int64_t m, int64_t d, int64_t h = 0, int64_t minute = 0) {
  return DaysSinceEpoch(y, m, d) * kDay + h * kHour + minute * 60;
}

// The same local wall time one calendar year earlier (Feb 29 -> Feb 28).
int64_t YearBackLocal(int64_t local) {
  const oracle::Civil c = oracle::ToCivil(local);
  const int64_t y = c.year - 1;
  const int64_t d = std::min(c.day, oracle::MonthLength(y, c.month));
  return Ts(y, c.month, d, c.hour) + local % kHour;
}

// America/New_York: EDT (-4) from the second Sunday of March 02:00 EST
// (07:00 UTC) to the first Sunday of November 02:00 EDT (06:00 UTC).
int NewYorkOffset(int64_t ts) {
  const int64_t y = oracle::ToCivil(ts).year;
  const auto first_sunday = [&](int64_t month) {
    const int64_t first = Ts(y, month, 1);
    return first + ((7 - oracle::Weekday(first)) % 7) * kDay;
  };
  const int64_t start = first_sunday(3) + 7 * kDay + 7 * kHour;
  const int64_t end = first_sunday(11) + 6 * kHour;
  return ts >= start && ts < end ? -4 : -5;
}

int64_t Sum(const std::vector<oracle::UnitSum>& s) {
  int64_t n = 0;
  for (const auto& u : s) n += u.clicks;
  return n;
}

// The earlier window (newest first) of the `n` units ending with the one that
// holds `ref`, summed over `hours`.
std::vector<oracle::UnitSum> EarlierWindow(const std::string& unit, int tz, int64_t ref, int64_t n,
                                           const std::string& compare, const std::map<int64_t, int64_t>& hours) {
  if (n <= 0) return {};
  if (compare == "previous") {
    // 2n units ending with the reference unit: the older half.
    auto both = oracle::Rollup(unit, tz, ref, 2 * n, hours);
    return std::vector<oracle::UnitSum>(both.begin() + n, both.end());
  }
  // year: the newest unit's local start, a year back, and n units ending there.
  const int64_t newest = oracle::Rollup(unit, tz, ref, 1, {}).front().dt;
  const int64_t back = YearBackLocal(newest + tz * kHour) - tz * kHour;
  return oracle::Rollup(unit, tz, back, n, hours);
}

// A window's units (newest first) and the end of the newest, to sum many
// value series over one window without walking it again for each.
struct UnitGrid {
  std::vector<int64_t> dts;
  int64_t end = 0;
};
UnitGrid GridOf(const std::vector<oracle::UnitSum>& units, const std::string& unit, int tz) {
  UnitGrid g;
  for (const auto& u : units) g.dts.push_back(u.dt);
  if (units.empty()) return g;
  const int64_t newest = units.front().dt + tz * kHour;
  int64_t h = newest;
  while (oracle::KeyOf(unit, h + kHour) == oracle::KeyOf(unit, newest)) h += kHour;
  g.end = h + kHour - tz * kHour;
  return g;
}
// Sums of `hours` per unit of the grid, newest first.
std::vector<int64_t> SumsOn(const UnitGrid& g, const std::map<int64_t, int64_t>& hours) {
  std::vector<int64_t> sums(g.dts.size(), 0);
  if (g.dts.empty()) return sums;
  for (auto it = hours.lower_bound(g.dts.back()); it != hours.end() && it->first < g.end; ++it) {
    // The newest unit starting at or before the hour.
    auto k = std::lower_bound(g.dts.begin(), g.dts.end(), it->first, [](int64_t a, int64_t b) { return a > b; });
    sums[static_cast<size_t>(k - g.dts.begin())] += it->second;
  }
  return sums;
}

struct Case {
  std::string unit;
  int64_t units;
  std::string tz;  // as sent: "-5", "9", "America/New_York"
  int64_t ref;
};

int TzOf(const Case& c) { return c.tz == "America/New_York" ? NewYorkOffset(c.ref) : std::stoi(c.tz); }

std::string Describe(const Case& c) {
  return fmt::format("unit={} units={} tz={} ref={} ({})", c.unit, c.units, c.tz, c.ref,
                     [&] {
                       const auto civ = oracle::ToCivil(c.ref);
                       return fmt::format("{:04}-{:02}-{:02}T{:02}Z", civ.year, civ.month, civ.day, civ.hour);
                     }());
}

class IntegrationReadCompareTest : public ReadClusterTest {
 protected:

  void Add(const std::string& key, int64_t hour, int64_t value, std::mt19937_64& rng) {
    static const std::vector<std::string> kCountries = {"US", "JP", "DE"};
    // s: a value that lives in one UTC month, one UTC year, or one day of the
    // month (a long, hashed value), so windows hold values of their own.
    const oracle::Civil c = oracle::ToCivil(hour);
    std::string season;
    switch (rng() % 3) {
      case 0: season = fmt::format("m-{:02}", c.month); break;
      case 1: season = fmt::format("y-{}", c.year); break;
      default: season = fmt::format("http://season.example/day-of-month/{:02}", c.day); break;
    }
    data_.AddAtRing("u", key, hour, value, {{"c", kCountries[rng() % kCountries.size()]}, {"s", season}}, today_);
  }

  void BuildDataset() override {
    std::mt19937_64 rng(20240310);
    std::uniform_int_distribution<int64_t> count(1, 5);
    const auto dense = [&](int64_t begin, int64_t end) {
      for (int64_t h = begin; h < end; h += kHour) {
        if (rng() % 4 != 0) Add(kKey, h, count(rng), rng);
      }
    };
    dense(Ts(2022, 11, 1), Ts(2025, 2, 1));
    dense((today_ - 500) * kDay, (today_ + 2) * kDay);
    for (int64_t h = Ts(2023, 7, 1); h < Ts(2023, 10, 1); h += 5 * kHour) Add(kFreshKey, h, count(rng), rng);
    for (int64_t h = Ts(2024, 3, 1); h < Ts(2024, 6, 1); h += 5 * kHour) Add(kFreshKey, h, count(rng), rng);
  }

  // The change of one compared pair: a number near (cur - earlier) / earlier,
  // or null when the earlier total is 0.
  void ExpectChange(const nlohmann::json& got, int64_t cur, int64_t earlier, const std::string& what) {
    if (earlier == 0) {
      EXPECT_TRUE(got.is_null()) << what << " change " << got.dump();
      ++null_changes_;
      return;
    }
    ASSERT_TRUE(got.is_number()) << what << " change " << got.dump();
    const double want = static_cast<double>(cur - earlier) / static_cast<double>(earlier);
    EXPECT_NEAR(got.get<double>(), want, 1e-12 * std::max(1.0, std::fabs(want)))
        << what << " cur=" << cur << " earlier=" << earlier;
    ++number_changes_;
  }

  std::string ClicksTarget(const std::string& key, const Case& c, const std::string& compare, bool rollup) const {
    std::string t = fmt::format("/clicks?ns=u&key={}&unit={}&units={}&timezone={}&unit_reference_ts={}&rollup={}",
                                Enc(key), c.unit, c.units, Enc(c.tz), c.ref, rollup ? "true" : "false");
    if (!compare.empty()) t += "&compare=" + compare;
    return t;
  }

  void ExpectClicksCompare(const std::string& key, const Case& c, const std::string& compare, bool rollup) {
    const std::string target = ClicksTarget(key, c, compare, rollup);
    const std::string what = target + " [" + Describe(c) + "]";
    auto j = cluster_.Api(target);
    ASSERT_EQ(j["http_status"], 200) << what << " " << j.dump();
    const int tz = TzOf(c);
    const auto& data = j["data"];
    EXPECT_EQ(data["tz_offset"], tz) << what;
    EXPECT_EQ(data["unit"], c.unit) << what;
    EXPECT_EQ(data["units"], c.units) << what;
    EXPECT_EQ(data["unit_reference_ts"], c.ref) << what;

    const auto& hours = HoursOf(key);
    const int64_t first = hours.empty() ? c.ref + 400 * kDay : hours.begin()->first;
    const auto cur = oracle::Rollup(c.unit, tz, c.ref, c.units, hours, first);
    const auto earlier = EarlierWindow(c.unit, tz, c.ref, static_cast<int64_t>(cur.size()), compare, hours);
    ASSERT_EQ(cur.size(), earlier.size()) << what;

    if (rollup) {
      EXPECT_EQ(data["clicks"], Sum(cur)) << what;
    } else {
      EXPECT_EQ(data["clicks"], ExpectedSeries(cur)) << what;
    }
    ASSERT_TRUE(data.contains("compare")) << what << " " << j.dump();
    const auto& cmp = data["compare"];
    EXPECT_EQ(cmp.size(), 3u) << what << " " << cmp.dump();
    EXPECT_EQ(cmp["window"], compare) << what;
    if (rollup) {
      EXPECT_EQ(cmp["clicks"], Sum(earlier)) << what;
    } else {
      EXPECT_EQ(cmp["clicks"], ExpectedSeries(earlier)) << what;
    }
    ExpectChange(cmp["change"], Sum(cur), Sum(earlier), what);

    // clicks exactly as without compare=.
    auto plain = cluster_.Api(ClicksTarget(key, c, "", rollup));
    ASSERT_EQ(plain["http_status"], 200) << what;
    EXPECT_FALSE(plain["data"].contains("compare")) << what;
    EXPECT_EQ(plain["data"]["clicks"], data["clicks"]) << what;
    nlohmann::json stripped = data;
    stripped.erase("compare");
    EXPECT_EQ(stripped, plain["data"]) << what;

    // compare=year windows are apart: the hours between them hold clicks that
    // must count nowhere (checked by the equalities above); note that they do.
    if (compare == "year" && !cur.empty()) {
      int64_t between = 0;
      for (auto it = hours.lower_bound(earlier.back().dt); it != hours.end() && it->first < cur.back().dt; ++it) {
        between += it->second;
      }
      if (between - Sum(earlier) > 0) ++year_gaps_with_clicks_;
    }
  }

  const std::map<int64_t, int64_t>& HoursOf(const std::string& key) {
    auto it = hours_.find(key);
    if (it == hours_.end()) it = hours_.emplace(key, data_.Hours("u", key)).first;
    return it->second;
  }

  struct Row {
    std::string value;
    int64_t clicks, earlier;
  };

  void ExpectRows(const nlohmann::json& got, const std::vector<Row>& want, const std::string& what) {
    ASSERT_TRUE(got.is_array()) << what << " " << got.dump();
    ASSERT_EQ(got.size(), want.size()) << what << " " << got.dump();
    for (size_t i = 0; i < want.size(); ++i) {
      const auto& r = got[i];
      const std::string at = fmt::format("{} row {} ({})", what, i, want[i].value);
      EXPECT_EQ(r.size(), 3u) << at << " " << r.dump();
      EXPECT_EQ(r["value"], want[i].value) << at << " " << got.dump();
      EXPECT_EQ(r["clicks"], want[i].clicks) << at;
      ASSERT_TRUE(r.contains("compare")) << at << " " << r.dump();
      EXPECT_EQ(r["compare"].size(), 2u) << at << " " << r.dump();
      EXPECT_EQ(r["compare"]["clicks"], want[i].earlier) << at;
      ExpectChange(r["compare"]["change"], want[i].clicks, want[i].earlier, at);
    }
  }

  // Rows ranked by the current sums (ExpectedTop), each with its earlier sum.
  static std::vector<Row> WantRows(const std::map<std::string, int64_t>& cur,
                                   const std::map<std::string, int64_t>& earlier, size_t limit) {
    std::vector<Row> rows;
    for (const auto& e : ExpectedTop(cur, limit)) {
      const std::string v = e["value"].get<std::string>();
      auto it = earlier.find(v);
      rows.push_back({v, e["clicks"].get<int64_t>(), it == earlier.end() ? 0 : it->second});
    }
    return rows;
  }

  struct Kinds {
    int current_only = 0, earlier_only = 0, both = 0;
  };

  // Returns how the values of the whole windows split (for coverage checks).
  Kinds ExpectBreakdownCompare(const std::string& sns, const std::string& key, const Case& c,
                               const std::string& compare, bool rollup, size_t limit) {
    const std::string target = fmt::format(
        "/breakdown?sns={}&ns=u&key={}&unit={}&units={}&timezone={}&unit_reference_ts={}&limit={}&rollup={}"
        "&compare={}",
        sns, Enc(key), c.unit, c.units, Enc(c.tz), c.ref, limit, rollup ? "true" : "false", compare);
    const std::string what = target + " [" + Describe(c) + "]";
    Kinds kinds;
    auto j = cluster_.Api(target);
    EXPECT_EQ(j["http_status"], 200) << what << " " << j.dump();
    if (j["http_status"] != 200) return kinds;
    const int tz = TzOf(c);
    const auto& data = j["data"];
    EXPECT_EQ(data["tz_offset"], tz) << what;
    EXPECT_EQ(data["compare"], (nlohmann::json{{"window", compare}})) << what;

    // The window's length (units=-1: from the unit of the key's first hour).
    const auto& total = HoursOf(key);
    const int64_t first = total.empty() ? c.ref + 400 * kDay : total.begin()->first;
    const int64_t n = static_cast<int64_t>(oracle::Rollup(c.unit, tz, c.ref, c.units, {}, first).size());
    const auto units = oracle::Rollup(c.unit, tz, c.ref, n, {});
    const auto earlier_units = EarlierWindow(c.unit, tz, c.ref, n, compare, {});
    const UnitGrid cur_grid = GridOf(units, c.unit, tz);
    const UnitGrid earlier_grid = GridOf(earlier_units, c.unit, tz);
    // The grids against the hour walk on the key's total.
    {
      const auto walked = oracle::Rollup(c.unit, tz, c.ref, n, total);
      const auto walked_earlier = EarlierWindow(c.unit, tz, c.ref, n, compare, total);
      const auto on_grid = SumsOn(cur_grid, total);
      const auto on_earlier_grid = SumsOn(earlier_grid, total);
      for (size_t i = 0; i < walked.size(); ++i) EXPECT_EQ(on_grid[i], walked[i].clicks) << what << " grid " << i;
      for (size_t i = 0; i < walked_earlier.size(); ++i) {
        EXPECT_EQ(on_earlier_grid[i], walked_earlier[i].clicks) << what << " earlier grid " << i;
      }
    }
    // Per value: the current and earlier sums per unit, newest first.
    std::map<std::string, std::vector<int64_t>> cur, earlier;
    auto cached = sub_hours_.find({sns, key});
    if (cached == sub_hours_.end()) cached = sub_hours_.emplace(std::pair{sns, key}, data_.SubHours(sns, "u", key)).first;
    for (const auto& [value, hours] : cached->second) {
      cur[value] = SumsOn(cur_grid, hours);
      earlier[value] = SumsOn(earlier_grid, hours);
    }
    const auto add = [](const std::vector<int64_t>& v) {
      int64_t n = 0;
      for (int64_t x : v) n += x;
      return n;
    };
    std::map<std::string, int64_t> cur_sum, earlier_sum;
    for (const auto& [value, s] : cur) cur_sum[value] = add(s);
    for (const auto& [value, s] : earlier) earlier_sum[value] = add(s);
    std::set<std::string> shown;
    for (const auto& [value, n] : cur_sum) {
      const int64_t e = earlier_sum[value];
      if (n > 0 && e == 0) ++kinds.current_only;
      if (n == 0 && e > 0) ++kinds.earlier_only;
      if (n > 0 && e > 0) ++kinds.both;
    }

    if (rollup) {
      ExpectRows(data["breakdown"], WantRows(cur_sum, earlier_sum, limit), what);
      for (const auto& r : data["breakdown"]) shown.insert(r.value("value", ""));
    } else {
      const auto& list = data["breakdown"];
      EXPECT_TRUE(list.is_array() && list.size() == units.size()) << what << " " << list.dump();
      if (!list.is_array() || list.size() != units.size()) return kinds;
      for (size_t i = 0; i < units.size(); ++i) {
        const std::string at = fmt::format("{} unit {}", what, i);
        EXPECT_EQ(list[i].size(), 5u) << at << " " << list[i].dump();
        EXPECT_EQ(list[i]["dt"], units[i].dt) << at;
        EXPECT_EQ(list[i]["compare_dt"], earlier_units[i].dt) << at;
        std::map<std::string, int64_t> c_i, e_i;
        for (const auto& [value, s] : cur) c_i[value] = s[i];
        for (const auto& [value, s] : earlier) e_i[value] = s[i];
        ExpectRows(list[i]["breakdown"], WantRows(c_i, e_i, limit), at);
        // What the unit's rows leave out, of the current window only.
        int64_t values = 0, rows = 0;
        for (const auto& [value, n] : c_i) values += n;
        for (const auto& r : list[i]["breakdown"]) rows += r.value("clicks", int64_t{0});
        EXPECT_EQ(list[i]["other"], values - rows) << at;
        EXPECT_EQ(list[i]["none"], SumsOn(cur_grid, total)[i] - values) << at;
        for (const auto& r : list[i]["breakdown"]) shown.insert(r.value("value", ""));
      }
    }
    // Without the compare fields, the answer is the plain breakdown's.
    {
      const std::string plain_target = target.substr(0, target.find("&compare="));
      auto plain = cluster_.Api(plain_target);
      EXPECT_EQ(plain["http_status"], 200) << plain_target;
      nlohmann::json stripped = data;
      stripped.erase("compare");
      const auto strip_rows = [](nlohmann::json& rows) {
        for (auto& r : rows) r.erase("compare");
      };
      if (rollup) {
        strip_rows(stripped["breakdown"]);
      } else {
        for (auto& u : stripped["breakdown"]) {
          u.erase("compare_dt");
          strip_rows(u["breakdown"]);
        }
      }
      EXPECT_EQ(stripped, plain["data"]) << what;
    }
    // A value with clicks only in the earlier window is never a row.
    for (const auto& [value, e] : earlier_sum) {
      if (e > 0 && cur_sum[value] == 0) {
        EXPECT_FALSE(shown.count(value)) << what << " shows " << value;
      }
    }
    return kinds;
  }

  std::map<std::string, std::map<int64_t, int64_t>> hours_;  // key -> hour -> count, copied once
  // (sns, key) -> value -> hour -> count, copied out of data_ once.
  std::map<std::pair<std::string, std::string>, std::map<std::string, std::map<int64_t, int64_t>>> sub_hours_;
  int null_changes_ = 0, number_changes_ = 0, year_gaps_with_clicks_ = 0;
};

// The test's own calendar against known instants (no cluster needed).
TEST(IntegrationReadCompareHelpers, OwnCalendarIsSane) {
  EXPECT_EQ(Ts(2024, 3, 10), 1710028800);
  EXPECT_EQ(Ts(2023, 2, 28, 12), 1677585600);
  EXPECT_EQ(YearBackLocal(Ts(2024, 2, 29, 7)), Ts(2023, 2, 28, 7));
  EXPECT_EQ(NewYorkOffset(Ts(2024, 3, 10, 6, 59)), -5);
  EXPECT_EQ(NewYorkOffset(Ts(2024, 3, 10, 7)), -4);
  EXPECT_EQ(NewYorkOffset(Ts(2024, 11, 3, 5, 59)), -4);
  EXPECT_EQ(NewYorkOffset(Ts(2024, 11, 3, 6)), -5);
  EXPECT_EQ(NewYorkOffset(Ts(2023, 3, 12, 7)), -4);
  EXPECT_EQ(oracle::Weekday(Ts(2024, 3, 10)), 0);  // a Sunday
}

TEST_F(IntegrationReadCompareTest, ClicksMatchOracleInEveryUnitAndOffset) {
  std::vector<Case> cases;
  for (const std::string tz : {"0", "-5", "9"}) {
    cases.push_back({"hour", 5, tz, Ts(2024, 3, 10, 6, 30)});
    cases.push_back({"hour", 30, tz, Ts(2024, 2, 29, 12)});
    cases.push_back({"day", 3, tz, Ts(2024, 3, 12, 12)});
    cases.push_back({"day", 10, tz, Ts(2024, 2, 29, 5)});  // +9: local Feb 29 14:00
    cases.push_back({"day", 1, tz, Ts(2024, 3, 1, 2)});    // -5: local Feb 29 21:00
    cases.push_back({"week", 1, tz, Ts(2024, 3, 13)});
    cases.push_back({"week", 4, tz, Ts(2024, 2, 29, 20)});
    cases.push_back({"mweek", 2, tz, Ts(2024, 3, 10, 12)});  // a Sunday: the mweek of Monday Mar 4 (UTC)
    cases.push_back({"mweek", 1, tz, Ts(2024, 3, 11, 3)});
    cases.push_back({"month", 1, tz, Ts(2024, 3, 15)});  // previous: February of 29 days; year: March 2023
    cases.push_back({"month", 1, tz, Ts(2024, 5, 20)});  // previous: April
    cases.push_back({"month", 1, tz, Ts(2024, 2, 10)});  // year: February 2023 (28 days)
    cases.push_back({"month", 3, tz, Ts(2024, 3, 31, 23, 30)});  // +9: local April 1
    // Recent windows: archive, the overlap day D-1 and realtime-only days.
    const int64_t recent = (today_ + 1) * kDay + 10 * kHour;
    cases.push_back({"hour", 48, tz, recent});
    cases.push_back({"day", 7, tz, recent});
    cases.push_back({"week", 2, tz, recent});
    cases.push_back({"mweek", 2, tz, recent});
    cases.push_back({"month", 1, tz, recent});
  }
  // A zone name resolves to its offset at the reference, one offset for the
  // whole window, which here starts in a DST change (2024-03-10 / 11-03).
  const std::string ny = "America/New_York";
  cases.push_back({"week", 1, ny, Ts(2024, 3, 12, 15)});  // EDT: Sun Mar 10 00:00 -4
  cases.push_back({"week", 1, ny, Ts(2024, 3, 10, 5)});   // 00:00 EST, still -5
  cases.push_back({"day", 3, ny, Ts(2024, 3, 12, 12)});   // Mar 10, 11, 12 at -4
  cases.push_back({"hour", 6, ny, Ts(2024, 3, 10, 8)});   // 04:00 EDT
  cases.push_back({"mweek", 2, ny, Ts(2024, 3, 12, 15)});
  cases.push_back({"month", 1, ny, Ts(2024, 3, 15)});
  cases.push_back({"day", 3, ny, Ts(2024, 11, 5, 12)});   // Nov 3 (-5) .. Nov 5
  cases.push_back({"week", 1, ny, Ts(2024, 11, 3, 5)});   // 01:00 EDT, -4
  // Windows longer than the year step: the earlier one overlaps the current.
  cases.push_back({"month", 14, "0", Ts(2024, 3, 15)});
  cases.push_back({"week", 60, "-5", Ts(2024, 5, 1)});
  for (const Case& c : cases) {
    for (const char* compare : {"previous", "year"}) {
      for (bool rollup : {false, true}) ExpectClicksCompare(kKey, c, compare, rollup);
    }
  }
  // Sanity of the dataset: every change here is a number, and the hours
  // between a window and its year-earlier one hold clicks.
  EXPECT_EQ(null_changes_, 0);
  EXPECT_GT(number_changes_, 0);
  EXPECT_GT(year_gaps_with_clicks_, 0);
}

TEST_F(IntegrationReadCompareTest, ChangeIsNullWhenTheEarlierWindowIsEmpty) {
  std::vector<Case> cases;
  for (const std::string tz : {"0", "-5", "9", "America/New_York"}) {
    cases.push_back({"month", 1, tz, Ts(2024, 3, 15)});  // Feb 2024 / Mar 2023: empty (but -5: Mar 1 00:00Z)
    cases.push_back({"month", 1, tz, Ts(2024, 8, 15)});  // Aug 2024 empty, Aug 2023 not: change -1
    cases.push_back({"month", 3, tz, Ts(2024, 5, 15)});  // Mar..May 2024 vs Dec..Feb / Mar..May 2023
    cases.push_back({"day", 5, tz, Ts(2024, 3, 3, 12)});
    cases.push_back({"week", 2, tz, Ts(2024, 3, 5)});
    cases.push_back({"hour", 12, tz, Ts(2024, 3, 1, 8)});
  }
  for (const Case& c : cases) {
    for (const char* compare : {"previous", "year"}) {
      for (bool rollup : {false, true}) {
        ExpectClicksCompare(kFreshKey, c, compare, rollup);
        ExpectClicksCompare(kEmptyKey, c, compare, rollup);
      }
    }
  }
  // units=-1: from the first unit with data (July 2023); the previous 11
  // months hold nothing.
  for (bool rollup : {false, true}) ExpectClicksCompare(kFreshKey, {"month", -1, "0", Ts(2024, 5, 15)}, "previous", rollup);
  // units=-1 on a key without data: an empty window beside an empty one.
  for (const char* compare : {"previous", "year"}) {
    for (bool rollup : {false, true}) ExpectClicksCompare(kEmptyKey, {"day", -1, "0", Ts(2024, 5, 15)}, compare, rollup);
  }
  EXPECT_GT(null_changes_, 0);
  EXPECT_GT(number_changes_, 0);
  // The first case must be a null at UTC: check it on its own.
  auto j = cluster_.Api(ClicksTarget(kFreshKey, {"month", 1, "0", Ts(2024, 3, 15)}, "previous", true));
  EXPECT_TRUE(j["data"]["compare"]["change"].is_null()) << j.dump();
  EXPECT_EQ(j["data"]["compare"]["clicks"], 0) << j.dump();
  EXPECT_GT(j["data"]["clicks"].get<int64_t>(), 0) << j.dump();
  // And -1 exactly when the current window is empty.
  auto k = cluster_.Api(ClicksTarget(kFreshKey, {"month", 1, "0", Ts(2024, 8, 15)}, "year", true));
  EXPECT_EQ(k["data"]["clicks"], 0) << k.dump();
  ASSERT_TRUE(k["data"]["compare"]["change"].is_number()) << k.dump();
  EXPECT_EQ(k["data"]["compare"]["change"].get<double>(), -1.0) << k.dump();
}

TEST_F(IntegrationReadCompareTest, BreakdownsRankByCurrentAndCarryEarlier) {
  const int64_t recent = (today_ + 1) * kDay + 10 * kHour;
  std::vector<Case> cases = {
      {"month", 1, "0", Ts(2024, 3, 15)},
      {"month", 1, "-5", Ts(2024, 5, 20)},
      {"month", 2, "9", Ts(2024, 2, 10)},
      {"day", 3, "-5", Ts(2024, 3, 12, 12)},
      {"week", 2, "9", Ts(2024, 3, 13)},
      {"mweek", 1, "0", Ts(2024, 2, 29, 20)},
      {"hour", 6, "0", Ts(2024, 3, 10, 6)},
      {"week", 1, "America/New_York", Ts(2024, 3, 12, 15)},
      {"day", 3, "America/New_York", Ts(2024, 3, 12, 12)},
      {"day", 3, "0", recent},
      {"week", 2, "-5", recent},
      {"day", 2, "0", Ts(2024, 2, 29, 12)},  // year: Feb 27..28 2023
  };
  for (const Case& c : cases) {
    for (const char* compare : {"previous", "year"}) {
      for (const char* sns : {"s", "c"}) {
        for (bool rollup : {true, false}) {
          ExpectBreakdownCompare(sns, kKey, c, compare, rollup, 100);
          ExpectBreakdownCompare(sns, kKey, c, compare, rollup, 3);
        }
      }
    }
  }
  // The seasonal values make each kind appear: March 2024 against February
  // (m-03 only now, m-02 only then, y-2024 in both) and against March 2023
  // (y-2024 / y-2023 / m-03).
  for (const char* compare : {"previous", "year"}) {
    const Kinds k = ExpectBreakdownCompare("s", kKey, {"month", 1, "0", Ts(2024, 3, 15)}, compare, true, 100);
    EXPECT_GT(k.current_only, 0) << compare;
    EXPECT_GT(k.earlier_only, 0) << compare;
    EXPECT_GT(k.both, 0) << compare;
  }
  // A key with clicks in the current window only: every row's change is null.
  for (const char* compare : {"previous", "year"}) {
    for (bool rollup : {true, false}) {
      ExpectBreakdownCompare("s", kFreshKey, {"month", 1, "0", Ts(2024, 3, 15)}, compare, rollup, 100);
      ExpectBreakdownCompare("c", kFreshKey, {"month", 1, "-5", Ts(2024, 8, 15)}, compare, rollup, 100);
      ExpectBreakdownCompare("c", kEmptyKey, {"day", 2, "0", Ts(2024, 3, 15)}, compare, rollup, 100);
    }
  }
  // A window longer than the year step: the earlier one overlaps it.
  for (bool rollup : {true, false}) {
    ExpectBreakdownCompare("s", kKey, {"month", 14, "0", Ts(2024, 3, 15)}, "year", rollup, 5);
  }
  // units=-1: from the key's first unit with data (July 2023).
  for (const char* compare : {"previous", "year"}) {
    for (bool rollup : {true, false}) {
      ExpectBreakdownCompare("s", kFreshKey, {"month", -1, "0", Ts(2024, 5, 15)}, compare, rollup, 100);
    }
  }
  EXPECT_GT(null_changes_, 0);
  EXPECT_GT(number_changes_, 0);
}

// Early 1970: the earlier windows lie before the epoch, where no record can
// be; zeros with their unit starts (computed by hand), change null.
TEST_F(IntegrationReadCompareTest, EarlierWindowBeforeTheEpoch) {
  const auto series = [](std::vector<int64_t> dts) {
    nlohmann::json list = nlohmann::json::array();
    for (int64_t dt : dts) list.push_back({{"dt", dt}, {"clicks", 0}});
    return list;
  };
  const int64_t ref = 4 * kDay + 12 * kHour;  // 1970-01-05 12:00 UTC
  const std::string base = fmt::format("/clicks?ns=u&key=cmp&unit=day&units=3&unit_reference_ts={}", ref);
  auto prev = cluster_.Api(base + "&compare=previous");
  ASSERT_EQ(prev["http_status"], 200) << prev.dump();
  EXPECT_EQ(prev["data"]["clicks"], series({4 * kDay, 3 * kDay, 2 * kDay})) << prev.dump();
  EXPECT_EQ(prev["data"]["compare"]["clicks"], series({kDay, 0, -kDay})) << prev.dump();
  EXPECT_TRUE(prev["data"]["compare"]["change"].is_null()) << prev.dump();
  auto year = cluster_.Api(base + "&compare=year");
  ASSERT_EQ(year["http_status"], 200) << year.dump();
  // 1969-01-05, -04, -03.
  EXPECT_EQ(year["data"]["compare"]["clicks"], series({-361 * kDay, -362 * kDay, -363 * kDay})) << year.dump();
  EXPECT_TRUE(year["data"]["compare"]["change"].is_null()) << year.dump();
  auto breakdown = cluster_.Api(
      fmt::format("/breakdown?sns=c&ns=u&key=cmp&unit=day&units=2&unit_reference_ts={}&rollup=false&compare=year", ref));
  ASSERT_EQ(breakdown["http_status"], 200) << breakdown.dump();
  const nlohmann::json want = nlohmann::json::array(
      {{{"dt", 4 * kDay}, {"compare_dt", -361 * kDay}, {"breakdown", nlohmann::json::array()}, {"other", 0}, {"none", 0}},
       {{"dt", 3 * kDay}, {"compare_dt", -362 * kDay}, {"breakdown", nlohmann::json::array()}, {"other", 0}, {"none", 0}}});
  EXPECT_EQ(breakdown["data"]["breakdown"], want) << breakdown.dump();
}

TEST_F(IntegrationReadCompareTest, BadCompareIsInvalidCompare) {
  for (const std::string bad :
       {"month", "PREVIOUS", "", "prev", "previous&compare=year", "year&compare=year", "1"}) {
    for (const std::string path : {"/clicks?ns=u&key=cmp&units=3", "/breakdown?sns=c&ns=u&key=cmp&units=3"}) {
      const std::string target = path + "&compare=" + bad;
      auto j = cluster_.Api(target);
      EXPECT_EQ(j["http_status"], 400) << target << " " << j.dump();
      EXPECT_EQ(j["status_txt"], "INVALID_COMPARE") << target << " " << j.dump();
      EXPECT_TRUE(j["data"].is_null()) << target;
    }
  }
}

TEST_F(IntegrationReadCompareTest, CompareAddsNoStorageRequests) {
  const auto counters = [&] {
    auto s = cluster_.Api("/stats");
    EXPECT_EQ(s["http_status"], 200) << s.dump();
    return std::pair<int64_t, int64_t>{s["data"]["read"]["archive_requests"].get<int64_t>(),
                                       s["data"]["read"]["realtime_requests"].get<int64_t>()};
  };
  const int64_t recent = (today_ + 1) * kDay + 10 * kHour;
  const std::vector<Case> cases = {{"day", 7, "0", recent}, {"month", 1, "-5", Ts(2024, 3, 15)},
                                   {"week", 2, "9", recent}};
  // The node's first archive read also asks shard 0 which shard count the
  // archive is cut into (ArchiveReader): once, not per query.
  ASSERT_EQ(cluster_.Api(ClicksTarget(kKey, cases.front(), "", false))["http_status"], 200);
  for (const Case& c : cases) {
    for (bool rollup : {false, true}) {
      for (const char* compare : {"previous", "year"}) {
        const auto before = counters();
        auto plain = cluster_.Api(ClicksTarget(kKey, c, "", rollup));
        ASSERT_EQ(plain["http_status"], 200) << plain.dump();
        const auto mid = counters();
        auto compared = cluster_.Api(ClicksTarget(kKey, c, compare, rollup));
        ASSERT_EQ(compared["http_status"], 200) << compared.dump();
        const auto after = counters();
        const std::string what = ClicksTarget(kKey, c, compare, rollup);
        EXPECT_EQ(mid.first - before.first, 1) << what << " plain archive requests";
        EXPECT_EQ(mid.second - before.second, 1) << what << " plain realtime requests";
        EXPECT_EQ(after.first - mid.first, 1) << what << " compared archive requests";
        EXPECT_EQ(after.second - mid.second, 1) << what << " compared realtime requests";
      }
    }
  }
}

}  // namespace
}  // namespace clickatron::api::testing::integration_compare_test
