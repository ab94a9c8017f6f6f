#include "integration/cluster_fixture.h"

#include <fmt/format.h>

#include <algorithm>
#include <chrono>
#include <set>

#include "clickatron/query_string.h"

namespace clickatron::integration {

using clickatron::testing::BinaryPath;
using clickatron::testing::ClusterSpec;
using clickatron::testing::HttpGet;
using clickatron::testing::HttpPost;

namespace {

ClusterSpec SpecOf(const Cluster::Options& options) {
  ClusterSpec spec;
  spec.realtime_shards = options.realtime_shards;
  spec.archive_shards = options.archive_shards;
  spec.archive_replicas = options.replicas_per_archive_shard;
  spec.private_hosts = options.private_hosts;
  spec.loaders = {kLoaderMember};  // tests that post to a realtime shard themselves
  spec.cluster.SetString("clock", "manual").SetString("admin_token", kToken).SetString("log_level", "info");
  spec.api.SetInt("flush_window_ms", options.flush_window_ms)
      .SetInt("retry_backoff_min_ms", 20)
      .SetInt("retry_backoff_max_ms", 500)
      .SetInt("request_timeout_ms", 3000)
      .SetInt("read_cache_mb", options.read_cache_mb)
      .SetInt("read_loops", options.read_loops);
  if (options.checkpoint_interval_ms > 0) spec.realtime.SetInt("checkpoint_interval_ms", options.checkpoint_interval_ms);
  spec.rebuild.SetInt("memory_mb", options.rebuild_memory_mb);  // work_dir DIR/rebuild, backup_dir DIR/backup
  return spec;
}

}  // namespace

Cluster::Cluster(Options options) : cluster_(SpecOf(options)) {}

bool Cluster::RotateAll(const std::string& date, std::string* error) {
  for (const MemberConfig* m : config().MembersWithRole(MemberRole::kRealtime)) {
    auto r = HttpPost(m->listen, "/rotate?today=" + date, "", 10000, kToken);
    if (r.status_code != 200) {
      *error = fmt::format("rotate {} to {}: HTTP {} {}", m->name, date, r.status_code, r.body);
      return false;
    }
  }
  return true;
}

bool Cluster::SealLateData(std::string* error) {
  auto r = HttpPost(api(), "/late/seal", "", 10000, kToken);
  if (r.status_code != 200) {
    *error = fmt::format("late/seal: HTTP {} {}", r.status_code, r.body);
    return false;
  }
  return true;
}

int Cluster::Rebuild(const std::string& date, std::string* output) {
  return clickatron::testing::RunCommand(
      cluster_.HostCommand("rebuild",
                           {BinaryPath("clickatron-rebuild"), "run", "--config", config_path(), "--date", date}),
      output);
}

int Cluster::Load(const std::vector<std::string>& args, std::string* output) {
  std::vector<std::string> argv = {BinaryPath("clickatron-rebuild"), "load", "--config", config_path()};
  argv.insert(argv.end(), args.begin(), args.end());
  return clickatron::testing::RunCommand(cluster_.HostCommand("rebuild", argv), output);
}

nlohmann::json Cluster::ApiGet(const std::string& target, int* status) const {
  auto r = HttpGet(api(), target, 15000);
  if (status) *status = r.status_code;
  if (!r.ok()) return nullptr;
  auto j = nlohmann::json::parse(r.body, nullptr, false);
  return j.is_discarded() ? nlohmann::json(nullptr) : j;
}

int64_t Cluster::DayFigure(const std::string& endpoint, const std::string& figure, const std::string& key,
                           const std::string& day) const {
  int status = 0;
  auto j = ApiGet(endpoint + "?ns=u&key=" + PercentEncode(key) +
                      "&unit=day&units=1&rollup=true&timezone=0&unit_reference_ts=" + std::to_string(UnixOfDate(day)),
                  &status);
  if (status != 200 || !j["data"][figure].is_number_integer()) return -1;
  return j["data"][figure].get<int64_t>();
}

int ExpectExactOrUnavailable(const Cluster& cluster, const std::string& day,
                             const std::map<std::string, int64_t>& expected) {
  int unavailable = 0;
  for (const auto& [key, clicks] : expected) {
    int status = 0;
    auto j = cluster.ApiGet("/clicks?ns=u&key=" + PercentEncode(key) +
                                "&unit=day&units=1&rollup=true&timezone=0&unit_reference_ts=" +
                                std::to_string(UnixOfDate(day)),
                            &status);
    if (status == 503) {
      ++unavailable;
      EXPECT_EQ(j["status_txt"], "SHARD_UNAVAILABLE") << key;
    } else {
      EXPECT_EQ(status, 200) << key;
      EXPECT_EQ(j["data"]["clicks"], clicks) << key;
    }
  }
  return unavailable;
}

std::string Increment::QueryString() const {
  std::string q = fmt::format("ns={}&key={}&ts={}&value={}", PercentEncode(ns), PercentEncode(key), ts, value);
  for (const auto& [sns, skey] : subs) q += "&sub=" + PercentEncode(sns + ":" + skey);
  if (!uniq.empty()) q += "&uniq=" + PercentEncode(uniq);
  return q;
}

void Oracle::Add(const Increment& inc) {
  int64_t hour = inc.ts - ((inc.ts % 3600) + 3600) % 3600;
  totals_[{inc.ns, inc.key}][hour] += inc.value;
  for (const auto& [sns, skey] : inc.subs) subtotals_[{sns, inc.ns, inc.key}][hour][skey] += inc.value;
  if (!inc.uniq.empty()) {
    visitors_[{"", inc.ns, inc.key}][hour][""].insert(inc.uniq);
    for (const auto& [sns, skey] : inc.subs) visitors_[{sns, inc.ns, inc.key}][hour][skey].insert(inc.uniq);
  }
}

int64_t Oracle::UnitStart(const std::string& unit, int64_t ts, int offset_hours) {
  using namespace std::chrono;
  int64_t local = ts + offset_hours * 3600;
  sys_seconds t{seconds{local}};
  sys_days day = floor<days>(t);
  int64_t start_local;
  if (unit == "hour") {
    start_local = floor<hours>(t).time_since_epoch().count() * 3600;
  } else if (unit == "day") {
    start_local = sys_seconds(day).time_since_epoch().count();
  } else if (unit == "week" || unit == "mweek") {
    weekday wd{day};
    unsigned back = unit == "week" ? wd.c_encoding() : (wd.c_encoding() + 6) % 7;  // Sunday=0 / Monday=0
    start_local = sys_seconds(day - days{back}).time_since_epoch().count();
  } else {  // month
    year_month_day ymd{day};
    start_local = sys_seconds(sys_days{ymd.year() / ymd.month() / 1}).time_since_epoch().count();
  }
  return start_local - offset_hours * 3600;
}

namespace {

// The `units` unit starts ending with the one holding `reference_ts`, newest first.
std::vector<int64_t> WindowStarts(const std::string& unit, int units, int offset, int64_t reference_ts) {
  std::vector<int64_t> starts;
  int64_t start = Oracle::UnitStart(unit, reference_ts, offset);
  for (int i = 0; i < units; ++i) {
    starts.push_back(start);
    start = Oracle::UnitStart(unit, start - 1, offset);
  }
  return starts;
}

}  // namespace

std::vector<std::pair<int64_t, int64_t>> Oracle::Series(const std::string& ns, const std::string& key,
                                                        const std::string& unit, int units, int offset,
                                                        int64_t reference_ts, const std::string& sns,
                                                        const std::string& skey) const {
  std::vector<int64_t> starts = WindowStarts(unit, units, offset, reference_ts);
  std::map<int64_t, int64_t> sums;
  if (sns.empty()) {
    auto it = totals_.find({ns, key});
    if (it != totals_.end()) {
      for (const auto& [hour, n] : it->second) sums[UnitStart(unit, hour, offset)] += n;
    }
  } else if (auto it = subtotals_.find({sns, ns, key}); it != subtotals_.end()) {
    for (const auto& [hour, skeys] : it->second) {
      if (auto v = skeys.find(skey); v != skeys.end()) sums[UnitStart(unit, hour, offset)] += v->second;
    }
  }
  std::vector<std::pair<int64_t, int64_t>> out;
  for (int64_t s : starts) out.emplace_back(s, sums.count(s) ? sums[s] : 0);
  return out;
}

std::set<std::string> Oracle::SubtotalValues(const std::string& sns, const std::string& ns,
                                             const std::string& key) const {
  std::set<std::string> values;
  if (auto it = subtotals_.find({sns, ns, key}); it != subtotals_.end()) {
    for (const auto& [hour, skeys] : it->second) {
      for (const auto& [skey, n] : skeys) values.insert(skey);
    }
  }
  return values;
}

std::vector<std::pair<std::string, int64_t>> Oracle::Breakdown(const std::string& sns, const std::string& ns,
                                                               const std::string& key, const std::string& unit,
                                                               int units, int offset, int64_t reference_ts,
                                                               size_t limit) const {
  std::vector<int64_t> starts = WindowStarts(unit, units, offset, reference_ts);
  std::set<int64_t> in_window(starts.begin(), starts.end());
  std::map<std::string, int64_t> sums;
  auto it = subtotals_.find({sns, ns, key});
  if (it != subtotals_.end()) {
    for (const auto& [hour, skeys] : it->second) {
      if (!in_window.count(UnitStart(unit, hour, offset))) continue;
      for (const auto& [skey, n] : skeys) sums[skey] += n;
    }
  }
  std::vector<std::pair<std::string, int64_t>> out(sums.begin(), sums.end());
  std::sort(out.begin(), out.end(), [](const auto& a, const auto& b) {
    return a.second != b.second ? a.second > b.second : a.first < b.first;
  });
  if (out.size() > limit) out.resize(limit);
  return out;
}

std::vector<std::pair<int64_t, int64_t>> Oracle::Uniques(const std::string& ns, const std::string& key,
                                                         const std::string& unit, int units, int offset,
                                                         int64_t reference_ts, const std::string& sns,
                                                         const std::string& skey) const {
  std::vector<int64_t> starts = WindowStarts(unit, units, offset, reference_ts);
  std::map<int64_t, std::set<std::string>> by_unit;
  auto it = visitors_.find({sns, ns, key});
  if (it != visitors_.end()) {
    for (const auto& [hour, skeys] : it->second) {
      auto s = skeys.find(skey);
      if (s != skeys.end()) by_unit[UnitStart(unit, hour, offset)].insert(s->second.begin(), s->second.end());
    }
  }
  std::vector<std::pair<int64_t, int64_t>> out;
  for (int64_t s : starts) out.emplace_back(s, by_unit.count(s) ? static_cast<int64_t>(by_unit[s].size()) : 0);
  return out;
}

std::map<std::string, int64_t> Oracle::BreakdownUniques(const std::string& sns, const std::string& ns,
                                                        const std::string& key, const std::string& unit, int units,
                                                        int offset, int64_t reference_ts) const {
  std::vector<int64_t> starts = WindowStarts(unit, units, offset, reference_ts);
  std::set<int64_t> in_window(starts.begin(), starts.end());
  std::map<std::string, std::set<std::string>> sets;
  auto it = visitors_.find({sns, ns, key});
  if (it != visitors_.end()) {
    for (const auto& [hour, skeys] : it->second) {
      if (!in_window.count(UnitStart(unit, hour, offset))) continue;
      for (const auto& [skey, tokens] : skeys) sets[skey].insert(tokens.begin(), tokens.end());
    }
  }
  std::map<std::string, int64_t> out;
  for (const auto& [skey, tokens] : sets) out[skey] = static_cast<int64_t>(tokens.size());
  return out;
}

std::string PostIncrements(const Cluster& cluster, const std::vector<Increment>& increments) {
  std::string body;
  for (size_t i = 0; i < increments.size(); ++i) {
    body += increments[i].QueryString() + "\n";
    if ((i + 1) % 50 == 0 || i + 1 == increments.size()) {
      auto r = clickatron::testing::HttpPost(cluster.api(), "/incr", body, 15000);
      if (r.status_code != 200) return fmt::format("HTTP {} {} {}", r.status_code, r.body, r.transport.ToString());
      body.clear();
    }
  }
  return "";
}

std::string WaitForQueriesToMatch(const Cluster& cluster, const Oracle& oracle, const std::vector<std::string>& keys,
                                  int64_t reference_ts) {
  std::string diff;
  clickatron::testing::WaitFor(
      [&] {
        diff = CompareQueries(cluster, oracle, keys, reference_ts);
        return diff.empty();
      },
      std::chrono::seconds(30));
  return diff;
}

namespace {

// A /clicks answer against the oracle's series: "" when equal.
std::string CompareSeries(const Cluster& cluster, const std::string& q,
                          const std::vector<std::pair<int64_t, int64_t>>& expected) {
  int status = 0;
  auto j = cluster.ApiGet(q, &status);
  if (status != 200) return fmt::format("{} → HTTP {} {}", q, status, j.dump());
  const auto& got = j["data"]["clicks"];
  if (!got.is_array() || got.size() != expected.size()) {
    return fmt::format("{} → {} points, expected {}", q, got.size(), expected.size());
  }
  for (size_t i = 0; i < expected.size(); ++i) {
    if (got[i]["dt"] != expected[i].first || got[i]["clicks"] != expected[i].second) {
      return fmt::format("{} → point {} is {}, expected dt={} clicks={}", q, i, got[i].dump(), expected[i].first,
                         expected[i].second);
    }
  }
  return "";
}

}  // namespace

std::string CompareQueries(const Cluster& cluster, const Oracle& oracle, const std::vector<std::string>& keys,
                           int64_t reference_ts) {
  struct Shape {
    const char* unit;
    int units;
  };
  const Shape shapes[] = {{"hour", 72}, {"day", 5}, {"week", 2}, {"mweek", 2}, {"month", 2}};
  const int offsets[] = {0, -5, 9, 14, -12};
  for (const std::string& key : keys) {
    for (const Shape& shape : shapes) {
      for (int offset : offsets) {
        std::string q = fmt::format("/clicks?ns=u&key={}&unit={}&units={}&timezone={}&unit_reference_ts={}",
                                    PercentEncode(key), shape.unit, shape.units, offset, reference_ts);
        std::string diff =
            CompareSeries(cluster, q, oracle.Series("u", key, shape.unit, shape.units, offset, reference_ts));
        if (!diff.empty()) return diff;
      }
    }
    // One country's series (/clicks with sns= and skey=), in two zones, and
    // its sum over the window (rollup=true).
    for (const std::string& country : oracle.SubtotalValues("c", "u", key)) {
      for (int offset : {0, -5}) {
        std::string q = fmt::format(
            "/clicks?ns=u&key={}&sns=c&skey={}&unit=day&units=5&rollup=true&timezone={}&unit_reference_ts={}",
            PercentEncode(key), PercentEncode(country), offset, reference_ts);
        int64_t sum = 0;
        for (const auto& [dt, n] : oracle.Series("u", key, "day", 5, offset, reference_ts, "c", country)) sum += n;
        int status = 0;
        auto j = cluster.ApiGet(q, &status);
        if (status != 200 || j["data"]["clicks"] != sum) {
          return fmt::format("{} → HTTP {} {}, expected clicks={}", q, status, j.dump(), sum);
        }
      }
      for (const Shape& shape : {Shape{"hour", 72}, Shape{"day", 5}, Shape{"week", 2}, Shape{"month", 2}}) {
        for (int offset : {0, -5}) {
          std::string q = fmt::format(
              "/clicks?ns=u&key={}&sns=c&skey={}&unit={}&units={}&timezone={}&unit_reference_ts={}",
              PercentEncode(key), PercentEncode(country), shape.unit, shape.units, offset, reference_ts);
          std::string diff = CompareSeries(
              cluster, q, oracle.Series("u", key, shape.unit, shape.units, offset, reference_ts, "c", country));
          if (!diff.empty()) return diff;
        }
      }
    }
    // Breakdowns: countries over the whole window, in two zones.
    for (int offset : {0, -5}) {
      std::string q = fmt::format("/breakdown?sns=c&ns=u&key={}&unit=day&units=5&timezone={}&unit_reference_ts={}&limit=10",
                                  PercentEncode(key), offset, reference_ts);
      int status = 0;
      auto j = cluster.ApiGet(q, &status);
      if (status != 200) return fmt::format("{} → HTTP {} {}", q, status, j.dump());
      auto expected = oracle.Breakdown("c", "u", key, "day", 5, offset, reference_ts, 10);
      const auto& got = j["data"]["breakdown"];
      if (!got.is_array() || got.size() != expected.size()) {
        return fmt::format("{} → {}, expected {} rows", q, got.dump(), expected.size());
      }
      for (size_t i = 0; i < expected.size(); ++i) {
        if (got[i]["value"] != expected[i].first || got[i]["clicks"] != expected[i].second) {
          return fmt::format("{} → row {} is {}, expected {}:{}", q, i, got[i].dump(), expected[i].first,
                             expected[i].second);
        }
      }
    }
  }
  return "";
}

int64_t UnixOfDate(const std::string& d) {
  using namespace std::chrono;
  int y = std::stoi(d.substr(0, 4));
  unsigned m = static_cast<unsigned>(std::stoi(d.substr(5, 2)));
  unsigned dd = static_cast<unsigned>(std::stoi(d.substr(8, 2)));
  return sys_seconds(sys_days{year{y} / month{m} / day{dd}}).time_since_epoch().count();
}

}  // namespace clickatron::integration
