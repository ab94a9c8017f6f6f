// Request coalescing per target daemon, the read-side twin of group commit.
//
// Each /clicks query needs one archive lookup and one realtime lookup, each a
// whole HTTP exchange on both ends; under load those internal exchanges cost
// the API and the daemons more than the query itself. A Coalescer sits in
// front of one target (an archive replica, a realtime shard): a lookup is
// sent at once while fewer than `max_in_flight` requests are out to that
// target (so a lone query waits for nothing), otherwise it is queued; when a
// request comes back, everything queued (up to `max_keys` / `max_bytes`) goes
// out as ONE request (archive mget, realtime mfwmatch) and its answer is
// split back to the waiting lookups by key.
//
// Guarantees: every Submit's callback runs exactly once (never after the
// Coalescer is destroyed). A batch that fails (after whatever failover the
// sender does) fails every lookup in it with that status. The same key
// submitted twice while queued is asked once and answered to both.
// A queued lookup waits for one request to the same target to end (each
// bounded by the request timeout) before its own is sent, when no more
// than one batch (`max_keys` keys) is queued ahead of it; with more, it
// waits for one request per batch ahead (a reviewer: the queue is not
// bounded otherwise than by the connections the loop takes). When that
// request fails as unavailable (its target did not answer), the lookups
// queued behind it fail with it rather than wait for another timeout from
// the same target.
//
// Thread-safety: loop thread only. The sender may answer synchronously.
#pragma once

#include <cstddef>
#include <deque>
#include <functional>
#include <memory>
#include <string>
#include <string_view>
#include <unordered_map>
#include <utility>
#include <vector>

#include <fmt/format.h>

#include "clickatron/status.h"

namespace clickatron::api {

template <typename Reply>
class Coalescer {
 public:
  using Waiter = std::function<void(Result<Reply>)>;
  // One reply per key, in the order of the keys; or the status that fails all.
  using BatchDone = std::function<void(Result<std::vector<Reply>>)>;
  // Sends one request for `keys` (distinct, at least one) and calls `done`
  // exactly once.
  using SendBatch = std::function<void(std::vector<std::string> keys, BatchDone done)>;
  // What a key adds to a request (e.g. its encoded length in the target).
  using KeyCost = std::function<size_t(std::string_view key)>;

  struct Options {
    int max_in_flight = 1;
    size_t max_keys = 64;
    size_t max_bytes = 6000;
  };

  Coalescer(Options options, SendBatch send, KeyCost cost)
      : options_(options), send_(std::move(send)), cost_(std::move(cost)) {
    if (options_.max_in_flight < 1) options_.max_in_flight = 1;
    if (options_.max_keys < 1) options_.max_keys = 1;
  }
  ~Coalescer() { *alive_ = false; }
  Coalescer(const Coalescer&) = delete;
  Coalescer& operator=(const Coalescer&) = delete;

  struct Lookup {
    std::string key;
    Waiter done;
  };

  void Submit(std::string key, Waiter done) {
    queue_.push_back(Lookup{std::move(key), std::move(done)});
    Pump();
  }

  // Several lookups queued before any is sent, so that the first does not
  // go out alone while the others wait for it: a lone caller's keys leave
  // together (split only by max_keys / max_bytes).
  void SubmitAll(std::vector<Lookup> lookups) {
    for (Lookup& lookup : lookups) queue_.push_back(std::move(lookup));
    Pump();
  }

  int in_flight() const { return in_flight_; }
  size_t queued() const { return queue_.size(); }

 private:
  struct Batch {
    std::vector<std::string> keys;
    std::vector<std::vector<Waiter>> waiters;  // by key index
  };

  void Pump() {
    // The sender may answer synchronously and re-enter here: every state
    // change happens before it is called.
    while (in_flight_ < options_.max_in_flight && !queue_.empty()) Dispatch();
  }

  void Dispatch() {
    auto batch = std::make_shared<Batch>();
    std::unordered_map<std::string_view, size_t> index;
    size_t bytes = 0;
    // Take from the front while the request stays within its limits; a key
    // already in the batch costs nothing more. The first key always goes.
    while (!queue_.empty()) {
      Lookup& q = queue_.front();
      if (auto it = index.find(q.key); it != index.end()) {
        batch->waiters[it->second].push_back(std::move(q.done));
        queue_.pop_front();
        continue;
      }
      const size_t cost = cost_ ? cost_(q.key) : q.key.size();
      if (!batch->keys.empty() && (batch->keys.size() >= options_.max_keys || bytes + cost > options_.max_bytes)) {
        break;
      }
      bytes += cost;
      const std::string* before = batch->keys.data();
      batch->keys.push_back(std::move(q.key));
      batch->waiters.push_back({});
      batch->waiters.back().push_back(std::move(q.done));
      queue_.pop_front();
      // The index holds string_views into batch->keys: when the vector
      // moved its strings (a short one's bytes move with it), it is made
      // again; otherwise only the new key goes in. Rebuilding it after every
      // key cost a batch of n keys n²/2 insertions (a profile: 2% of the
      // API's CPU on a year's breakdowns, whose batches are the longest).
      if (batch->keys.data() != before) {
        index.clear();
        for (size_t i = 0; i < batch->keys.size(); ++i) index.emplace(batch->keys[i], i);
      } else {
        index.emplace(batch->keys.back(), batch->keys.size() - 1);
      }
    }
    ++in_flight_;
    std::vector<std::string> keys = batch->keys;
    send_(std::move(keys), [this, alive = alive_, batch](Result<std::vector<Reply>> replies) {
      if (!*alive) return;
      --in_flight_;
      std::deque<Lookup> failed;
      if (!replies.ok() && replies.status().code() == StatusCode::kUnavailable) failed.swap(queue_);
      // Send what queued up meanwhile before the replies are worked through:
      // the target works on the next request while this loop answers queries.
      Pump();
      // Callbacks last, without touching *this: one may destroy it.
      for (Lookup& q : failed) q.done(replies.status());
      Deliver(*batch, std::move(replies));
    });
  }

  static void Deliver(Batch& batch, Result<std::vector<Reply>> replies) {
    if (replies.ok() && replies->size() != batch.keys.size()) {
      replies = Status::Internal(fmt::format("a coalesced request of {} keys got {} replies", batch.keys.size(),
                                             replies->size()));
    }
    for (size_t i = 0; i < batch.keys.size(); ++i) {
      std::vector<Waiter>& waiters = batch.waiters[i];
      for (size_t w = 0; w < waiters.size(); ++w) {
        if (!replies.ok()) {
          waiters[w](replies.status());
        } else if (w + 1 == waiters.size()) {
          waiters[w](std::move((*replies)[i]));
        } else {
          waiters[w]((*replies)[i]);  // a copy: more waiters share this key
        }
      }
    }
  }

  Options options_;
  SendBatch send_;
  KeyCost cost_;
  std::deque<Lookup> queue_;
  int in_flight_ = 0;
  // Replies that arrive after destruction are dropped (their waiters with
  // them), as the readers promise.
  std::shared_ptr<bool> alive_ = std::make_shared<bool>(true);
};

// A batch of one key goes as the plain request (get, fwmatch): the same
// request as without coalescing. This turns that request's single answer into
// the batch's one reply.
template <typename Reply>
std::function<void(Result<Reply>)> AsBatchOfOne(typename Coalescer<Reply>::BatchDone done) {
  return [done = std::move(done)](Result<Reply> reply) {
    if (!reply.ok()) return done(reply.status());
    std::vector<Reply> replies;
    replies.push_back(std::move(*reply));
    done(std::move(replies));
  };
}

}  // namespace clickatron::api
