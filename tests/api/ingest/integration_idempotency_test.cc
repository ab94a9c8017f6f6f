// Issue 47: a client that retries an /incr with the same Idempotency-Key is
// counted once, also when the API node was killed in between. Requests are
// made with curl, a real client, so the header travels as clients send it.
#include <sys/wait.h>

#include <cstdio>
#include <ctime>
#include <filesystem>
#include <fstream>
#include <map>
#include <string>
#include <thread>

#include "api/ingest/cluster_fixture.h"
#include "clickatron/ymdh.h"

namespace clickatron::api::write_testing {
namespace {

// One request with curl to the API: the key (none when empty) in its header.
CurlAnswer KeyedCurl(const WriteCluster& c, const std::string& target, const std::string& body, const std::string& key,
                int max_time_s = 10) {
  std::vector<std::string> headers;
  if (!key.empty()) headers.push_back("Idempotency-Key: " + key);
  return Curl(c.dir(), c.Api(), target, body, headers, max_time_s);
}

ClusterSpec KeyedSpec() {
  ClusterSpec spec = WriteCluster::Spec(2);
  spec.api.SetBool("fault_injection", true);
  return spec;
}

// What the shards hold for ns t, once everything sent is applied.
std::map<std::string, int64_t> KeyedStored(const WriteCluster& c) {
  EXPECT_TRUE(WaitFor([&] { return c.Drained(); })) << c.ApiStats().dump();
  return c.Counters("t|");
}

std::string KeyedBatch(const std::string& key, int64_t ts, int lines) {
  std::string body;
  for (int i = 0; i < lines; ++i) body += fmt::format("ns=t&key={}&ts={}&value={}\n", key, ts, i + 1);
  return body;
}

TEST(IntegrationIdempotencyTest, ARetryIsAnsweredAgainAndCountsOnce) {
  WriteCluster c(KeyedSpec());
  c.StartAll();
  const int64_t ts = static_cast<int64_t>(std::time(nullptr));
  const std::string hour = *YmdhFromUnix(ts);

  const std::string body = KeyedBatch("a", ts, 3);  // 1 + 2 + 3
  CurlAnswer first = KeyedCurl(c, "/incr", body, "batch-1");
  ASSERT_EQ(first.status, 200) << first.body;
  EXPECT_FALSE(first.Replayed());
  for (int retry = 0; retry < 3; ++retry) {
    CurlAnswer again = KeyedCurl(c, "/incr", body, "batch-1");
    EXPECT_EQ(again.status, 200) << again.body;
    EXPECT_TRUE(again.Replayed()) << again.headers;
    EXPECT_EQ(nlohmann::json::parse(again.body)["data"], nlohmann::json::parse(first.body)["data"]);
  }
  // GET with the increment in the query string, and a quoted key (the
  // draft's structured-field form) for the same key unquoted.
  const std::string target = fmt::format("/incr?ns=t&key=b&ts={}&value=5", ts);
  ASSERT_EQ(KeyedCurl(c, target, "", "\"get-1\"").status, 200);
  CurlAnswer get_again = KeyedCurl(c, target, "", "get-1");
  EXPECT_EQ(get_again.status, 200);
  EXPECT_TRUE(get_again.Replayed());

  // The same key with another request: refused, nothing counted.
  CurlAnswer reused = KeyedCurl(c, "/incr", KeyedBatch("a", ts, 4), "batch-1");
  EXPECT_EQ(reused.status, 422) << reused.body;
  EXPECT_EQ(reused.Reason(), "IDEMPOTENCY_KEY_REUSED");
  CurlAnswer bad = KeyedCurl(c, "/incr", body, std::string(256, 'k'));
  EXPECT_EQ(bad.status, 400);
  EXPECT_EQ(bad.Reason(), "INVALID_IDEMPOTENCY_KEY");
  // An empty header (curl's "Name;") is a malformed key too, not none: the
  // client meant to send one, and must not lose its retry protection silently.
  CurlAnswer empty = Curl(c.dir(), c.Api(), "/incr", body, {"Idempotency-Key;"}, 10);
  EXPECT_EQ(empty.status, 400) << empty.body;
  EXPECT_EQ(empty.Reason(), "INVALID_IDEMPOTENCY_KEY");
  // Without a key, as before: every request counts.
  ASSERT_EQ(KeyedCurl(c, target, "", "").status, 200);
  ASSERT_EQ(KeyedCurl(c, target, "", "").status, 200);

  const std::map<std::string, int64_t> want = {{"t|a." + hour, 6}, {"t|b." + hour, 15}};
  EXPECT_EQ(KeyedStored(c), want);
  nlohmann::json keys = c.ApiStats()["write"]["idempotency"];
  EXPECT_EQ(keys["keys"], 2) << keys.dump();
  EXPECT_EQ(keys["replays"], 4) << keys.dump();
  EXPECT_EQ(keys["reused"], 1) << keys.dump();
}

TEST(IntegrationIdempotencyTest, AKeyWhoseBatchIsDurableSurvivesKillNineAndOneThatIsNotIsProcessedAgain) {
  WriteCluster c(KeyedSpec());
  c.StartAll();
  const int64_t ts = static_cast<int64_t>(std::time(nullptr));
  const std::string hour = *YmdhFromUnix(ts);
  const std::string stall = c.DataDir("api-0") + "/fault/oplog-stall";
  std::filesystem::create_directories(c.DataDir("api-0") + "/fault");

  // Durable and answered, then the node dies: a retry after the restart
  // gets the first answer.
  ASSERT_EQ(KeyedCurl(c, "/incr", KeyedBatch("durable", ts, 2), "k-durable").status, 200);

  // In flight: the oplog holds the commit. The client gives up after 1 s
  // (as the client did); its retry meanwhile is 409; then the node
  // is killed before the batch was ever durable.
  std::ofstream(stall).put('1');
  std::thread slow([&] { KeyedCurl(c, "/incr", KeyedBatch("lost", ts, 2), "k-lost", /*max_time_s=*/1); });
  ASSERT_TRUE(WaitFor([&] { return c.ApiStats()["write"]["idempotency"]["keys_in_flight"] == 1; }))
      << c.ApiStats().dump();
  CurlAnswer in_flight = KeyedCurl(c, "/incr", KeyedBatch("lost", ts, 2), "k-lost");
  EXPECT_EQ(in_flight.status, 409) << in_flight.body;
  EXPECT_EQ(in_flight.Reason(), "IDEMPOTENCY_KEY_IN_FLIGHT");
  slow.join();
  c.Kill("api-0");
  std::filesystem::remove(stall);
  c.Start("api-0");

  CurlAnswer durable = KeyedCurl(c, "/incr", KeyedBatch("durable", ts, 2), "k-durable");
  EXPECT_EQ(durable.status, 200) << durable.body;
  EXPECT_TRUE(durable.Replayed()) << "the key's commit frame was durable: restored at start";
  CurlAnswer lost = KeyedCurl(c, "/incr", KeyedBatch("lost", ts, 2), "k-lost");
  EXPECT_EQ(lost.status, 200) << lost.body;
  EXPECT_FALSE(lost.Replayed()) << "never durable: processed as new";
  EXPECT_TRUE(KeyedCurl(c, "/incr", KeyedBatch("lost", ts, 2), "k-lost").Replayed());

  const std::map<std::string, int64_t> want = {{"t|durable." + hour, 3}, {"t|lost." + hour, 3}};
  EXPECT_EQ(KeyedStored(c), want);
  EXPECT_EQ(c.ApiStats()["write"]["idempotency"]["restored"], 1);
}

}  // namespace
}  // namespace clickatron::api::write_testing
