// One-shot timers to the microsecond on a libevent loop, through one timerfd
// armed only while a timer is pending.
//
// Why not libevent's EVENT_BASE_FLAG_PRECISE_TIMER: with it, the epoll
// backend calls timerfd_settime on every loop turn, whether or not any timer
// changed; on a busy read path that was one extra syscall per request. Here
// the timerfd is set only when the earliest deadline changes, so a loop with
// no pending timer (reads only) pays nothing, and the write path's flush
// window pays one call per window. The loop's own timers keep epoll's
// millisecond resolution, which is all the periodic jobs and request
// timeouts need.
//
// Thread-safety: loop thread only.
#pragma once

#include <chrono>
#include <functional>
#include <map>
#include <memory>

#include "clickatron/status.h"
#include "clickatron/unique_fd.h"
#include "libevent_ptr.h"

namespace clickatron {

class PreciseTimers {
 public:
  static Result<std::unique_ptr<PreciseTimers>> Create(event_base* base);
  ~PreciseTimers();
  PreciseTimers(const PreciseTimers&) = delete;
  PreciseTimers& operator=(const PreciseTimers&) = delete;

  // Runs fn once on the loop thread, no earlier than `delay` from now.
  // Pending timers are dropped, not run, when this object goes; fn must not
  // destroy this object (or the server that owns it).
  void After(std::chrono::microseconds delay, std::function<void()> fn);

  size_t pending() const { return pending_.size(); }

 private:
  using Clock = std::chrono::steady_clock;  // CLOCK_MONOTONIC, as the timerfd
  PreciseTimers(UniqueFd fd, event_base* base);
  static void OnFire(evutil_socket_t fd, short, void* arg);
  void Arm();

  UniqueFd fd_;
  EventPtr ev_;
  std::multimap<Clock::time_point, std::function<void()>> pending_;
  Clock::time_point armed_for_ = Clock::time_point::max();
};

}  // namespace clickatron
