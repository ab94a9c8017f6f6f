// Work posted to an event loop from any thread (HttpServer::RunInLoop), in a
// box that outlives the loop: whoever still holds it after the loop is gone
// (a sibling loop's forwarded answer, see forwarded_exchange.h) is told so
// instead of writing into freed memory.
//
// Thread-safety: Post and Close from any thread; Take on the loop thread.
#pragma once

#include <functional>
#include <memory>
#include <mutex>
#include <vector>

struct event;

namespace clickatron {

class LoopMailbox {
 public:
  // `wake` is activated on each post; it must stay valid until Close().
  explicit LoopMailbox(event* wake) : wake_(wake) {}

  // Queues `fn` and wakes the loop. False once closed: `fn` is dropped
  // (destroyed on the caller's thread).
  bool Post(std::function<void()> fn);
  // What was posted since the last call, in posting order.
  std::vector<std::function<void()>> Take();
  // Refuses posts from now on; returns what was still queued (the caller
  // destroys it where that is safe).
  std::vector<std::function<void()>> Close();

 private:
  std::mutex mu_;
  event* wake_;                                // GUARDED_BY(mu_); null once closed
  std::vector<std::function<void()>> posted_;  // GUARDED_BY(mu_)
};

using LoopMailboxPtr = std::shared_ptr<LoopMailbox>;

}  // namespace clickatron
