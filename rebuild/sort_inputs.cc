#include "sort_inputs.h"

#include <sys/stat.h>
#include <unistd.h>

#include <chrono>
#include <map>
#include <memory>
#include <mutex>
#include <utility>
#include <vector>

#include <fmt/format.h>
#include <spdlog/spdlog.h>

#include "clickatron/file_util.h"
#include "clickatron/framed_log.h"
#include "clickatron/key_codec.h"
#include "clickatron/oplog_record.h"
#include "clickatron/parallel_for.h"
#include "convert_line.h"
#include "sortmerge/external_sort.h"
#include "sortmerge/line_blocks.h"
#include "sortmerge/line_io.h"
#include "sortmerge/progress.h"

namespace clickatron::rebuild {

const char* InputFormatName(InputFormat format) {
  switch (format) {
    case InputFormat::kRealtime:
      return "realtime";
    case InputFormat::kArchive:
      return "archive";
    case InputFormat::kLateData:
      return "late";
  }
  return "realtime";
}

namespace {

// SortInputsOptions::accept on a converted line: OK, or the refusal of the
// whole input naming where the line is.
template <typename Where>
Status Accepted(const SortInputsOptions& options, std::string_view converted, const Where& where) {
  if (!options.accept) return Status::Ok();
  const Status refused = options.accept(converted);
  if (refused.ok()) return refused;
  return Status::FailedPrecondition(fmt::format("{}: {}", where(), refused.message()), refused.reason());
}

// A reject file stays readable even when a whole file is garbage.
constexpr uint64_t kMaxRejectLines = 100000;
constexpr uint64_t kProgressBatch = 4096;
constexpr std::string_view kUtf8ByteOrderMark = "\xEF\xBB\xBF";
// Line files are read in blocks of this size, one block at a time per thread.
constexpr size_t kBlockBytes = 1u << 20;

// Counts lines and bad lines; bad ones go to the reject file.
class Intake {
 public:
  Intake(const SortInputsOptions& options, ExternalSorter* sorter, Progress* progress)
      : options_(options), sorter_(sorter), progress_(progress) {}

  // One input line; `where` is only built for a bad line.
  template <typename Where>
  Status Take(std::string_view line, const Where& where) {
    if (line.empty()) return Status::Ok();  // blank lines carry nothing
    ++result.lines;
    result.bytes += line.size() + 1;
    converted_.clear();
    const Status st = options_.format == InputFormat::kArchive ? NormalizeArchiveLine(line, &converted_)
                                                               : ConvertRealtimeLine(line, &converted_);
    if (!st.ok()) {
      CLICKATRON_RETURN_IF_ERROR(Reject(where(), st.message()));
    } else if (Status refused = Accepted(options_, converted_, where); !refused.ok()) {
      return refused;
    } else {
      CLICKATRON_RETURN_IF_ERROR(sorter_->Add(converted_));
    }
    if (++batch_lines_ == kProgressBatch) FlushProgress();
    return Status::Ok();
  }

  // A bad line found by a thread: where ("FILE:LINE") and why.
  using Rejects = std::vector<std::pair<std::string, std::string>>;

  // A thread is done with block `seq` of the current file: its counts and bad
  // lines are taken in file order (a block may finish before the one before
  // it; it then waits here, as data, until that one is in), so the reject
  // file reads as it would from one thread.
  Status CommitBlock(uint64_t seq, Rejects rejects, uint64_t lines, uint64_t bytes) {
    std::lock_guard<std::mutex> lock(commit_mutex_);
    pending_.emplace(seq, Pending{std::move(rejects), lines, bytes});
    while (!pending_.empty() && pending_.begin()->first == next_seq_) {
      Pending& block = pending_.begin()->second;
      result.lines += block.lines;
      result.bytes += block.bytes;
      for (const auto& [where, why] : block.rejects) CLICKATRON_RETURN_IF_ERROR(Reject(where, why));
      pending_.erase(pending_.begin());
      ++next_seq_;
    }
    return Status::Ok();
  }
  // Block numbers start again at 0 in the next file.
  void StartFile() {
    std::lock_guard<std::mutex> lock(commit_mutex_);
    pending_.clear();
    next_seq_ = 0;
  }

  Status Reject(const std::string& where, const std::string& why) {
    ++result.bad_lines;
    if (!rejects_) {
      auto writer = LineWriter::Create(options_.rejects_path + ".tmp");
      if (!writer.ok()) return writer.status();
      rejects_ = std::move(writer).value();
    }
    if (result.bad_lines <= kMaxRejectLines) return rejects_->Put(fmt::format("{}: {}", where, why));
    return Status::Ok();
  }

