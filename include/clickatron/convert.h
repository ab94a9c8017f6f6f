// Conversion between the realtime and archive formats (docs/protocols.md).
//
// realtime -> archive is two steps so that memory stays bounded whatever the
// input: each realtime line maps to a one-column archive line
// (RealtimeToArchiveLine), then lines are sorted by key (the rebuild's external
// sort, or an in-memory sort for small inputs) and equal keys are combined
// (ArchiveCombiner). Combining is also how archive generations are merged.
//
// Thread-safety: the functions are pure; any thread may call them. An
// ArchiveCombiner holds the record being combined: one thread at a time.
#pragma once

#include <functional>
#include <string>
#include <string_view>
#include <vector>

#include "clickatron/record.h"
#include "clickatron/status.h"

namespace clickatron {

// "u|jehiah.c41l,5" -> "u|jehiah,c41l:5"; "c.u|jehiah.US.c41l,4" ->
// "c.u|jehiah.c41l,US:4"; lookups unchanged. Validates the line.
Result<std::string> RealtimeToArchiveLine(std::string_view realtime_line);

// Expands one archive line back into realtime lines (tests and repair),
// appended to *out in column order (not necessarily sorted).
Status ArchiveToRealtimeLines(std::string_view archive_line, std::vector<std::string>* out);

// Folds `from` into `into` (same key): columns are unioned, equal column names
// summed, kept sorted. Lookups: identical values are kept once; different
// values are CORRUPTION (two values for one hash).
Status CombineArchiveRecords(ArchiveRecord* into, const ArchiveRecord& from);

// Streaming combine over archive lines sorted by key (CompareArchiveKeys):
// adjacent lines with equal keys become one line. Memory: one record.
// Lines out of order are reported as INVALID_ARGUMENT naming both keys.
class ArchiveCombiner {
 public:
  using Sink = std::function<Status(std::string_view line)>;
  explicit ArchiveCombiner(Sink sink) : sink_(std::move(sink)) {}
  Status Add(std::string_view archive_line);
  Status Add(ArchiveRecord record);
  Status Finish();  // flushes the last record
  uint64_t lines_in() const { return lines_in_; }
  uint64_t records_out() const { return records_out_; }

 private:
  Status Flush();
  Sink sink_;
  ArchiveRecord current_;
  bool has_current_ = false;
  uint64_t lines_in_ = 0;
  uint64_t records_out_ = 0;
};

}  // namespace clickatron
