// Exactly once through crashes: a bounded stream of increments while a
// realtime shard, or the API node itself, is killed with SIGKILL and
// restarted. Afterwards every record holds exactly what the oracle says.
//
// How "exactly" is decided: every request is a small batch whose records all
// live on one shard (so the oplog logs it in one frame: applied whole or not
// at all) and carries its own marker key. A request answered 200 must be
// applied; one that got no answer (the API died under it) may or may not be,
// and its marker in realtime says which. The oracle sums the requests that
// were applied; the shared hot keys must equal that sum exactly — a batch
// applied twice, or lost, cannot hide.
#include <atomic>
#include <cstdio>
#include <ctime>
#include <map>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

#include "clickatron/ymdh.h"
#include "write_cluster_fixture.h"

namespace clickatron::api::write_testing {
namespace {

constexpr int kShards = 2;
constexpr int kClients = 3;
constexpr int kRequestsPerClient = 120;
constexpr int kHotKeysPerShard = 4;

struct Request {
  int shard = 0;
  std::string marker;
  std::vector<std::pair<std::string, int>> hot;  // tkey, value
  int marker_value = 0;
  bool answered_ok = false;
};

class Stream {
 public:
  Stream(WriteCluster& cluster, int64_t ts) : c_(cluster), ts_(ts) {
    for (int s = 0; s < kShards; ++s) hot_[s] = KeysOnShard("t", "hot", s, kShards, kHotKeysPerShard);
    for (int client = 0; client < kClients; ++client) {
      for (int i = 0; i < kRequestsPerClient; ++i) {
        Request r;
        r.shard = (client + i) % kShards;
        // A marker key of this request's own, on the same shard.
        for (int n = 0;; ++n) {
          std::string m = fmt::format("m{}x{}x{}", client, i, n);
          if (ShardOfKey("t|" + m, kShards) == static_cast<uint32_t>(r.shard)) {
            r.marker = m;
            break;
          }
        }
        r.marker_value = 1 + (client * 7 + i) % 9;
        for (int k = 0; k < 4; ++k) r.hot.emplace_back(hot_[r.shard][(i + k) % kHotKeysPerShard], 1 + (i + k) % 3);
        requests_[client].push_back(std::move(r));
      }
    }
  }

  void Run() {
    for (int client = 0; client < kClients; ++client) {
      threads_.emplace_back([this, client] {
        for (Request& r : requests_[client]) {
          std::string body = fmt::format("ns=t&key={}&ts={}&value={}&sub=c:M\n", r.marker, ts_, r.marker_value);
          for (const auto& [key, value] : r.hot) body += fmt::format("ns=t&key={}&ts={}&value={}&sub=c:H\n", key, ts_, value);
          auto resp = HttpPost(c_.Api(), "/incr", body, 5000);
          if (resp.status_code == 200) {
            r.answered_ok = true;
            ++acked_;
          } else {
            // The API is down (or went down under us): wait for it, go on.
            ++unanswered_;
            WaitFor([&] { return HttpGet(c_.Api(), "/ping", 500).status_code == 200; }, std::chrono::seconds(30));
          }
          ++done_;
        }
      });
    }
  }
  void Join() {
    for (auto& t : threads_) t.join();
  }
  int done() const { return done_.load(); }
  int acked() const { return acked_.load(); }
  int unanswered() const { return unanswered_.load(); }
  static int total() { return kClients * kRequestsPerClient; }

