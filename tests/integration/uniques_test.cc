// Unique counts end to end (issue 14): increments with uniq= through the API
// into realtime, a realtime shard restarted, two nightly rebuilds moving the
// days into the archive, and a bulk load of history; after every step
// /uniques (per unit, rolled up, per subtotal value) and /breakdown with
// uniques=true must equal distinct counts from plain sets of the tokens
// (cluster_fixture.h's Oracle): exactly while a unit holds at most a
// thousand visitors (sketches are exact there), within 2% above.
#include <gtest/gtest.h>

#include <cmath>
#include <fstream>
#include <random>

#include <fmt/format.h>

#include "clickatron/key_codec.h"
#include "clickatron/query_string.h"
#include "clickatron/unique_sketch.h"
#include "clickatron/ymdh.h"
#include "integration/cluster_fixture.h"

// A namespace of this file's own: its names beside those of the other files
// compiled with it in one unity file (tests/CMakeLists.txt).
namespace clickatron::integration::uniques_test {
namespace {

using clickatron::testing::HttpPost;
using clickatron::testing::WaitFor;

const std::string kD0 = "2024-03-09";
const std::string kD1 = "2024-03-10";  // DST starts in New York this day
const std::string kD2 = "2024-03-11";
const std::string kD3 = "2024-03-12";
const std::vector<std::string> kKeys = {"hot", "small", "https://example.com/a/long/link?with=query"};
const std::vector<std::string> kCountries = {"US", "JP", "DE", "BR"};

// Within what a sketch promises: exact up to a thousand, 2% above.
bool Close(int64_t got, int64_t expected) {
  if (expected <= 1000) return got == expected;
  return std::abs(static_cast<double>(got - expected)) <= 0.02 * static_cast<double>(expected);
}

class UniquesTest : public StartedClusterTest {
 protected:
  UniquesTest() : StartedClusterTest(kD1) {}

  // An increment in an hour of `days`; "hot" takes most and draws from
  // 4,000 visitors (dense sketches per day), the others from small pools.
  // One in ten carries no uniq= (clicks without a known visitor). Counted
  // by the oracle.
  Increment Make(const std::vector<std::string>& days) {
    Increment inc;
    const size_t k = rng_() % 10 < 7 ? 0 : 1 + rng_() % 2;
    inc.key = kKeys[k];
    const std::string& day = days[rng_() % days.size()];
    inc.ts = UnixOfDate(day) + static_cast<int64_t>(rng_() % 86400);
    inc.value = 1 + static_cast<int64_t>(rng_() % 3);
    inc.subs.emplace_back("c", kCountries[rng_() % kCountries.size()]);
    const uint64_t pool = k == 0 ? 4000 : k == 1 ? 40 : 300;
    if (rng_() % 10 != 0) inc.uniq = fmt::format("visitor {}/{}", rng_() % pool, k);  // a space: encoded
    oracle_.Add(inc);
    return inc;
  }

  // `n` increments through the API, in batches of 500.
  void Send(const std::vector<std::string>& days, int n) {
    std::string body;
    for (int i = 0; i < n; ++i) {
      body += Make(days).QueryString() + "\n";
      if ((i + 1) % 500 == 0 || i + 1 == n) {
        auto r = HttpPost(cluster_.api(), "/incr", body, 15000);
        ASSERT_EQ(r.status_code, 200) << r.body << r.transport.ToString();
        body.clear();
      }
    }
  }

