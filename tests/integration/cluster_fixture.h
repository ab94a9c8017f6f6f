// A whole Clickatron cluster on loopback for end-to-end and fault tests, on
// testutil/cluster.h: 1 API node, 2 realtime shards, 2 archive shards (one
// replica each unless asked for more), a manual clock, every file in a temp
// dir; plus the day's operations (rotate, seal, rebuild, load) and queries.
// Daemons are real child processes stopped by PID.
#pragma once

#include <cstdint>
#include <map>
#include <random>
#include <set>
#include <string>
#include <vector>

#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include "clickatron/config.h"
#include "testutil/cluster.h"

namespace clickatron::integration {

inline constexpr const char* kToken = "e2e-admin-token-0";
inline constexpr const char* kLoaderMember = "loader";  // an API member name that is never started

class Cluster {
 public:
  struct Options {
    int realtime_shards = 2;
    int archive_shards = 2;
    int replicas_per_archive_shard = 1;
    int flush_window_ms = 2;
    int rebuild_memory_mb = 16;
    // Every member and the rebuild on a "host" of its own (ClusterSpec::private_hosts).
    bool private_hosts = false;
    // The API's read cache ([api] read_cache_mb): off as in the rest of
    // the suite unless a test turns it on.
    int read_cache_mb = 0;
    // [api] read_loops: more than one hands increments and admin requests
    // from the other loops to the first.
    int read_loops = 1;
    // [realtime] checkpoint_interval_ms; 0: the default.
    int checkpoint_interval_ms = 0;
  };
  Cluster() : Cluster(Options{}) {}
  explicit Cluster(Options options);

  // Starts every member; false with the failing member's log tail in *error.
  bool StartAll(std::string* error) { return cluster_.StartAll(error); }
  bool Start(const std::string& member, std::string* error) { return cluster_.Start(member, error); }
  void Kill(const std::string& member) { cluster_.Kill(member); }         // SIGKILL
  int Stop(const std::string& member) { return cluster_.Stop(member); }   // SIGTERM
  void Signal(const std::string& member, int signo) { cluster_.Signal(member, signo); }  // e.g. SIGSTOP / SIGCONT

  const ClusterConfig& config() const { return cluster_.config(); }
  const std::string& config_path() const { return cluster_.config_path(); }
  const std::string& dir() const { return cluster_.dir(); }
  HostPort api() const { return cluster_.Api(); }
  // The harness below, for what this class does not wrap.
  clickatron::testing::Cluster& hosts() { return cluster_; }
  const MemberConfig& member(const std::string& name) const { return cluster_.Member(name); }

  // POST /rotate?today=DATE on every realtime shard; false with a reason.
  bool RotateAll(const std::string& date, std::string* error);
  // POST /late/seal on the API node.
  bool SealLateData(std::string* error);
  // clickatron-rebuild run --config … --date DATE; returns the exit code, output in *output.
  int Rebuild(const std::string& date, std::string* output);
  // clickatron-rebuild load --config … ARGS…; returns the exit code, output in *output.
  int Load(const std::vector<std::string>& args, std::string* output);

  // GET against the API; the parsed envelope (null JSON on a transport error).
  nlohmann::json ApiGet(const std::string& target, int* status = nullptr) const;
  // The key's (ns u) clicks over one UTC day by /clicks rollup; -1 when not answered.
  int64_t DayTotal(const std::string& key, const std::string& day) const {
    return DayFigure("/clicks", "clicks", key, day);
  }
  // The key's (ns u) distinct visitors over one UTC day by /uniques rollup;
  // -1 when not answered.
  int64_t DayUniques(const std::string& key, const std::string& day) const {
    return DayFigure("/uniques", "uniques", key, day);
  }

 private:
  // data.FIGURE of ENDPOINT for the key's one UTC day, rolled up; -1 when
  // not answered.
  int64_t DayFigure(const std::string& endpoint, const std::string& figure, const std::string& key,
                    const std::string& day) const;

  clickatron::testing::Cluster cluster_;
};

// One increment as the API takes it.
struct Increment {
  std::string ns = "u";
  std::string key;
  int64_t ts = 0;
  int64_t value = 1;
  std::vector<std::pair<std::string, std::string>> subs;  // sns, skey
  std::string uniq;  // the visitor token; "" for none
  std::string QueryString() const;  // "ns=u&key=…&ts=…&value=…&sub=c%3AUS…[&uniq=…]"
};

// POSTs `increments` to the cluster's API node in batches of 50 lines (one
// query string a line): "" when every batch was acknowledged, else what the
// failing one got.
std::string PostIncrements(const Cluster& cluster, const std::vector<Increment>& increments);

// The answers a query must give, computed from raw increments with no code
// of the project's: an independent reference for /clicks and /breakdown.
class Oracle {
 public:
  void Add(const Increment& inc);
  // Series for /clicks: (unit start unix s, clicks), newest first: of the
  // key, or with `sns`/`skey` of one subtotal value.
  std::vector<std::pair<int64_t, int64_t>> Series(const std::string& ns, const std::string& key,
                                                  const std::string& unit, int units, int offset_hours,
                                                  int64_t reference_ts, const std::string& sns = "",
                                                  const std::string& skey = "") const;
  // Every value of subtotal namespace `sns` the key has clicks for.
  std::set<std::string> SubtotalValues(const std::string& sns, const std::string& ns, const std::string& key) const;
  // Top subtotals over the window: (value, clicks), most clicks first, ties by value.
  std::vector<std::pair<std::string, int64_t>> Breakdown(const std::string& sns, const std::string& ns,
                                                         const std::string& key, const std::string& unit, int units,
                                                         int offset_hours, int64_t reference_ts, size_t limit) const;
  // Distinct visitors per unit, exact (sets), newest first: of the key, or
  // with `sns`/`skey` of one subtotal value.
  std::vector<std::pair<int64_t, int64_t>> Uniques(const std::string& ns, const std::string& key,
                                                   const std::string& unit, int units, int offset_hours,
                                                   int64_t reference_ts, const std::string& sns = "",
                                                   const std::string& skey = "") const;
  // Distinct visitors over the whole window per subtotal value.
  std::map<std::string, int64_t> BreakdownUniques(const std::string& sns, const std::string& ns,
                                                  const std::string& key, const std::string& unit, int units,
                                                  int offset_hours, int64_t reference_ts) const;
  // Start (unix s) of the unit holding `ts` in the offset, by std::chrono.
  static int64_t UnitStart(const std::string& unit, int64_t ts, int offset_hours);

