#include "local_engine.h"

#include <algorithm>
#include <filesystem>
#include <mutex>

#include <fmt/format.h>
#include <spdlog/spdlog.h>

#include "clickatron/parallel_for.h"

namespace clickatron::rebuild {

Status LocalEngine::Run(const std::string& stage, const std::vector<TaskPaths>& tasks, Progress* progress) {
  std::vector<TaskPaths> todo;
  for (const TaskPaths& task : tasks) {
    if (!TaskDone(task)) todo.push_back(task);
  }
  if (todo.empty()) return Status::Ok();
  const int threads = std::max(1, cluster_.rebuild.threads);
  const int at_once = std::min(threads, static_cast<int>(todo.size()));
  TaskResources resources;
  resources.threads = std::max(1, threads / at_once);
  resources.memory_bytes = (cluster_.rebuild.memory_mb << 20) / static_cast<uint64_t>(at_once);
  resources.progress = progress;
  std::mutex mutex;
  std::vector<std::string> failed;  // guarded by mutex
  Status first_failure;             // guarded by mutex: its code is the run's
  // Every task is tried whatever the others do: the done ones are kept for
  // the rerun, and the error names every one that failed.
  CLICKATRON_RETURN_IF_ERROR(ParallelFor(todo.size(), static_cast<size_t>(at_once), [&](size_t i) {
    const Status st = RunTaskDir(todo[i], cluster_, resources);
    if (!st.ok()) {
      const std::string name = std::filesystem::path(todo[i].dir).filename().string();
      spdlog::error("{}: task {} failed: {}", stage, name, st.ToString());
      std::lock_guard<std::mutex> lock(mutex);
      failed.push_back(name);
      if (first_failure.ok()) first_failure = st;
    }
    return Status::Ok();
  }));
  if (!failed.empty()) {
    std::sort(failed.begin(), failed.end());
    return first_failure.WithContext(fmt::format(
        "{}: {} failed (finished tasks are kept; a rerun runs only these); the first error", stage,
        DescribeTaskList(failed)));
  }
  return Status::Ok();
}

}  // namespace clickatron::rebuild
