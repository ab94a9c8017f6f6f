// Progress of a long step: records/s, bytes done and an ETA.
//
// On a terminal (isatty(2)) one line is redrawn with '\r' a few times a
// second; otherwise the same figures are logged every ~10 s, so a cron run's
// log shows where a slow night spends its time. Counters are atomics: worker
// threads add in batches, a background thread prints.
#pragma once

#include <atomic>
#include <condition_variable>
#include <cstdint>
#include <mutex>
#include <string>
#include <thread>

namespace clickatron::rebuild {

class Progress {
 public:
  // total_bytes 0: unknown (no ETA).
  Progress(std::string label, uint64_t total_bytes);
  ~Progress();  // Finish() if not called
  Progress(const Progress&) = delete;
  Progress& operator=(const Progress&) = delete;

  void Add(uint64_t records, uint64_t bytes) {
    records_.fetch_add(records, std::memory_order_relaxed);
    bytes_.fetch_add(bytes, std::memory_order_relaxed);
  }
  void AddTotalBytes(uint64_t bytes) { total_bytes_.fetch_add(bytes, std::memory_order_relaxed); }
  // Stops the reporter and prints/logs a summary line.
  void Finish();

  uint64_t records() const { return records_.load(std::memory_order_relaxed); }
  uint64_t bytes() const { return bytes_.load(std::memory_order_relaxed); }
  double elapsed_seconds() const;

  // The figures as one line ("sort: 1.2M records, 35.0 MB/120.0 MB, 410k rec/s, ETA 4s").
  std::string Line() const;

  // Tests and quiet callers: no terminal line and no periodic log.
  static void SetQuiet(bool quiet);

 private:
  void Run();

  std::string label_;
  std::atomic<uint64_t> records_{0};
  std::atomic<uint64_t> bytes_{0};
  std::atomic<uint64_t> total_bytes_{0};
  int64_t start_ns_ = 0;
  bool tty_ = false;
  bool finished_ = false;
  std::mutex mutex_;
  std::condition_variable wake_;
  bool stop_ = false;  // guarded by mutex_
  std::thread reporter_;
};

// "12.3 MB", "512 B".
std::string HumanBytes(double bytes);
// "1.23M", "45.6k", "12".
std::string HumanCount(double count);

}  // namespace clickatron::rebuild
