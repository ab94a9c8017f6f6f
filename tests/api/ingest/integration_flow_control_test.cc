// Flow control ([api] queue_wait_increments, queue_wait_ms): a realtime
// shard that is up but behind makes new increments for it wait, instead of
// letting its queue grow; they are taken once it catches up, or refused with
// 503 OVERLOADED (nothing of them taken) when the wait runs out. A shard
// that is up but behind is made here by stopping it (SIGSTOP) inside a
// request timeout far longer than the test: the API still counts it as up,
// with the lines sent to it unacknowledged.
#include <chrono>
#include <ctime>
#include <future>
#include <map>
#include <string>
#include <vector>

#include <signal.h>

#include "api/ingest/cluster_fixture.h"
#include "clickatron/ymdh.h"

// A namespace of this file's own: its names beside those of the other files
// compiled with it in one unity file (tests/CMakeLists.txt).
namespace clickatron::api::write_testing::integration_flow_control_test {
namespace {

nlohmann::json Json(const HttpResponse& r) {
  auto j = nlohmann::json::parse(r.body, nullptr, false);
  return j.is_discarded() ? nlohmann::json(nullptr) : j;
}

std::string HourCode(int64_t ts) { return *YmdhFromUnix(ts); }

// A batch body of one increment per key.
std::string Body(const std::vector<std::string>& keys, int64_t ts) {
  std::string body;
  for (const std::string& key : keys) body += fmt::format("ns=t&key={}&ts={}\n", key, ts);
  return body;
}

// Every shard's sender is up (a sender still asking a shard's watermark is
// not "up", and nothing waits for it), with nothing queued.
void StartAndSettle(WriteCluster& c) {
  c.StartAll();
  ASSERT_TRUE(WaitFor([&] { return c.Drained(); })) << c.ApiStats().dump();
}

ClusterSpec FlowControlSpec(int wait_ms) {
  ClusterSpec spec = WriteCluster::Spec(2);
  spec.api.SetInt("queue_wait_increments", 10).SetInt("queue_wait_ms", wait_ms);
  // A stopped shard stays "up" (its request unanswered) for the whole test.
  spec.api.SetInt("request_timeout_ms", 60000);
  return spec;
}

// A settled cluster and the keys both tests send: 40 on shard 0 (the one
// stopped), split in two requests of 20, over a mark of 10 lines.
struct StoppedShardCase {
  explicit StoppedShardCase(int wait_ms) : c(FlowControlSpec(wait_ms)) {}
  WriteCluster c;
  const int64_t ts = static_cast<int64_t>(std::time(nullptr));
  const std::string ymdh = HourCode(ts);
  const std::vector<std::string> on0 = KeysOnShard("t", "slow", 0, 2, 40);
  const std::vector<std::string> first{on0.begin(), on0.begin() + 20};
  const std::vector<std::string> second{on0.begin() + 20, on0.end()};
};

uint64_t WriteFigure(const WriteCluster& c, const char* name) {
  nlohmann::json s = c.ApiStats();
  if (!s.is_object() || !s["write"][name].is_number()) return ~uint64_t{0};
  return s["write"][name].get<uint64_t>();
}

TEST(IntegrationFlowControlTest, IncrementsForAShardThatIsBehindWaitThenAreTaken) {
  StoppedShardCase t(60000);
  auto& [c, ts, ymdh, on0, first, second] = t;
  ASSERT_NO_FATAL_FAILURE(StartAndSettle(c));
  const auto on1 = KeysOnShard("t", "fast", 1, 2, 5);

  c.Signal(WriteCluster::Realtime(0), SIGSTOP);
  // Shard 0's queue was empty: taken, and left unacknowledged by the stopped shard.
  ASSERT_EQ(HttpPost(c.Api(), "/incr", Body(first, ts), 10000).status_code, 200);
  // Now 20 lines wait for it, over the mark of 10: the next request for it waits.
  auto waiting = std::async(std::launch::async, [&] { return HttpPost(c.Api(), "/incr", Body(second, ts), 60000); });
  ASSERT_TRUE(WaitFor([&] { return WriteFigure(c, "waiting_requests") == 1; })) << c.ApiStats().dump();
  EXPECT_EQ(waiting.wait_for(std::chrono::milliseconds(0)), std::future_status::timeout);
  // Another shard's increments do not wait behind it.
  ASSERT_EQ(HttpPost(c.Api(), "/incr", Body(on1, ts), 10000).status_code, 200);

  c.Signal(WriteCluster::Realtime(0), SIGCONT);
  const HttpResponse r = waiting.get();
  EXPECT_EQ(r.status_code, 200) << r.body;
  EXPECT_EQ(Json(r)["data"]["increments"], second.size()) << r.body;
  EXPECT_EQ(WriteFigure(c, "waiting_requests"), 0u);
  EXPECT_EQ(WriteFigure(c, "waited_requests"), 1u);

  ASSERT_TRUE(WaitFor([&] { return c.Drained(); })) << c.ApiStats().dump();
  std::map<std::string, int64_t> expected;
  for (const auto& keys : {on0, on1}) {
    for (const std::string& key : keys) expected["t|" + key + "." + ymdh] = 1;
  }
  EXPECT_EQ(c.Counters("t|"), expected);
}

TEST(IntegrationFlowControlTest, AWaitThatRunsOutIsRefusedAndTakesNothing) {
  StoppedShardCase t(300);
  auto& [c, ts, ymdh, on0, first, refused] = t;
  ASSERT_NO_FATAL_FAILURE(StartAndSettle(c));

  c.Signal(WriteCluster::Realtime(0), SIGSTOP);
  ASSERT_EQ(HttpPost(c.Api(), "/incr", Body(first, ts), 10000).status_code, 200);
  const HttpResponse r = HttpPost(c.Api(), "/incr", Body(refused, ts), 10000);
  EXPECT_EQ(r.status_code, 503) << r.body;
  EXPECT_EQ(Json(r)["status_txt"], "OVERLOADED") << r.body;
  EXPECT_NE(r.body.find("300 ms"), std::string::npos) << r.body;
  EXPECT_EQ(WriteFigure(c, "waiting_requests"), 0u);
  c.Signal(WriteCluster::Realtime(0), SIGCONT);

  ASSERT_TRUE(WaitFor([&] { return c.Drained(); })) << c.ApiStats().dump();
  std::map<std::string, int64_t> expected;
  for (const std::string& key : first) expected["t|" + key + "." + ymdh] = 1;
  EXPECT_EQ(c.Counters("t|"), expected) << "the refused request's increments must not be stored";
}

}  // namespace
}  // namespace clickatron::api::write_testing::integration_flow_control_test
