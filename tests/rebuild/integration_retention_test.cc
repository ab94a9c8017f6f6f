// Retention (clickatron/retention.h) end to end: real daemons, the real
// rebuild, queries through the API. Every expectation is computed here from
// the raw clicks the test sent: which hours a policy rolls up, and into which
// day, by the test's own arithmetic (UTC days; New York's offsets written out).
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include "rebuild/rebuild_cluster_fixture.h"

#include "clickatron/record.h"
#include "clickatron/unique_sketch.h"

namespace clickatron::integration_retention_test {
namespace {

// The raw clicks sent, by what they are.
struct RawClicks {
  std::map<std::pair<std::string, std::string>, std::map<int64_t, int64_t>> totals;  // (ns, tkey) -> hour -> n
  // (ns, tkey) -> hour -> country -> n (subtotal namespace "c")
  std::map<std::pair<std::string, std::string>, std::map<int64_t, std::map<std::string, int64_t>>> countries;
  std::map<std::pair<std::string, std::string>, std::map<int64_t, std::set<std::string>>> visitors;  // (ns, tkey)

  int64_t ClicksIn(const std::string& ns, const std::string& tkey, int64_t from, int64_t to) const {
    int64_t sum = 0;
    auto it = totals.find({ns, tkey});
    if (it == totals.end()) return 0;
    for (auto h = it->second.lower_bound(from); h != it->second.end() && h->first < to; ++h) sum += h->second;
    return sum;
  }
  std::map<std::string, int64_t> CountriesIn(const std::string& ns, const std::string& tkey, int64_t from,
                                             int64_t to) const {
    std::map<std::string, int64_t> sums;
    auto it = countries.find({ns, tkey});
    if (it == countries.end()) return sums;
    for (auto h = it->second.lower_bound(from); h != it->second.end() && h->first < to; ++h) {
      for (const auto& [country, n] : h->second) sums[country] += n;
    }
    return sums;
  }
  size_t VisitorsIn(const std::string& ns, const std::string& tkey, int64_t from, int64_t to) const {
    std::set<std::string> all;
    auto it = visitors.find({ns, tkey});
    if (it == visitors.end()) return 0;
    for (auto h = it->second.lower_bound(from); h != it->second.end() && h->first < to; ++h) {
      all.insert(h->second.begin(), h->second.end());
    }
    return all.size();
  }
};

std::string SketchText(const std::set<std::string>& tokens) {
  UniqueSketch sketch;
  for (const std::string& t : tokens) sketch.Add(HashVisitor(t));
  return sketch.ToText();
}

// Realtime lines of random clicks in the hours of [first_day, last_day] of
// `ns`, keys k0..k5 (both archive shards), every third hour of a day or so;
// k0 also has visitors. Each click is added to *raw.
std::vector<std::string> ClickLines(const std::string& ns, int64_t first_day, int64_t last_day, uint32_t seed,
                                    RawClicks* raw) {
  std::mt19937 rng(seed);
  const std::vector<std::string> countries = {"US", "JP", "DE"};
  std::vector<std::string> lines;
  for (int64_t day = first_day; day <= last_day; ++day) {
    for (int hour = 0; hour < 24; ++hour) {
      if (rng() % 3 != 0) continue;
      const int64_t at = day * kSecondsPerDay + hour * kSecondsPerHour;
      const std::string ymdh = *YmdhFromUnix(at);
      bool k0_clicked = false;
      for (int k = 0; k < 6; ++k) {
        if (rng() % 2 != 0) continue;
        k0_clicked |= k == 0;
        const std::string tkey = fmt::format("k{}", k);
        const int64_t n = 1 + rng() % 20;
        const std::string& country = countries[rng() % countries.size()];
        lines.push_back(fmt::format("{}|{}.{},{}", ns, tkey, ymdh, n));
        lines.push_back(fmt::format("c.{}|{}.{}.{},{}", ns, tkey, country, ymdh, n));
        raw->totals[{ns, tkey}][at] += n;
        raw->countries[{ns, tkey}][at][country] += n;
      }
      // Visitors come with clicks (uniq= rides on an increment): a key's
      // total is the index of the hours its unique records have.
      if (!k0_clicked) continue;
      std::set<std::string> seen;
      for (int v = 0; v < 3; ++v) seen.insert(fmt::format("visitor{}", rng() % 40));
      lines.push_back(fmt::format("~{}|k0.{},{}", ns, ymdh, SketchText(seen)));
      raw->visitors[{ns, "k0"}][at].insert(seen.begin(), seen.end());
    }
  }
  return lines;
}

std::string Lines(const std::vector<std::string>& lines) {
  std::string text;
  for (const std::string& l : lines) text += l + "\n";
  return text;
}

// The hour a UTC-day policy keeps a rolled-up hour at: its day's noon.
int64_t UtcAnchor(int64_t hour) { return FloorDiv(hour, kSecondsPerDay) * kSecondsPerDay + 12 * kSecondsPerHour; }

// New York's offset in the autumn of 2026: EDT (-4) until 2026-11-01T06:00Z, then EST (-5).
constexpr int64_t kNewYorkFallBack = 1793512800;  // 2026-11-01T06:00:00Z
int64_t NewYorkDayOf(int64_t at) {
  return FloorDiv(at + (at < kNewYorkFallBack ? -4 : -5) * kSecondsPerHour, kSecondsPerDay);
}

class RetentionIntegration : public RebuildIntegration {
 protected:
  // The cluster file with these [[retention]] tables (the rebuild reads it
  // per run; the API knows retention from the served manifests).
  void SetPolicies(const std::vector<testing::TomlTable>& policies) {
    testing::ClusterSpec spec = cluster_.spec();
    spec.retention = policies;
    const Status written = cluster_.Write(spec);
    ASSERT_TRUE(written.ok()) << written.ToString();
  }
  static testing::TomlTable Policy(const std::string& ns, int hourly_days, int daily_days, const std::string& zone) {
    testing::TomlTable t;
    t.SetString("ns", ns).SetInt("hourly_days", hourly_days).SetInt("daily_days", daily_days).SetString("zone", zone);
    return t;
  }

