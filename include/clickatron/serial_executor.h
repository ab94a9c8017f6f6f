// One background thread running jobs in the order they were posted: file work
// (fsync, gzip, reads) that must stay off the event loop.
//
// Thread-safety: Post() from any thread, jobs included, but not racing with
// the destructor: it runs the jobs already posted, then joins, and a Post()
// after that is a use after free.
#pragma once

#include <condition_variable>
#include <deque>
#include <functional>
#include <mutex>
#include <string>
#include <thread>

namespace clickatron {

class SerialExecutor {
 public:
  enum class Priority {
    kNormal,
    // SCHED_IDLE: runs only on CPU time nothing else wants. For maintenance
    // that may fall behind under load but must never slow the serving path
    // (compressing closed oplog segments).
    kIdle,
  };
  explicit SerialExecutor(std::string name, Priority priority = Priority::kNormal);
  ~SerialExecutor();
  SerialExecutor(const SerialExecutor&) = delete;
  SerialExecutor& operator=(const SerialExecutor&) = delete;

  void Post(std::function<void()> job);

 private:
  void Loop();

  std::string name_;
  Priority priority_;
  std::mutex mu_;
  std::condition_variable cv_;
  std::deque<std::function<void()>> jobs_;  // GUARDED_BY(mu_)
  bool stopping_ = false;                   // GUARDED_BY(mu_)
  std::thread thread_;
};

}  // namespace clickatron
