// Where the rebuild's tasks run (task_dir.h): the engine.
//
//   local         in this process, a few at a time ([rebuild] threads);
//                 the default.
//   gnu-parallel  GNU parallel over ssh on [rebuild] engine_hosts: each
//                 task's in/ is copied to a host, `clickatron-rebuild task`
//                 runs there, its out/ is copied back. A task that fails, or
//                 whose host dies, is retried (on another host when there is
//                 one), up to engine_retries attempts.
//
// Either way a task that is done (out/done.json) is never run again, so a
// rerun after a failure does only what is left; and both run the same task
// code on the same inputs, so their files are byte-identical.
//
// Thread-safety: one Run at a time per engine.
#pragma once

#include <memory>
#include <string>
#include <vector>

#include "clickatron/config.h"
#include "clickatron/status.h"
#include "sortmerge/progress.h"
#include "task_dir.h"

namespace clickatron::rebuild {

class Engine {
 public:
  virtual ~Engine() = default;
  virtual std::string name() const = 0;
  // True when tasks run on other hosts: everything a task reads must then be
  // inside its in/ (the engine ships nothing else).
  virtual bool ships_inputs() const = 0;
  // Runs every task not done yet. OK only when all are done; otherwise the
  // error names the tasks that are not. Tasks of one Run share one parent
  // directory. `progress` (may be null) counts the local engine's work.
  virtual Status Run(const std::string& stage, const std::vector<TaskPaths>& tasks, Progress* progress) = 0;
};

Result<std::unique_ptr<Engine>> MakeEngine(const ClusterConfig& cluster);

// "tasks a, b and c" — for errors naming what is left.
std::string DescribeTaskList(const std::vector<std::string>& names);

}  // namespace clickatron::rebuild