  // The archive files against the raw clicks, ns `rolled_ns`'s hours before
  // `hourly_from` moved to their UTC day's noon (counters by the fixture's
  // oracle, which makes day and span records from the hours; unique hours
  // compared here by their visitor counts).
  // With `kept_from`, the namespace's hours before it are gone.
  void ExpectRolledArchive(const RawClicks& raw, const std::string& rolled_ns, int64_t hourly_from,
                           int64_t kept_from = std::numeric_limits<int64_t>::min()) {
    auto where = [&](const std::string& ns, int64_t hour) {
      return ns == rolled_ns && hour < hourly_from ? UtcAnchor(hour) : hour;
    };
    auto dropped = [&](const std::string& ns, int64_t hour) { return ns == rolled_ns && hour < kept_from; };
    Expectation expect;
    for (const auto& [key, hours] : raw.totals) {
      for (const auto& [hour, n] : hours) {
        if (!dropped(key.first, hour)) expect.AddTotal(key.first, key.second, *YmdhFromUnix(where(key.first, hour)), n);
      }
    }
    for (const auto& [key, hours] : raw.countries) {
      for (const auto& [hour, by_country] : hours) {
        if (dropped(key.first, hour)) continue;
        for (const auto& [country, n] : by_country) {
          expect.AddSubtotal("c", key.first, key.second, country, *YmdhFromUnix(where(key.first, hour)), n);
        }
      }
    }
    ExpectArchiveEquals(expect, /*without_uniques=*/true);
    // Unique hour records: key -> distinct visitors.
    std::map<std::string, std::set<std::string>> want_sets;
    for (const auto& [key, hours] : raw.visitors) {
      for (const auto& [hour, seen] : hours) {
        if (dropped(key.first, hour)) continue;
        auto& set = want_sets[fmt::format("~{}|{}.{}", key.first, key.second, *YmdhFromUnix(where(key.first, hour)))];
        set.insert(seen.begin(), seen.end());
      }
    }
    std::map<std::string, uint64_t> want, got;
    for (const auto& [key, set] : want_sets) want[key] = set.size();
    for (int s = 0; s < kShards; ++s) {
      for (const std::string& line : FileLines(ArchiveFile(s))) {
        if (!line.starts_with("~")) continue;
        auto record = ParseArchiveLine(line);
        ASSERT_TRUE(record.ok()) << line;
        if (record->type != RecordType::kUniqueTotal) continue;
        got[record->key] = record->sketch.Estimate();
      }
    }
    EXPECT_EQ(got, want);
  }