 private:
  // (ns, key) -> hour start -> total; (sns, ns, key) -> hour -> skey -> n
  std::map<std::pair<std::string, std::string>, std::map<int64_t, int64_t>> totals_;
  std::map<std::tuple<std::string, std::string, std::string>, std::map<int64_t, std::map<std::string, int64_t>>>
      subtotals_;
  // (sns or "", ns, key) -> hour -> skey or "" -> visitor tokens
  std::map<std::tuple<std::string, std::string, std::string>,
           std::map<int64_t, std::map<std::string, std::set<std::string>>>>
      visitors_;
};

// Compares the API's /clicks (of the key, and of each country with sns= and
// skey=) and /breakdown answers with the oracle for a grid of units and
// offsets; returns "" when all equal, else the first difference described.
std::string CompareQueries(const Cluster& cluster, const Oracle& oracle, const std::vector<std::string>& keys,
                           int64_t reference_ts);
// CompareQueries until it answers "" or 30 s have passed (the API may still be
// catching up after a step); "" or the last difference.
std::string WaitForQueriesToMatch(const Cluster& cluster, const Oracle& oracle, const std::vector<std::string>& keys,
                                  int64_t reference_ts);

int64_t UnixOfDate(const std::string& yyyy_mm_dd);

// A test of a whole cluster over days: its realtime shards turned to a day,
// and every query of `keys` (windows ending at `reference_ts`) compared with
// an oracle. Subclasses pass what their cluster and queries are.
class ClusterDaysTest : public ::testing::Test {
 protected:
  ClusterDaysTest(Cluster::Options options, std::vector<std::string> keys, int64_t reference_ts)
      : cluster_(options), keys_(std::move(keys)), reference_ts_(reference_ts) {}

  void Rotate(const std::string& day) {
    std::string error;
    ASSERT_TRUE(cluster_.RotateAll(day, &error)) << error;
  }
  // `n` increments of keys_ at random times of `days`, each with one "c"
  // subtotal of `sub_values`, through the API (batched); added to every
  // oracle given.
  void SendIncrements(const std::vector<std::string>& days, int n, const std::vector<Oracle*>& oracles,
                      const std::vector<std::string>& sub_values, std::mt19937& rng) {
    std::vector<Increment> increments;
    for (int i = 0; i < n; ++i) {
      Increment& inc = increments.emplace_back();
      inc.key = keys_[rng() % keys_.size()];
      inc.ts = UnixOfDate(days[rng() % days.size()]) + static_cast<int64_t>(rng() % 86400);
      inc.value = 1 + static_cast<int64_t>(rng() % 4);
      inc.subs.emplace_back("c", sub_values[rng() % sub_values.size()]);
      for (Oracle* o : oracles) o->Add(inc);
    }
    ASSERT_EQ(PostIncrements(cluster_, increments), "");
  }
  // Waits (bounded) until every query equals the oracle.
  void ExpectQueriesMatch(const Oracle& oracle, const std::string& step) {
    EXPECT_EQ(WaitForQueriesToMatch(cluster_, oracle, keys_, reference_ts_), "") << "after " << step;
  }

  Cluster cluster_;
  const std::vector<std::string> keys_;
  const int64_t reference_ts_;
};

// A default cluster, started, with every realtime shard rotated to `day`.
class StartedClusterTest : public ::testing::Test {
 protected:
  explicit StartedClusterTest(std::string day) : day_(std::move(day)) {}
  void SetUp() override {
    std::string error;
    ASSERT_TRUE(cluster_.StartAll(&error)) << error;
    ASSERT_TRUE(cluster_.RotateAll(day_, &error)) << error;
  }
  // `count` single increments through the API (GET /incr, each must be
  // acknowledged) at hours of the day: of `key`, or with `keys` > 1 of
  // key0, key1, … in turn.
  void IncrementThroughApi(const std::string& key, int count, int keys = 1) {
    for (int i = 0; i < count; ++i) {
      Increment inc;
      inc.key = keys > 1 ? key + std::to_string(i % keys) : key;
      inc.ts = UnixOfDate(day_) + 3600 * (i % 24) + 7;
      auto r = clickatron::testing::HttpGet(cluster_.api(), "/incr?" + inc.QueryString());
      ASSERT_EQ(r.status_code, 200) << r.body;
    }
  }
  std::string day_;
  Cluster cluster_;
};

// Asks the day total of every key in `expected` (key -> clicks): each must
// answer exactly, or 503 SHARD_UNAVAILABLE — never a wrong or short number.
// Returns how many answered 503.
int ExpectExactOrUnavailable(const Cluster& cluster, const std::string& day,
                             const std::map<std::string, int64_t>& expected);

}  // namespace clickatron::integration
