// An exclusive flock on a file, held while the object lives and released
// when the process dies: one rebuild at a time per work dir (`lock`), one
// load being queued at a time (`queue/lock`). Never waits: a lock someone
// holds is LOCKED (FAILED_PRECONDITION), with `holder` in the message.
#pragma once

#include <memory>
#include <string>

#include "clickatron/status.h"
#include "clickatron/unique_fd.h"

namespace clickatron::rebuild {

class WorkLock {
 public:
  // Creates `dir` and `dir/name` if needed.
  static Result<std::unique_ptr<WorkLock>> Acquire(const std::string& dir, const std::string& name,
                                                   const std::string& holder);

 private:
  explicit WorkLock(UniqueFd fd) : fd_(std::move(fd)) {}
  UniqueFd fd_;  // closing it releases the lock
};

}  // namespace clickatron::rebuild
