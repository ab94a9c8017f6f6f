// Running another program to completion: the rebuild hands its tasks to an
// external engine (GNU parallel) this way. fork + execvp, wrapped once here.
//
// The child's stdout and stderr are the caller's (the engine's own progress
// and the tasks' logs land in the rebuild's log); its stdin is `stdin_data`,
// written from a thread so a child that reads slowly cannot deadlock us. The
// child gets default signal handling, and SIGTERM when the caller's thread
// dies (PR_SET_PDEATHSIG), which GNU parallel (20221122, tested) takes as
// "stop your jobs": its jobs on this host do not outlive a killed caller.
// (A job on another host loses its ssh session; a child that ignores
// SIGTERM, or whose own children do not stop with it, is not stopped.)
//
// Thread-safety: may be called from any thread; each call has its own child.
#pragma once

#include <string>
#include <vector>

#include "clickatron/status.h"

namespace clickatron {

struct ProcessResult {
  int exit_code = -1;  // valid when signal == 0
  int signal = 0;      // the signal that ended it, or 0
  bool ok() const { return signal == 0 && exit_code == 0; }
  std::string Describe() const;  // "exit code 3", "killed by signal 9"
};

// Runs argv[0] (searched in PATH) with `argv` in `cwd` ("" = ours). Errors
// only when it could not be started at all (not found: NOT_FOUND).
Result<ProcessResult> RunProcess(const std::vector<std::string>& argv, const std::string& cwd,
                                 const std::string& stdin_data);

}  // namespace clickatron
