// A run file of the external sort with a sparse index of its keys.
//
// While a run is written, RunIndexSink notes the key and byte offset of the
// line that starts after every `mark_every` bytes. The marks are what the
// parallel final merge (range_merge.h) samples to choose pivots and bisects
// to find where a key's lines start without reading the run: it reads only
// from the mark before the key to the key (at most `mark_every` bytes).
// A run holds each key once (its chunk was combined), so any line start is a
// key boundary.
#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "clickatron/status.h"
#include "sortmerge/line_io.h"
#include "sortmerge/range_merge.h"

namespace clickatron::rebuild {

struct RunMark {
  std::string key;
  uint64_t offset = 0;  // of the line with that key
};

struct RunFile {
  std::string path;
  uint64_t bytes = 0;
  std::vector<RunMark> marks;  // in key order; the first is at offset 0
};

// Passes lines to `writer`, recording marks into *run (path and bytes too).
class RunIndexSink : public LineSink {
 public:
  RunIndexSink(LineWriter* writer, uint64_t mark_every, RunFile* run);
  Status Put(std::string_view line) override;

 private:
  LineWriter* writer_;
  uint64_t mark_every_;
  uint64_t next_mark_ = 0;
  RunFile* run_;
};

// A finished run as an input of the range merge (positions are byte offsets).
class RunInput : public RangeInput {
 public:
  explicit RunInput(const RunFile* run) : run_(run) {}
  uint64_t end() const override { return run_->bytes; }
  uint64_t BytesBefore(uint64_t position) const override { return position; }
  void Sample(std::vector<KeySample>* samples) const override;
  Result<uint64_t> Find(std::string_view key) const override;
  Result<std::unique_ptr<LineSource>> Open(uint64_t begin, uint64_t end, size_t buffer_bytes) const override;

 private:
  const RunFile* run_;
};

}  // namespace clickatron::rebuild