  // "" when every query matches the oracle, else the first difference.
  std::string Compare() const {
    struct Shape {
      const char* unit;
      int units;
    };
    const Shape shapes[] = {{"hour", 72}, {"day", 5}, {"week", 2}, {"month", 2}};
    // America/New_York is on EDT (-4) at the reference time (after the change).
    const std::pair<std::string, int> zones[] = {{"0", 0}, {"-5", -5}, {"9", 9}, {"14", 14}, {"-12", -12},
                                                 {"America/New_York", -4}};
    for (const std::string& key : kKeys) {
      for (const Shape& shape : shapes) {
        for (const auto& [zone, offset] : zones) {
          for (const std::string& skey : {std::string(), std::string("JP")}) {
            std::string q = fmt::format("/uniques?ns=u&key={}&unit={}&units={}&timezone={}&unit_reference_ts={}",
                                        PercentEncode(key), shape.unit, shape.units, PercentEncode(zone), ref_);
            if (!skey.empty()) q += "&sns=c&skey=" + skey;
            int status = 0;
            auto j = cluster_.ApiGet(q, &status);
            if (status != 200) return fmt::format("{} → HTTP {} {}", q, status, j.dump());
            auto expected = oracle_.Uniques("u", key, shape.unit, shape.units, offset, ref_, skey.empty() ? "" : "c",
                                            skey);
            const auto& got = j["data"]["uniques"];
            if (!got.is_array() || got.size() != expected.size()) {
              return fmt::format("{} → {} points, expected {}", q, got.size(), expected.size());
            }
            for (size_t i = 0; i < expected.size(); ++i) {
              if (got[i]["dt"] != expected[i].first || !got[i]["uniques"].is_number_integer() ||
                  !Close(got[i]["uniques"].get<int64_t>(), expected[i].second)) {
                return fmt::format("{} → point {} is {}, expected dt={} uniques={}", q, i, got[i].dump(),
                                   expected[i].first, expected[i].second);
              }
            }
          }
        }
      }
      // Rolled up over the window, and per country in a breakdown.
      for (int offset : {0, -5}) {
        std::string q = fmt::format("/uniques?ns=u&key={}&unit=day&units=5&timezone={}&unit_reference_ts={}&rollup=true",
                                    PercentEncode(key), offset, ref_);
        int status = 0;
        auto j = cluster_.ApiGet(q, &status);
        if (status != 200) return fmt::format("{} → HTTP {} {}", q, status, j.dump());
        // The window's distinct visitors: the union of the five days, not their sum.
        const int64_t all = oracle_.BreakdownUniques("", "u", key, "day", 5, offset, ref_)[""];
        if (!j["data"]["uniques"].is_number_integer() || !Close(j["data"]["uniques"].get<int64_t>(), all)) {
          return fmt::format("{} → {}, expected {}", q, j.dump(), all);
        }
        q = fmt::format("/breakdown?sns=c&ns=u&key={}&unit=day&units=5&timezone={}&unit_reference_ts={}&uniques=true",
                        PercentEncode(key), offset, ref_);
        j = cluster_.ApiGet(q, &status);
        if (status != 200) return fmt::format("{} → HTTP {} {}", q, status, j.dump());
        auto expected = oracle_.BreakdownUniques("c", "u", key, "day", 5, offset, ref_);
        const auto& rows = j["data"]["breakdown"];
        if (!rows.is_array() || rows.size() != kCountries.size()) return fmt::format("{} → {}", q, j.dump());
        for (const auto& row : rows) {
          const std::string value = row["value"];
          if (!row["uniques"].is_number_integer() || !Close(row["uniques"].get<int64_t>(), expected[value])) {
            return fmt::format("{} → row {}, expected uniques {}", q, row.dump(), expected[value]);
          }
        }
      }
    }
    return "";
  }

  // `n` increments as bulk-load history in the documented line format
  // (realtime lines; a visitor as the sketch of its one token, which the
  // load unites with the others of its key-hour), loaded with `load --now`.
  void Load(const std::vector<std::string>& days, int n) {
    std::string history;
    for (int i = 0; i < n; ++i) {
      const Increment inc = Make(days);
      const std::string ymdh = *YmdhFromUnix(inc.ts);
      const std::string tkey = StoreKeyPart(inc.key).stored;
      std::vector<std::string> keys = {fmt::format("u|{}.{}", tkey, ymdh)};
      for (const auto& [sns, skey] : inc.subs) keys.push_back(fmt::format("{}.u|{}.{}.{}", sns, tkey, skey, ymdh));
      for (const std::string& key : keys) {
        history += fmt::format("{},{}\n", key, inc.value);
        if (inc.uniq.empty()) continue;
        UniqueSketch one;
        one.Add(HashVisitor(inc.uniq));
        history += fmt::format("~{},{}\n", key, one.ToText());
      }
      if (StoreKeyPart(inc.key).hashed) history += fmt::format("l|{},{}\n", tkey, inc.key);
    }
    const std::string file = cluster_.dir() + "/history.csv";
    std::ofstream(file) << history;
    std::string output;
    ASSERT_EQ(cluster_.Load({"--now", file}, &output), 0) << output;
  }

