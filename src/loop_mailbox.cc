#include "loop_mailbox.h"

#include <event2/event.h>

namespace clickatron {

bool LoopMailbox::Post(std::function<void()> fn) {
  std::unique_lock lock(mu_);
  if (wake_ == nullptr) {
    lock.unlock();
    fn = nullptr;  // destroyed outside the lock: it may post elsewhere
    return false;
  }
  posted_.push_back(std::move(fn));
  // Under the lock: Close() cannot free the event in between.
  event_active(wake_, EV_READ, 0);
  return true;
}

std::vector<std::function<void()>> LoopMailbox::Take() {
  std::vector<std::function<void()>> work;
  std::lock_guard lock(mu_);
  work.swap(posted_);
  return work;
}

std::vector<std::function<void()>> LoopMailbox::Close() {
  std::vector<std::function<void()>> work;
  std::lock_guard lock(mu_);
  wake_ = nullptr;
  work.swap(posted_);
  return work;
}

}  // namespace clickatron
