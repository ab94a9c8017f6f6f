// An exclusive flock on a file, held while the object lives and released
// when the process dies (the rebuild: one run at a time per work dir, one
// load being queued at a time). Never waits: a lock someone holds is LOCKED
// (FAILED_PRECONDITION), with `holder` in the message.
#pragma once

#include <memory>
#include <string>

#include "clickatron/status.h"
#include "clickatron/unique_fd.h"

namespace clickatron {

class FileLock {
 public:
  // Creates `dir` and `dir/name` if needed.
  static Result<std::unique_ptr<FileLock>> Acquire(const std::string& dir, const std::string& name,
                                                   const std::string& holder);

 private:
  explicit FileLock(UniqueFd fd) : fd_(std::move(fd)) {}
  UniqueFd fd_;  // closing it releases the lock
};

}  // namespace clickatron
