// POST /delete on real daemons (two API nodes, two realtime shards): the
// parameters checked, the deletion copied to the other API node, the key's
// records gone from the realtime shards and nothing else, increments sent
// after it counted, and a deletion taken just before its API node is killed
// finished after the restart.
#include <gtest/gtest.h>

#include <csignal>
#include <ctime>
#include <filesystem>
#include <thread>

#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include "api/ingest/cluster_fixture.h"
#include "clickatron/ymdh.h"
#include "testutil/testutil.h"

namespace clickatron::api::write_testing::integration_delete_test {
namespace {

constexpr const char* kToken = "erase-admin-token";

ClusterSpec TwoApiNodes() {
  ClusterSpec spec = WriteCluster::Spec(2);
  spec.api_nodes = 2;
  spec.cluster.SetString("admin_token", kToken);
  return spec;
}

class DeleteIntegration : public ::testing::Test {
 protected:
  void SetUp() override {
    c_.StartAll();
    c_.Start("api-1");
    hour_ = *YmdhFromUnix(now_);
  }
  HostPort Api(int i) const { return c_.Peer(fmt::format("api-{}", i)); }
  void Incr(const std::string& lines) {
    HttpResponse r = HttpPost(Api(0), "/incr", lines);
    ASSERT_EQ(r.status_code, 200) << r.body;
    ASSERT_TRUE(clickatron::testing::WaitFor([&] { return c_.Drained(); }));
  }
  // 202 and the id, or the status and reason.
  std::pair<int, std::string> Delete(const std::string& query, const std::string& token = kToken, int api = 0) {
    HttpResponse r = HttpPost(Api(api), "/delete?" + query, "", 30000, token);
    nlohmann::json j = nlohmann::json::parse(r.body, nullptr, false);
    if (r.status_code == 202) return {202, j["data"]["id"].get<std::string>()};
    return {r.status_code, j.is_object() ? j.value("status_txt", "") : r.body};
  }
  nlohmann::json Status(int api, const std::string& id) {
    HttpResponse r = HttpGet(Api(api), "/delete/" + id, 5000, kToken);
    nlohmann::json j = nlohmann::json::parse(r.body, nullptr, false);
    return r.status_code == 200 && j.is_object() ? j["data"] : nlohmann::json();
  }
  bool RealtimeDone(int api, const std::string& id) {
    return clickatron::testing::WaitFor([&] {
      nlohmann::json s = Status(api, id);
      return s.is_object() && s["realtime"] == "done";
    });
  }

