// Exactly once through realtime checkpoints: a shard applies batches in
// memory and persists them by checkpoint, the API keeps its oplog until the
// shard says a batch is durable, and re-sends from it when a shard comes back
// with less than it had applied. Here shards (and the API) are killed with
// SIGKILL inside checkpoints, while checkpoints fail, and before an export;
// afterwards every record holds exactly what the oracle says.
//
// The oracle is the one of integration_crash_test.cc: every request is
// a small batch whose records all live on one shard (one oplog frame: logged
// whole or not at all) and carries a marker key of its own. A request
// answered 200 must be applied exactly once; one that got no answer (the API
// died under it) may or may not be, and its marker says which. The shared
// hot keys must equal the sum of the applied requests exactly: a batch
// applied twice, or lost, cannot hide.
//
// "Settled" is decided on both sides, never by sleeping: the API's sender has
// nothing queued, and the shard itself reports an applied (and, where asked,
// durable) watermark equal to the last seq the API wrote for it.
#include <algorithm>
#include <atomic>
#include <chrono>
#include <cstdio>
#include <ctime>
#include <filesystem>
#include <map>
#include <optional>
#include <string>
#include <thread>
#include <vector>

#include "clickatron/file_util.h"
#include "clickatron/ymdh.h"
#include "api/ingest/cluster_fixture.h"
#include "api/ingest/increment_stream.h"

