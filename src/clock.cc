#include "clickatron/clock.h"

#include "clickatron/ymdh.h"

namespace clickatron {

using std::chrono::system_clock;

int64_t Clock::NowUnixSeconds() const {
  return std::chrono::floor<std::chrono::seconds>(Now().time_since_epoch()).count();
}

int64_t Clock::TodayUtc() const { return FloorDiv(NowUnixSeconds(), kSecondsPerDay); }

const SystemClock& SystemClock::Instance() {
  static const SystemClock clock;
  return clock;
}

system_clock::time_point SystemClock::Now() const { return system_clock::now(); }

ManualClock::ManualClock(int64_t unix_seconds) : ticks_(0) { SetUnixSeconds(unix_seconds); }

system_clock::time_point ManualClock::Now() const {
  return system_clock::time_point(system_clock::duration(ticks_.load(std::memory_order_acquire)));
}

void ManualClock::SetUnixSeconds(int64_t unix_seconds) {
  const auto since_epoch = std::chrono::duration_cast<system_clock::duration>(std::chrono::seconds(unix_seconds));
  ticks_.store(since_epoch.count(), std::memory_order_release);
}

void ManualClock::Advance(system_clock::duration by) { ticks_.fetch_add(by.count(), std::memory_order_acq_rel); }

}  // namespace clickatron