  WriteCluster c_{TwoApiNodes()};
  const int64_t now_ = static_cast<int64_t>(std::time(nullptr));
  std::string hour_;
};

TEST_F(DeleteIntegration, RefusesBadParametersNamingTheField) {
  EXPECT_EQ(Delete("ns=u&key=k", "").first, 401);
  EXPECT_EQ(Delete("key=k"), std::make_pair(400, std::string("INVALID_NS")));
  EXPECT_EQ(Delete("ns=u.x&key=k"), std::make_pair(400, std::string("INVALID_NS")));
  EXPECT_EQ(Delete("ns=u&key=k&from=5"), std::make_pair(400, std::string("INVALID_FROM")));
  EXPECT_EQ(Delete("ns=u&key=k&to=soon"), std::make_pair(400, std::string("INVALID_TO")));
  EXPECT_EQ(Delete("ns=u&key=k&from=7200&to=3600"), std::make_pair(400, std::string("INVALID_TO")));
  EXPECT_EQ(Delete("ns=u&key=k&key=j"), std::make_pair(400, std::string("INVALID_KEY")));
  EXPECT_EQ(Delete("ns=u&key=k&id=no/slash"), std::make_pair(400, std::string("INVALID_ID")));
  // A misspelt or unknown parameter is refused: ignored, `keys=` meant
  // every key of the namespace, `frm=` every hour, `sns=` the whole key
  // (probe 9b: each answered 202).
  EXPECT_EQ(Delete("ns=u&keys=k"), std::make_pair(400, std::string("UNKNOWN_PARAMETER")));
  // Milliseconds sent for seconds: a `to` in the year 58,000 widened the
  // deletion to every hour after `from` (probe 10a).
  EXPECT_EQ(Delete("ns=u&key=k&from=1796202000&to=1796205600000"), std::make_pair(400, std::string("INVALID_TO")));
  EXPECT_EQ(Delete("ns=u&key=k&from=1796202000000"), std::make_pair(400, std::string("INVALID_FROM")));
  EXPECT_EQ(Delete("ns=u&key=k&frm=3600"), std::make_pair(400, std::string("UNKNOWN_PARAMETER")));
  EXPECT_EQ(Delete("ns=u&key=k&sns=c&skey=US"), std::make_pair(400, std::string("UNKNOWN_PARAMETER")));
  // A from past the default to (the hour after now) is the from's fault.
  EXPECT_EQ(Delete(fmt::format("ns=u&key=k&from={}", (now_ / 3600 + 5) * 3600)),
            std::make_pair(400, std::string("INVALID_FROM")));
  EXPECT_EQ(HttpGet(Api(0), "/delete/del-1-00000000", 5000, kToken).status_code, 404);
  // A client's own id: the same request again is the same deletion.
  EXPECT_EQ(Delete("ns=u&key=k&id=mine-1"), std::make_pair(202, std::string("mine-1")));
  EXPECT_TRUE(RealtimeDone(0, "mine-1"));
  // The same id for another key or other hours: refused, the deletion kept.
  EXPECT_EQ(Delete("ns=u&key=other&id=mine-1"), std::make_pair(422, std::string("DELETION_ID_REUSED")));
  EXPECT_EQ(Delete("ns=u&key=k&from=3600&to=7200&id=mine-1"),
            std::make_pair(422, std::string("DELETION_ID_REUSED")));
  EXPECT_EQ(Status(0, "mine-1")["key"], "k");
  // A `from`-only deletion retried: its default `to` is not compared.
  const std::string from = std::to_string((now_ / 3600 - 2) * 3600);
  EXPECT_EQ(Delete("ns=u&key=k&from=" + from + "&id=mine-2"), std::make_pair(202, std::string("mine-2")));
  EXPECT_EQ(Delete("ns=u&key=k&from=" + from + "&id=mine-2"), std::make_pair(202, std::string("mine-2")));
  // Deleting nothing is accepted, and finishes.
  auto [status, id] = Delete("ns=nothing&key=nobody");
  ASSERT_EQ(status, 202);
  EXPECT_TRUE(RealtimeDone(0, id));
}

TEST_F(DeleteIntegration, TakesOutTheKeysRealtimeRecordsOnlyAndCountsWhatComesAfter) {
  Incr(fmt::format("ns=u&key=victim&ts={0}&value=5&sub=c:US\nns=u&key=bystander&ts={0}&value=3\n"
                   "ns=v&key=victim&ts={0}&value=2\n",
                   now_));
  ASSERT_EQ(c_.Counters("u|victim.")[fmt::format("u|victim.{}", hour_)], 5);
  auto [status, id] = Delete("ns=u&key=victim");
  ASSERT_EQ(status, 202) << id;
  // Run by api-0, copied to api-1, which answers for it too.
  ASSERT_TRUE(RealtimeDone(1, id)) << c_.LogTail("api-0") << c_.LogTail("api-1");
  EXPECT_TRUE(c_.Records("u|victim.").empty());
  EXPECT_TRUE(c_.Records("c.u|victim.").empty());
  EXPECT_EQ(c_.Counters("u|bystander.")[fmt::format("u|bystander.{}", hour_)], 3);
  EXPECT_EQ(c_.Counters("v|victim.")[fmt::format("v|victim.{}", hour_)], 2);
  // After the deletion: counted as usual, in the deleted hour too.
  Incr(fmt::format("ns=u&key=victim&ts={}&value=4\n", now_));
  EXPECT_EQ(c_.Counters("u|victim.")[fmt::format("u|victim.{}", hour_)], 4);
  nlohmann::json s = Status(0, id);
  EXPECT_EQ(s["ns"], "u");
  EXPECT_EQ(s["key"], "victim");
  EXPECT_EQ(s["owner"], "api-0");
}

// The contract: an increment acknowledged after the 202 counts, also in
// the deleted hours. The 202 came at once, and the cut (every API node's
// oplog heads) some 100 ms later, after every tombstone: increments
// acknowledged in between were below the cut and deleted with the rest
// (a probe saw 23 of them go). Now the 202 waits for the cut.
TEST_F(DeleteIntegration, IncrementsAcknowledgedRightAfterTheAnswerCount) {
  Incr(fmt::format("ns=u&key=burst&ts={}&value=7\n", now_));
  HttpResponse answer = HttpPost(Api(0), "/delete?ns=u&key=burst&id=burst-1", "", 30000, kToken);
  ASSERT_EQ(answer.status_code, 202) << answer.body;
  const nlohmann::json accepted = nlohmann::json::parse(answer.body, nullptr, false);
  ASSERT_TRUE(accepted.is_object()) << answer.body;
  EXPECT_EQ(accepted["data"]["cut_taken"], true) << answer.body;
  const std::string id = "burst-1";
  constexpr int kAfter = 20;
  for (int i = 0; i < kAfter; ++i) {
    HttpResponse r = HttpPost(Api(0), "/incr", fmt::format("ns=u&key=burst&ts={}\n", now_));
    ASSERT_EQ(r.status_code, 200) << r.body;
  }
  ASSERT_TRUE(RealtimeDone(0, id));
  ASSERT_TRUE(clickatron::testing::WaitFor([&] { return c_.Drained(); }));
  EXPECT_EQ(c_.Counters("u|burst.")[fmt::format("u|burst.{}", hour_)], kAfter)
      << "the 7 before the deletion go, the 20 acknowledged after its answer stay";
}

// A member that does not answer holds the cut: the 202 comes after a
// bounded wait, saying the cut is not taken and why. A member down is
// named; a member that hangs has failed no step yet when the answer is due,
// and the answer still says the cut is pending.
TEST_F(DeleteIntegration, AnAnswerWithoutTheCutSaysWhyItWaits) {
  const auto check = [&](const std::string& id, const std::string& why) {
    HttpResponse r = HttpPost(Api(0), "/delete?ns=u&key=held&id=" + id, "", 30000, kToken);
    ASSERT_EQ(r.status_code, 202) << r.body;
    const nlohmann::json j = nlohmann::json::parse(r.body, nullptr, false);
    ASSERT_TRUE(j.is_object()) << r.body;
    EXPECT_EQ(j["data"]["realtime"], "pending") << r.body;
    EXPECT_EQ(j["data"]["cut_taken"], false) << r.body;
    EXPECT_NE(j["data"].value("waiting", "").find(why), std::string::npos) << r.body;
  };
  c_.Kill("realtime-1");
  check("held-1", "realtime-1");
  c_.Start("realtime-1");
  EXPECT_TRUE(RealtimeDone(0, "held-1"));
  c_.Signal("realtime-1", SIGSTOP);
  check("held-2", "CUT_PENDING");
  c_.Signal("realtime-1", SIGCONT);
  EXPECT_TRUE(RealtimeDone(0, "held-2"));
}

// A node stopped (SIGTERM) while a POST /delete waits for its cut answers
// it with what the deletion reached, not a closed connection: a client
// with no answer and no id would make a second deletion.
TEST_F(DeleteIntegration, AStopAnswersAPostWaitingForItsCut) {
  c_.Kill("realtime-1");
  HttpResponse answer;
  std::thread post([&] { answer = HttpPost(Api(0), "/delete?ns=u&key=stop&id=stop-1", "", 30000, kToken); });
  const bool recorded = clickatron::testing::WaitFor([&] { return Status(0, "stop-1").is_object(); });
  c_.Signal("api-0", SIGTERM);
  post.join();
  ASSERT_TRUE(recorded);
  ASSERT_EQ(answer.status_code, 202) << answer.body << answer.transport.ToString();
  const nlohmann::json j = nlohmann::json::parse(answer.body, nullptr, false);
  ASSERT_TRUE(j.is_object()) << answer.body;
  EXPECT_EQ(j["data"]["cut_taken"], false) << answer.body;
  c_.Start("realtime-1");
  c_.Start("api-0");
  EXPECT_TRUE(RealtimeDone(0, "stop-1"));
}

// An API node that lost its data dir (or joins the cluster) learns the
// deletions its peers know when it starts: its reads hide them and it
// answers for them, as every node does.
// One id sent for two keys to both API nodes at once (a load balancer, two
// operators): the id's home node takes it, whichever node the request came
// to, so one is 202 and the other 422, and both nodes answer the one taken.
// Each node took its own before: both 202, the nodes disagreed on the id,
// and a peer's copy replaced one of the two, an acknowledged deletion lost.
TEST_F(DeleteIntegration, OneIdSentToBothNodesAtOnceIsTakenOnce) {
  for (int round = 0; round < 4; ++round) {
    const std::string id = fmt::format("race-{}", round);
    std::pair<int, std::string> answers[2];
    std::thread to_a([&] { answers[0] = Delete(fmt::format("ns=u&key=a{}&id={}", round, id), kToken, 0); });
    std::thread to_b([&] { answers[1] = Delete(fmt::format("ns=u&key=b{}&id={}", round, id), kToken, 1); });
    to_a.join();
    to_b.join();
    const int taken = (answers[0].first == 202) + (answers[1].first == 202);
    EXPECT_EQ(taken, 1) << id << ": " << answers[0].first << " " << answers[0].second << ", " << answers[1].first
                        << " " << answers[1].second;
    const int refused = (answers[0].second == "DELETION_ID_REUSED") + (answers[1].second == "DELETION_ID_REUSED");
    EXPECT_EQ(refused, 1) << id;
    const std::string key = answers[0].first == 202 ? fmt::format("a{}", round) : fmt::format("b{}", round);
    ASSERT_TRUE(RealtimeDone(0, id)) << Status(0, id).dump();
    const nlohmann::json on_a = Status(0, id), on_b = Status(1, id);
    EXPECT_EQ(on_a["key"], key) << on_a.dump();
    EXPECT_EQ(on_b["key"], key) << on_b.dump();
    EXPECT_EQ(on_a["owner"], on_b["owner"]) << on_a.dump() << " " << on_b.dump();
  }
}

TEST_F(DeleteIntegration, ANodeStartedWithoutItsDeletionsLearnsThemFromItsPeers) {
  auto [status, id] = Delete("ns=u&key=old");
  ASSERT_EQ(status, 202) << id;
  ASSERT_TRUE(RealtimeDone(1, id));
  c_.Kill("api-1");
  std::filesystem::remove_all(c_.DataDir("api-1") + "/deletions");
  c_.Start("api-1");
  nlohmann::json s = Status(1, id);
  ASSERT_TRUE(s.is_object()) << c_.LogTail("api-1");
  EXPECT_EQ(s["key"], "old");
  EXPECT_EQ(s["realtime"], "done");
}

TEST_F(DeleteIntegration, ADeletionTakenJustBeforeKill9IsFinishedAfterTheRestart) {
  Incr(fmt::format("ns=u&key=gone&ts={}&value=6\n", now_));
  c_.Kill("realtime-1");  // the deletion cannot finish while a shard is down
  auto [status, id] = Delete("ns=u&key=gone");
  ASSERT_EQ(status, 202) << id;
  c_.Kill("api-0");
  c_.Start("realtime-1");
  c_.Start("api-0");
  ASSERT_TRUE(RealtimeDone(0, id));
  EXPECT_TRUE(c_.Records("u|gone.").empty());
}

// kill -9 of every realtime shard right after a deletion is done: the
// records stay deleted after the restart (the deletes reached the store, not
// only the in-memory table; a power cut, which would test the sync, is not
// what this is), and increments sent after it still count.
TEST_F(DeleteIntegration, KilledShardsKeepTheDeletionAfterTheRestart) {
  Incr(fmt::format("ns=u&key=gone&ts={0}&value=6&sub=c:US\nns=u&key=kept&ts={0}&value=2\n", now_));
  auto [status, id] = Delete("ns=u&key=gone");
  ASSERT_EQ(status, 202) << id;
  ASSERT_TRUE(RealtimeDone(0, id));
  c_.Kill("realtime-0");
  c_.Kill("realtime-1");
  c_.Start("realtime-0");
  c_.Start("realtime-1");
  EXPECT_TRUE(c_.Records("u|gone.").empty());
  EXPECT_TRUE(c_.Records("c.u|gone.").empty());
  EXPECT_EQ(c_.Counters("u|kept.")[fmt::format("u|kept.{}", hour_)], 2);
  Incr(fmt::format("ns=u&key=gone&ts={}&value=1\n", now_));
  EXPECT_EQ(c_.Counters("u|gone.")[fmt::format("u|gone.{}", hour_)], 1);
}

// A realtime shard being added (docs/operations.md, section 5): api-0 runs
// the new cluster file and has sent a key's increments for the first day of
// three shards to the new shard; api-1 still runs the old file, which does
// not name that shard. A deletion taken by api-1 must not miss those
// records (the rebuild would fold them in for good): it waits, saying why,
// until api-1 runs the new file, and then deletes them too.
TEST_F(DeleteIntegration, ADeletionTakenByANodeOnAnOlderClusterFileWaitsUntilItKnowsEveryShard) {
  const int64_t tomorrow = (now_ / 86400 + 1) * 86400;
  ClusterSpec spec = c_.spec();
  spec.realtime_shards = 3;
  spec.cluster.SetString("realtime_shards_since", FormatDate(tomorrow / 86400)).SetInt("previous_realtime_shards", 2);
  const clickatron::Status written = c_.Rewrite(spec);
  ASSERT_TRUE(written.ok()) << written.ToString();
  c_.Start("realtime-2");
  ASSERT_EQ(c_.Stop("api-0"), 0);
  c_.Start("api-0");
  const std::string key = KeysOnShard("u", "moved", 2, 3, 1)[0];
  Incr(fmt::format("ns=u&key={}&ts={}&value=4&sub=c:US\n", key, tomorrow));
  const std::string total = fmt::format("u|{}.{}", key, *YmdhFromUnix(tomorrow));
  ASSERT_EQ(c_.Records("u|" + key + ".")[total].second, 2) << "the increment is on the new shard";

  auto [status, id] = Delete("ns=u&key=" + key, kToken, /*api=*/1);
  ASSERT_EQ(status, 202) << id;
  ASSERT_TRUE(clickatron::testing::WaitFor([&] { return Status(1, id).contains("waiting"); }))
      << c_.LogTail("api-1");
  const nlohmann::json waiting = Status(1, id);
  EXPECT_EQ(waiting["realtime"], "pending");
  EXPECT_NE(waiting["waiting"].get<std::string>().find("CLUSTER_FILE_BEHIND"), std::string::npos) << waiting;
  EXPECT_NE(waiting["waiting"].get<std::string>().find("realtime-2"), std::string::npos) << waiting;
  EXPECT_EQ(c_.Counters("u|" + key + ".")[total], 4) << "nothing is deleted while it waits";

  // api-1 restarted with the file that names every shard: the deletion goes on.
  ASSERT_EQ(c_.Stop("api-1"), 0);
  c_.Start("api-1");
  ASSERT_TRUE(RealtimeDone(1, id)) << c_.LogTail("api-1");
  EXPECT_FALSE(Status(1, id).contains("waiting"));
  EXPECT_TRUE(c_.Records("u|" + key + ".").empty());
  EXPECT_TRUE(c_.Records("c.u|" + key + ".").empty());
}

// `clickatron delete` wraps it: refused with the reason, or done and printed.
TEST_F(DeleteIntegration, TheOperatorToolDeletesAndWaitsUntilItIsEffective) {
  Incr(fmt::format("ns=u&key=tool&ts={}&value=2\n", now_));
  std::string out;
  const std::string tool = clickatron::testing::BinaryPath("clickatron");
  EXPECT_EQ(clickatron::testing::RunCommand({tool, "delete", "--config", c_.config(), "--ns", "u", "--key", "tool",
                                             "--from", "5"},
                                            &out),
            1);
  EXPECT_NE(out.find("INVALID_FROM"), std::string::npos) << out;
  // An empty --key (a runbook's $PERSON unset) is a usage error, not every
  // key of the namespace: nothing is deleted.
  EXPECT_NE(clickatron::testing::RunCommand({tool, "delete", "--config", c_.config(), "--ns", "u", "--key", ""}, &out),
            0);
  EXPECT_NE(out.find("--key"), std::string::npos) << out;
  EXPECT_FALSE(c_.Records("u|tool.").empty()) << "an empty --key deleted the namespace";
  ASSERT_EQ(clickatron::testing::RunCommand({tool, "delete", "--config", c_.config(), "--ns", "u", "--key", "tool"},
                                            &out),
            0)
      << out;
  const nlohmann::json printed = nlohmann::json::parse(out.substr(0, out.find('\n')), nullptr, false);
  ASSERT_TRUE(printed.is_object()) << out;
  EXPECT_EQ(printed["realtime"], "done");
  EXPECT_EQ(printed["effective"], true);
  EXPECT_EQ(printed["key"], "tool");
  EXPECT_TRUE(c_.Records("u|tool.").empty());
}

}  // namespace
}  // namespace clickatron::api::write_testing::integration_delete_test
