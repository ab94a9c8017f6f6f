// Small file helpers with the durability steps spelled out once:
// write to a temp file, fsync it, rename over the target, fsync the directory.
//
// Thread-safety: the functions share no state; two callers writing the same
// path at once race as two renames do (the last one wins, whole).
#pragma once

#include <atomic>
#include <cstdint>
#include <memory>
#include <string>
#include <string_view>

#include "clickatron/status.h"

namespace clickatron {

// IO_ERROR "WHAT PATH: strerror(errno)", for the call that just failed.
Status ErrnoStatus(std::string_view what, const std::string& path);

Status MakeDirs(const std::string& path);
Status FsyncDir(const std::string& dir);
Status FsyncFile(const std::string& path);
// Crash-safe replace: readers see the old contents or the new, never a mix.
// It writes PATH.tmp.PID first: a crash leaves such a file behind.
Status WriteFileAtomically(const std::string& path, std::string_view contents);
// Whether a file name is one WriteFileAtomically writes under (NAME.tmp.PID).
bool IsAtomicWriteTempName(std::string_view name);
// Writes all of `data` to `fd` (short writes continued, EINTR retried);
// `path` names the file in the error.
Status WriteAllToFd(int fd, std::string_view data, const std::string& path);
Result<std::string> ReadFileToString(const std::string& path);
Status RenameDurably(const std::string& from, const std::string& to);
// `to` becomes a hard link to `from`, or a copy where a link cannot be made
// (another filesystem); an existing `to` is replaced.
Status LinkOrCopyFile(const std::string& from, const std::string& to);
// RenameDurably, or across filesystems a copy (fsynced, renamed into place)
// and then the removal of `from`.
Status MoveFileDurably(const std::string& from, const std::string& to);
bool FileExists(const std::string& path);
// chmod a-w: the file's other permission bits are kept.
Status RemoveWriteBits(const std::string& path);
// Its size in bytes; 0 when it cannot be stat()ed (progress figures, estimates).
uint64_t FileSizeOrZero(const std::string& path);
std::string DirName(const std::string& path);

// A read-only mapping of a whole file (RAII). An empty file maps to size 0.
//
// The mapping shares the file's pages: a file changed in place shows
// through it, and one that shrinks makes reads past its new end fault
// (SIGBUS), which would kill the process. Once GuardMappedFiles() has run,
// such a fault instead maps a page of zeros where the read was, marks the
// mapping damaged() and lets the read go on: readers check damaged() after
// they read and throw away what they read (src/mapping_guard.cc).
// The file is kept open, so its size and bytes can be checked against the
// mapping later (CurrentSize, ReadAt) without touching the mapping.
class MappedFile {
 public:
  static Result<std::unique_ptr<MappedFile>> Open(const std::string& path);
  ~MappedFile();
  MappedFile(const MappedFile&) = delete;
  MappedFile& operator=(const MappedFile&) = delete;
  std::string_view data() const { return {data_, size_}; }
  const std::string& path() const { return path_; }
  // madvise with "random" | "sequential" | "normal" | "willneed".
  Status Advise(std::string_view how);
  Status Lock();       // mlock the whole mapping
  uint64_t Touch();    // read one byte a page; returns a checksum so it is not optimised away

  // Set by a fault under the mapping (see above) or by MarkDamaged(); never cleared.
  bool damaged() const { return damaged_.load(std::memory_order_acquire); }
  void MarkDamaged() const { damaged_.store(true, std::memory_order_release); }
  // The open file's size now (fstat), which a truncation in place changes.
  Result<uint64_t> CurrentSize() const;
  // Whether `path` names this very file now (same device and inode): not a
  // file renamed over it since.
  bool IsFileAt(const std::string& path) const;
  // Up to n bytes at `offset` read from the file itself (pread), so a check
  // of a damaged file never faults; fewer at its end.
  Result<size_t> ReadAt(uint64_t offset, char* out, size_t n) const;

 private:
  MappedFile() = default;
  std::string path_;
  const char* data_ = nullptr;
  size_t size_ = 0;
  int fd_ = -1;
  mutable std::atomic<bool> damaged_{false};
};

// Installs the SIGBUS handler that turns a fault under a MappedFile into
// damaged() (see above). Once per process, before mappings are read; a
// SIGBUS anywhere else still ends the process as it would have.
void GuardMappedFiles();
// Faults the handler has absorbed since start.
uint64_t MappedFileFaults();

}  // namespace clickatron
