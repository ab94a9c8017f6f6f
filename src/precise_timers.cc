// Microsecond one-shot timers on one timerfd; see precise_timers.h.
#include "precise_timers.h"

#include <sys/timerfd.h>
#include <unistd.h>

#include <fmt/format.h>
#include <spdlog/spdlog.h>

#include <cerrno>
#include <cstring>

namespace clickatron {

Result<std::unique_ptr<PreciseTimers>> PreciseTimers::Create(event_base* base) {
  UniqueFd fd(::timerfd_create(CLOCK_MONOTONIC, TFD_NONBLOCK | TFD_CLOEXEC));
  if (!fd.valid()) return Status::IoError(fmt::format("timerfd_create: {}", std::strerror(errno)));
  std::unique_ptr<PreciseTimers> timers(new PreciseTimers(std::move(fd), base));
  if (!timers->ev_ || event_add(timers->ev_.get(), nullptr) != 0) {
    return Status::Internal("cannot watch the timerfd on the event loop");
  }
  return timers;
}

PreciseTimers::PreciseTimers(UniqueFd fd, event_base* base)
    : fd_(std::move(fd)), ev_(event_new(base, fd_.get(), EV_READ | EV_PERSIST, &PreciseTimers::OnFire, this)) {}

PreciseTimers::~PreciseTimers() {
  ev_.reset();  // stop watching the descriptor before it is closed
  fd_.Reset();
}

void PreciseTimers::After(std::chrono::microseconds delay, std::function<void()> fn) {
  pending_.emplace(Clock::now() + delay, std::move(fn));
  Arm();
}

// Sets the timerfd to the earliest deadline when that changed (or disarms it).
void PreciseTimers::Arm() {
  const Clock::time_point next = pending_.empty() ? Clock::time_point::max() : pending_.begin()->first;
  if (next == armed_for_) return;
  armed_for_ = next;
  itimerspec spec{};  // all zero: disarmed
  if (!pending_.empty()) {
    const auto ns = std::chrono::duration_cast<std::chrono::nanoseconds>(next.time_since_epoch()).count();
    // An absolute time of 0 would disarm: a deadline is always later than boot.
    spec.it_value.tv_sec = static_cast<time_t>(ns / 1'000'000'000);
    spec.it_value.tv_nsec = static_cast<long>(ns % 1'000'000'000);
    if (spec.it_value.tv_sec == 0 && spec.it_value.tv_nsec == 0) spec.it_value.tv_nsec = 1;
  }
  if (::timerfd_settime(fd_.get(), TFD_TIMER_ABSTIME, &spec, nullptr) != 0) {
    // Not armed: the next After() or firing tries again.
    armed_for_ = Clock::time_point::max();
    spdlog::error("timerfd_settime: {}", std::strerror(errno));
  }
}

void PreciseTimers::OnFire(evutil_socket_t fd, short, void* arg) {
  auto* self = static_cast<PreciseTimers*>(arg);
  uint64_t expirations = 0;
  while (::read(fd, &expirations, sizeof expirations) < 0 && errno == EINTR) {
  }
  self->armed_for_ = Clock::time_point::max();  // fired: no longer armed
  // Run what is due; a callback may add timers (due ones run next turn).
  const Clock::time_point now = Clock::now();
  while (!self->pending_.empty() && self->pending_.begin()->first <= now) {
    std::function<void()> fn = std::move(self->pending_.begin()->second);
    self->pending_.erase(self->pending_.begin());
    fn();
  }
  self->Arm();
}

}  // namespace clickatron
