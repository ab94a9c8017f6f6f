// The final merge split by key range across threads; see range_merge.h.
#include "sortmerge/range_merge.h"

#include <unistd.h>

#include <algorithm>
#include <stop_token>

#include <fmt/format.h>

#include "clickatron/parallel_for.h"
#include "clickatron/record.h"

namespace clickatron::rebuild {
namespace {

constexpr size_t kMinBuffer = 4096;
constexpr size_t kMaxBuffer = 4u << 20;

// Cut positions: cuts[i][r] is where range r of input i starts; cuts[i][R]
// is the input's end.
using Cuts = std::vector<std::vector<uint64_t>>;

// Up to threads - 1 pivots: the keys where the sampled bytes before them
// first reach 1/threads, 2/threads, … of the total. Increasing, so equal
// keys never give an empty range between them.
std::vector<std::string> ChoosePivots(const std::vector<const RangeInput*>& inputs, int threads) {
  std::vector<KeySample> samples;
  for (const RangeInput* input : inputs) input->Sample(&samples);
  std::sort(samples.begin(), samples.end(),
            [](const KeySample& a, const KeySample& b) { return CompareArchiveKeys(a.key, b.key) < 0; });
  uint64_t total = 0;
  for (const KeySample& s : samples) total += s.bytes;
  std::vector<std::string> pivots;
  const auto parts = static_cast<uint64_t>(threads);
  uint64_t before = 0;
  uint64_t next = 1;
  for (const KeySample& s : samples) {
    while (next < parts && before >= total * next / parts) {
      if (before > 0 && (pivots.empty() || CompareArchiveKeys(s.key, pivots.back()) > 0)) pivots.push_back(s.key);
      ++next;
    }
    before += s.bytes;
  }
  return pivots;
}

// Fails every Put once another range has failed, so no thread merges on
// for nothing.
class StopOnFailureSink : public LineSink {
 public:
  StopOnFailureSink(LineSink* inner, std::stop_token stop) : inner_(inner), stop_(std::move(stop)) {}
  Status Put(std::string_view line) override {
    if (stop_.stop_requested()) return Status::Internal("stopped: another range failed");
    return inner_->Put(line);
  }

