// kill -9 of a shard in the middle of a stream of batches, between
// checkpoints and inside one: after a restart the shard holds exactly the
// batches up to its durable watermark (never less than any durable_seq it
// acknowledged), refuses a batch whose prev skips what it lost, and a sender
// that re-sends from its watermark, as the API does from its oplog, ends with
// every batch counted exactly once.
#include <gtest/gtest.h>

#include <atomic>
#include <functional>
#include <map>
#include <random>
#include <thread>

#include <fmt/format.h>

#include "clickatron/key_codec.h"
#include "clickatron/file_util.h"
#include "daemon_fixture.h"

namespace clickatron::realtime::testing {
namespace {

constexpr int kBatches = 1500;  // bounded stream
constexpr int kLinesPerBatch = 25;

std::vector<std::string> MakeBatches(int64_t today) {
  // Batches span Today and Tomorrow (two column families, one checkpoint)
  // and carry lookups now and then; many hit a few hot keys.
  std::mt19937 rng(1234);
  std::vector<std::string> keys;
  for (int i = 0; i < 300; ++i) {
    keys.push_back(TotalKey("k" + std::to_string(i), today + (i % 2), i % 24));
    keys.push_back(SubtotalKey("r", "k" + std::to_string(i), "S" + std::to_string(i % 5), today + (i % 2), i % 24));
  }
  std::vector<std::string> batches;
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
  return batches;
}

// Every batch once, as /fwmatch?key= lists it.
std::string Oracle(const std::vector<std::string>& batches) {
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
  return expected;
}

nlohmann::json Watermark(const RealtimeDaemon& daemon) {
  return nlohmann::json::parse(daemon.Get("/watermark?source=api-0").body)["data"];
}

// The durable seq the shard reports, 0 when it does not answer (the poster
// asks it while the kill may land: no exception on its thread).
uint64_t DurableSeq(const RealtimeDaemon& daemon) {
  const nlohmann::json j = nlohmann::json::parse(daemon.Get("/watermark?source=api-0").body, nullptr, false);
  if (!j.is_object() || !j.contains("data") || !j["data"].is_object()) return 0;
  return j["data"].value("durable_seq", uint64_t{0});
}

// Streams the batches (prev = the applied watermark last heard, as the API
// sends them) until `kill_now` says so, kills the shard, restarts it and
// checks the contract above. The kill waits for a checkpoint to have
// completed (a durable_seq heard) and for batches acknowledged past it, so
// the restart recovers a checkpoint and loses what came after it.
void KillRestartAndResend(RealtimeDaemon& daemon, const std::function<bool(int acked)>& kill_now) {
  std::string error;
  ASSERT_TRUE(daemon.Start(&error)) << error;
  const std::vector<std::string> batches = MakeBatches(daemon.Today());

  std::atomic<int> acked{0};
  std::atomic<uint64_t> durable_heard{0};
  std::atomic<int> sent{0};
  std::thread poster([&] {
    BlockingHttpClient client(clickatron::testing::kTestClusterSecret);
    uint64_t prev = 0;
    for (int b = 0; b < kBatches; ++b) {
      HttpRequestSpec spec;
      spec.method = "POST";
      spec.target = fmt::format("/incr?source=api-0&seq={}&prev={}", b + 1, prev);
      spec.body = batches[b];
      spec.timeout_ms = 10000;
      // Past the first tenth, the stream waits for a checkpoint to complete,
      // so the kill always finds one to recover from.
      if (b == kBatches / 10 &&
          !clickatron::testing::WaitFor([&] { return DurableSeq(daemon) > 0; })) {
        return;
      }
      sent.store(b + 1);
      HttpResponse r = client.Fetch(daemon.address(), std::move(spec));
      if (!r.ok() || r.status_code != 200) return;  // the daemon is gone
      nlohmann::json data = nlohmann::json::parse(r.body)["data"];
      prev = data["applied_seq"].get<uint64_t>();
      durable_heard.store(data["durable_seq"].get<uint64_t>());
      acked.fetch_add(1);
    }
  });
  ASSERT_TRUE(clickatron::testing::WaitFor([&] {
    const uint64_t durable = durable_heard.load();
    return acked.load() == kBatches ||
           (durable > 0 && static_cast<uint64_t>(acked.load()) > durable && kill_now(acked.load()));
  }));
  const uint64_t durable_before_kill = durable_heard.load();
  daemon.Kill();
  poster.join();
  ASSERT_LT(acked.load(), kBatches) << "the stream ended before the kill: nothing was tested";
  ASSERT_GT(durable_before_kill, 0u) << "no checkpoint completed before the kill: nothing was recovered";

  ASSERT_TRUE(daemon.Start(&error)) << error;
  nlohmann::json wm = Watermark(daemon);
  const uint64_t w = wm["applied_seq"].get<uint64_t>();
  EXPECT_EQ(wm["durable_seq"].get<uint64_t>(), w) << "after a restart, applied is what was persisted";
  EXPECT_GE(w, durable_heard.load()) << "a seq acknowledged as durable was lost";
  EXPECT_GT(w, 0u) << "the restart recovered no checkpoint";
  EXPECT_LE(w, static_cast<uint64_t>(sent.load()));

  // A batch whose prev is not the shard's applied watermark is refused: it
  // would skip what the shard lost.
  {
    HttpResponse r = daemon.Post(fmt::format("/incr?source=api-0&seq={}&prev={}", w + 1, w + 1000), batches[w]);
    ASSERT_EQ(r.status_code, 409) << r.body;
    nlohmann::json j = nlohmann::json::parse(r.body);
    EXPECT_EQ(j["status_txt"], "WATERMARK_MISMATCH");
    EXPECT_EQ(j["applied_seq"].get<uint64_t>(), w);
  }
  // Batches at or below the watermark are duplicates, whatever their prev.
  for (uint64_t seq = std::max<uint64_t>(w, 3) - 2; seq <= w; ++seq) {
    nlohmann::json r = daemon.Incr("api-0", seq, batches[seq - 1]);
    EXPECT_EQ(r["data"]["duplicate"], true) << "seq " << seq << " applied twice";
  }
  // The sender re-sends everything above the watermark, as the API does.
  uint64_t prev = w;
  for (uint64_t seq = w + 1; seq <= static_cast<uint64_t>(kBatches); ++seq) {
    HttpResponse r = daemon.Post(fmt::format("/incr?source=api-0&seq={}&prev={}", seq, prev), batches[seq - 1]);
    ASSERT_EQ(r.status_code, 200) << r.body;
    nlohmann::json data = nlohmann::json::parse(r.body)["data"];
    ASSERT_EQ(data["duplicate"], false) << "seq " << seq;
    prev = data["applied_seq"].get<uint64_t>();
  }
  // Every batch exactly once: totals equal the oracle, nothing more.
  const std::string expected = Oracle(batches);
  HttpResponse all = daemon.Get("/fwmatch?key=");
  ASSERT_EQ(all.status_code, 200);
  EXPECT_TRUE(all.body == expected) << "got " << Lines(all.body).size() << " lines, want " << Lines(expected).size();
  // And the same after a clean stop, which persists memory.
  ASSERT_EQ(daemon.Stop(), 0);
  ASSERT_TRUE(daemon.Start(&error)) << error;
  EXPECT_EQ(Watermark(daemon)["durable_seq"].get<uint64_t>(), static_cast<uint64_t>(kBatches));
  EXPECT_TRUE(daemon.Get("/fwmatch?key=").body == expected);
}

bool CheckpointRunning(const RealtimeDaemon& daemon) {
  HttpResponse r = daemon.Get("/stats");
  if (r.status_code != 200) return false;
  nlohmann::json j = nlohmann::json::parse(r.body, nullptr, false);
  if (j.is_discarded()) return false;
  return j["data"]["realtime"]["memory"].value("checkpoint_running", false);
}

TEST(RealtimeCrashTest, KillNineBetweenCheckpointsLosesNothingDurableAndCountsOnce) {
  RealtimeDaemon daemon("manual", clickatron::testing::TomlTable().SetInt("checkpoint_interval_ms", 40));
  KillRestartAndResend(daemon, [](int acked) { return acked >= 150; });
}

TEST(RealtimeCrashTest, KillNineInsideACheckpointLosesNothingDurableAndCountsOnce) {
  // Every checkpoint stalls after its files are ingested and before it
  // completes, so the kill lands while one is under way (the test waits to
  // see it running): the store holds the records, the API has not heard.
  RealtimeDaemon daemon("manual", clickatron::testing::TomlTable()
                                      .SetInt("checkpoint_interval_ms", 40)
                                      .SetBool("fault_injection", true));
  ASSERT_TRUE(MakeDirs(daemon.data_dir() + "/fault").ok());
  ASSERT_TRUE(WriteFileAtomically(daemon.data_dir() + "/fault/checkpoint-delay-ms", "150").ok());
  KillRestartAndResend(daemon, [&](int acked) { return acked >= 100 && CheckpointRunning(daemon); });
}

}  // namespace
}  // namespace clickatron::realtime::testing