namespace clickatron::api::write_testing {
namespace {

constexpr int kShards = kStreamShards;  // the streams route over this many
constexpr const char* kSource = "api-0";  // the API member: the shards' watermark source

nlohmann::json ParseJson(const HttpResponse& r) {
  auto j = nlohmann::json::parse(r.body, nullptr, false);
  return j.is_discarded() ? nlohmann::json(nullptr) : j;
}

// data.realtime of a shard's /stats, null when it does not answer.
nlohmann::json RealtimeStats(const WriteCluster& c, int shard) {
  auto r = HttpGet(c.Peer(WriteCluster::Realtime(shard)), "/stats", 3000);
  if (r.status_code != 200) return nullptr;
  nlohmann::json j = ParseJson(r);
  if (!j.is_object() || !j["data"].is_object()) return nullptr;
  return j["data"]["realtime"];
}

struct Marks {
  uint64_t applied = 0;
  uint64_t durable = 0;
};
// The shard's watermarks for the API node, asked of the shard itself.
std::optional<Marks> ShardMarks(const WriteCluster& c, int shard) {
  auto r = HttpGet(c.Peer(WriteCluster::Realtime(shard)), std::string("/watermark?source=") + kSource, 3000);
  if (r.status_code != 200) return std::nullopt;
  nlohmann::json j = ParseJson(r);
  if (!j.is_object() || !j["data"].is_object()) return std::nullopt;
  return Marks{j["data"]["applied_seq"].get<uint64_t>(), j["data"]["durable_seq"].get<uint64_t>()};
}

// The API's sender stats for one shard, null when the API does not answer.
nlohmann::json SenderStats(const WriteCluster& c, int shard) {
  nlohmann::json s = c.ApiStats();
  if (!s.is_object() || !s.contains("write")) return nullptr;
  for (const auto& sender : s["write"]["shards"]) {
    if (sender["shard"] == shard) return sender;
  }
  return nullptr;
}

// True once, for every shard, the API's sender has nothing queued or
// unacknowledged and the shard has applied every seq the API wrote for it;
// with `durable`, also persisted it, and the sender has heard so.
bool Settled(const WriteCluster& c, bool durable) {
  for (int s = 0; s < c.shards(); ++s) {
    nlohmann::json sender = SenderStats(c, s);
    if (!sender.is_object()) return false;
    if (sender["state"] != "up" || sender["queued_batches"] != 0 || sender["queued_lines"] != 0 ||
        sender["lag_seq"] != 0 || sender["replay_pending_seqs"] != 0) {
      return false;
    }
    const uint64_t written = sender["written_seq"].get<uint64_t>();
    std::optional<Marks> m = ShardMarks(c, s);
    if (!m || m->applied != written) return false;
    if (durable && (m->durable != m->applied || sender["shard_durable_seq"] != written ||
                    sender["shard_applied_seq"] != written)) {
      return false;
    }
    // Restarted after a crash, a shard reads again once the API said it has
    // all it had (realtime/recovery_gate.h).
    const nlohmann::json rt = RealtimeStats(c, s);
    if (!rt.is_object() || rt.value("recovering", true)) return false;
  }
  return true;
}

std::string Describe(const WriteCluster& c) {
  std::string out = "api /stats write: ";
  nlohmann::json s = c.ApiStats();
  out += s.is_object() && s.contains("write") ? s["write"]["shards"].dump() : std::string("(no answer)");
  for (int sh = 0; sh < c.shards(); ++sh) {
    nlohmann::json r = RealtimeStats(c, sh);
    out += fmt::format("\nshard {} memory: {}", sh, r.is_object() ? r["memory"].dump() : std::string("(no answer)"));
  }
  return out;
}

std::string FaultDir(const WriteCluster& c, int shard) { return c.DataDir(WriteCluster::Realtime(shard)) + "/fault"; }
void SetFault(const WriteCluster& c, int shard, const std::string& name, const std::string& contents) {
  std::filesystem::create_directories(FaultDir(c, shard));
  ASSERT_TRUE(WriteFileAtomically(FaultDir(c, shard) + "/" + name, contents).ok());
}
void ClearFault(const WriteCluster& c, int shard, const std::string& name) {
  std::filesystem::remove(FaultDir(c, shard) + "/" + name);
}

// The checkpointing tests' cluster: checkpoints this often, faults injectable.
ClusterSpec CheckpointSpec(int checkpoint_interval_ms) {
  ClusterSpec spec = WriteCluster::Spec(kShards);
  spec.realtime.SetInt("checkpoint_interval_ms", checkpoint_interval_ms).SetBool("fault_injection", true);
  return spec;
}

// Kills `shard`, preferably while one of its checkpoints is running after
// an earlier one completed (so it has both durable and merely applied
// batches; with the delay fault the window is wide); says whether it did.
bool KillInsideACheckpoint(WriteCluster& c, int shard, const Stream& stream) {
  const bool caught = WaitFor(
      [&] {
        if (stream.done() >= stream.total()) return true;  // too late: kill anyway
        nlohmann::json s = RealtimeStats(c, shard);
        return s.is_object() && s["memory"]["checkpoint_running"] == true &&
               s["memory"]["checkpoints_completed"].get<uint64_t>() > 0;
      },
      std::chrono::seconds(10)) && stream.done() < stream.total();
  c.Kill(WriteCluster::Realtime(shard));
  return caught;
}

// 1. kill -9 of a shard (twice) under a stream, the kill landing inside a
// slow checkpoint: what was only in memory is re-sent from the oplog.
TEST(IntegrationWriteCheckpointTest, ShardKilledInsideACheckpointLosesNothing) {
  const auto started = std::chrono::steady_clock::now();
  WriteCluster c(CheckpointSpec(50));
  SetFault(c, 1, "checkpoint-delay-ms", "100");
  c.StartAll();
  Stream stream(c, "a", 3, 250, static_cast<int64_t>(std::time(nullptr)));
  stream.Run();

  int caught = 0;
  uint64_t rewinds_needed = 0;  // restarts where the shard came back with less than the API had heard
  for (int round = 0; round < 2; ++round) {
    const bool inside = KillInsideACheckpoint(c, 1, stream);
    caught += inside ? 1 : 0;
    // What the API heard last from the dead shard (an answer still in a
    // socket may raise it a little later: reading it late is conservative).
    nlohmann::json sender = SenderStats(c, 1);
    ASSERT_TRUE(sender.is_object());
    const uint64_t heard_applied = sender["shard_applied_seq"].get<uint64_t>();
    const uint64_t rewinds_before = sender["rewinds"].get<uint64_t>();
    // The API keeps answering while the shard is down.
    const int before = stream.acked();
    ASSERT_TRUE(WaitFor([&] { return stream.acked() >= std::min(before + stream.total() / 20, stream.total()); },
                        std::chrono::seconds(60)))
        << Describe(c);
    c.Start(WriteCluster::Realtime(1));
    std::optional<Marks> after = ShardMarks(c, 1);
    ASSERT_TRUE(after.has_value());
    // The API has heard nothing of the new process before this first answer
    // unless it matched (then durable >= heard) or rewound.
    if (after->durable < heard_applied) {
      ++rewinds_needed;
      ASSERT_TRUE(WaitFor([&] {
        nlohmann::json s = SenderStats(c, 1);
        return s.is_object() && s["rewinds"].get<uint64_t>() > rewinds_before;
      }, std::chrono::seconds(30))) << "shard 1 came back with durable " << after->durable << " below the "
                                    << heard_applied << " the API had heard applied, yet no rewind: " << Describe(c);
    }
    std::printf("round %d: kill %s a checkpoint; API had heard applied %llu, shard came back with durable %llu\n",
                round, inside ? "inside" : "outside", static_cast<unsigned long long>(heard_applied),
                static_cast<unsigned long long>(after->durable));
  }
  stream.Join();
  EXPECT_EQ(stream.acked(), stream.total()) << "a realtime outage must not fail increments";
  ASSERT_TRUE(WaitFor([&] { return Settled(c, true); }, std::chrono::seconds(60))) << Describe(c);
  Verify(c, {&stream}, "after two kills");

  // The end state, as the shards' own /stats say it: durable == applied.
  for (int s = 0; s < kShards; ++s) {
    nlohmann::json rt = RealtimeStats(c, s);
    ASSERT_TRUE(rt.is_object());
    EXPECT_EQ(rt["durable_watermarks"][kSource], rt["watermarks"][kSource]) << rt.dump();
    EXPECT_EQ(rt["memory"]["watermarks"][kSource]["lag_seqs"], 0) << rt["memory"].dump();
    EXPECT_EQ(rt["memory"]["last_error"], "");
  }
  const nlohmann::json sender = SenderStats(c, 1);
  std::printf("shard 1: %d of 2 kills inside a checkpoint; %llu restarts needed a rewind; sender rewinds %llu, "
              "replayed %llu; %.1f s\n",
              caught, static_cast<unsigned long long>(rewinds_needed),
              static_cast<unsigned long long>(sender["rewinds"].get<uint64_t>()),
              static_cast<unsigned long long>(sender["replayed"].get<uint64_t>()),
              std::chrono::duration<double>(std::chrono::steady_clock::now() - started).count());
  EXPECT_GE(sender["rewinds"].get<uint64_t>(), rewinds_needed);
  EXPECT_GE(caught, 1) << "no kill came while a checkpoint was seen running: the title went untested";
}

// 2. kill -9 of the API and of a shard together, mid-stream.
TEST(IntegrationWriteCheckpointTest, ApiAndShardKilledTogetherLoseNothingAcknowledged) {
  WriteCluster c(CheckpointSpec(50));
  SetFault(c, 1, "checkpoint-delay-ms", "100");
  c.StartAll();
  Stream stream(c, "b", 3, 200, static_cast<int64_t>(std::time(nullptr)));
  stream.Run();
  ASSERT_TRUE(WaitFor([&] { return stream.done() >= stream.total() / 5; }, std::chrono::seconds(60))) << Describe(c);
  // Both at once: the shard loses what it had not persisted (killed inside
  // a checkpoint if possible), the API its in-memory state (and the requests
  // in flight go unanswered).
  const bool caught = KillInsideACheckpoint(c, 1, stream);
  c.Kill("api-0");
  std::printf("shard 1 killed %s a checkpoint, with the API, after %d requests\n", caught ? "inside" : "outside",
              stream.done());
  // The API comes back first, with the shard still down: it must take
  // increments anyway and keep them for the shard.
  c.Start("api-0");
  // (A kill that waited long for a checkpoint may come near the stream's
  // end: then what is left of it is what must be taken.)
  const int before = stream.acked();
  ASSERT_TRUE(WaitFor([&] { return stream.acked() >= std::min(before + stream.total() / 10, stream.total()); },
                      std::chrono::seconds(60)))
      << Describe(c);
  c.Start(WriteCluster::Realtime(1));
  stream.Join();
  ASSERT_TRUE(WaitFor([&] { return Settled(c, true); }, std::chrono::seconds(60))) << Describe(c);
  Verify(c, {&stream}, "after the API and shard 1 died together");
  EXPECT_GT(stream.acked(), stream.total() / 2);
  // Whatever was in flight, the totals lie between the acknowledged and the
  // acknowledged plus the unanswered (Verify checked it request by request).
  EXPECT_EQ(stream.acked() + stream.unanswered(), stream.total());
}

// 3. Checkpoints that fail (as on a full disk): increments are still taken
// and read exactly, the durable watermark stops, the oplog keeps everything;
// a kill then loses the shard's memory, not a single increment.
TEST(IntegrationWriteCheckpointTest, FailingCheckpointsThenAKillLoseNothing) {
  WriteCluster c(CheckpointSpec(50));
  c.StartAll();
  const int64_t ts = static_cast<int64_t>(std::time(nullptr));
  std::vector<const Stream*> all;

  // A first stream, persisted normally.
  Stream first(c, "c1", 2, 30, ts);
  first.Run();
  first.Join();
  all.push_back(&first);
  EXPECT_EQ(first.acked(), first.total());
  ASSERT_TRUE(WaitFor([&] { return Settled(c, true); }, std::chrono::seconds(30))) << Describe(c);

  // From now on shard 1 cannot persist.
  SetFault(c, 1, "checkpoint-fail", "");
  Stream failing(c, "c2", 2, 40, ts);
  failing.Run();
  failing.Join();
  all.push_back(&failing);
  EXPECT_EQ(failing.acked(), failing.total()) << "failing checkpoints must not fail increments";
  ASSERT_TRUE(WaitFor([&] { return Settled(c, false); }, std::chrono::seconds(30))) << Describe(c);
  nlohmann::json rt;
  ASSERT_TRUE(WaitFor([&] {
    rt = RealtimeStats(c, 1);
    return rt.is_object() && rt["memory"]["checkpoints_failed"].get<uint64_t>() > 0;
  }, std::chrono::seconds(10))) << Describe(c);
  EXPECT_NE(rt["memory"]["last_error"].get<std::string>(), "") << rt["memory"].dump();
  std::printf("shard 1 while failing: %s\n", rt["memory"]["last_error"].get<std::string>().c_str());
  const std::optional<Marks> stuck = ShardMarks(c, 1);
  ASSERT_TRUE(stuck.has_value());
  EXPECT_LT(stuck->durable, stuck->applied) << "nothing may become durable while checkpoints fail";
  // More tries fail; durable does not move.
  const uint64_t failed = rt["memory"]["checkpoints_failed"].get<uint64_t>();
  ASSERT_TRUE(WaitFor([&] {
    nlohmann::json s = RealtimeStats(c, 1);
    return s.is_object() && s["memory"]["checkpoints_failed"].get<uint64_t>() >= failed + 3;
  }, std::chrono::seconds(10))) << Describe(c);
  std::optional<Marks> still = ShardMarks(c, 1);
  ASSERT_TRUE(still.has_value());
  EXPECT_EQ(still->durable, stuck->durable);
  EXPECT_EQ(still->applied, stuck->applied);
  // The API has heard durable lag (answers and its watermark poll), so it
  // holds its oplog above durable.
  nlohmann::json sender;
  EXPECT_TRUE(WaitFor([&] {
    sender = SenderStats(c, 1);
    return sender.is_object() && sender["shard_durable_seq"] == stuck->durable &&
           sender["shard_applied_seq"] == stuck->applied;
  }, std::chrono::seconds(5))) << sender.dump();
  // Reads are exact meanwhile (memory + store).
  Verify(c, all, "while checkpoints fail");
  // An export must wait for persistence, so it fails now (and says why).
  const std::string yesterday = FormatDate(FloorDiv(ts, kSecondsPerDay) - 1);
  auto failed_export = HttpGet(c.Peer(WriteCluster::Realtime(1)), "/export?date=" + yesterday, 30000);
  EXPECT_EQ(failed_export.status_code, 503) << failed_export.body;
  EXPECT_EQ(ParseJson(failed_export).value("status_txt", ""), "CHECKPOINT_FAILED") << failed_export.body;

  // Kill the shard while failing: its memory is gone; restart it with the
  // fault still there. The API re-sends everything above durable.
  const uint64_t rewinds_before = sender["rewinds"].get<uint64_t>();
  c.Kill(WriteCluster::Realtime(1));
  c.Start(WriteCluster::Realtime(1));
  std::optional<Marks> back = ShardMarks(c, 1);
  ASSERT_TRUE(back.has_value());
  EXPECT_EQ(back->durable, stuck->durable) << "the restarted shard starts from what was durable";
  Stream restarted(c, "c3", 2, 30, ts);
  restarted.Run();
  restarted.Join();
  all.push_back(&restarted);
  EXPECT_EQ(restarted.acked(), restarted.total());
  ASSERT_TRUE(WaitFor([&] { return Settled(c, false); }, std::chrono::seconds(30))) << Describe(c);
  sender = SenderStats(c, 1);
  EXPECT_GT(sender["rewinds"].get<uint64_t>(), rewinds_before) << sender.dump();
  ASSERT_TRUE(WaitFor([&] {
    nlohmann::json s = RealtimeStats(c, 1);
    return s.is_object() && s["memory"]["checkpoints_failed"].get<uint64_t>() > 0;
  }, std::chrono::seconds(10))) << Describe(c);
  std::optional<Marks> refailing = ShardMarks(c, 1);
  ASSERT_TRUE(refailing.has_value());
  EXPECT_EQ(refailing->durable, stuck->durable);
  Verify(c, all, "restarted, checkpoints still failing");

  // The disk is fine again: durable catches up, the oplog is released.
  ClearFault(c, 1, "checkpoint-fail");
  ASSERT_TRUE(WaitFor([&] { return Settled(c, true); }, std::chrono::seconds(30))) << Describe(c);
  rt = RealtimeStats(c, 1);
  EXPECT_EQ(rt["memory"]["last_error"], "") << rt["memory"].dump();
  EXPECT_GT(rt["memory"]["checkpoints_completed"].get<uint64_t>(), 0u);
  EXPECT_EQ(rt["durable_watermarks"][kSource], rt["watermarks"][kSource]) << rt.dump();
  Verify(c, all, "after recovery");
  // Persisting works again, so the export does (Yesterday holds nothing here).
  auto export_ok = HttpGet(c.Peer(WriteCluster::Realtime(1)), "/export?date=" + yesterday, 30000);
  EXPECT_EQ(export_ok.status_code, 200) << export_ok.body;
  EXPECT_EQ(export_ok.body, "");
  // And it stays so across one more crash: everything is durable now.
  c.Kill(WriteCluster::Realtime(1));
  c.Start(WriteCluster::Realtime(1));
  ASSERT_TRUE(WaitFor([&] { return Settled(c, true); }, std::chrono::seconds(30))) << Describe(c);
  Verify(c, all, "after a last kill");
}

// 4. Yesterday's increments sit only in memory; the shard is killed; the
// API re-sends them; the export of Yesterday has exactly them.
TEST(IntegrationWriteCheckpointTest, ExportAfterACrashWithUnpersistedData) {
  // Checkpoints only when something waits for them (the export).
  WriteCluster c(CheckpointSpec(3600000));
  c.StartAll();
  constexpr int64_t kDay = kSecondsPerDay;
  const int64_t now = static_cast<int64_t>(std::time(nullptr));
  const int64_t today = FloorDiv(now, kDay);
  // Manual clock: pin the ring, so Yesterday is today-1 even across midnight.
  for (int s = 0; s < kShards; ++s) {
    auto r = HttpPost(c.Peer(WriteCluster::Realtime(s)), "/rotate?today=" + FormatDate(today), "");
    ASSERT_EQ(r.status_code, 200) << r.body;
  }
  const std::string yesterday = FormatDate(today - 1);

  // Oracle: per shard, per day, every record.
  std::map<int, std::map<std::string, int64_t>> want_yesterday;
  std::map<std::string, int64_t> want_all;
  for (int i = 0; i < 80; ++i) {
    std::string body;
    for (int k = 0; k < 5; ++k) {
      const std::string key = fmt::format("ex{}", (i * 5 + k) % 37);
      const bool on_yesterday = (i + k) % 4 != 0;  // a quarter goes to today: not in the export
      const int64_t ts = on_yesterday ? (today - 1) * kDay + ((i + k) % 24) * 3600 + 17 : now;
      const int value = 1 + (i + 2 * k) % 6;
      const std::string sub = k % 2 ? "US" : "DE";
      body += fmt::format("ns=t&key={}&ts={}&value={}&sub=c:{}\n", key, ts, value, sub);
      const std::string h = *YmdhFromUnix(ts);
      const int shard = static_cast<int>(ShardOfKey("t|" + key, kShards));
      for (const std::string& record : {"t|" + key + "." + h, "c.t|" + key + "." + sub + "." + h}) {
        want_all[record] += value;
        if (on_yesterday) want_yesterday[shard][record] += value;
      }
    }
    auto r = HttpPost(c.Api(), "/incr", body);
    ASSERT_EQ(r.status_code, 200) << r.body;
  }
  ASSERT_TRUE(WaitFor([&] { return Settled(c, false); }, std::chrono::seconds(30))) << Describe(c);
  auto read_all = [&] {
    std::map<std::string, int64_t> got = c.Counters("t|");
    for (const auto& [k, v] : c.Counters("c.t|")) got[k] = v;
    return got;
  };
  EXPECT_EQ(read_all(), want_all) << "read from memory before the kill";
  // Everything on shard 1 is only in memory.
  std::optional<Marks> before = ShardMarks(c, 1);
  ASSERT_TRUE(before.has_value());
  ASSERT_GT(before->applied, 0u);
  ASSERT_EQ(before->durable, 0u) << "a checkpoint ran: " << Describe(c);
  ASSERT_GT(RealtimeStats(c, 1)["memory"]["memory_keys"].get<uint64_t>(), 0u);

  const uint64_t rewinds_before = SenderStats(c, 1)["rewinds"].get<uint64_t>();
  c.Kill(WriteCluster::Realtime(1));
  c.Start(WriteCluster::Realtime(1));
  std::optional<Marks> after = ShardMarks(c, 1);
  ASSERT_TRUE(after.has_value());
  EXPECT_EQ(after->durable, 0u);
  // The API notices (watermark poll) and re-sends from its oplog.
  ASSERT_TRUE(WaitFor([&] { return Settled(c, false); }, std::chrono::seconds(30))) << Describe(c);
  EXPECT_GT(SenderStats(c, 1)["rewinds"].get<uint64_t>(), rewinds_before);
  EXPECT_EQ(read_all(), want_all) << "read from memory after the re-send";

  // Export Yesterday from every shard: exactly the oracle's lines, sorted.
  for (int s = 0; s < kShards; ++s) {
    SCOPED_TRACE("shard " + std::to_string(s));
    std::string want_lines;
    for (const auto& [key, value] : want_yesterday[s]) want_lines += fmt::format("{},{}\n", key, value);
    ASSERT_FALSE(want_lines.empty());
    auto r = HttpGet(c.Peer(WriteCluster::Realtime(s)), "/export?date=" + yesterday, 30000);
    ASSERT_EQ(r.status_code, 200) << r.body << "\n" << c.LogTail(WriteCluster::Realtime(s));
    EXPECT_EQ(r.body, want_lines);
    // Again: the same bytes.
    auto again = HttpGet(c.Peer(WriteCluster::Realtime(s)), "/export?date=" + yesterday, 30000);
    ASSERT_EQ(again.status_code, 200) << again.body;
    EXPECT_EQ(again.body, r.body);
    // The export persisted what memory held: durable caught up with applied.
    std::optional<Marks> m = ShardMarks(c, s);
    ASSERT_TRUE(m.has_value());
    EXPECT_EQ(m->durable, m->applied);
  }
  // The API hears durable (polling) and releases its oplog; totals unchanged.
  ASSERT_TRUE(WaitFor([&] { return Settled(c, true); }, std::chrono::seconds(30))) << Describe(c);
  EXPECT_EQ(read_all(), want_all);
}

}  // namespace
}  // namespace clickatron::api::write_testing
