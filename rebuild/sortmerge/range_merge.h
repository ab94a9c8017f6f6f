// Step: the external sort's final merge, split by key range across threads.
//
// The k-way merge (merge.h) is one heap: one core. Here its inputs (sorted
// runs with unique keys, and the sorted in-memory chunk) are cut at pivot
// keys into key ranges; each range is merged by its own thread with
// MergeSortedSources, range 0 straight into the caller's sink and the others
// into temp files, which are then appended to the sink in order. Every line
// whose key is below a pivot lands before it and every line with that key or
// above after it, so equal keys — which the merge combines — always meet in
// the same range, and the output is byte for byte the single-threaded one.
//
// Pivots are weighted medians of key samples the inputs give (a run's sparse
// index, sorted_run.h; every ~N bytes of the chunk), checked afterwards on
// the exact cut positions. With one thread, a small input, or no pivot that
// balances the ranges (one key holding most of the bytes), it is the plain
// single-threaded merge.
#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "clickatron/status.h"
#include "sortmerge/line_io.h"
#include "sortmerge/merge.h"
#include "sortmerge/progress.h"

namespace clickatron::rebuild {

// A key and the input bytes from it up to the next sample.
struct KeySample {
  std::string key;
  uint64_t bytes = 0;
};

// A sorted input that can be cut at a key. Positions are the input's own
// (a byte offset in a run, an entry index in a chunk), in [0, end()].
class RangeInput {
 public:
  virtual ~RangeInput() = default;
  virtual uint64_t end() const = 0;
  // Input bytes before `position` (the size of a range, for balancing).
  virtual uint64_t BytesBefore(uint64_t position) const = 0;
  // Appends samples in key order whose bytes add up to the input's bytes.
  virtual void Sample(std::vector<KeySample>* samples) const = 0;
  // The position of the first line whose key is >= `key` (end() if none).
  virtual Result<uint64_t> Find(std::string_view key) const = 0;
  // The lines in [begin, end), with a read buffer of about `buffer_bytes`.
  virtual Result<std::unique_ptr<LineSource>> Open(uint64_t begin, uint64_t end, size_t buffer_bytes) const = 0;
};

struct RangeMergeOptions {
  int threads = 2;
  std::string temp_dir;           // the ranges after the first are written here, then removed
  uint64_t buffer_budget = 0;     // bytes for all read and write buffers together
  uint64_t min_bytes = 4u << 20;  // below this much input, one thread
  Progress* progress = nullptr;   // shared by the threads (its counters are atomic)
};

// Merges `inputs` (sorted; a run has unique keys, a chunk may repeat them)
// into `out`, combining equal keys. `out` is written by the calling thread
// only. *ranges_merged (may be null) is set to the number of ranges once
// they are chosen (so a caller can tell where a failure happened).
Status MergeByKeyRange(const std::vector<const RangeInput*>& inputs, LineSink* out,
                       const RangeMergeOptions& options, MergeStats* stats, int* ranges_merged = nullptr);

}  // namespace clickatron::rebuild