 private:
  LineSink* inner_;
  std::stop_token stop_;
};

Status MergeRange(const std::vector<const RangeInput*>& inputs, const Cuts& cuts, size_t range, size_t buffer_bytes,
                  LineSink* out, Progress* progress, MergeStats* stats) {
  std::vector<std::unique_ptr<LineSource>> owned;
  std::vector<LineSource*> sources;  // in input order: ties go to the lower input
  for (size_t i = 0; i < inputs.size(); ++i) {
    if (cuts[i][range] == cuts[i][range + 1]) continue;
    auto source = inputs[i]->Open(cuts[i][range], cuts[i][range + 1], buffer_bytes);
    if (!source.ok()) return source.status();
    sources.push_back(source->get());
    owned.push_back(std::move(source).value());
  }
  return MergeSortedSources(sources, out, {.progress = progress}, stats);
}

// Appends the lines of `path` (written by a range's thread) to `out`: a
// file writer copies the file whole, other sinks get it line by line.
Status AppendFile(const std::string& path, uint64_t lines, LineSink* out, size_t buffer_bytes) {
  if (auto* writer = dynamic_cast<LineWriter*>(out)) return writer->AppendFile(path, lines);
  auto reader = LineReader::Open(path, {.buffer_bytes = buffer_bytes});
  if (!reader.ok()) return reader.status();
  std::string_view line;
  while ((*reader)->Next(&line)) CLICKATRON_RETURN_IF_ERROR(out->Put(line));
  return (*reader)->status();
}

// Removes the ranges' temp files however the merge ends.
struct TempFiles {
  std::vector<std::string> paths;
  ~TempFiles() {
    for (const std::string& path : paths) ::unlink(path.c_str());
  }
};

}  // namespace

Status MergeByKeyRange(const std::vector<const RangeInput*>& inputs, LineSink* out,
                       const RangeMergeOptions& options, MergeStats* stats, int* ranges_merged) {
  uint64_t total = 0;
  for (const RangeInput* input : inputs) total += input->BytesBefore(input->end());
  std::vector<std::string> pivots;
  if (options.threads > 1 && total >= options.min_bytes) pivots = ChoosePivots(inputs, options.threads);
  Cuts cuts(inputs.size());
  for (size_t i = 0; i < inputs.size(); ++i) {
    cuts[i].push_back(0);
    for (const std::string& pivot : pivots) {
      auto at = inputs[i]->Find(pivot);
      if (!at.ok()) return at.status().WithContext("choosing where to split the final merge");
      cuts[i].push_back(*at);
    }
    cuts[i].push_back(inputs[i]->end());
  }
  // The pivots came from samples; the cuts are exact. A range with more
  // than 3/4 of the bytes (one key holding most of them) gains too little
  // to pay for writing the other ranges twice: one thread then.
  size_t ranges = pivots.size() + 1;
  if (ranges > 1) {
    uint64_t largest = 0;
    for (size_t r = 0; r < ranges; ++r) {
      uint64_t bytes = 0;
      for (size_t i = 0; i < inputs.size(); ++i) {
        bytes += inputs[i]->BytesBefore(cuts[i][r + 1]) - inputs[i]->BytesBefore(cuts[i][r]);
      }
      largest = std::max(largest, bytes);
    }
    if (largest > total / 4 * 3) {
      ranges = 1;
      for (auto& input_cuts : cuts) input_cuts = {0, input_cuts.back()};
    }
  }
  if (ranges_merged != nullptr) *ranges_merged = static_cast<int>(ranges);
  // Each range's readers, and its temp file writer, share its part of the budget.
  const size_t buffer_bytes = static_cast<size_t>(
      std::clamp<uint64_t>(options.buffer_budget / (ranges * (inputs.size() + 1)), kMinBuffer, kMaxBuffer));
  if (ranges == 1) return MergeRange(inputs, cuts, 0, buffer_bytes, out, options.progress, stats);

  TempFiles temp;
  for (size_t r = 1; r < ranges; ++r) temp.paths.push_back(fmt::format("{}/final-range-{}.csv", options.temp_dir, r));
  std::vector<MergeStats> range_stats(ranges);
  // A thread per range; range 0, task 0 of ParallelFor, runs on this thread
  // and writes `out` itself.
  CLICKATRON_RETURN_IF_ERROR(ParallelFor(ranges, ranges, [&](size_t r, const std::stop_token& stop) -> Status {
    if (r == 0) {
      StopOnFailureSink sink(out, stop);
      return MergeRange(inputs, cuts, 0, buffer_bytes, &sink, options.progress, &range_stats[0]);
    }
    auto writer = LineWriter::Create(temp.paths[r - 1], {.buffer_bytes = buffer_bytes, .fsync = false});
    if (!writer.ok()) return writer.status();
    StopOnFailureSink sink(writer->get(), stop);
    CLICKATRON_RETURN_IF_ERROR(MergeRange(inputs, cuts, r, buffer_bytes, &sink, options.progress, &range_stats[r]));
    return (*writer)->Finish();
  }));
  // The readers are closed: the copy may use the whole budget.
  const auto copy_bytes =
      static_cast<size_t>(std::clamp<uint64_t>(options.buffer_budget / 2, kMinBuffer, kMaxBuffer));
  for (size_t r = 1; r < ranges; ++r) {
    CLICKATRON_RETURN_IF_ERROR(AppendFile(temp.paths[r - 1], range_stats[r].lines_out, out, copy_bytes));
  }
  for (const MergeStats& s : range_stats) {
    if (stats == nullptr) break;
    stats->lines_in += s.lines_in;
    stats->lines_out += s.lines_out;
  }
  return Status::Ok();
}

}  // namespace clickatron::rebuild
