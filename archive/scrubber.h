// The background scrub of the served archive file (docs/operations.md,
// "Damaged archive files"): the docs forbid editing a served file in place,
// but a disk, a careless operator or a bad copy can still change its bytes
// under the mapping, and a replica must stop answering from it rather than
// answer wrong numbers.
//
// Every interval the file is read again through its descriptor (pread, not
// the mapping, so a file that shrank cannot fault here), at most
// bytes_per_second, and its size and crc32 compared with the manifest's; a
// difference marks the mapping damaged() (SortedFile::damaged), which the
// server answers with 503 ARCHIVE_DAMAGED from then on. This is what ZFS
// scrubs and RocksDB's VerifyChecksum do: find damage before a reader trusts
// it. Between passes, CheckSize() (cheap: one fstat) catches a truncation
// at once.
//
// Thread-safety: SetFile from any thread; the pass runs on its own thread.
#pragma once

#include <atomic>
#include <condition_variable>
#include <cstdint>
#include <mutex>
#include <thread>

#include "sorted_file.h"

namespace clickatron::archive {

struct ScrubCounters {
  std::atomic<uint64_t> passes{0};      // whole files checked
  std::atomic<uint64_t> bytes{0};       // read by the scrub
  std::atomic<uint64_t> mismatches{0};  // files found damaged (scrub or size check)
};

class Scrubber {
 public:
  struct Options {
    int interval_seconds = 86400;  // 0: no passes (CheckSize still works)
    uint64_t bytes_per_second = 64u << 20;
  };
  explicit Scrubber(Options options);
  ~Scrubber();  // stops a pass in progress
  Scrubber(const Scrubber&) = delete;
  Scrubber& operator=(const Scrubber&) = delete;

  // The file to check from now on (the serving generation after a swap).
  void SetFile(SortedFilePtr file);
  // The file's size on disk against its mapping: a file truncated or grown
  // in place is marked damaged. True when it was found damaged now.
  bool CheckSize(const SortedFile& file);

  const ScrubCounters& counters() const { return counters_; }

 private:
  void Run();
  // One pass over `file`; false when stopped half-way.
  bool Pass(const SortedFile& file);
  void Damaged(const SortedFile& file, const std::string& why);

  const Options options_;
  ScrubCounters counters_;
  std::mutex mu_;
  std::condition_variable wake_;
  SortedFilePtr file_;  // guarded by mu_
  bool stop_ = false;   // guarded by mu_
  std::thread thread_;
};

}  // namespace clickatron::archive