  nlohmann::json Query(const std::string& target, int expect_status = 200) {
    HttpResponse r = HttpGet(cluster_.Address(testing::ApiMemberName(0)), target);
    EXPECT_TRUE(r.ok());
    EXPECT_EQ(r.status_code, expect_status) << target << ": " << r.body;
    auto j = nlohmann::json::parse(r.body, nullptr, false);
    EXPECT_TRUE(j.is_object()) << r.body;
    return j.is_object() ? j : nlohmann::json::object();
  }
  // A query's "dt" list, oldest first, each with the end of its unit (the
  // next one's dt; the newest ends at `end`).
  static std::vector<std::pair<int64_t, int64_t>> Units(const nlohmann::json& list, int64_t end) {
    std::vector<std::pair<int64_t, int64_t>> units;
    for (size_t i = list.size(); i-- > 0;) units.push_back({list[i]["dt"].get<int64_t>(), 0});
    for (size_t i = 0; i < units.size(); ++i) units[i].second = i + 1 < units.size() ? units[i + 1].first : end;
    return units;
  }
  std::string Ref() const { return std::to_string((day_ + 1) * kSecondsPerDay - 1); }
  // `/clicks` of u's keys k0..k5 by New York day (unit_reference_ts `ref`,
  // 20 days) against `raw`, each New York day from `first_day` to
  // `last_day`; at least `min_days` of them compared per key.
  void ExpectNewYorkDays(RawClicks& raw, int64_t ref, int64_t first_day, int64_t last_day, int min_days) {
    for (int k = 0; k < 6; ++k) {
      const std::string key = fmt::format("k{}", k);
      std::map<int64_t, int64_t> by_ny_day;
      for (const auto& [hour, n] : raw.totals[{"u", key}]) by_ny_day[NewYorkDayOf(hour)] += n;
      nlohmann::json j = Query(fmt::format("/clicks?ns=u&key={}&unit=day&units=20&timezone=America/New_York"
                                           "&unit_reference_ts={}",
                                           key, ref));
      ASSERT_TRUE(j["data"].contains("clicks")) << j.dump();
      int days_checked = 0;
      for (const auto& row : j["data"]["clicks"]) {
        const int64_t dt = row["dt"].get<int64_t>();
        const int64_t local_day =
            FloorDiv(dt + j["data"]["tz_offset"].get<int64_t>() * kSecondsPerHour, kSecondsPerDay);
        if (local_day < first_day || local_day > last_day) continue;
        const int64_t want = by_ny_day.count(local_day) ? by_ny_day[local_day] : 0;
        EXPECT_EQ(row["clicks"].get<int64_t>(), want) << key << " " << FormatDate(local_day);
        ++days_checked;
      }
      EXPECT_GE(days_checked, min_days) << key;
    }
  }
  std::string ClicksTarget(const std::string& ns, const std::string& key, const std::string& unit, int units,
                           const std::string& tz = "0") const {
    return fmt::format("/clicks?ns={}&key={}&unit={}&units={}&timezone={}&unit_reference_ts={}", ns, key, unit, units,
                       tz, Ref());
  }
};

TEST_F(RetentionIntegration, APolicyRollsUpAgedDaysAndQueriesByDayStayExact) {
  RawClicks raw;
  std::string out;
  // Two namespaces of history without a policy: generation 1 keeps every hour.
  std::vector<std::string> history = ClickLines("u", day_ - 12, day_ - 1, 1, &raw);
  for (const std::string& l : ClickLines("v", day_ - 12, day_ - 1, 2, &raw)) history.push_back(l);
  // And years of it: one day a month over two years before that.
  for (int month = 1; month <= 24; ++month) {
    const int64_t day = day_ - 12 - 30 * month;
    for (const std::string& l : ClickLines("u", day, day, 100 + static_cast<uint32_t>(month), &raw)) history.push_back(l);
  }
  testing::WriteAll(cluster_ / "history.csv", Lines(history));
  ASSERT_EQ(Rebuild({"load", "--config", cluster_.config_path(), "--now", cluster_ / "history.csv"}, &out), 0) << out;
  ExpectRolledArchive(raw, "", 0);

  // A policy for u: three days of hours. Tonight also brings the day, late
  // data for an aged day and a queued load of older history.
  SetPolicies({Policy("u", 3, 0, "UTC")});
  RotateAll(day_);
  SendRealtimeLines(ClickLines("u", day_, day_, 3, &raw));
  SendRealtimeLines(ClickLines("v", day_, day_, 4, &raw));
  std::string late = FormatBatchHeader(testing::ApiMemberName(1), 0, 7);
  for (int hour : {1, 13, 22}) {
    const int64_t at = (day_ - 8) * kSecondsPerDay + hour * kSecondsPerHour;
    late += fmt::format("u|k2.{},5\nc.u|k2.NZ.{},5\n", *YmdhFromUnix(at), *YmdhFromUnix(at));
    raw.totals[{"u", "k2"}][at] += 5;
    raw.countries[{"u", "k2"}][at]["NZ"] += 5;
  }
  WriteLateFile(1, 1700000000, {late});
  ASSERT_NO_FATAL_FAILURE(StartApi(1));
  testing::WriteAll(cluster_ / "older.csv", Lines(ClickLines("u", day_ - 20, day_ - 19, 5, &raw)));
  ASSERT_EQ(Rebuild({"load", "--config", cluster_.config_path(), cluster_ / "older.csv"}, &out), 0) << out;
  RotateAll(day_ + 1);
  ASSERT_EQ(RunDay(day_, &out), 0) << out;
  EXPECT_NE(out.find("retention of namespace u: hourly until"), std::string::npos) << out;
  EXPECT_NE(out.find("hours rolled into days"), std::string::npos) << out;
  // Only u's lines of the previous files were read; v's were copied.
  EXPECT_NE(out.find("of namespaces with a policy are read to roll up their aged days (whole UTC days: their day and "
                     "span records kept)"),
            std::string::npos)
      << out;

  // Days day_-2 .. day_ keep their hours; every older day of u is its noon.
  const int64_t hourly_from = (day_ - 2) * kSecondsPerDay;
  ExpectRolledArchive(raw, "u", hourly_from);
  for (int s = 0; s < kShards; ++s) {
    auto manifest = ReadManifest(ManifestPathFor(ArchiveFile(s)));
    ASSERT_TRUE(manifest.ok());
    ASSERT_EQ(manifest->retention.size(), 1u);
    EXPECT_EQ(manifest->retention[0].ns, "u");
    EXPECT_EQ(manifest->retention[0].zone, "UTC");
    EXPECT_EQ(manifest->retention[0].hourly_from, hourly_from);
    EXPECT_FALSE(manifest->retention[0].kept_from.has_value());
  }

  // Days, weeks and months across the boundary: exact, and they say so.
  const int64_t end = (day_ + 1) * kSecondsPerDay;
  for (const std::string key : {"k1", "k2"}) {
    for (const auto& [unit, units] :
         std::vector<std::pair<std::string, int>>{{"day", 25}, {"week", 4}, {"mweek", 5}, {"month", 26}}) {
      nlohmann::json j = Query(ClicksTarget("u", key, unit, units));
      ASSERT_TRUE(j.contains("data") && j["data"].contains("clicks")) << j.dump();
      for (const auto& [from, to] : Units(j["data"]["clicks"], end)) {
        int64_t got = -1;
        for (const auto& row : j["data"]["clicks"]) {
          if (row["dt"] == from) got = row["clicks"].get<int64_t>();
        }
        EXPECT_EQ(got, raw.ClicksIn("u", key, from, to)) << key << " " << unit << " at " << FormatIsoTime(from);
      }
      ASSERT_TRUE(j["data"].contains("resolution")) << j.dump();
      EXPECT_EQ(j["data"]["resolution"]["hourly_from"], hourly_from);
      EXPECT_EQ(j["data"]["resolution"]["zone"], "UTC");
    }
  }
  // A breakdown by day and the visitors by day, across the boundary.
  {
    nlohmann::json j =
        Query(fmt::format("/breakdown?sns=c&ns=u&key=k2&unit=day&units=14&rollup=false&unit_reference_ts={}", Ref()));
    ASSERT_TRUE(j["data"].contains("breakdown")) << j.dump();
    for (const auto& [from, to] : Units(j["data"]["breakdown"], end)) {
      std::map<std::string, int64_t> got;
      for (const auto& unit : j["data"]["breakdown"]) {
        if (unit["dt"] != from) continue;
        for (const auto& row : unit["breakdown"]) got[row["value"].get<std::string>()] = row["clicks"].get<int64_t>();
      }
      EXPECT_EQ(got, raw.CountriesIn("u", "k2", from, to)) << FormatIsoTime(from);
    }
    EXPECT_TRUE(j["data"].contains("resolution"));
    for (const std::string ns : {"v", "u"}) {
      j = Query(fmt::format("/uniques?ns={}&key=k0&unit=day&units=14&unit_reference_ts={}", ns, Ref()));
      ASSERT_TRUE(j["data"].contains("uniques")) << j.dump();
      for (const auto& [from, to] : Units(j["data"]["uniques"], end)) {
        for (const auto& row : j["data"]["uniques"]) {
          if (row["dt"] == from) {
            EXPECT_EQ(row["uniques"].get<uint64_t>(), raw.VisitorsIn(ns, "k0", from, to)) << ns << " " << FormatIsoTime(from);
          }
        }
      }
    }
  }
  // Hours, or another zone's days, before the boundary: refused, naming it.
  for (const std::string& target : {ClicksTarget("u", "k1", "hour", 24 * 4), ClicksTarget("u", "k1", "day", 10, "-5"),
                                    fmt::format("/breakdown?sns=c&ns=u&key=k1&unit=hour&units=96&unit_reference_ts={}",
                                                Ref()),
                                    fmt::format("/uniques?ns=u&key=k0&unit=day&units=9&timezone=9&unit_reference_ts={}",
                                                Ref())}) {
    nlohmann::json j = Query(target, 400);
    EXPECT_EQ(j.value("status_txt", ""), "RESOLUTION_EXPIRED") << target;
    EXPECT_NE(j.value("message", "").find("hourly until " + FormatIsoTime(hourly_from) + "; days in UTC before it"),
              std::string::npos)
        << j.dump();
  }
  // Hours after it are hours, with no resolution said; so is every hour of v.
  {
    nlohmann::json j = Query(ClicksTarget("u", "k1", "hour", 48));
    EXPECT_FALSE(j["data"].contains("resolution")) << j.dump();
    for (const auto& row : j["data"]["clicks"]) {
      const int64_t at = row["dt"].get<int64_t>();
      EXPECT_EQ(row["clicks"].get<int64_t>(), raw.ClicksIn("u", "k1", at, at + kSecondsPerHour)) << at;
    }
    j = Query(ClicksTarget("v", "k1", "hour", 24 * 10));
    EXPECT_FALSE(j["data"].contains("resolution"));
    for (const auto& row : j["data"]["clicks"]) {
      const int64_t at = row["dt"].get<int64_t>();
      EXPECT_EQ(row["clicks"].get<int64_t>(), raw.ClicksIn("v", "k1", at, at + kSecondsPerHour)) << at;
    }
  }
}

TEST_F(RetentionIntegration, ADaylightSavingZoneRollsUpItsOwnDays) {
  RawClicks raw;
  std::string out;
  SetPolicies({Policy("u", 2, 0, "America/New_York")});
  // History around New York's fall back (2026-11-01: a 25-hour day).
  const int64_t first = *ParseDate("2026-10-29"), last = *ParseDate("2026-11-03");
  testing::WriteAll(cluster_ / "history.csv", Lines(ClickLines("u", first, last, 11, &raw)));
  ASSERT_EQ(Rebuild({"load", "--config", cluster_.config_path(), cluster_ / "history.csv"}, &out), 0) << out;
  RotateAll(day_);
  SendRealtimeLines(ClickLines("u", day_, day_, 12, &raw));
  RotateAll(day_ + 1);
  ASSERT_EQ(RunDay(day_, &out), 0) << out;

  auto manifest = ReadManifest(ManifestPathFor(ArchiveFile(0)));
  ASSERT_TRUE(manifest.ok());
  ASSERT_EQ(manifest->retention.size(), 1u);
  EXPECT_EQ(manifest->retention[0].zone, "America/New_York");
  // Each New York day of the history is one record, at its middle: the
  // counts per New York day, by the test's own offsets.
  std::map<int64_t, int64_t> by_ny_day;
  for (const auto& [hour, n] : raw.totals.at({"u", "k3"})) by_ny_day[NewYorkDayOf(hour)] += n;
  // Read in New York's zone (EST at the reference time) and at EDT's offset:
  // both take each aged day whole.
  for (const std::string tz : {"America/New_York", "-4", "-5"}) {
    nlohmann::json j = Query(ClicksTarget("u", "k3", "day", 45, tz));
    ASSERT_TRUE(j["data"].contains("clicks")) << j.dump();
    int days_checked = 0;
    for (const auto& row : j["data"]["clicks"]) {
      const int64_t dt = row["dt"].get<int64_t>();
      const int64_t local_day = FloorDiv(dt + j["data"]["tz_offset"].get<int64_t>() * kSecondsPerHour, kSecondsPerDay);
      if (local_day < first - 1 || local_day > last + 1) continue;
      const int64_t want = by_ny_day.count(local_day) ? by_ny_day[local_day] : 0;
      EXPECT_EQ(row["clicks"].get<int64_t>(), want) << tz << " " << FormatDate(local_day);
      ++days_checked;
    }
    EXPECT_GE(days_checked, 6) << tz;
    EXPECT_EQ(j["data"]["resolution"]["zone"], "America/New_York");
    // A month in New York: October's and November's aged days whole.
    j = Query(ClicksTarget("u", "k3", "month", 3, tz));
    for (const auto& row : j["data"]["clicks"]) {
      const int64_t dt = row["dt"].get<int64_t>();
      const CivilDate month = CivilFromDays(FloorDiv(dt + j["data"]["tz_offset"].get<int64_t>() * kSecondsPerHour,
                                                     kSecondsPerDay));
      if (month.year != 2026 || (month.month != 10 && month.month != 11)) continue;
      int64_t want = 0;
      for (const auto& [day, n] : by_ny_day) want += CivilFromDays(day).month == month.month ? n : 0;
      EXPECT_EQ(row["clicks"].get<int64_t>(), want) << tz << " month " << month.month;
    }
  }
  // A restatement replaces UTC days, which would cut New York's rolled-up
  // days in two: refused before anything is queued.
  testing::WriteAll(cluster_ / "restate.csv", fmt::format("u|k3.{},1\n", *YmdhFromUnix((first + 1) * kSecondsPerDay)));
  EXPECT_NE(Rebuild({"restate", "--config", cluster_.config_path(), "--ns", "u", "--from", FormatDate(first + 1), "--to",
                     FormatDate(first + 1), cluster_ / "restate.csv"},
                    &out),
            0);
  EXPECT_NE(out.find("RESTATE_ROLLED_UP_DAYS"), std::string::npos) << out;
  EXPECT_NE(out.find("days of America/New_York"), std::string::npos) << out;
  // Central time's days are not New York's.
  nlohmann::json j = Query(ClicksTarget("u", "k3", "day", 45, "-6"), 400);
  EXPECT_EQ(j.value("status_txt", ""), "RESOLUTION_EXPIRED");
  EXPECT_NE(j.value("message", "").find("days in America/New_York before it"), std::string::npos) << j.dump();
}

// A restatement of u's first hourly UTC day, queued while New York's
// policy keeps those hours, waits a night for api-1's late data (api-1 is
// down). Had u's hours moved on that night, the New York day straddling
// the restated UTC day would be rolled up by the time the restatement is
// folded, and cut in two by it (hours lost and counted twice). While a
// restatement of a namespace is queued its retention holds; every New York
// day then reads the restated clicks exactly.
// Every cluster member an API node that runs when needed (a restatement's
// seal asks each), none a loader that never runs.
class RetentionWithRestatements : public RetentionIntegration {
 protected:
  RetentionWithRestatements() { loader_ = "api-1"; }
  // u's retention in the served manifest.
  AppliedRetention ServedRetention() {
    auto manifest = ReadManifest(ManifestPathFor(ArchiveFile(0)));
    EXPECT_TRUE(manifest.ok());
    EXPECT_EQ(manifest.ok() ? manifest->retention.size() : 0, 1u);
    return manifest.ok() && manifest->retention.size() == 1 ? manifest->retention[0] : AppliedRetention{};
  }
  // `restate` of u's UTC day `day` (queued, not --now): one click of k3 at
  // 05:00 is all it holds.
  void QueueRestatementOf(int64_t day) {
    std::string out;
    testing::WriteAll(cluster_ / "restate.csv",
                      fmt::format("u|k3.{},1\n", *YmdhFromUnix(day * kSecondsPerDay + 5 * kSecondsPerHour)));
    ASSERT_EQ(Rebuild({"restate", "--config", cluster_.config_path(), "--ns", "u", "--from", FormatDate(day), "--to",
                       FormatDate(day), cluster_ / "restate.csv"},
                      &out),
              0)
        << out;
  }
};

TEST_F(RetentionWithRestatements, ARestatementThatWaitsHoldsItsNamespacesRetention) {
  RawClicks raw;
  std::string out;
  SetPolicies({Policy("u", 3, 0, "America/New_York")});
  testing::WriteAll(cluster_ / "history.csv", Lines(ClickLines("u", day_ - 12, day_ - 1, 31, &raw)));
  ASSERT_EQ(Rebuild({"load", "--config", cluster_.config_path(), cluster_ / "history.csv"}, &out), 0) << out;
  RotateAll(day_);
  RotateAll(day_ + 1);
  ASSERT_EQ(RunDay(day_, &out), 0) << out;
  const int64_t hourly_from = ServedRetention().hourly_from;

  // The restated day: the first whole UTC day of hours; one click in it.
  const int64_t restated = FloorDiv(hourly_from + kSecondsPerDay - 1, kSecondsPerDay);
  for (auto& [key, hours] : raw.totals) {
    hours.erase(hours.lower_bound(restated * kSecondsPerDay), hours.lower_bound((restated + 1) * kSecondsPerDay));
  }
  raw.totals[{"u", "k3"}][restated * kSecondsPerDay + 5 * kSecondsPerHour] += 1;
  // api-1 has late data sealed when the restatement is queued, and is down
  // at the next run: the restatement waits for it.
  WriteLateFile(1, 1700000000, {FormatBatchHeader(testing::ApiMemberName(1), 0, 7) + "v|late.c3p1,1\n"});
  ASSERT_NO_FATAL_FAILURE(StartApi(1));
  ASSERT_NO_FATAL_FAILURE(QueueRestatementOf(restated));
  cluster_.Kill(testing::ApiMemberName(1));
  RotateAll(day_ + 2);
  ASSERT_EQ(RunDay(day_ + 1, &out), 0) << out;
  EXPECT_NE(out.find("waits for the late data API member api-1 sealed before it"), std::string::npos) << out;
  EXPECT_NE(out.find("retention of namespace u held where it is"), std::string::npos) << out;
  EXPECT_EQ(ServedRetention().hourly_from, hourly_from) << "u's hours moved on while its restatement waited";

  ASSERT_NO_FATAL_FAILURE(StartApi(1));
  RotateAll(day_ + 3);
  ASSERT_EQ(RunDay(day_ + 2, &out), 0) << out;
  EXPECT_EQ(out.find("waits for the late data"), std::string::npos) << out;
  // Once folded, the hours move on at the next run.
  RotateAll(day_ + 4);
  ASSERT_EQ(RunDay(day_ + 3, &out), 0) << out;
  EXPECT_GT(ServedRetention().hourly_from, hourly_from);

  // Every key's New York days, by the test's own offsets.
  ExpectNewYorkDays(raw, (day_ + 4) * kSecondsPerDay - 1, day_ - 12, day_ + 3, 12);
}

// A restatement queued while a generation that rolls its days up is built
// (here: built with --build-only, deployed by the next run) passed its check
// against the generation served then. The build that would fold it checks
// again against the one it builds on: it takes the restatement out of the
// queue (RESTATE_ROLLED_UP_DAYS) rather than cut New York's days in two.
TEST_F(RetentionWithRestatements, ARestatementQueuedDuringABuildThatRollsItsDaysUpIsRefusedAtFoldTime) {
  RawClicks raw;
  std::string out;
  SetPolicies({Policy("u", 3, 0, "America/New_York")});
  testing::WriteAll(cluster_ / "history.csv", Lines(ClickLines("u", day_ - 12, day_ - 1, 51, &raw)));
  ASSERT_EQ(Rebuild({"load", "--config", cluster_.config_path(), cluster_ / "history.csv"}, &out), 0) << out;
  ASSERT_NO_FATAL_FAILURE(StartApi(1));
  RotateAll(day_);
  RotateAll(day_ + 1);
  ASSERT_EQ(RunDay(day_, &out), 0) << out;
  const int64_t restated = FloorDiv(ServedRetention().hourly_from + kSecondsPerDay - 1, kSecondsPerDay);

  // Generation 2 rolls another New York day up; built, not deployed.
  RotateAll(day_ + 2);
  ASSERT_EQ(BuildDayOnly(day_ + 1, &out), 0) << out;
  ASSERT_NO_FATAL_FAILURE(QueueRestatementOf(restated));
  RotateAll(day_ + 3);
  ASSERT_EQ(RunDay(day_ + 2, &out), 0) << out;
  EXPECT_NE(out.find("is not folded, and leaves the queue"), std::string::npos) << out;
  EXPECT_NE(out.find("RESTATE_ROLLED_UP_DAYS"), std::string::npos) << out;

  // Every key's New York days as they were sent: nothing restated, nothing cut.
  ExpectNewYorkDays(raw, (day_ + 3) * kSecondsPerDay - 1, day_ - 12, day_ + 2, 12);
}

TEST_F(RetentionIntegration, APolicyChangedAndARebuildKilledMidRollupStayExact) {
  RawClicks raw;
  std::string out;
  SetPolicies({Policy("u", 3, 0, "UTC")});
  testing::WriteAll(cluster_ / "history.csv", Lines(ClickLines("u", day_ - 12, day_ - 1, 21, &raw)));
  ASSERT_EQ(Rebuild({"load", "--config", cluster_.config_path(), cluster_ / "history.csv"}, &out), 0) << out;
  RotateAll(day_);
  SendRealtimeLines(ClickLines("u", day_, day_, 22, &raw));
  RotateAll(day_ + 1);
  ASSERT_EQ(RunDay(day_, &out), 0) << out;
  ExpectRolledArchive(raw, "u", (day_ - 2) * kSecondsPerDay);

  // Ten days of hours now: the rolled days stay days, and the run says so.
  SetPolicies({Policy("u", 10, 0, "UTC")});
  SendRealtimeLines(ClickLines("u", day_ + 1, day_ + 1, 23, &raw));
  RotateAll(day_ + 2);
  ASSERT_EQ(RunDay(day_ + 1, &out), 0) << out;
  EXPECT_NE(out.find("hours cannot come back"), std::string::npos) << out;
  ExpectRolledArchive(raw, "u", (day_ - 2) * kSecondsPerDay);
  nlohmann::json j = Query(ClicksTarget("u", "k1", "hour", 24 * 5), 400);
  EXPECT_EQ(j.value("status_txt", ""), "RESOLUTION_EXPIRED");

  // One day of hours, and the rebuild killed in the middle of rolling up.
  SetPolicies({Policy("u", 1, 0, "UTC")});
  SendRealtimeLines(ClickLines("u", day_ + 2, day_ + 2, 24, &raw));
  RotateAll(day_ + 3);
  const std::string gen_dir = cluster_ / "work/gen/3";
  pid_t pid = ::fork();
  if (pid == 0) {
    const std::string bin = BinaryPath("clickatron-rebuild");
    const std::string log = cluster_ / "rebuild-killed.log";
    if (std::freopen(log.c_str(), "w", stdout) == nullptr) ::_exit(126);
    ::dup2(1, 2);
    ::execl(bin.c_str(), bin.c_str(), "run", "--config", cluster_.config_path().c_str(), "--date",
            FormatDate(day_ + 2).c_str(), static_cast<char*>(nullptr));
    ::_exit(127);
  }
  // Killed once a merge task has begun writing the rolled-up shard.
  const bool merging = WaitFor(
      [&] {
        std::error_code ec;
        if (!std::filesystem::exists(gen_dir, ec)) return false;
        // Stepped with an error code: the run renames and removes files under
        // it meanwhile, which a range-for's increment throws on.
        for (auto it = std::filesystem::recursive_directory_iterator(gen_dir, ec);
             !ec && it != std::filesystem::recursive_directory_iterator(); it.increment(ec)) {
          if (it->path().string().ends_with(".csv.tmp") || it->path().filename() == "done.json") return true;
        }
        return false;
      },
      std::chrono::seconds(30));
  ::kill(pid, SIGKILL);
  int status = 0;
  ::waitpid(pid, &status, 0);
  // Still running when killed (the deploy alone takes longer than a poll).
  EXPECT_TRUE(WIFSIGNALED(status)) << "the run ended before it was killed";
  auto killed_log = ReadFileToString(cluster_ / "rebuild-killed.log");
  EXPECT_TRUE(merging) << "the run never reached its merge: " << (killed_log.ok() ? *killed_log : "");
  ASSERT_EQ(RunDay(day_ + 2, &out), 0) << out;
  ExpectRolledArchive(raw, "u", (day_ + 2) * kSecondsPerDay);
  auto manifest = ReadManifest(ManifestPathFor(ArchiveFile(1)));
  ASSERT_TRUE(manifest.ok());
  EXPECT_EQ(manifest->generation, 3u);
  ASSERT_EQ(manifest->retention.size(), 1u);
  EXPECT_EQ(manifest->retention[0].hourly_from, (day_ + 2) * kSecondsPerDay);

  // Five days kept at all: what is older goes, and a query reaching there is refused.
  SetPolicies({Policy("u", 1, 5, "UTC")});
  SendRealtimeLines(ClickLines("u", day_ + 3, day_ + 3, 25, &raw));
  RotateAll(day_ + 4);
  ASSERT_EQ(RunDay(day_ + 3, &out), 0) << out;
  const int64_t kept_from = (day_ - 1) * kSecondsPerDay;
  ExpectRolledArchive(raw, "u", (day_ + 3) * kSecondsPerDay, kept_from);
  const std::string ref = std::to_string((day_ + 4) * kSecondsPerDay - 1);
  j = Query(fmt::format("/clicks?ns=u&key=k1&unit=day&units=5&unit_reference_ts={}", ref));
  EXPECT_EQ(j["data"]["resolution"]["kept_from"], kept_from) << j.dump();
  for (const auto& row : j["data"]["clicks"]) {
    const int64_t at = row["dt"].get<int64_t>();
    EXPECT_EQ(row["clicks"].get<int64_t>(), raw.ClicksIn("u", "k1", at, at + kSecondsPerDay)) << at;
  }
  // Reaching before it: nothing counts there, and the answer says so (a
  // units=-1 window begins at its unit's start, before kept_from).
  for (const std::string unit : {"day&units=8", "month&units=-1"}) {
    j = Query(fmt::format("/clicks?ns=u&key=k1&unit={}&unit_reference_ts={}", unit, ref));
    EXPECT_EQ(j["data"]["resolution"]["kept_from"], kept_from) << j.dump();
    int64_t sum = 0;
    for (const auto& row : j["data"]["clicks"]) {
      const int64_t at = row["dt"].get<int64_t>();
      if (unit.starts_with("day") && at < kept_from) {
        EXPECT_EQ(row["clicks"].get<int64_t>(), 0) << at;
      }
      sum += row["clicks"].get<int64_t>();
    }
    EXPECT_EQ(sum, raw.ClicksIn("u", "k1", kept_from, (day_ + 4) * kSecondsPerDay)) << unit;
  }
  j = Query(fmt::format("/clicks?ns=u&key=k1&unit=hour&units=200&unit_reference_ts={}", ref), 400);
  EXPECT_EQ(j.value("status_txt", ""), "RESOLUTION_EXPIRED");
  EXPECT_NE(j.value("message", "").find("nothing kept before " + FormatIsoTime(kept_from)), std::string::npos)
      << j.dump();
}

}  // namespace
}  // namespace clickatron::integration_retention_test
