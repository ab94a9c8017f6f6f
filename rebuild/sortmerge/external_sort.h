// Step: external sort of archive lines with bounded memory.
//
// Lines are copied into chunks; a full chunk is sorted (whole-line bytewise,
// the LC_ALL=C order, line_sort.h), its equal keys combined, and spilled to a
// run file by a pool of worker threads while the caller keeps filling the
// next chunk. At Finish() the last chunk is sorted in memory (with every
// thread) and merged with the runs through a heap (merge.h), after extra
// passes when there are more runs than the memory allows open at once; that
// final merge is cut by key range into one merge per thread
// (range_merge.h). When everything fit in one chunk nothing touches the disk.
//
// Memory: at most threads + 1 chunks exist (one filling, the others sorting).
// A quarter of the bound (at most 16 MiB) is left for I/O buffers and the
// process; the rest is split between the chunks. A chunk holds its lines from
// the front and a 16-byte index entry per line from the back, so lines +
// index never exceed it. The merge phase gives each open run a read buffer
// out of what the last chunk leaves of the bound (split between the final
// merge's threads; the run index is ~128 keys a run, a few KiB).
//
// Producers (options.producers > 0): instead of Add(), that many threads each
// add through their own Producer. Each owns one chunk of
// (bound - reserve) / producers and sorts, combines and spills it itself when
// it is full, so converting and sorting run on every thread with no hand-off
// and no chunk waits for another. At Finish() the producers' last chunks stay
// in memory when there are no runs; otherwise the fullest one stays and the
// others are spilled (in parallel with sorting it).
//
// Thread-safety: Add() and Finish() from one thread; the pool is internal.
// Each Producer from one thread at a time; Finish() after every producer's
// thread is done with it.
#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <string_view>

#include "clickatron/status.h"
#include "sortmerge/line_io.h"

namespace clickatron::rebuild {

struct ExternalSortOptions {
  std::string temp_dir;             // run files go here (created; removed by Finish)
  uint64_t memory_bytes = 512ull << 20;
  int threads = 2;                  // sorting workers (and the parallel in-memory sort)
  size_t max_fan_in = 128;          // runs merged at once at most
  std::string label = "sort";       // for the progress line of the merge phase
  int producers = 0;                // > 0: lines come through producer(i), not Add()
  // The final merge runs on `threads` threads by key range (range_merge.h)
  // when the runs and last chunk hold at least this many bytes.
  uint64_t parallel_merge_min_bytes = 4u << 20;
};

struct ExternalSortStats {
  uint64_t lines_in = 0;
  uint64_t bytes_in = 0;
  uint64_t runs = 0;          // spilled run files
  uint64_t merge_passes = 0;  // intermediate passes before the final merge
  uint64_t lines_out = 0;
  // Key ranges of the final merge (1: one thread; 0: no merge, or it failed
  // before choosing them). Set when the merge fails too.
  uint64_t final_merge_ranges = 0;
};

class ExternalSorter {
 public:
  static Result<std::unique_ptr<ExternalSorter>> Create(ExternalSortOptions options);
  ~ExternalSorter();  // stops the workers; removes run files

  // REQUIRES: `archive_line` is a valid archive line (converted or checked).
  Status Add(std::string_view archive_line);
  // Streams every line, sorted and combined, into `out`.
  Status Finish(LineSink* out);

  struct Impl;

  // One thread's way in (options.producers > 0).
  class Producer {
   public:
    // REQUIRES: `archive_line` is a valid archive line (converted or checked).
    Status Add(std::string_view archive_line);

   private:
    friend class ExternalSorter;
    Producer(Impl* impl, size_t index) : impl_(impl), index_(index) {}
    Impl* impl_;
    size_t index_;
  };
  // REQUIRES: i < options.producers.
  Producer* producer(int i);

  const ExternalSortStats& stats() const;
  uint64_t chunk_bytes() const;

 private:
  explicit ExternalSorter(std::unique_ptr<Impl> impl);
  std::unique_ptr<Impl> impl_;
};

}  // namespace clickatron::rebuild
