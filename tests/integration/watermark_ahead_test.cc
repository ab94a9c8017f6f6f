// "Watermark ahead" (docs/operations.md): a shard's watermark for an API
// node above every seq the node wrote — here a second node under the name
// api-0, which holds the cluster secret, sends one batch with a far higher
// seq. The real node must not let its acknowledged increments be dropped as
// duplicates: it holds, keeps them in its oplog, shows the state, survives a
// restart, and after `clickatron oplog release` counts each exactly once.
#include <gtest/gtest.h>

#include <csignal>
#include <map>
#include <string>

#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include "clickatron/ymdh.h"
#include "integration/cluster_fixture.h"

// A namespace of this file's own: its names beside those of the other files
// compiled with it in one unity file (tests/CMakeLists.txt).
namespace clickatron::integration::watermark_ahead_test {
namespace {

using clickatron::testing::BinaryPath;
using clickatron::testing::HttpGet;
using clickatron::testing::HttpPost;
using clickatron::testing::RunCommand;
using clickatron::testing::WaitFor;

const std::string kDay = "2024-06-01";
constexpr uint64_t kForgedSeq = 1000000000;

class WatermarkAheadTest : public StartedClusterTest {
 protected:
  WatermarkAheadTest() : StartedClusterTest(kDay) {}