  // Compares realtime with the oracle built from the requests' outcomes.
  void Verify() {
    const std::string h = *YmdhFromUnix(ts_);
    std::map<std::string, int64_t> totals = c_.Counters("t|");
    std::map<std::string, int64_t> subs = c_.Counters("c.t|");
    std::map<std::string, int64_t> want;
    int applied_unanswered = 0;
    for (const auto& client : requests_) {
      for (const Request& r : client) {
        const std::string marker_key = "t|" + r.marker + "." + h;
        auto it = totals.find(marker_key);
        const int64_t got = it == totals.end() ? 0 : it->second;
        if (r.answered_ok) {
          EXPECT_EQ(got, r.marker_value) << "acknowledged request lost or doubled: " << r.marker;
        } else {
          EXPECT_TRUE(got == 0 || got == r.marker_value) << r.marker << " = " << got;
        }
        if (got == 0) continue;
        if (!r.answered_ok) ++applied_unanswered;
        want[marker_key] += r.marker_value;
        want["c.t|" + r.marker + ".M." + h] += r.marker_value;
        for (const auto& [key, value] : r.hot) {
          want["t|" + key + "." + h] += value;
          want["c.t|" + key + ".H." + h] += value;
        }
      }
    }
    std::map<std::string, int64_t> got = totals;
    got.insert(subs.begin(), subs.end());
    EXPECT_EQ(got, want);
    std::printf("requests: %d acknowledged, %d unanswered (%d of them applied)\n", acked(), unanswered(),
                applied_unanswered);
  }

 private:
  WriteCluster& c_;
  int64_t ts_;
  std::map<int, std::vector<std::string>> hot_;
  std::vector<Request> requests_[kClients];
  std::vector<std::thread> threads_;
  std::atomic<int> done_{0}, acked_{0}, unanswered_{0};
};

TEST(IntegrationWriteCrashTest, RealtimeShardKilledAndRestartedMidStream) {
  WriteCluster c(kShards);
  c.StartAll();
  Stream stream(c, static_cast<int64_t>(std::time(nullptr)));
  stream.Run();
  ASSERT_TRUE(WaitFor([&] { return stream.done() >= Stream::total() / 4; }, std::chrono::seconds(40)));
  c.Kill(WriteCluster::Realtime(1));
  // The API keeps answering while the shard is down.
  const int before = stream.acked();
  ASSERT_TRUE(WaitFor([&] { return stream.acked() >= before + Stream::total() / 4; }, std::chrono::seconds(40)));
  c.Start(WriteCluster::Realtime(1));
  stream.Join();
  EXPECT_EQ(stream.acked(), Stream::total()) << "a realtime outage must not fail increments";
  ASSERT_TRUE(WaitFor([&] { return c.Drained(); }, std::chrono::seconds(40))) << c.ApiStats().dump();
  stream.Verify();
  EXPECT_GT(c.ApiStats()["write"]["shards"][1]["failures"].get<uint64_t>(), 0u);
}

TEST(IntegrationWriteCrashTest, ApiKilledAndRestartedWhileAShardIsDown) {
  WriteCluster c(kShards);
  c.StartAll();
  Stream stream(c, static_cast<int64_t>(std::time(nullptr)));
  stream.Run();
  // Shard 0 goes down: its batches pile up in the API's oplog.
  ASSERT_TRUE(WaitFor([&] { return stream.done() >= Stream::total() / 5; }, std::chrono::seconds(40)));
  c.Kill(WriteCluster::Realtime(0));
  // Then the API dies with that backlog (and requests in flight).
  ASSERT_TRUE(WaitFor([&] { return stream.done() >= 2 * Stream::total() / 5; }, std::chrono::seconds(40)));
  c.Kill("api-0");
  c.Start("api-0");  // shard 0 still down: the API must start and take increments anyway
  const int before = stream.acked();
  ASSERT_TRUE(WaitFor([&] { return stream.acked() >= before + Stream::total() / 10; }, std::chrono::seconds(40)));
  c.Start(WriteCluster::Realtime(0));
  stream.Join();
  ASSERT_TRUE(WaitFor([&] { return c.Drained(); }, std::chrono::seconds(40))) << c.ApiStats().dump();
  stream.Verify();
  EXPECT_GT(stream.acked(), Stream::total() / 2);
  EXPECT_GT(c.ApiStats()["write"]["shards"][0]["replayed"].get<uint64_t>(), 0u) << "the backlog came from the oplog";
}

}  // namespace
}  // namespace clickatron::api::write_testing
