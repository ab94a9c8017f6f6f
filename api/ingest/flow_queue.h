// The increment requests that wait for realtime shards that are behind (flow
// control: [api] queue_wait_increments, queue_wait_ms), and the order they go
// on in: first come, first served per shard.
//
// A request waits for a shard that has the mark's lines waiting, and also for
// a shard that older requests still wait for, even when that shard has just
// dropped below the mark. Otherwise, under steady overload, each new request
// would take the opening the moment the queue dipped, and requests that had
// waited longest would run out of time (503 OVERLOADED) while newer ones got
// through. A request waits only for shards it goes to: one waiting for shard
// A does not hold back requests for shard B.
//
// Thread-safety: none; the API's loop thread owns it.
#pragma once

#include <algorithm>
#include <chrono>
#include <cstdint>
#include <deque>
#include <functional>
#include <utility>
#include <vector>

namespace clickatron::api {

template <typename Request>
class FlowQueue {
 public:
  using Clock = std::chrono::steady_clock;
  // Whether a shard has the mark's lines waiting (and is up).
  using Behind = std::function<bool(uint32_t shard)>;

  explicit FlowQueue(uint32_t shards) : waiting_for_(shards, 0) {}

  bool empty() const { return waiting_.empty(); }
  size_t size() const { return waiting_.size(); }

  // Whether a request going to `shards` must wait: one of them is behind, or
  // older requests wait for it.
  bool MustWait(const std::vector<uint32_t>& shards, const Behind& behind) const {
    for (const uint32_t s : shards) {
      if (WaitsFor(s, behind)) return true;
    }
    return false;
  }

  // Queues a request that must wait (MustWait), behind every older one.
  void Park(Request request, std::vector<uint32_t> shards, const Behind& behind, Clock::time_point deadline) {
    Waiting w{std::move(request), std::move(shards), {}, deadline};
    for (const uint32_t s : w.shards) {
      if (WaitsFor(s, behind)) w.waits_for.push_back(s);
    }
    for (const uint32_t s : w.waits_for) ++waiting_for_[s];
    waiting_.push_back(std::move(w));
  }

  // Looks at every waiting request again, oldest first. One that no longer
  // must wait goes to `admit`, with its shards and deadline (admitting it may
  // change what `behind` says for the next ones, or park it again); one that
  // must still wait past its deadline goes to `expire`; the others keep
  // their place.
  using Admit = std::function<void(Request&, std::vector<uint32_t>& shards, Clock::time_point deadline)>;
  void Resume(Clock::time_point now, const Behind& behind, const Admit& admit,
              const std::function<void(Request&)>& expire) {
    std::deque<Waiting> looked_at;
    looked_at.swap(waiting_);
    std::fill(waiting_for_.begin(), waiting_for_.end(), 0);
    for (Waiting& w : looked_at) {
      if (!MustWait(w.shards, behind)) {
        admit(w.request, w.shards, w.deadline);
      } else if (now < w.deadline) {
        Park(std::move(w.request), std::move(w.shards), behind, w.deadline);
      } else {
        expire(w.request);
      }
    }
  }

  // Takes every waiting request out, oldest first, to `refuse` (the node
  // is stopping: none of them will be admitted).
  void RefuseAll(const std::function<void(Request&)>& refuse) {
    std::deque<Waiting> all;
    all.swap(waiting_);
    std::fill(waiting_for_.begin(), waiting_for_.end(), 0);
    for (Waiting& w : all) refuse(w.request);
  }

 private:
  // A request going to `shard` waits for it: it is behind, or older
  // requests wait for it.
  bool WaitsFor(uint32_t shard, const Behind& behind) const { return waiting_for_[shard] > 0 || behind(shard); }

  struct Waiting {
    Request request;
    std::vector<uint32_t> shards;     // every shard it goes to
    std::vector<uint32_t> waits_for;  // those it waited for when queued
    Clock::time_point deadline;
  };

  std::deque<Waiting> waiting_;        // oldest first
  std::vector<uint32_t> waiting_for_;  // per shard: queued requests that wait for it
};

}  // namespace clickatron::api
