// ParallelFor: every task once, no more threads than asked, task 0 and the
// one-thread case on the caller in order, the first error returned and
// nothing started after it, exceptions turned into a Status.
#include "clickatron/parallel_for.h"

#include <gtest/gtest.h>

#include <atomic>
#include <chrono>
#include <condition_variable>
#include <mutex>
#include <optional>
#include <set>
#include <stdexcept>
#include <thread>
#include <vector>

namespace clickatron {
namespace {

TEST(ParallelFor, EveryTaskRunsExactlyOnce) {
  constexpr size_t kTasks = 2000;
  std::vector<std::atomic<int>> runs(kTasks);
  const Status st = ParallelFor(kTasks, 4, [&](size_t i) {
    runs[i].fetch_add(1);
    return Status::Ok();
  });
  ASSERT_TRUE(st.ok()) << st.ToString();
  for (size_t i = 0; i < kTasks; ++i) EXPECT_EQ(runs[i].load(), 1) << "task " << i;
}

TEST(ParallelFor, NoTasksRunsNothingAndZeroThreadsMeansOne) {
  int calls = 0;
  EXPECT_TRUE(ParallelFor(0, 4, [&](size_t) {
                ++calls;
                return Status::Ok();
              }).ok());
  EXPECT_EQ(calls, 0);
  std::vector<size_t> order;
  EXPECT_TRUE(ParallelFor(3, 0, [&](size_t i) {
                order.push_back(i);  // one thread: no lock needed
                return Status::Ok();
              }).ok());
  EXPECT_EQ(order, (std::vector<size_t>{0, 1, 2}));
}

TEST(ParallelFor, OneThreadRunsTheTasksInOrderOnTheCaller) {
  const std::thread::id caller = std::this_thread::get_id();
  std::vector<size_t> order;
  bool all_on_caller = true;
  const Status st = ParallelFor(50, 1, [&](size_t i) {
    order.push_back(i);
    all_on_caller = all_on_caller && std::this_thread::get_id() == caller;
    return Status::Ok();
  });
  ASSERT_TRUE(st.ok());
  std::vector<size_t> want(50);
  for (size_t i = 0; i < want.size(); ++i) want[i] = i;
  EXPECT_EQ(order, want);
  EXPECT_TRUE(all_on_caller);
}

TEST(ParallelFor, TaskZeroRunsOnTheCaller) {
  for (int round = 0; round < 20; ++round) {
    const std::thread::id caller = std::this_thread::get_id();
    std::thread::id task_zero;
    ASSERT_TRUE(ParallelFor(8, 8, [&](size_t i) {
                  if (i == 0) task_zero = std::this_thread::get_id();
                  return Status::Ok();
                }).ok());
    EXPECT_EQ(task_zero, caller);
  }
}

// Holds each task until `want` tasks are inside at once, so that many threads
// are certainly running; records the most ever inside and on which threads.
// The wait has a generous limit only so that too few threads fail the test
// instead of hanging it.
class ConcurrencyGauge {
 public:
  explicit ConcurrencyGauge(int want) : want_(want) {}
  void Enter() {
    std::unique_lock<std::mutex> lock(mutex_);
    threads_.insert(std::this_thread::get_id());
    max_inside_ = std::max(max_inside_, ++inside_);
    if (inside_ == want_) open_ = true;
    changed_.notify_all();
    changed_.wait_for(lock, std::chrono::seconds(30), [&] { return open_; });
  }
  void Leave() {
    std::lock_guard<std::mutex> lock(mutex_);
    --inside_;
  }
  int max_inside() const { return max_inside_; }
  size_t threads() const { return threads_.size(); }

