// Step: k-way merge of sorted line streams, combining equal keys.
//
// Used to merge the sorted runs of the external sort and the new inputs of a
// generation (a day, late data, bulk loads). Merging those with the previous
// generation, which is most of the bytes, is archive_merge.h.
//
// Inputs are sorted with unique keys (CompareArchiveKeys order = whole-line
// LC_ALL=C order). A min-heap picks the smallest key; ties go to the lower
// input index. A key found in several inputs is combined (line_combine.h); a
// key found in one input is passed on as that input's own bytes, uncopied.
// Every key handed out is checked to be greater than the one before, so an
// input that is not sorted, or repeats a key, is an error and never a wrong
// file.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "clickatron/status.h"
#include "sortmerge/line_io.h"
#include "sortmerge/progress.h"

namespace clickatron::rebuild {

// The merged stream as a LineSource (pulled by the archive merge).
class MergingSource : public LineSource {
 public:
  explicit MergingSource(std::vector<LineSource*> inputs, std::string name = "merged inputs");
  bool Next(std::string_view* line) override;
  const Status& status() const override { return status_; }
  const std::string& name() const override { return name_; }
  uint64_t lines_in() const { return lines_in_; }
  uint64_t lines_out() const { return lines_out_; }

  struct Head {
    std::string_view key;
    std::string_view line;
    size_t input = 0;
  };

 private:
  bool Fail(Status status);
  bool Advance(size_t input);   // replaces the top head with input's next line
  bool Accept(std::string_view key, size_t input);  // the order check

  std::vector<LineSource*> inputs_;
  std::string name_;
  std::vector<Head> heap_;
  bool started_ = false;
  bool advance_top_ = false;  // the line last returned still lives in the top input's buffer
  std::string combined_;
  std::string last_key_;
  bool has_last_ = false;
  Status status_;
  uint64_t lines_in_ = 0;
  uint64_t lines_out_ = 0;
};

struct MergeOptions {
  Progress* progress = nullptr;  // records and bytes of output are added as it goes
};

struct MergeStats {
  uint64_t lines_in = 0;
  uint64_t lines_out = 0;
};

// Pushes the merged stream into `out`.
Status MergeSortedSources(const std::vector<LineSource*>& inputs, LineSink* out,
                          const MergeOptions& options, MergeStats* stats);

}  // namespace clickatron::rebuild