  // Over 8 keys: batches for both shards.
  void Increment8(const std::string& key, int count) { IncrementThroughApi(key, count, 8); }
  // `clickatron oplog release` for both shards; each must succeed.
  void ReleaseBothShards() {
    for (int shard = 0; shard < 2; ++shard) {
      std::string out;
      ASSERT_EQ(RunCommand({BinaryPath("clickatron"), "oplog", "release", "--config", cluster_.config_path(), "--api",
                            "api-0", "--shard", std::to_string(shard)},
                           &out),
                0)
          << out;
      EXPECT_NE(out.find("released"), std::string::npos) << out;
    }
  }
  int64_t Total(const std::string& key) const {
    int64_t sum = 0;
    for (int i = 0; i < 8; ++i) {
      const int64_t n = cluster_.DayTotal(key + std::to_string(i), kDay);
      if (n < 0) return -1;
      sum += n;
    }
    return sum;
  }
  nlohmann::json Senders() const {
    auto r = HttpGet(cluster_.api(), "/stats");
    auto j = nlohmann::json::parse(r.body, nullptr, false);
    return j.is_discarded() ? nlohmann::json() : j["data"]["write"]["shards"];
  }
  bool AllHeld() const {
    nlohmann::json shards = Senders();
    if (!shards.is_array() || shards.empty()) return false;
    for (const auto& s : shards) {
      if (s["state"] != "held" || s["watermark_ahead"] != 1) return false;
    }
    return true;
  }
  // Every sender idle: all it wrote applied, durable on the shard and
  // acknowledged (so no watermark poll is due and a shard restart keeps it).
  bool AllIdle() const {
    nlohmann::json shards = Senders();
    if (!shards.is_array() || shards.empty()) return false;
    for (const auto& s : shards) {
      if (s["state"] != "up" || s["acked_seq"] != s["written_seq"] || s["shard_durable_seq"] != s["acked_seq"] ||
          s["queued_batches"] != 0) {
        return false;
      }
    }
    return true;
  }
  uint64_t ShardWatermark(const MemberConfig& rt) const {
    auto wm = nlohmann::json::parse(HttpGet(rt.listen, "/watermark?source=api-0").body, nullptr, false);
    return wm.is_discarded() ? UINT64_MAX : wm["data"]["applied_seq"].get<uint64_t>();
  }
  // The second "api-0" (it has the secret) sends `seq` with one click for
  // each of foreign0 … foreign7 to the shard (a key counts where it routes).
  void ForeignBatch(const MemberConfig& rt, uint64_t seq) {
    std::string body;
    const std::string hour = *YmdhFromUnix(UnixOfDate(kDay) + 7);
    for (int i = 0; i < 8; ++i) body += fmt::format("u|foreign{}.{},1\n", i, hour);
    auto r = HttpPost(rt.listen, fmt::format("/incr?source=api-0&seq={}", seq), body);
    ASSERT_EQ(r.status_code, 200) << r.body;
    auto j = nlohmann::json::parse(r.body);
    ASSERT_EQ(j["data"]["duplicate"], false) << r.body;
  }
};

TEST_F(WatermarkAheadTest, HeldThenReleasedEveryAcknowledgedIncrementCountsOnce) {
  Increment8("before", 8);
  ASSERT_TRUE(WaitFor([&] { return Total("before") == 8; })) << Total("before");
  std::map<std::string, uint64_t> really_applied;
  for (const auto& s : Senders()) really_applied[s["member"]] = s["acked_seq"].get<uint64_t>();

  // The second "api-0": signed (it has the secret), a valid empty batch.
  for (const MemberConfig* rt : cluster_.config().MembersWithRole(MemberRole::kRealtime)) {
    auto r = HttpPost(rt->listen, fmt::format("/incr?source=api-0&seq={}", kForgedSeq), "");
    ASSERT_EQ(r.status_code, 200) << r.body;
  }

  // Acknowledged while the shards' watermarks are ahead: the node holds.
  Increment8("after", 20);
  ASSERT_TRUE(WaitFor([&] { return AllHeld(); })) << Senders().dump();
  for (const auto& s : Senders()) {
    EXPECT_EQ(s["held"]["shard_watermark"], kForgedSeq) << s.dump();
    EXPECT_EQ(s["held"]["applied"], really_applied[s["member"]]) << s.dump();
    EXPECT_NE(s["last_error"].get<std::string>().find("WATERMARK_AHEAD"), std::string::npos);
  }
  const std::string metrics = HttpGet(cluster_.api(), "/metrics").body;
  EXPECT_NE(
      metrics.find("clickatron_api_shard_watermark_ahead{daemon=\"clickatron-api\",member=\"api-0\",shard=\"0\"} 1"),
      std::string::npos);
  EXPECT_EQ(Total("after"), 0);  // none applied: not one taken for a duplicate
  for (const auto& s : Senders()) EXPECT_EQ(s["duplicates"], 0) << s.dump();

  // A restart keeps the hold and what the shard really applied (the marker).
  ASSERT_EQ(cluster_.Stop("api-0"), 0);
  std::string error;
  ASSERT_TRUE(cluster_.Start("api-0", &error)) << error;
  ASSERT_TRUE(WaitFor([&] { return AllHeld(); })) << Senders().dump();
  for (const auto& s : Senders()) EXPECT_EQ(s["held"]["applied"], really_applied[s["member"]]) << s.dump();

  // The documented way out, one shard at a time.
  ReleaseBothShards();
  ASSERT_TRUE(WaitFor([&] { return Total("after") == 20; })) << Total("after");
  EXPECT_EQ(Total("before"), 8);
  Increment8("later", 6);
  ASSERT_TRUE(WaitFor([&] { return Total("later") == 6; })) << Total("later");
  EXPECT_EQ(Total("after"), 20);
  for (const auto& s : Senders()) {
    EXPECT_EQ(s["state"], "up") << s.dump();
    EXPECT_EQ(s["duplicates"], 0) << s.dump();
  }
  // A release when nothing is held is refused.
  std::string out;
  EXPECT_NE(RunCommand({BinaryPath("clickatron"), "oplog", "release", "--config", cluster_.config_path(), "--api",
                        "api-0", "--shard", "0"},
                       &out),
            0);
  EXPECT_NE(out.find("is not held"), std::string::npos) << out;
}

// The forged watermark is only a little ahead: during the hold the node
// writes past it. That must not end the hold (the batches it wrote at or
// below the claimed watermark would be dropped); only the release does.
TEST_F(WatermarkAheadTest, WritingPastAClaimedWatermarkDoesNotEndTheHold) {
  Increment8("first", 8);
  ASSERT_TRUE(WaitFor([&] { return Total("first") == 8; })) << Total("first");
  for (const MemberConfig* rt : cluster_.config().MembersWithRole(MemberRole::kRealtime)) {
    auto wm = nlohmann::json::parse(HttpGet(rt->listen, "/watermark?source=api-0").body);
    const uint64_t claimed = wm["data"]["applied_seq"].get<uint64_t>() + 3;
    auto r = HttpPost(rt->listen, fmt::format("/incr?source=api-0&seq={}", claimed), "");
    ASSERT_EQ(r.status_code, 200) << r.body;
  }
  Increment8("during", 40);  // one batch each: far past the claimed seqs
  ASSERT_TRUE(WaitFor([&] { return AllHeld(); })) << Senders().dump();
  for (const auto& s : Senders()) {
    ASSERT_GT(s["written_seq"].get<uint64_t>(), s["held"]["shard_watermark"].get<uint64_t>()) << s.dump();
  }
  // Two more watermark polls each, and still held, nothing taken as a duplicate.
  std::map<int, uint64_t> polls;
  for (const auto& s : Senders()) polls[s["shard"]] = s["held_polls"];
  ASSERT_TRUE(WaitFor([&] {
    for (const auto& s : Senders()) {
      if (s["held_polls"].get<uint64_t>() < polls[s["shard"]] + 2) return false;
    }
    return true;
  }));
  EXPECT_TRUE(AllHeld()) << Senders().dump();
  for (const auto& s : Senders()) {
    EXPECT_EQ(s["releases"], 0) << s.dump();
    EXPECT_EQ(s["duplicates"], 0) << s.dump();
  }
  EXPECT_EQ(Total("during"), 0);

  // A restart with the oplog now past the claimed watermark still holds.
  ASSERT_EQ(cluster_.Stop("api-0"), 0);
  std::string error;
  ASSERT_TRUE(cluster_.Start("api-0", &error)) << error;
  ASSERT_TRUE(WaitFor([&] { return AllHeld(); })) << Senders().dump();

  ReleaseBothShards();
  ASSERT_TRUE(WaitFor([&] { return Total("during") == 40; })) << Total("during");
  EXPECT_EQ(Total("first"), 8);
}

// The gap the check "above everything written" left: a foreign batch whose
// seq is above what the shard applied of this node's but not above what the
// node wrote (its batches queued while the shard was away). The node's queued
// batches up to it would come back as "duplicates" and be acknowledged in the
// oplog: lost, silently. The node must hold instead, since its watermark is
// above every seq the node can have sent.
TEST_F(WatermarkAheadTest, AForeignBatchInsideTheQueuedRangeHoldsInsteadOfDroppingThem) {
  Increment8("before", 8);
  ASSERT_TRUE(WaitFor([&] { return Total("before") == 8; })) << Total("before");
  ASSERT_TRUE(WaitFor([&] { return AllIdle(); })) << Senders().dump();
  std::map<std::string, uint64_t> applied;
  for (const auto& s : Senders()) applied[s["member"]] = s["acked_seq"].get<uint64_t>();

  // The shards are away: the node acknowledges and queues (its oplog).
  for (const MemberConfig* rt : cluster_.config().MembersWithRole(MemberRole::kRealtime)) {
    ASSERT_EQ(cluster_.Stop(rt->name), 0);
  }
  Increment8("queued", 16);
  std::map<std::string, uint64_t> written;
  for (const auto& s : Senders()) written[s["member"]] = s["written_seq"].get<uint64_t>();

  // While the node is frozen (it sends nothing), the shards come back and the
  // second "api-0" takes a seq inside the node's queued range.
  cluster_.Signal("api-0", SIGSTOP);
  std::map<std::string, uint64_t> foreign;
  for (const MemberConfig* rt : cluster_.config().MembersWithRole(MemberRole::kRealtime)) {
    std::string error;
    if (!cluster_.Start(rt->name, &error)) {
      cluster_.Signal("api-0", SIGCONT);
      FAIL() << error;
    }
    const uint64_t wm = ShardWatermark(*rt);
    EXPECT_EQ(wm, applied[rt->name]) << rt->name;
    foreign[rt->name] = wm + 2;
    EXPECT_LT(foreign[rt->name], written[rt->name]) << rt->name << ": too few batches queued";
    ForeignBatch(*rt, foreign[rt->name]);
  }
  cluster_.Signal("api-0", SIGCONT);
  ASSERT_FALSE(HasFatalFailure());

  ASSERT_TRUE(WaitFor([&] { return AllHeld(); })) << Senders().dump();
  for (const auto& s : Senders()) {
    EXPECT_EQ(s["held"]["shard_watermark"], foreign[s["member"]]) << s.dump();
    EXPECT_EQ(s["held"]["applied"], applied[s["member"]]) << s.dump();
    EXPECT_EQ(s["shard_durable_seq"], applied[s["member"]]) << s.dump();  // the oplog is acknowledged no further
    EXPECT_EQ(s["duplicates"], 0) << s.dump();
    EXPECT_NE(s["last_error"].get<std::string>().find("WATERMARK_AHEAD"), std::string::npos) << s.dump();
  }
  EXPECT_EQ(Total("queued"), 0);

  ReleaseBothShards();
  ASSERT_TRUE(WaitFor([&] { return Total("queued") == 16; })) << Total("queued");
  EXPECT_EQ(Total("before"), 8);
  EXPECT_EQ(Total("foreign"), 8);  // the foreign batch's own clicks stay (a reset does not undo them)
  Increment8("later", 8);
  ASSERT_TRUE(WaitFor([&] { return Total("later") == 8; })) << Total("later");
  EXPECT_EQ(Total("queued"), 16);
  for (const auto& s : Senders()) {
    EXPECT_EQ(s["state"], "up") << s.dump();
    EXPECT_EQ(s["duplicates"], 0) << s.dump();
  }
}

// A foreign batch at exactly the node's next seq: the shard's watermark is
// never above what the node has sent by the time it answers, but the first
// attempt of a seq nobody of this node sent before is answered "duplicate":
// someone else wrote under this name. Hold; acknowledge nothing of it.
TEST_F(WatermarkAheadTest, ADuplicateOnAFirstAttemptHolds) {
  Increment8("first", 8);
  ASSERT_TRUE(WaitFor([&] { return Total("first") == 8; })) << Total("first");
  ASSERT_TRUE(WaitFor([&] { return AllIdle(); })) << Senders().dump();
  std::map<std::string, uint64_t> applied;
  for (const auto& s : Senders()) applied[s["member"]] = s["acked_seq"].get<uint64_t>();
  for (const MemberConfig* rt : cluster_.config().MembersWithRole(MemberRole::kRealtime)) {
    ASSERT_EQ(ShardWatermark(*rt), applied[rt->name]);
    ForeignBatch(*rt, applied[rt->name] + 1);
  }
  Increment8("next", 8);
  ASSERT_TRUE(WaitFor([&] { return AllHeld(); })) << Senders().dump();
  for (const auto& s : Senders()) {
    EXPECT_EQ(s["held"]["shard_watermark"], applied[s["member"]] + 1) << s.dump();
    EXPECT_EQ(s["held"]["applied"], applied[s["member"]]) << s.dump();
    EXPECT_EQ(s["shard_durable_seq"], applied[s["member"]]) << s.dump();
    EXPECT_EQ(s["duplicates"], 0) << s.dump();
    EXPECT_NE(s["last_error"].get<std::string>().find("WATERMARK_AHEAD"), std::string::npos) << s.dump();
  }
  EXPECT_EQ(Total("next"), 0);

  ReleaseBothShards();
  ASSERT_TRUE(WaitFor([&] { return Total("next") == 8; })) << Total("next");
  EXPECT_EQ(Total("first"), 8);
  EXPECT_EQ(Total("foreign"), 8);
  for (const auto& s : Senders()) EXPECT_EQ(s["duplicates"], 0) << s.dump();
}

}  // namespace
}  // namespace clickatron::integration::watermark_ahead_test
