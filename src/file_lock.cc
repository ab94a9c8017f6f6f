#include "clickatron/file_lock.h"

#include <fcntl.h>
#include <sys/file.h>

#include <cerrno>
#include <cstring>

#include <fmt/format.h>

#include "clickatron/file_util.h"

namespace clickatron {

Result<std::unique_ptr<FileLock>> FileLock::Acquire(const std::string& dir, const std::string& name,
                                                    const std::string& holder) {
  CLICKATRON_RETURN_IF_ERROR(MakeDirs(dir));
  const std::string path = dir + "/" + name;
  UniqueFd fd(::open(path.c_str(), O_RDWR | O_CREAT | O_CLOEXEC, 0644));
  if (!fd.valid()) return Status::IoError(fmt::format("open {}: {}", path, std::strerror(errno)));
  if (::flock(fd.get(), LOCK_EX | LOCK_NB) != 0) {
    return Status::FailedPrecondition(fmt::format("{} (it holds {})", holder, path), "LOCKED");
  }
  return std::unique_ptr<FileLock>(new FileLock(std::move(fd)));
}

}  // namespace clickatron
