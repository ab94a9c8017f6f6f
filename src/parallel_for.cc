#include "clickatron/parallel_for.h"

#include <algorithm>
#include <atomic>
#include <exception>
#include <mutex>
#include <system_error>
#include <thread>
#include <vector>

#include <fmt/format.h>
#include <spdlog/spdlog.h>

namespace clickatron {
namespace {

using StoppableTask = std::function<Status(size_t, const std::stop_token&)>;

// One task, with an exception turned into a Status: thrown in a helper
// thread it would otherwise end the process.
Status RunTask(const StoppableTask& task, size_t index, const std::stop_token& stop) {
  try {
    return task(index, stop);
  } catch (const std::exception& e) {
    return Status::Internal(fmt::format("parallel task {} threw: {}", index, e.what()));
  } catch (...) {
    return Status::Internal(fmt::format("parallel task {} threw a non-standard exception", index));
  }
}

}  // namespace

Status ParallelFor(size_t tasks, size_t threads, const std::function<Status(size_t)>& task) {
  return ParallelFor(tasks, threads, [&task](size_t index, const std::stop_token&) { return task(index); });
}

Status ParallelFor(size_t tasks, size_t threads, const StoppableTask& task) {
  if (tasks == 0) return Status::Ok();
  const size_t thread_count = std::clamp<size_t>(threads, 1, tasks);
  std::stop_source stop;
  std::mutex mutex;
  Status first_error;  // guarded by mutex; set before the stop is requested
  const auto run = [&](size_t index) {
    Status st = RunTask(task, index, stop.get_token());
    if (st.ok()) return;
    {
      std::lock_guard<std::mutex> lock(mutex);
      if (first_error.ok()) first_error = std::move(st);
    }
    stop.request_stop();
  };
  // Task 0 is the caller's; the others go to whichever thread asks first.
  std::atomic<size_t> next{1};
  const auto take_tasks = [&] {
    for (size_t i = next++; i < tasks && !stop.stop_requested(); i = next++) run(i);
  };
  std::vector<std::thread> helpers;
  helpers.reserve(thread_count - 1);
  for (size_t t = 1; t < thread_count; ++t) {
    try {
      helpers.emplace_back(take_tasks);
    } catch (const std::system_error& e) {
      // No thread to be had: the threads there are take every task anyway.
      spdlog::warn("parallel tasks: could start only {} of {} threads: {}", t, thread_count, e.what());
      break;
    }
  }
  run(0);
  take_tasks();
  for (std::thread& helper : helpers) helper.join();
  return first_error;
}

}  // namespace clickatron