 private:
  const int want_;
  std::mutex mutex_;
  std::condition_variable changed_;
  int inside_ = 0;
  int max_inside_ = 0;
  bool open_ = false;
  std::set<std::thread::id> threads_;
};

TEST(ParallelFor, AtMostThreadsTasksRunAtOnce) {
  constexpr int kThreads = 3;
  ConcurrencyGauge gauge(kThreads);
  std::atomic<uint64_t> sink{0};
  const Status st = ParallelFor(300, kThreads, [&](size_t i) {
    gauge.Enter();
    // A little work, so that a thread too many would overlap with the others.
    uint64_t x = i;
    for (int k = 0; k < 20000; ++k) x = x * 6364136223846793005u + 1442695040888963407u;
    sink += x;
    gauge.Leave();
    return Status::Ok();
  });
  ASSERT_TRUE(st.ok());
  EXPECT_EQ(gauge.max_inside(), kThreads);
  EXPECT_EQ(gauge.threads(), static_cast<size_t>(kThreads));
}

TEST(ParallelFor, FewerTasksThanThreadsUseOneThreadPerTask) {
  ConcurrencyGauge gauge(2);
  ASSERT_TRUE(ParallelFor(2, 16, [&](size_t) {
                gauge.Enter();
                gauge.Leave();
                return Status::Ok();
              }).ok());
  EXPECT_EQ(gauge.max_inside(), 2);
  EXPECT_EQ(gauge.threads(), 2u);
}

TEST(ParallelFor, OneThreadStopsAtTheFirstErrorAndReturnsIt) {
  std::vector<size_t> ran;
  const Status st = ParallelFor(10, 1, [&](size_t i) {
    ran.push_back(i);
    if (i == 3) return Status::IoError("task three failed");
    if (i == 5) return Status::Corruption("task five failed");
    return Status::Ok();
  });
  EXPECT_EQ(st.code(), StatusCode::kIoError);
  EXPECT_EQ(st.message(), "task three failed");
  EXPECT_EQ(ran, (std::vector<size_t>{0, 1, 2, 3}));
}

// Four threads, each busy with one of tasks 0-3 until a task fails: task 2
// fails, the other three see the stop and give up with an error of their
// own. Task 2's error is the one returned, and no task after 3 is started
// although the threads are free again.
TEST(ParallelFor, TheFirstErrorIsReturnedAndNoTaskStartsAfterIt) {
  constexpr size_t kTasks = 100;
  std::mutex mutex;
  std::condition_variable_any changed;
  std::set<size_t> started;
  const Status st = ParallelFor(kTasks, 4, [&](size_t i, const std::stop_token& stop) {
    std::unique_lock<std::mutex> lock(mutex);
    started.insert(i);
    changed.notify_all();
    if (i == 2) {
      // Fails once every thread has a task, so tasks 0-3 all start.
      changed.wait_for(lock, std::chrono::seconds(30), [&] { return started.size() == 4; });
      return Status::Unavailable("task two failed");
    }
    changed.wait_for(lock, stop, std::chrono::seconds(30), [] { return false; });
    if (!stop.stop_requested()) return Status::Internal("never stopped");
    return Status::Internal("gave up: another task failed");
  });
  EXPECT_EQ(st.code(), StatusCode::kUnavailable) << st.ToString();
  EXPECT_EQ(st.message(), "task two failed");
  EXPECT_EQ(started, (std::set<size_t>{0, 1, 2, 3}));
}

// Spins (yielding) until `done` or a generous limit: for waits that must
// not block on a mutex or condition variable.
template <typename Done>
void SpinUntil(const Done& done) {
  const auto limit = std::chrono::steady_clock::now() + std::chrono::seconds(30);
  while (!done() && std::chrono::steady_clock::now() < limit) std::this_thread::yield();
}

// Tasks that give up because of the stop fail too, but never supply the
// error returned. Task 0's stop callback runs inside the failing thread's
// request for the stop and holds it there until tasks 1 and 3 have given
// up: were the stop requested before task 2's error is recorded, theirs
// would be recorded first.
TEST(ParallelFor, AStopErrorIsNeverTheOneReturned) {
  std::atomic<int> started{0};
  std::atomic<int> gave_up{0};
  const Status st = ParallelFor(4, 4, [&](size_t i, const std::stop_token& stop) {
    ++started;
    if (i == 2) {
      SpinUntil([&] { return started.load() == 4; });
      return Status::Unavailable("task two failed");
    }
    std::optional<std::stop_callback<std::function<void()>>> hold;
    if (i == 0) {
      hold.emplace(stop, std::function<void()>([&] {
                     SpinUntil([&] { return gave_up.load() == 2; });
                     for (int k = 0; k < 10000; ++k) std::this_thread::yield();  // let them be recorded
                   }));
    }
    SpinUntil([&] { return stop.stop_requested(); });
    if (i != 0) ++gave_up;
    return Status::Internal("gave up: another task failed");
  });
  EXPECT_EQ(st.code(), StatusCode::kUnavailable) << st.ToString();
}

TEST(ParallelFor, AnExceptionBecomesAnInternalStatus) {
  const Status st = ParallelFor(8, 4, [&](size_t i) -> Status {
    if (i == 5) throw std::runtime_error("out of cheese");
    return Status::Ok();
  });
  EXPECT_EQ(st.code(), StatusCode::kInternal);
  EXPECT_NE(st.message().find("task 5 threw: out of cheese"), std::string::npos) << st.ToString();
}

TEST(ParallelFor, NestedCallsEachHaveTheirOwnThreads) {
  std::vector<std::atomic<int>> runs(4 * 8);
  const Status st = ParallelFor(4, 2, [&](size_t outer) {
    return ParallelFor(8, 2, [&](size_t inner) {
      runs[outer * 8 + inner].fetch_add(1);
      return Status::Ok();
    });
  });
  ASSERT_TRUE(st.ok());
  for (const auto& r : runs) EXPECT_EQ(r.load(), 1);
}

}  // namespace
}  // namespace clickatron
