#include "clickatron/unique_fd.h"

#include <unistd.h>

#include <cerrno>
#include <cstring>

#include <fmt/format.h>

namespace clickatron {

void UniqueFd::Reset(int fd) {
  if (fd_ >= 0) ::close(fd_);  // silent by contract; never retried (see unique_fd.h)
  fd_ = fd < 0 ? -1 : fd;
}

Status UniqueFd::Close() {
  if (fd_ < 0) return Status::Ok();
  const int fd = Release();
  if (::close(fd) != 0) return Status::IoError(fmt::format("close: {}", std::strerror(errno)));
  return Status::Ok();
}

}  // namespace clickatron
