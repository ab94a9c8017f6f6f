#include "clickatron/file_util.h"

#include <fcntl.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <filesystem>
#include <fmt/format.h>
#include <memory>

#include "clickatron/unique_fd.h"

namespace clickatron {
Status ErrnoStatus(std::string_view what, const std::string& path) {
  return Status::IoError(fmt::format("{} {}: {}", what, path, std::strerror(errno)));
}

Status MakeDirs(const std::string& path) {
  std::error_code ec;
  std::filesystem::create_directories(path, ec);
  if (ec) return Status::IoError(fmt::format("mkdir -p {}: {}", path, ec.message()));
  return Status::Ok();
}

std::string DirName(const std::string& path) {
  auto parent = std::filesystem::path(path).parent_path().string();
  return parent.empty() ? "." : parent;
}

uint64_t FileSizeOrZero(const std::string& path) {
  struct stat st;
  return ::stat(path.c_str(), &st) == 0 ? static_cast<uint64_t>(st.st_size) : 0;
}

Status RemoveWriteBits(const std::string& path) {
  struct stat st;
  if (::stat(path.c_str(), &st) != 0) return ErrnoStatus("stat", path);
  const mode_t mode = st.st_mode & 07777 & ~mode_t{0222};
  if (mode != (st.st_mode & 07777) && ::chmod(path.c_str(), mode) != 0) return ErrnoStatus("chmod", path);
  return Status::Ok();
}

bool FileExists(const std::string& path) {
  struct stat st;
  return ::stat(path.c_str(), &st) == 0;
}

Status FsyncDir(const std::string& dir) {
  UniqueFd fd(::open(dir.c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC));
  if (!fd.valid()) return ErrnoStatus("open dir", dir);
  if (::fsync(fd.get()) != 0) return ErrnoStatus("fsync dir", dir);
  return Status::Ok();
}

Status FsyncFile(const std::string& path) {
  UniqueFd fd(::open(path.c_str(), O_RDONLY | O_CLOEXEC));
  if (!fd.valid()) return ErrnoStatus("open", path);
  if (::fsync(fd.get()) != 0) return ErrnoStatus("fsync", path);
  return Status::Ok();
}

Status RenameDurably(const std::string& from, const std::string& to) {
  if (::rename(from.c_str(), to.c_str()) != 0) return ErrnoStatus("rename to " + to + " from", from);
  return FsyncDir(DirName(to));
}

namespace {

// A fsynced copy under a temporary name, renamed into place.
Status CopyFileDurably(const std::string& from, const std::string& to) {
  std::error_code ec;
  const std::string tmp = to + ".copy";
  std::filesystem::copy_file(from, tmp, std::filesystem::copy_options::overwrite_existing, ec);
  if (ec) return Status::IoError(fmt::format("copy {} to {}: {}", from, tmp, ec.message()));
  CLICKATRON_RETURN_IF_ERROR(FsyncFile(tmp));
  return RenameDurably(tmp, to);
}

}  // namespace

Status LinkOrCopyFile(const std::string& from, const std::string& to) {
  ::unlink(to.c_str());
  if (::link(from.c_str(), to.c_str()) == 0) return Status::Ok();
  if (errno != EXDEV && errno != EPERM && errno != EMLINK) return ErrnoStatus("link " + from + " to", to);
  return CopyFileDurably(from, to);
}

Status MoveFileDurably(const std::string& from, const std::string& to) {
  if (::rename(from.c_str(), to.c_str()) == 0) return FsyncDir(DirName(to));
  if (errno != EXDEV) return ErrnoStatus("rename " + from + " to", to);
  CLICKATRON_RETURN_IF_ERROR(CopyFileDurably(from, to));
  if (::unlink(from.c_str()) != 0) return ErrnoStatus("unlink", from);
  return Status::Ok();
}

Status WriteAllToFd(int fd, std::string_view data, const std::string& path) {
  while (!data.empty()) {
    const ssize_t n = ::write(fd, data.data(), data.size());
    if (n < 0) {
      if (errno == EINTR) continue;
      return ErrnoStatus("write", path);
    }
    data.remove_prefix(static_cast<size_t>(n));
  }
  return Status::Ok();
}

namespace {
constexpr std::string_view kTempInfix = ".tmp.";
}  // namespace

bool IsAtomicWriteTempName(std::string_view name) {
  const size_t at = name.rfind(kTempInfix);
  if (at == std::string_view::npos || at == 0 || at + kTempInfix.size() == name.size()) return false;
  for (size_t i = at + kTempInfix.size(); i < name.size(); ++i) {
    if (name[i] < '0' || name[i] > '9') return false;
  }
  return true;
}

Status WriteFileAtomically(const std::string& path, std::string_view contents) {
  std::string tmp = fmt::format("{}{}{}", path, kTempInfix, ::getpid());
  UniqueFd fd(::open(tmp.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644));
  if (!fd.valid()) return ErrnoStatus("create", tmp);
  if (Status written = WriteAllToFd(fd.get(), contents, tmp); !written.ok()) {
    fd.Reset();
    ::unlink(tmp.c_str());
    return written;
  }
  Status st;
  if (::fsync(fd.get()) != 0) st = ErrnoStatus("fsync", tmp);
  // A close error after a good fsync still means the file may be bad.
  if (Status closed = fd.Close(); st.ok() && !closed.ok()) st = closed.WithContext(tmp);
  if (!st.ok()) {
    ::unlink(tmp.c_str());
    return st;
  }
  return RenameDurably(tmp, path);
}

Result<std::string> ReadFileToString(const std::string& path) {
  UniqueFd fd(::open(path.c_str(), O_RDONLY | O_CLOEXEC));
  if (!fd.valid()) {
    if (errno == ENOENT) return Status::NotFound(fmt::format("{} does not exist", path));
    return ErrnoStatus("open", path);
  }
  std::string out;
  char buf[65536];
  while (true) {
    ssize_t n = ::read(fd.get(), buf, sizeof(buf));
    if (n < 0) {
      if (errno == EINTR) continue;
      return ErrnoStatus("read", path);
    }
    if (n == 0) break;
    out.append(buf, static_cast<size_t>(n));
  }
  return out;
}

}  // namespace clickatron
