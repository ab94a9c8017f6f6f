// RealtimeReader (api/query/fetch/realtime_reader.h) against a scripted realtime
// shard (testutil/fake_http_client.h). One member serves a shard, so there is
// no failover: an error answer, a shard that does not answer and a garbled
// coalesced answer must each end in a clear error, never in a short body.
#include "query/fetch/realtime_reader.h"

#include <event2/event.h>
#include <gtest/gtest.h>

#include <map>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "clickatron/config.h"
#include "api/query/fake_read_cluster.h"
#include "testutil/fake_http_client.h"

namespace clickatron::api::realtime_reader_test {
namespace {

using clickatron::testing::FakeHttpClient;
using Answer = FakeHttpClient::Answer;

const HostPort kShardPeer{"127.0.0.1", 7201};

// One realtime shard, served by member "r0" at kShardPeer.
ClusterConfig OneShardCluster() {
  ClusterConfig cluster;
  fake_read_cluster::AddRealtimeShard(cluster, 0, kShardPeer);
  return cluster;
}

class RealtimeReaderTest : public ::testing::Test {
 protected:
  RealtimeReaderTest() : cluster_(OneShardCluster()), reader_(cluster_, client_, stats_, RealtimeReader::Options{}) {}

  // Fwmatches of `prefixes` on shard 0, all asked before any answer arrives
  // (the first goes alone, the others queue for one /mfwmatch); each
  // callback must run exactly once. The result per prefix: its body, or
  // "error CODE_REASON: message".
  std::map<std::string, std::string> Fwmatch(const std::vector<std::string>& prefixes) {
    std::map<std::string, std::string> got;
    std::map<std::string, int> calls;
    for (const std::string& prefix : prefixes) {
      reader_.Fwmatch(0, prefix, [&got, &calls, prefix](Result<std::string> body) {
        ++calls[prefix];
        got[prefix] = body.ok() ? *body : "error " + body.status().reason() + ": " + body.status().message();
      });
    }
    client_.RunUntilIdle();
    for (const std::string& prefix : prefixes) EXPECT_EQ(calls[prefix], 1) << prefix;
    return got;
  }
  std::string Fwmatch(const std::string& prefix) { return Fwmatch(std::vector<std::string>{prefix})[prefix]; }

  size_t RequestsTo(std::string_view path) const { return client_.RequestsTo(kShardPeer, path).size(); }

