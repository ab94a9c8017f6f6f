// A bounded stream of increment requests through the API, and the check
// that realtime holds exactly what the requests that were applied add up to
// (the write-path crash and checkpoint tests share it).
//
// How "exactly" is decided: every request is a small batch whose records all
// live on one shard (so the oplog logs it in one frame: applied whole or not
// at all) and carries its own marker key. A request answered 200 must be
// applied; one that got no answer (the API died under it) may or may not be,
// and its marker in realtime says which. The oracle sums the requests that
// were applied; the shared hot keys must equal that sum exactly — a batch
// applied twice, or lost, cannot hide.
#pragma once

#include <atomic>
#include <condition_variable>
#include <cstdio>
#include <map>
#include <limits>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

#include "clickatron/ymdh.h"
#include "api/ingest/cluster_fixture.h"

namespace clickatron::api::write_testing {

inline constexpr int kStreamShards = 2;
inline constexpr int kHotKeysPerShard = 4;

struct Request {
  int shard = 0;
  std::string marker;
  std::vector<std::pair<std::string, int>> hot;  // tkey, value
  int marker_value = 0;
  bool answered_ok = false;
};

// A bounded stream of requests through the API from `clients` threads.
// `tag` keeps the markers of several streams apart; the hot keys are shared.
class Stream {
 public:
  Stream(WriteCluster& cluster, std::string tag, int clients, int per_client, int64_t ts)
      : c_(cluster), ts_(ts), requests_(clients) {
    std::map<int, std::vector<std::string>> hot;
    for (int s = 0; s < kStreamShards; ++s) hot[s] = KeysOnShard("t", "hot", s, kStreamShards, kHotKeysPerShard);
    for (int client = 0; client < clients; ++client) {
      for (int i = 0; i < per_client; ++i) {
        Request r;
        r.shard = (client + i) % kStreamShards;
        for (int n = 0;; ++n) {
          std::string m = fmt::format("{}m{}x{}x{}", tag, client, i, n);
          if (ShardOfKey("t|" + m, kStreamShards) == static_cast<uint32_t>(r.shard)) {
            r.marker = m;
            break;
          }
        }
        r.marker_value = 1 + (client * 7 + i) % 9;
        for (int k = 0; k < 4; ++k) r.hot.emplace_back(hot[r.shard][(i + k) % kHotKeysPerShard], 1 + (i + k) % 3);
        requests_[client].push_back(std::move(r));
      }
    }
    total_ = clients * per_client;
  }
  ~Stream() { Join(); }

  void Run() {
    for (size_t client = 0; client < requests_.size(); ++client) {
      threads_.emplace_back([this, client] {
        for (Request& r : requests_[client]) {
          {
            std::unique_lock lock(gate_mutex_);
            gate_.wait(lock, [&] { return started_ < pause_after_; });
            ++started_;
          }
          std::string body = fmt::format("ns=t&key={}&ts={}&value={}&sub=c:M\n", r.marker, ts_, r.marker_value);
          for (const auto& [key, value] : r.hot) body += fmt::format("ns=t&key={}&ts={}&value={}&sub=c:H\n", key, ts_, value);
          // Longer than the API's stop drain (10 s): a request it took is
          // answered before its client gives up on it.
          auto resp = HttpPost(c_.Api(), "/incr", body, 15000);
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
  // PauseAfter(n): once n requests have started, no client starts another
  // until Resume(): an exact point in the stream, whatever the clients' speed.
  void PauseAfter(int n) {
    std::lock_guard lock(gate_mutex_);
    pause_after_ = n;
  }
  void Resume() {
    {
      std::lock_guard lock(gate_mutex_);
      pause_after_ = std::numeric_limits<int>::max();
    }
    gate_.notify_all();
  }
  void Join() {
    Resume();
    for (auto& t : threads_) t.join();
    threads_.clear();
  }
  int done() const { return done_.load(); }
  int acked() const { return acked_.load(); }
  int unanswered() const { return unanswered_.load(); }
  int total() const { return total_; }
  int64_t ts() const { return ts_; }
  const std::vector<std::vector<Request>>& requests() const { return requests_; }

 private:
  WriteCluster& c_;
  int64_t ts_;
  int total_ = 0;
  std::vector<std::vector<Request>> requests_;
  std::vector<std::thread> threads_;
  std::atomic<int> done_{0}, acked_{0}, unanswered_{0};
  std::mutex gate_mutex_;
  std::condition_variable gate_;
  int started_ = 0;                                   // guarded by gate_mutex_
  int pause_after_ = std::numeric_limits<int>::max();  // guarded by gate_mutex_
};

// What Verify found: requests answered 200, the others, and how many of
// those others realtime holds all the same.
struct Outcomes {
  int acked = 0;
  int unanswered = 0;
  int applied_unanswered = 0;
};

// Compares realtime (every shard, memory and store) with the oracle built
// from the outcomes of every request of `streams`. Call once they are joined.
inline Outcomes Verify(const WriteCluster& c, const std::vector<const Stream*>& streams, const std::string& when) {
  SCOPED_TRACE(when);
  std::map<std::string, int64_t> totals = c.Counters("t|");
  std::map<std::string, int64_t> subs = c.Counters("c.t|");
  std::map<std::string, int64_t> want;
  int acked = 0, unanswered = 0, applied_unanswered = 0;
  for (const Stream* s : streams) {
    const std::string h = *YmdhFromUnix(s->ts());
    for (const auto& client : s->requests()) {
      for (const Request& r : client) {
        const std::string marker_key = "t|" + r.marker + "." + h;
        auto it = totals.find(marker_key);
        const int64_t got = it == totals.end() ? 0 : it->second;
        if (r.answered_ok) {
          ++acked;
          EXPECT_EQ(got, r.marker_value) << "acknowledged request lost or doubled: " << r.marker;
        } else {
          ++unanswered;
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
  }
  std::map<std::string, int64_t> got = totals;
  got.insert(subs.begin(), subs.end());
  EXPECT_EQ(got, want);
  std::printf("[%s] requests: %d acknowledged, %d unanswered (%d of them applied); %zu records\n", when.c_str(),
              acked, unanswered, applied_unanswered, got.size());
  return Outcomes{acked, unanswered, applied_unanswered};
}

}  // namespace clickatron::api::write_testing
