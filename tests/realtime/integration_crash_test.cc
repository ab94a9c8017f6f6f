// kill -9 in the middle of a stream of acknowledged batches: after a restart
// every acknowledged batch is there exactly once.
#include <gtest/gtest.h>

#include <atomic>
#include <map>
#include <random>
#include <thread>

#include <fmt/format.h>

#include "clickatron/key_codec.h"
#include "daemon_fixture.h"

namespace clickatron::realtime::testing {
namespace {

constexpr int kBatches = 400;       // bounded stream
constexpr int kKillAfterAcks = 150;
constexpr int kLinesPerBatch = 25;

TEST(RealtimeCrashTest, AcknowledgedBatchesSurviveKillNineExactlyOnce) {
  RealtimeDaemon daemon;
  std::string error;
  ASSERT_TRUE(daemon.Start(&error)) << error;
  const int64_t today = daemon.Today();
  ASSERT_GT(today, 0);

  // Batches span Today and Tomorrow (two column families, one write) and
  // carry lookups now and then; many hit a few hot keys.
  std::mt19937 rng(1234);
  std::vector<std::string> keys;
  for (int i = 0; i < 300; ++i) {
    keys.push_back(TotalKey("k" + std::to_string(i), today + (i % 2), i % 24));
    keys.push_back(SubtotalKey("r", "k" + std::to_string(i), "S" + std::to_string(i % 5), today + (i % 2), i % 24));
  }
  std::vector<std::string> batches;
  std::vector<std::map<std::string, std::string>> batch_records(kBatches);
  for (int b = 0; b < kBatches; ++b) {
    std::string body;
    for (int j = 0; j < kLinesPerBatch; ++j) {
      const std::string& key = (j % 3 == 0) ? keys[rng() % 6] : keys[rng() % keys.size()];
      body += key + "," + std::to_string(1 + rng() % 4) + "\n";
    }
    if (b % 10 == 0) {
      const std::string value = fmt::format("http://example.com/{}?q=a,b", b);
      body += "l|" + Hash12(value) + "," + value + "\n";
    }
    batches.push_back(std::move(body));
  }

  std::atomic<int> acked{0};
  std::vector<char> was_acked(kBatches, 0);
  std::thread poster([&] {
    BlockingHttpClient client;
    for (int b = 0; b < kBatches; ++b) {
      HttpRequestSpec spec;
      spec.method = "POST";
      spec.target = fmt::format("/incr?source=api-0&seq={}", b + 1);
      spec.body = batches[b];
      spec.timeout_ms = 10000;
      HttpResponse r = client.Fetch(daemon.address(), std::move(spec));
      if (!r.ok() || r.status_code != 200) return;  // the daemon is gone
      was_acked[b] = 1;
      acked.fetch_add(1);
    }
  });
  ASSERT_TRUE(clickatron::testing::WaitFor([&] { return acked.load() >= kKillAfterAcks; }));
  daemon.Kill();
  poster.join();
  const int acked_before_kill = acked.load();
  ASSERT_GE(acked_before_kill, kKillAfterAcks);

  ASSERT_TRUE(daemon.Start(&error)) << error;
  // The watermark covers at least every acknowledged batch.
  nlohmann::json wm = nlohmann::json::parse(daemon.Get("/watermark?source=api-0").body);
  EXPECT_GE(wm["data"]["seq"].get<int>(), acked_before_kill);

  // The API re-sends everything it has: acknowledged batches come back as
  // duplicates; the rest is applied now (the one in flight either way).
  int duplicates = 0;
  for (int b = 0; b < kBatches; ++b) {
    nlohmann::json r = daemon.Incr("api-0", b + 1, batches[b]);
    ASSERT_TRUE(r.is_object());
    ASSERT_EQ(r["status_code"], 200) << r.dump();
    if (was_acked[b]) {
      EXPECT_EQ(r["data"]["duplicate"], true) << "acknowledged batch " << b + 1 << " applied twice";
    }
    if (r["data"]["duplicate"] == true) ++duplicates;
  }
  EXPECT_GE(duplicates, acked_before_kill);
  EXPECT_LE(duplicates, acked_before_kill + 1);  // at most the batch in flight

  // Every batch exactly once: totals equal the oracle, nothing more.
  std::map<std::string, std::string> oracle;
  std::map<std::string, int64_t> sums;
  for (const std::string& body : batches) {
    for (const std::string& line : Lines(body)) {
      const size_t comma = line.find(',');
      const std::string key = line.substr(0, comma);
      if (key.rfind("l|", 0) == 0) {
        oracle[key] = line.substr(comma + 1);
      } else {
        sums[key] += std::stoll(line.substr(comma + 1));
      }
    }
  }
  for (const auto& [k, v] : sums) oracle[k] = std::to_string(v);
  std::string expected;
  for (const auto& [k, v] : oracle) expected += k + "," + v + "\n";
  HttpResponse all = daemon.Get("/fwmatch?key=");
  ASSERT_EQ(all.status_code, 200);
  EXPECT_TRUE(all.body == expected) << "got " << Lines(all.body).size() << " lines, want " << oracle.size();
}

}  // namespace
}  // namespace clickatron::realtime::testing