  // Declared first, destroyed last: the client's event is on it.
  std::unique_ptr<event_base, decltype(&event_base_free)> base_{event_base_new(), &event_base_free};
  FakeHttpClient client_{base_.get()};
  ReadStats stats_;
  ClusterConfig cluster_;
  RealtimeReader reader_;
};

TEST_F(RealtimeReaderTest, AnswerIsTheBodyAndNotFoundIsEmpty) {
  client_.ScriptOnce(kShardPeer, "/fwmatch", Answer::Http(200, "u|a.2026113010,3\n"));
  EXPECT_EQ(Fwmatch("u|a."), "u|a.2026113010,3\n");
  // A 404 of fwmatch is "nothing matched", not an error.
  client_.ScriptOnce(kShardPeer, "/fwmatch", Answer::Http(404, ""));
  EXPECT_EQ(Fwmatch("u|b."), "");
  EXPECT_EQ(RequestsTo("/fwmatch"), 2u);
}

TEST_F(RealtimeReaderTest, SkippedDaysAreSentWithTheFwmatch) {
  client_.Script(kShardPeer, "/fwmatch", Answer::Http(200, ""));
  reader_.SkipDaysThrough(20422);  // 2025-11-30
  Fwmatch("u|a.");
  ASSERT_EQ(client_.requests().size(), 1u);
  EXPECT_EQ(client_.requests()[0].target, "/fwmatch?key=u%7Ca.&after=2025-11-30");
}

TEST_F(RealtimeReaderTest, RefusedReadIsAnErrorAndIsNotRetried) {
  client_.Script(kShardPeer, "/fwmatch", Answer::Http(400, R"({"status_txt":"BAD_QUERY"})"));
  const std::string got = Fwmatch("u|a.");
  EXPECT_TRUE(got.starts_with("error INTERNAL_ERROR: realtime r0 refused a read (400)")) << got;
  EXPECT_EQ(RequestsTo("/fwmatch"), 1u);  // another try would be refused too
}

TEST_F(RealtimeReaderTest, ServerErrorIsTriedTwiceThenShardUnavailable) {
  client_.Script(kShardPeer, "/fwmatch", Answer::Http(503, "busy"));
  const std::string got = Fwmatch("u|a.");
  EXPECT_TRUE(got.starts_with("error SHARD_UNAVAILABLE: realtime shard 0 (r0): HTTP 503: \"busy\"")) << got;
  EXPECT_EQ(RequestsTo("/fwmatch"), 2u);
  EXPECT_EQ(stats_.realtime_retries.load(), 1u);
}

// The shard's own reason goes on to the client: a damaged store names its file.
TEST_F(RealtimeReaderTest, AServerErrorsReasonIsPassedOn) {
  client_.Script(kShardPeer, "/fwmatch",
                 Answer::Http(500, R"({"status_code":500,"status_txt":"CORRUPTION","message":"block checksum )"
                                   R"(mismatch in /d/000098.sst"})"));
  const std::string got = Fwmatch("u|a.");
  EXPECT_NE(got.find("HTTP 500 CORRUPTION: block checksum mismatch in /d/000098.sst"), std::string::npos) << got;
}

TEST_F(RealtimeReaderTest, ServerErrorOnceIsAnsweredByTheSecondTry) {
  client_.ScriptOnce(kShardPeer, "/fwmatch", Answer::Http(503, "busy"));
  client_.ScriptOnce(kShardPeer, "/fwmatch", Answer::Http(200, "u|a.2026113010,3\n"));
  EXPECT_EQ(Fwmatch("u|a."), "u|a.2026113010,3\n");
  EXPECT_EQ(RequestsTo("/fwmatch"), 2u);
}

TEST_F(RealtimeReaderTest, ShardNotAnsweringIsShardUnavailable) {
  client_.Script(kShardPeer, "/fwmatch", Answer::TransportError("UNAVAILABLE"));
  const std::string got = Fwmatch("u|a.");
  EXPECT_TRUE(got.starts_with("error SHARD_UNAVAILABLE: realtime shard 0 (r0)")) << got;
  EXPECT_EQ(RequestsTo("/fwmatch"), 2u);  // once more, for a keep-alive connection the shard closed
}

TEST_F(RealtimeReaderTest, TimedOutShardIsNotAskedAgain) {
  client_.Script(kShardPeer, "/fwmatch", Answer::TransportError("TIMEOUT"));
  const std::string got = Fwmatch("u|a.");
  EXPECT_TRUE(got.starts_with("error SHARD_UNAVAILABLE")) << got;
  EXPECT_EQ(RequestsTo("/fwmatch"), 1u);
}

TEST_F(RealtimeReaderTest, QueuedFwmatchesGoTogetherAndAreSplitPerPrefix) {
  client_.Script(kShardPeer, "/fwmatch", Answer::Http(200, "u|a.2026113010,1\n"));
  client_.Script(kShardPeer, "/mfwmatch", Answer::Http(200, "u|b.2026113010,2\nu|c.2026113011,3\n"));
  const auto got = Fwmatch(std::vector<std::string>{"u|a.", "u|b.", "u|c."});
  EXPECT_EQ(got, (std::map<std::string, std::string>{
                     {"u|a.", "u|a.2026113010,1\n"}, {"u|b.", "u|b.2026113010,2\n"}, {"u|c.", "u|c.2026113011,3\n"}}));
  EXPECT_EQ(RequestsTo("/mfwmatch"), 1u);
  EXPECT_EQ(stats_.realtime_coalesced_prefixes.load(), 2u);
}

TEST_F(RealtimeReaderTest, GarbledCoalescedAnswerFailsEveryFwmatchInIt) {
  // A stream that broke off (its "!ERROR" end) cannot be split per prefix:
  // none of the fwmatches it carried may take a short part of it.
  client_.Script(kShardPeer, "/fwmatch", Answer::Http(200, "u|a.2026113010,1\n"));
  client_.Script(kShardPeer, "/mfwmatch", Answer::Http(200, "u|b.2026113010,2\n!ERROR read failed\n"));
  const auto got = Fwmatch(std::vector<std::string>{"u|a.", "u|b.", "u|c."});
  EXPECT_EQ(got.at("u|a."), "u|a.2026113010,1\n");  // its own request was whole
  EXPECT_TRUE(got.at("u|b.").starts_with("error CORRUPTION")) << got.at("u|b.");
  EXPECT_TRUE(got.at("u|c.").starts_with("error CORRUPTION")) << got.at("u|c.");
}

TEST_F(RealtimeReaderTest, MgetFailureFailsTheWholeMget) {
  client_.Script(kShardPeer, "/mget", Answer::TransportError("UNAVAILABLE"));
  std::optional<Result<std::vector<std::string>>> got;
  reader_.MGet(0, {"k1", "k2"}, [&](Result<std::vector<std::string>> bodies) { got.emplace(std::move(bodies)); });
  client_.RunUntilIdle();
  ASSERT_TRUE(got.has_value());
  ASSERT_FALSE(got->ok());
  EXPECT_EQ(got->status().reason(), "SHARD_UNAVAILABLE");
}

}  // namespace
}  // namespace clickatron::api::realtime_reader_test