  void ExpectMatch(const std::string& step) {
    std::string diff;
    const bool equal = WaitFor(
        [&] {
          diff = Compare();
          return diff.empty();
        },
        std::chrono::seconds(30));
    EXPECT_TRUE(equal) << "after " << step << ": " << diff;
  }

  Oracle oracle_;
  std::mt19937 rng_{20240310};
  int64_t ref_ = UnixOfDate(kD1) + 86400 - 1;
};

TEST_F(UniquesTest, DistinctVisitorsMatchPlainSetsThroughRealtimeRebuildsAndALoad) {
  Send({kD0, kD1}, 12000);
  ExpectMatch("increments into realtime");

  // The sketches survive a shard restart (checkpointed, or replayed from the
  // API's oplog: a union applied twice changes nothing).
  ASSERT_EQ(cluster_.Stop("realtime-0"), 0);
  std::string error;
  ASSERT_TRUE(cluster_.Start("realtime-0", &error)) << error;
  ExpectMatch("a realtime shard restart");

  // History of the week before, bulk-loaded: served beside the realtime days.
  Load({"2024-03-04", "2024-03-05", "2024-03-06", "2024-03-07", "2024-03-08"}, 4000);
  ExpectMatch("a bulk load of history");

  std::string output;
  ASSERT_TRUE(cluster_.RotateAll(kD2, &error)) << error;
  Send({kD1, kD2}, 3000);
  ASSERT_EQ(cluster_.Rebuild(kD0, &output), 0) << output;
  ref_ = UnixOfDate(kD2) + 86400 - 1;
  ExpectMatch("the rebuild of " + kD0 + " (archive + realtime)");

  ASSERT_TRUE(cluster_.RotateAll(kD3, &error)) << error;
  ASSERT_EQ(cluster_.Rebuild(kD1, &output), 0) << output;
  ExpectMatch("the rebuild of " + kD1);
}

TEST_F(UniquesTest, BadUniquesRequestsAreRefusedWithTheirReason) {
  int status = 0;
  auto j = cluster_.ApiGet("/uniques?ns=u&key=a&sns=c", &status);
  EXPECT_EQ(status, 400);
  EXPECT_EQ(j["status_txt"], "MISSING_ARG_SKEY") << j.dump();
  j = cluster_.ApiGet("/uniques?ns=u&key=a&skey=JP", &status);
  EXPECT_EQ(j["status_txt"], "MISSING_ARG_SNS") << j.dump();
  j = cluster_.ApiGet("/uniques?ns=u", &status);
  EXPECT_EQ(j["status_txt"], "MISSING_ARG_KEY") << j.dump();
  j = cluster_.ApiGet("/breakdown?sns=c&ns=u&key=a&uniques=maybe", &status);
  EXPECT_EQ(j["status_txt"], "INVALID_UNIQUES") << j.dump();
  auto r = clickatron::testing::HttpGet(cluster_.api(), "/incr?ns=u&key=a&uniq=");
  EXPECT_EQ(r.status_code, 400);
  EXPECT_NE(r.body.find("INVALID_UNIQ"), std::string::npos) << r.body;
  r = clickatron::testing::HttpGet(cluster_.api(), "/incr?ns=u&key=a&uniq=x&uniq=y");
  EXPECT_NE(r.body.find("INVALID_UNIQ"), std::string::npos) << r.body;
  // A key never clicked has no visitors, in every unit.
  j = cluster_.ApiGet("/uniques?ns=u&key=never&unit=day&units=3", &status);
  ASSERT_EQ(status, 200) << j.dump();
  ASSERT_EQ(j["data"]["uniques"].size(), 3u);
  for (const auto& point : j["data"]["uniques"]) EXPECT_EQ(point["uniques"], 0);
}

}  // namespace
}  // namespace clickatron::integration::uniques_test
