// Clock: where the wall time comes from for decisions that follow the
// calendar — which UTC day the realtime ring is on, when an oplog segment is
// old enough to delete, where a query's "now" window ends. Code that makes
// such a decision takes a Clock (defaulting to SystemClock), so a test can
// hand it a ManualClock and step through days and hours without waiting.
//
// Only the wall time is here. Pure timing (latencies, sync intervals,
// request deadlines, libevent timers) reads std::chrono::steady_clock
// directly: it decides nothing about the calendar and needs no test hand.
//
// Thread-safety: every Clock may be read from any thread. ManualClock's
// setters may be called from any thread too (a test steps it while a daemon
// thread reads it); a read sees either the old or the new time.
#pragma once

#include <atomic>
#include <chrono>
#include <cstdint>

namespace clickatron {

class Clock {
 public:
  virtual ~Clock() = default;
  // The current wall time.
  virtual std::chrono::system_clock::time_point Now() const = 0;
  // The current wall time in whole seconds since the Unix epoch (floored).
  int64_t NowUnixSeconds() const;
  // The current UTC date, in days since the Unix epoch (floored).
  int64_t TodayUtc() const;
};

// The operating system's wall clock.
class SystemClock final : public Clock {
 public:
  // The one every default points at: it has no state, so sharing is free.
  static const SystemClock& Instance();
  std::chrono::system_clock::time_point Now() const override;
};

// A clock that stands still until it is set or advanced.
class ManualClock final : public Clock {
 public:
  explicit ManualClock(int64_t unix_seconds = 0);
  std::chrono::system_clock::time_point Now() const override;
  void SetUnixSeconds(int64_t unix_seconds);
  void Advance(std::chrono::system_clock::duration by);

 private:
  // system_clock ticks since the epoch: one atomic, so a read never tears.
  std::atomic<std::chrono::system_clock::rep> ticks_;
};

}  // namespace clickatron
