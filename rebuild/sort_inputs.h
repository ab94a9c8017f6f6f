// Convert + external sort: input files of any order become one sorted,
// combined archive file. Shared by the day's exports, late data and bulk
// loads, so all three enter the archive the same way.
//
// Every input line is converted to a one-column archive line (realtime) or
// checked and normalised (archive); a bad line goes to the reject file as
// "FILE:LINE: reason" and is counted, never dropped silently. When more than
// max_bad_line_ratio of the lines are bad the step fails and writes no output.
#pragma once

#include <cstdint>
#include <functional>
#include <string>
#include <string_view>
#include <vector>

#include "clickatron/oplog_record.h"
#include "clickatron/status.h"

namespace clickatron::rebuild {

enum class InputFormat {
  kRealtime,  // key,delta lines (exports, bulk loads)
  kArchive,   // archive lines (bulk loads of archive files)
  kLateData,  // framed late-data files: "# header" + realtime lines per frame
};

// "realtime", "archive" or "late": a bulk load's --format, and its queue
// marker's "format".
const char* InputFormatName(InputFormat format);

struct SortInputsOptions {
  std::vector<std::string> inputs;
  InputFormat format = InputFormat::kRealtime;
  std::string output;        // written as output + ".tmp", renamed when complete
  std::string rejects_path;  // written only when there are bad lines
  std::string temp_dir;      // external-sort runs
  uint64_t memory_bytes = 512ull << 20;
  int threads = 2;
  double max_bad_line_ratio = 0.001;
  bool strip_cr = false;     // bulk loads accept CRLF files
  // When set, every converted line must pass it: a line that fails is no
  // bad line but refuses the whole input (FAILED_PRECONDITION naming
  // FILE:LINE and why; no output). A restatement's range and namespace.
  // Called on the reading threads.
  std::function<Status(std::string_view archive_line)> accept;
  // Late data only: when set, a line (realtime format) of a frame for which
  // it answers true is left out, as neither record nor bad line: a
  // deletion's, acknowledged before it (deletions.h). Called on the reading
  // thread.
  std::function<bool(const OplogHeader& frame, std::string_view line)> drop_late_line;
  std::string label = "sort";
};

struct SortInputsResult {
  uint64_t lines = 0;       // input lines read (not counting late-data headers)
  uint64_t bad_lines = 0;
  uint64_t bytes = 0;       // input bytes
  uint64_t records = 0;     // output lines
  uint64_t runs = 0;        // external-sort runs spilled
  uint64_t late_lines_deleted = 0;  // left out by drop_late_line
  double seconds = 0;
};

// On a bad-line ratio above the limit: FAILED_PRECONDITION naming the reject
// file (the reject file is kept, the output is not written).
Result<SortInputsResult> SortInputs(const SortInputsOptions& options);

}  // namespace clickatron::rebuild
