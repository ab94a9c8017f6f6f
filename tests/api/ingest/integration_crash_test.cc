// Exactly once through crashes: a bounded stream of increments while a
// realtime shard, or the API node itself, is killed with SIGKILL and
// restarted. Afterwards every record holds exactly what the oracle says.
//
// How "exactly" is decided: write_stream.h.
#include <atomic>
#include <cstdio>
#include <ctime>
#include <map>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

#include "clickatron/ymdh.h"
#include "api/ingest/cluster_fixture.h"
#include "api/ingest/increment_stream.h"

// A namespace of this file's own: its names beside those of the other files
// compiled with it in one unity file (tests/CMakeLists.txt).
namespace clickatron::api::write_testing::integration_crash_test {
namespace {

constexpr int kShards = kStreamShards;
constexpr int kClients = 3;
constexpr int kRequestsPerClient = 120;

TEST(IntegrationWriteCrashTest, RealtimeShardKilledAndRestartedMidStream) {
  WriteCluster c(kShards);
  c.StartAll();
  Stream stream(c, "", kClients, kRequestsPerClient, static_cast<int64_t>(std::time(nullptr)));
  stream.Run();
  ASSERT_TRUE(WaitFor([&] { return stream.done() >= stream.total() / 4; }, std::chrono::seconds(40)));
  c.Kill(WriteCluster::Realtime(1));
  // The API keeps answering while the shard is down.
  const int before = stream.acked();
  ASSERT_TRUE(WaitFor([&] { return stream.acked() >= before + stream.total() / 4; }, std::chrono::seconds(40)));
  c.Start(WriteCluster::Realtime(1));
  stream.Join();
  EXPECT_EQ(stream.acked(), stream.total()) << "a realtime outage must not fail increments";
  ASSERT_TRUE(WaitFor([&] { return c.Drained(); }, std::chrono::seconds(40))) << c.ApiStats().dump();
  Verify(c, {&stream}, "after the shard's restart");
  EXPECT_GT(c.ApiStats()["write"]["shards"][1]["failures"].get<uint64_t>(), 0u);
}

TEST(IntegrationWriteCrashTest, ApiKilledAndRestartedWhileAShardIsDown) {
  WriteCluster c(kShards);
  c.StartAll();
  Stream stream(c, "", kClients, kRequestsPerClient, static_cast<int64_t>(std::time(nullptr)));
  // The stream stops starting requests at 2/5 of it, so the rest is left to
  // show the restarted API taking them (polling for a count would let the
  // clients run past it).
  stream.PauseAfter(2 * stream.total() / 5);
  stream.Run();
  // Shard 0 goes down: its batches pile up in the API's oplog.
  ASSERT_TRUE(WaitFor([&] { return stream.done() >= stream.total() / 5; }, std::chrono::seconds(40)));
  c.Kill(WriteCluster::Realtime(0));
  // Then the API dies with that backlog (and the last requests maybe in flight).
  ASSERT_TRUE(WaitFor([&] { return stream.done() >= 2 * stream.total() / 5 - kClients; }, std::chrono::seconds(40)));
  c.Kill("api-0");
  c.Start("api-0");  // shard 0 still down: the API must start and take increments anyway
  const int before = stream.acked();
  ASSERT_LT(before, stream.total() / 2);
  stream.Resume();
  ASSERT_TRUE(WaitFor([&] { return stream.acked() >= before + stream.total() / 10; }, std::chrono::seconds(40)));
  c.Start(WriteCluster::Realtime(0));
  stream.Join();
  ASSERT_TRUE(WaitFor([&] { return c.Drained(); }, std::chrono::seconds(40))) << c.ApiStats().dump();
  Verify(c, {&stream}, "after the API's restart");
  EXPECT_GT(stream.acked(), stream.total() / 2);
  EXPECT_GT(c.ApiStats()["write"]["shards"][0]["replayed"].get<uint64_t>(), 0u) << "the backlog came from the oplog";
}

}  // namespace
}  // namespace clickatron::api::write_testing::integration_crash_test
