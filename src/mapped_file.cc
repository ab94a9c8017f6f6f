// MappedFile and the SIGBUS guard under it (see file_util.h).
//
// Why a guard and not a check before each read: a file truncated in place
// shrinks between any check and the read after it, and the archive reads its
// mapping on every request. The kernel reports the read past the end as
// SIGBUS at the faulting address; the handler looks the address up in a
// fixed table of guarded mappings (lock-free: a handler may not take locks),
// maps one page of zeros over it with MAP_FIXED, so the faulting read
// completes, and marks the mapping damaged. The reader then checks damaged()
// and discards the answer. mmap is not on POSIX's list of async-signal-safe
// functions, but on Linux it is a plain system call with no user-space
// state, which is what that list protects; write(2) is on it.
#include <fcntl.h>
#include <signal.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include <array>
#include <atomic>
#include <cerrno>
#include <cstring>

#include <fmt/format.h>

#include "clickatron/file_util.h"
#include "clickatron/unique_fd.h"

namespace clickatron {
namespace {

struct GuardSlot {
  std::atomic<uintptr_t> begin{0};  // 0: free
  std::atomic<uintptr_t> end{0};
  std::atomic<std::atomic<bool>*> damaged{nullptr};
};
// Mappings live at once: a replica maps its serving generation and, during a
// swap, the next one; merges map a few inputs. Past this a mapping is simply
// not guarded (and a fault under it ends the process as before).
std::array<GuardSlot, 256> g_slots;
std::atomic<uint64_t> g_faults{0};
std::atomic<bool> g_installed{false};
uintptr_t g_page_size = 4096;

void OnSigbus(int /*signo*/, siginfo_t* info, void* /*context*/) {
  const int saved_errno = errno;  // the interrupted code's
  const auto address = reinterpret_cast<uintptr_t>(info->si_addr);
  for (GuardSlot& slot : g_slots) {
    const uintptr_t begin = slot.begin.load(std::memory_order_acquire);
    if (begin == 0 || address < begin || address >= slot.end.load(std::memory_order_acquire)) continue;
    const uintptr_t page = address & ~(g_page_size - 1);
    void* zeros = ::mmap(reinterpret_cast<void*>(page), g_page_size, PROT_READ,
                         MAP_FIXED | MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    if (zeros == MAP_FAILED) break;  // cannot paper over it: die as without the guard
    if (std::atomic<bool>* damaged = slot.damaged.load(std::memory_order_acquire)) {
      damaged->store(true, std::memory_order_release);
    }
    g_faults.fetch_add(1, std::memory_order_relaxed);
    static const char kMessage[] = "clickatron: SIGBUS under a mapped file (it shrank in place): marked damaged\n";
    [[maybe_unused]] ssize_t ignored = ::write(STDERR_FILENO, kMessage, sizeof kMessage - 1);
    errno = saved_errno;
    return;  // the read is retried and now sees zeros
  }
  // Not ours: the default action (the fault repeats and ends the process).
  ::signal(SIGBUS, SIG_DFL);
}

void Guard(const char* data, size_t size, std::atomic<bool>* damaged) {
  if (data == nullptr || size == 0) return;
  for (GuardSlot& slot : g_slots) {
    uintptr_t expected = 0;
    // Claim a free slot with a placeholder start (a free slot's end is 0,
    // so no address matches it), fill it, and publish its end last.
    if (!slot.begin.compare_exchange_strong(expected, 1, std::memory_order_acq_rel)) continue;
    slot.damaged.store(damaged, std::memory_order_release);
    slot.begin.store(reinterpret_cast<uintptr_t>(data), std::memory_order_release);
    slot.end.store(reinterpret_cast<uintptr_t>(data) + size, std::memory_order_release);
    return;
  }
}

void Unguard(const char* data) {
  if (data == nullptr) return;
  for (GuardSlot& slot : g_slots) {
    if (slot.begin.load(std::memory_order_acquire) != reinterpret_cast<uintptr_t>(data)) continue;
    slot.end.store(0, std::memory_order_release);
    slot.damaged.store(nullptr, std::memory_order_release);
    slot.begin.store(0, std::memory_order_release);
    return;
  }
}

}  // namespace

void GuardMappedFiles() {
  if (g_installed.exchange(true)) return;
  g_page_size = static_cast<uintptr_t>(::sysconf(_SC_PAGESIZE));
  struct sigaction action {};
  action.sa_sigaction = &OnSigbus;
  action.sa_flags = SA_SIGINFO;
  sigemptyset(&action.sa_mask);
  ::sigaction(SIGBUS, &action, nullptr);
}

uint64_t MappedFileFaults() { return g_faults.load(std::memory_order_relaxed); }

Result<std::unique_ptr<MappedFile>> MappedFile::Open(const std::string& path) {
  // Kept open for CurrentSize and ReadAt; the mapping alone would keep the
  // file alive too, even after a rename over it.
  UniqueFd fd(::open(path.c_str(), O_RDONLY | O_CLOEXEC));
  if (!fd.valid()) {
    if (errno == ENOENT) return Status::NotFound(fmt::format("{} does not exist", path));
    return ErrnoStatus("open", path);
  }
  struct stat st;
  if (::fstat(fd.get(), &st) != 0) return ErrnoStatus("stat", path);
  if (!S_ISREG(st.st_mode)) {  // a directory maps as "No such device"
    return Status::InvalidArgument(fmt::format("{} is not a regular file", path), "NOT_A_FILE");
  }
  std::unique_ptr<MappedFile> f(new MappedFile());
  f->path_ = path;
  f->size_ = static_cast<size_t>(st.st_size);
  if (f->size_ > 0) {
    void* p = ::mmap(nullptr, f->size_, PROT_READ, MAP_SHARED, fd.get(), 0);
    if (p == MAP_FAILED) return ErrnoStatus("mmap", path);
    f->data_ = static_cast<const char*>(p);
    Guard(f->data_, f->size_, &f->damaged_);
  }
  f->fd_ = fd.Release();
  return f;
}

MappedFile::~MappedFile() {
  if (data_ != nullptr) {
    Unguard(data_);
    ::munmap(const_cast<char*>(data_), size_);
  }
  if (fd_ >= 0) ::close(fd_);
}

Result<uint64_t> MappedFile::CurrentSize() const {
  struct stat st;
  if (::fstat(fd_, &st) != 0) return ErrnoStatus("stat", path_);
  return static_cast<uint64_t>(st.st_size);
}

bool MappedFile::IsFileAt(const std::string& path) const {
  struct stat open_file;
  struct stat named;
  if (::fstat(fd_, &open_file) != 0 || ::stat(path.c_str(), &named) != 0) return false;
  return open_file.st_dev == named.st_dev && open_file.st_ino == named.st_ino;
}

Result<size_t> MappedFile::ReadAt(uint64_t offset, char* out, size_t n) const {
  size_t got = 0;
  while (got < n) {
    const ssize_t r = ::pread(fd_, out + got, n - got, static_cast<off_t>(offset + got));
    if (r < 0 && errno == EINTR) continue;
    if (r < 0) return ErrnoStatus("read", path_);
    if (r == 0) break;
    got += static_cast<size_t>(r);
  }
  return got;
}

Status MappedFile::Advise(std::string_view how) {
  if (size_ == 0) return Status::Ok();
  int advice = how == "random" ? MADV_RANDOM
             : how == "sequential" ? MADV_SEQUENTIAL
             : how == "willneed" ? MADV_WILLNEED : MADV_NORMAL;
  if (::madvise(const_cast<char*>(data_), size_, advice) != 0) return ErrnoStatus("madvise", path_);
  return Status::Ok();
}

Status MappedFile::Lock() {
  if (size_ == 0) return Status::Ok();
  if (::mlock(data_, size_) != 0) return ErrnoStatus("mlock", path_);
  return Status::Ok();
}

uint64_t MappedFile::Touch() {
  uint64_t sum = 0;
  long page = ::sysconf(_SC_PAGESIZE);
  for (size_t off = 0; off < size_; off += static_cast<size_t>(page)) sum += static_cast<unsigned char>(data_[off]);
  return sum;
}

}  // namespace clickatron
