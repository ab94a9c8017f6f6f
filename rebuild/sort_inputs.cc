#include "sort_inputs.h"

#include <sys/stat.h>
#include <unistd.h>

#include <chrono>
#include <memory>

#include <fmt/format.h>
#include <spdlog/spdlog.h>

#include "clickatron/file_util.h"
#include "clickatron/framed_log.h"
#include "clickatron/key_codec.h"
#include "clickatron/oplog_record.h"
#include "convert_line.h"
#include "external_sort.h"
#include "line_io.h"
#include "progress.h"

namespace clickatron::rebuild {
namespace {

// A reject file stays readable even when a whole file is garbage.
constexpr uint64_t kMaxRejectLines = 100000;
constexpr uint64_t kProgressBatch = 4096;

uint64_t SizeOf(const std::string& path) {
  struct stat st;
  return ::stat(path.c_str(), &st) == 0 ? static_cast<uint64_t>(st.st_size) : 0;
}

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
    } else {
      CLICKATRON_RETURN_IF_ERROR(sorter_->Add(converted_));
    }
    if (++batch_lines_ == kProgressBatch) FlushProgress();
    return Status::Ok();
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
};

Status ReadLineFile(const std::string& path, const SortInputsOptions& options, Intake* intake) {
  auto reader = LineReader::Open(path, {.buffer_bytes = 1u << 20, .strip_cr = options.strip_cr});
  if (!reader.ok()) return reader.status();
  LineReader& r = **reader;
  std::string_view line;
  while (r.Next(&line)) {
    CLICKATRON_RETURN_IF_ERROR(
        intake->Take(line, [&] { return fmt::format("{}:{}", path, r.line_number()); }));
  }
  return r.status();
}

// Late data: frames of "# source=… shard=… seq=…" + realtime lines.
Status ReadLateFile(const std::string& path, Intake* intake) {
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
  auto sorter = ExternalSorter::Create({.temp_dir = options.temp_dir,
                                        .memory_bytes = options.memory_bytes,
                                        .threads = options.threads,
                                        .label = options.label});
  if (!sorter.ok()) return sorter.status();
  uint64_t total_bytes = 0;
  for (const std::string& path : options.inputs) total_bytes += SizeOf(path);
  Progress progress(options.label + ": reading", total_bytes);
  Intake intake(options, sorter->get(), &progress);
  for (const std::string& path : options.inputs) {
    const Status st = options.format == InputFormat::kLateData ? ReadLateFile(path, &intake)
                                                               : ReadLineFile(path, options, &intake);
    if (!st.ok()) return st;
  }
  intake.FlushProgress();
  progress.Finish();
  CLICKATRON_RETURN_IF_ERROR(intake.FinishRejects());
  SortInputsResult result = intake.result;
  if (result.bad_lines > 0) {
    const double ratio = static_cast<double>(result.bad_lines) / static_cast<double>(result.lines);
    if (ratio > options.max_bad_line_ratio) {
      return Status::FailedPrecondition(
          fmt::format("{} of {} lines are bad ({:.4f}%, more than the {:.4f}% allowed by "
                      "rebuild.max_bad_line_ratio); nothing was written; see {}",
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
