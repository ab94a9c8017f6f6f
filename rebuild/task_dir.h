// A rebuild task and the directory it works in: the unit an engine runs
// (rebuild/engine/), here in this process or on another host.
//
//   TASK/in/task.json   what to do: {"kind": "sort-shard" | "merge-shard", …}
//   TASK/in/…           its input files (names in task.json are relative to
//                       TASK, or absolute when the task runs where they are)
//   TASK/out/…          its results
//   TASK/out/done.json  the task finished: its figures, and the size of every
//                       file of out/ (a copy of out/ cut short is not done)
//   TASK/tmp/           scratch (external-sort runs, exports)
//
// A task reads nothing but TASK/in (and the cluster over HTTP) and writes
// nothing but TASK/out and TASK/tmp, so an engine can ship `in` to any host,
// run it there, and ship `out` back. It writes its results into
// TASK/out.partial/ and renames that to out/ when it is done, so an attempt
// that dies (a killed process, a lost host) leaves no out/ an engine could
// ship back over a finished one. Thread-safety: different tasks may run at once.
#pragma once

#include <cstdint>
#include <string>

#include <nlohmann/json.hpp>

#include "clickatron/config.h"
#include "clickatron/status.h"

namespace clickatron::rebuild {

struct TaskPaths {
  std::string dir;
  std::string out_name = "out";  // "out.partial" while the task runs
  std::string In() const { return dir + "/in"; }
  std::string Spec() const { return dir + "/in/task.json"; }
  std::string Out() const { return dir + "/" + out_name; }
  std::string Done() const { return Out() + "/done.json"; }
  std::string Tmp() const { return dir + "/tmp"; }
  // A name from task.json: relative names are under the task dir.
  std::string Resolve(const std::string& name) const {
    return !name.empty() && name[0] == '/' ? name : dir + "/" + name;
  }
};

class Progress;

// What the host running a task gives it: its share of [rebuild] threads and
// memory_mb when several tasks share a host, and where to count progress
// (nullptr: the task keeps its own).
struct TaskResources {
  int threads = 2;
  uint64_t memory_bytes = 512ull << 20;
  Progress* progress = nullptr;
};

// Writes TASK/in/task.json (creating TASK/in) and clears TASK/out.
Status WriteTaskSpec(const TaskPaths& task, const nlohmann::json& spec);
// done.json is there and every file it lists has its size.
bool TaskDone(const TaskPaths& task);
Result<nlohmann::json> ReadTaskDone(const TaskPaths& task);
// The task's in/task.json, parsed (CORRUPTION when it is not a JSON object).
Result<nlohmann::json> ReadTaskSpec(const TaskPaths& task);

// Runs the task in `task.dir`: clears out/ and tmp/, runs it by its kind
// into out.partial/, writes its done.json there, renames it to out/,
// removes tmp/. `clickatron-rebuild task` and
// the local engine both come here.
Status RunTaskDir(const TaskPaths& task, const ClusterConfig& cluster, const TaskResources& resources);

}  // namespace clickatron::rebuild