  void FlushProgress() {
    progress_->Add(batch_lines_, result.bytes - reported_bytes_);
    reported_bytes_ = result.bytes;
    batch_lines_ = 0;
  }

  // Closes the reject file under its final name (or removes a stale one).
  Status FinishRejects() {
    if (!rejects_) {
      ::unlink(options_.rejects_path.c_str());
      return Status::Ok();
    }
    if (result.bad_lines > kMaxRejectLines) {
      CLICKATRON_RETURN_IF_ERROR(rejects_->Put(
          fmt::format("… and {} more bad lines not listed", result.bad_lines - kMaxRejectLines)));
    }
    CLICKATRON_RETURN_IF_ERROR(rejects_->Finish());
    return RenameDurably(options_.rejects_path + ".tmp", options_.rejects_path);
  }

  SortInputsResult result;

 private:
  const SortInputsOptions& options_;
  ExternalSorter* sorter_;
  Progress* progress_;
  std::unique_ptr<LineWriter> rejects_;
  std::string converted_;
  uint64_t batch_lines_ = 0;
  uint64_t reported_bytes_ = 0;

  struct Pending {
    Rejects rejects;
    uint64_t lines = 0;
    uint64_t bytes = 0;
  };
  std::mutex commit_mutex_;
  std::map<uint64_t, Pending> pending_;  // finished blocks after a gap
  uint64_t next_seq_ = 0;
};

// A line file (realtime or archive lines) converted on options.threads
// threads: each takes the next block of lines (line_blocks.h), converts it
// into its own ExternalSorter producer, and hands in its counts and bad
// lines in file order. What comes out is what ReadLineFile gives.
Status ReadLineFileInParallel(const std::string& path, const SortInputsOptions& options, ExternalSorter* sorter,
                              Intake* intake, Progress* progress) {
  auto reader = LineBlockReader::Open(path, kBlockBytes);
  if (!reader.ok()) return reader.status();
  intake->StartFile();
  // One task per thread, each with its own producer, taking blocks until the
  // file ends or a task fails.
  const auto threads = static_cast<size_t>(options.threads);
  const Status conversion = ParallelFor(threads, threads, [&](size_t index, const std::stop_token& stop) {
    ExternalSorter::Producer* producer = sorter->producer(static_cast<int>(index));
    LineBlockReader::Block block;
    std::string converted;
    while (!stop.stop_requested() && (*reader)->Next(&block)) {
      Intake::Rejects rejects;
      uint64_t lines = 0, bytes = 0;
      Status st;
      ForEachBlockLine(block, [&](std::string_view line, uint64_t number) {
        if (!st.ok()) return;
        if (options.strip_cr && !line.empty() && line.back() == '\r') line.remove_suffix(1);
        // A UTF-8 byte order mark before the first line (spreadsheets write
        // one): not part of the namespace it stands in front of.
        if (number == 1 && line.starts_with(kUtf8ByteOrderMark)) line.remove_prefix(kUtf8ByteOrderMark.size());
        if (line.empty()) return;  // blank lines carry nothing
        ++lines;
        bytes += line.size() + 1;
        converted.clear();
        const Status converted_st = options.format == InputFormat::kArchive
                                        ? NormalizeArchiveLine(line, &converted)
                                        : ConvertRealtimeLine(line, &converted);
        if (!converted_st.ok()) {
          rejects.emplace_back(fmt::format("{}:{}", path, number), converted_st.message());
        } else if (Status refused = Accepted(options, converted, [&] { return fmt::format("{}:{}", path, number); });
                   !refused.ok()) {
          st = std::move(refused);
        } else {
          st = producer->Add(converted);
        }
      });
      progress->Add(lines, bytes);
      if (st.ok()) st = intake->CommitBlock(block.seq, std::move(rejects), lines, bytes);
      CLICKATRON_RETURN_IF_ERROR(st);
    }
    return Status::Ok();
  });
  CLICKATRON_RETURN_IF_ERROR(conversion);
  return (*reader)->status();
}

// Late data: frames of "# source=… shard=… seq=…" + realtime lines.
Status ReadLateFile(const std::string& path, const SortInputsOptions& options, Intake* intake,
                    uint64_t* lines_deleted) {
  auto reader = FramedLogReader::Open(path);
  if (!reader.ok()) return reader.status();
  for (uint64_t frame = 1;; ++frame) {
    auto next = (*reader)->Next();
    if (!next.ok()) return next.status().WithContext(path);
    if (!next->has_value()) break;
    const std::string& payload = **next;
    Result<OplogPayload> parsed = ParseOplogPayload(payload);
    if (!parsed.ok()) return parsed.status().WithContext(fmt::format("{} frame {}", path, frame));
    if (parsed->header.kind != OplogHeader::Kind::kBatch) continue;
    uint64_t line_in_frame = 0;
    Status st;
    ForEachPayloadLine(parsed->lines, [&](std::string_view line) {
      ++line_in_frame;
      if (!st.ok()) return;
      if (options.drop_late_line && options.drop_late_line(parsed->header, line)) {
        ++*lines_deleted;
        return;
      }
      st = intake->Take(line, [&] { return fmt::format("{}:frame {}:line {}", path, frame, line_in_frame); });
    });
    CLICKATRON_RETURN_IF_ERROR(st);
  }
  if ((*reader)->truncated_tail()) {
    // A sealed file should end on a whole frame; the torn part is reported.
    CLICKATRON_RETURN_IF_ERROR(intake->Reject(
        fmt::format("{}:byte {}", path, (*reader)->good_bytes()), "torn frame at the end of a sealed late-data file"));
  }
  return Status::Ok();
}

}  // namespace

Result<SortInputsResult> SortInputs(const SortInputsOptions& options) {
  const auto start = std::chrono::steady_clock::now();
  // Line files are converted on every thread, each into its own producer;
  // late-data files (frames) are read by this thread.
  const bool parallel = options.format != InputFormat::kLateData;
  const int threads = std::max(1, options.threads);
  auto sorter = ExternalSorter::Create({.temp_dir = options.temp_dir,
                                        .memory_bytes = options.memory_bytes,
                                        .threads = threads,
                                        .label = options.label,
                                        .producers = parallel ? threads : 0});
  if (!sorter.ok()) return sorter.status();
  uint64_t total_bytes = 0;
  for (const std::string& path : options.inputs) total_bytes += FileSizeOrZero(path);
  Progress progress(options.label + ": reading", total_bytes);
  Intake intake(options, sorter->get(), &progress);
  SortInputsOptions run_options = options;
  run_options.threads = threads;
  uint64_t late_lines_deleted = 0;
  for (const std::string& path : options.inputs) {
    const Status st = parallel ? ReadLineFileInParallel(path, run_options, sorter->get(), &intake, &progress)
                               : ReadLateFile(path, options, &intake, &late_lines_deleted);
    if (!st.ok()) return st;
  }
  if (!parallel) intake.FlushProgress();  // the parallel reader reports per block
  progress.Finish();
  CLICKATRON_RETURN_IF_ERROR(intake.FinishRejects());
  SortInputsResult result = intake.result;
  result.late_lines_deleted = late_lines_deleted;
  if (result.bad_lines > 0) {
    const double ratio = static_cast<double>(result.bad_lines) / static_cast<double>(result.lines);
    if (ratio > options.max_bad_line_ratio) {
      return Status::FailedPrecondition(
          fmt::format("{} of {} lines are bad ({:.4f}%, more than the {:.4f}% allowed by "
                      "[rebuild] max_bad_line_ratio or load --max-bad-line-ratio); nothing was written; see {}",
                      result.bad_lines, result.lines, ratio * 100, options.max_bad_line_ratio * 100,
                      options.rejects_path),
          "TOO_MANY_BAD_LINES");
    }
    spdlog::warn("{}: {} bad lines of {} skipped and listed in {}", options.label, result.bad_lines,
                 result.lines, options.rejects_path);
  }
  const std::string tmp = options.output + ".tmp";
  auto writer = LineWriter::Create(tmp, {.buffer_bytes = 4u << 20, .fsync = true});
  if (!writer.ok()) return writer.status();
  CLICKATRON_RETURN_IF_ERROR((*sorter)->Finish(writer->get()));
  CLICKATRON_RETURN_IF_ERROR((*writer)->Finish());
  CLICKATRON_RETURN_IF_ERROR(RenameDurably(tmp, options.output));
  result.records = (*writer)->lines();
  result.runs = (*sorter)->stats().runs;
  result.seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  return result;
}

}  // namespace clickatron::rebuild
