#include "sortmerge/merge.h"

#include <fmt/format.h>

#include "clickatron/key_codec.h"
#include "clickatron/record.h"
#include "sortmerge/line_combine.h"

namespace clickatron::rebuild {
namespace {

using Head = MergingSource::Head;

// Heap order: smaller key first; ties to the lower input index.
bool Before(const Head& a, const Head& b) {
  const int order = CompareArchiveKeys(a.key, b.key);
  return order != 0 ? order < 0 : a.input < b.input;
}

// A binary min-heap kept by hand for its replace-top step: after the smallest
// line is taken, its input's next line usually stays smallest or sinks one
// level, so the common step costs one or two key comparisons.
void SiftDown(std::vector<Head>& heap, size_t i) {
  const size_t n = heap.size();
  while (true) {
    size_t smallest = i;
    const size_t left = 2 * i + 1, right = left + 1;
    if (left < n && Before(heap[left], heap[smallest])) smallest = left;
    if (right < n && Before(heap[right], heap[smallest])) smallest = right;
    if (smallest == i) return;
    std::swap(heap[i], heap[smallest]);
    i = smallest;
  }
}

void SiftUp(std::vector<Head>& heap, size_t i) {
  while (i > 0 && Before(heap[i], heap[(i - 1) / 2])) {
    std::swap(heap[i], heap[(i - 1) / 2]);
    i = (i - 1) / 2;
  }
}

// The smallest head other than the top: one of the top's children.
const Head* Second(const std::vector<Head>& heap) {
  if (heap.size() < 2) return nullptr;
  if (heap.size() == 2 || Before(heap[1], heap[2])) return &heap[1];
  return &heap[2];
}

}  // namespace

MergingSource::MergingSource(std::vector<LineSource*> inputs, std::string name)
    : inputs_(std::move(inputs)), name_(std::move(name)) {
  heap_.reserve(inputs_.size());
}

bool MergingSource::Fail(Status status) {
  if (status_.ok()) status_ = std::move(status);
  return false;
}

bool MergingSource::Advance(size_t input) {
  std::string_view line;
  if (inputs_[input]->Next(&line)) {
    heap_[0] = {LineKey(line), line, input};
    SiftDown(heap_, 0);
    return true;
  }
  if (!inputs_[input]->status().ok()) return Fail(inputs_[input]->status().WithContext(inputs_[input]->name()));
  heap_[0] = heap_.back();
  heap_.pop_back();
  if (!heap_.empty()) SiftDown(heap_, 0);
  return true;
}

bool MergingSource::Accept(std::string_view key, size_t input) {
  if (has_last_ && CompareArchiveKeys(last_key_, key) >= 0) {
    return Fail(Status::Internal(
        fmt::format("merging {}: key {} comes after key {}: an input is not sorted with unique keys",
                    inputs_[input]->name(), QuoteForMessage(key), QuoteForMessage(last_key_))));
  }
  last_key_.assign(key);
  has_last_ = true;
  ++lines_out_;
  return true;
}

bool MergingSource::Next(std::string_view* line) {
  if (!status_.ok()) return false;
  if (!started_) {
    started_ = true;
    for (size_t i = 0; i < inputs_.size(); ++i) {
      std::string_view first;
      if (inputs_[i]->Next(&first)) {
        heap_.push_back({LineKey(first), first, i});
        SiftUp(heap_, heap_.size() - 1);
      } else if (!inputs_[i]->status().ok()) {
        return Fail(inputs_[i]->status().WithContext(inputs_[i]->name()));
      }
    }
  }
  // The line handed out last time is in the top input's buffer: only now
  // may that input move on.
  if (advance_top_) {
    advance_top_ = false;
    if (!Advance(heap_[0].input)) return false;
  }
  if (heap_.empty()) return false;
  const Head head = heap_[0];
  ++lines_in_;
  const Head* second = Second(heap_);
  if (second == nullptr || CompareArchiveKeys(second->key, head.key) != 0) {
    if (!Accept(head.key, head.input)) return false;
    *line = head.line;
    advance_top_ = true;
    return true;
  }
  // Several inputs hold this key: combine them all.
  combined_.assign(head.line);
  const size_t key_size = head.key.size();
  if (!Advance(head.input)) return false;
  while (!heap_.empty() &&
         CompareArchiveKeys(heap_[0].key, std::string_view(combined_).substr(0, key_size)) == 0) {
    ++lines_in_;
    if (Status st = CombineArchiveLineInto(&combined_, heap_[0].line); !st.ok()) {
      return Fail(st.WithContext(fmt::format("merging {}", inputs_[heap_[0].input]->name())));
    }
    if (!Advance(heap_[0].input)) return false;
  }
  if (!Accept(std::string_view(combined_).substr(0, key_size), head.input)) return false;
  *line = combined_;
  return true;
}

Status MergeSortedSources(const std::vector<LineSource*>& inputs, LineSink* out, const MergeOptions& options,
                          MergeStats* stats) {
  MergingSource merged(inputs);
  std::string_view line;
  uint64_t batch_lines = 0, batch_bytes = 0;
  while (merged.Next(&line)) {
    CLICKATRON_RETURN_IF_ERROR(out->Put(line));
    batch_bytes += line.size() + 1;
    if (++batch_lines == 65536) {
      if (options.progress != nullptr) options.progress->Add(batch_lines, batch_bytes);
      batch_lines = batch_bytes = 0;
    }
  }
  if (options.progress != nullptr) options.progress->Add(batch_lines, batch_bytes);
  CLICKATRON_RETURN_IF_ERROR(merged.status());
  if (stats != nullptr) {
    stats->lines_in += merged.lines_in();
    stats->lines_out += merged.lines_out();
  }
  return Status::Ok();
}

}  // namespace clickatron::rebuild
