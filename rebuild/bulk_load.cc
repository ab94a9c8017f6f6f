#include "bulk_load.h"

#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <filesystem>
#include <system_error>

#include <fmt/format.h>
#include <nlohmann/json.hpp>
#include <spdlog/spdlog.h>

#include "clickatron/file_lock.h"
#include "clickatron/file_util.h"
#include "clickatron/ymdh.h"
#include "load_identity.h"

namespace clickatron::rebuild {
namespace {

int64_t NowUnix() {
  return std::chrono::duration_cast<std::chrono::seconds>(std::chrono::system_clock::now().time_since_epoch())
      .count();
}

// Sorts by time: "load-20120326T021000Z-1234". The order of the queue is
// the order of its ids, and a restatement supersedes only what was queued
// before it, so an id is always after every earlier one (two loads in one
// second, or a clock set back, get the last id's time and a later suffix).
std::string NewLoadId(const std::vector<PriorLoad>& prior) {
  std::string iso = FormatIsoTime(NowUnix());  // 2012-03-26T02:10:00Z
  iso.erase(std::remove_if(iso.begin(), iso.end(), [](char c) { return c == '-' || c == ':'; }), iso.end());
  std::string id = fmt::format("load-{}-{}", iso, ::getpid());
  if (prior.empty() || prior.back().id < id) return id;
  // "load-<time>-<n>": the same time with a suffix that sorts after n's.
  const std::string& last = prior.back().id;
  const size_t dash = last.rfind('-');
  return fmt::format("{}-{}9{}", last.substr(0, dash), last.substr(dash + 1), ::getpid());
}

// Bytes under `path` (a file or a tree); 0 for what cannot be read.
uint64_t BytesUnder(const std::filesystem::path& path) {
  std::error_code ec;
  if (!std::filesystem::is_directory(path, ec)) return FileSizeOrZero(path.string());
  uint64_t bytes = 0;
  for (auto it = std::filesystem::recursive_directory_iterator(path, ec);
       !ec && it != std::filesystem::recursive_directory_iterator(); it.increment(ec)) {
    if (it->is_regular_file(ec)) bytes += FileSizeOrZero(it->path().string());
  }
  return bytes;
}

}  // namespace

Status SweepUnqueuedLoads(const WorkDir& work) {
  namespace fs = std::filesystem;
  std::error_code ec;
  if (!fs::is_directory(work.QueueRoot(), ec)) return Status::Ok();
  std::vector<std::string> ids;
  for (const auto& entry : fs::directory_iterator(work.QueueRoot(), ec)) {
    if (entry.is_directory() && !FileExists(work.QueueDone(entry.path().filename().string()))) {
      ids.push_back(entry.path().filename().string());
    }
  }
  if (ec) return Status::IoError(fmt::format("list {}: {}", work.QueueRoot(), ec.message()));
  for (const std::string& id : ids) {
    const std::string dir = work.QueueDir(id);
    // What a sort leaves: its runs, its output and rejects being written,
    // a sorted output a restatement's step refused. Kept: the reasons.
    std::vector<fs::path> partial{work.TempDir(id)};
    for (const auto& entry : fs::directory_iterator(dir, ec)) {
      const std::string name = entry.path().filename().string();
      if (name != "failed.txt" && name != "rejects.txt") partial.push_back(entry.path());
    }
    if (ec) return Status::IoError(fmt::format("list {}: {}", dir, ec.message()));
    uint64_t bytes = 0;
    for (const fs::path& path : partial) {
      bytes += BytesUnder(path);
      fs::remove_all(path, ec);
      if (ec) return Status::IoError(fmt::format("remove {}: {}", path.string(), ec.message()));
    }
    if (!FileExists(dir + "/failed.txt")) {
      CLICKATRON_RETURN_IF_ERROR(WriteFileAtomically(
          dir + "/failed.txt", "INTERRUPTED: the load stopped before it was queued (killed, or its host went "
                               "down); nothing of it was queued: run it again\n"));
      spdlog::warn("load {} was interrupted before it was queued: its partial files ({} bytes) removed, "
                   "{}/failed.txt says so; nothing of it was queued",
                   id, bytes, dir);
    } else if (bytes > 0) {
      spdlog::info("load {} failed earlier: its partial files ({} bytes) removed", id, bytes);
    }
  }
  return Status::Ok();
}

Result<QueuedLoad> QueueBulkLoad(const ClusterConfig& cluster, const BulkLoadOptions& options) {
  if (options.files.empty()) return Status::InvalidArgument("no data files to load");
  for (const std::string& file : options.files) {
    if (!FileExists(file)) return Status::NotFound(fmt::format("data file {} does not exist", file));
  }
  const WorkDir work(cluster.rebuild.work_dir);
  const std::string format = InputFormatName(options.format);
  // One load queued at a time, from its check against the earlier ones to
  // its marker: two runs of the same command at once would both pass the
  // check (sorting takes minutes).
  auto lock = FileLock::Acquire(work.QueueRoot(), "lock",
                                fmt::format("another load is being queued in {}", work.QueueRoot()));
  if (!lock.ok()) return lock.status();
  // Under the lock no other load is being queued: any load without its
  // marker is one that failed or was stopped, and its files only take room.
  CLICKATRON_RETURN_IF_ERROR(SweepUnqueuedLoads(work));
  Result<std::vector<LoadInput>> inputs = IdentifyLoadInputs(options.files, options.force || !options.check_prior);
  if (!inputs.ok()) return inputs.status();
  Result<std::vector<PriorLoad>> prior = ReadPriorLoads(work);
  if (!prior.ok()) return prior.status();
  Result<std::optional<std::string>> same = std::optional<std::string>();
  if (options.check_prior) same = MatchPriorLoads(*inputs, format, *prior, options.force);
  if (!same.ok()) return same.status();
  QueuedLoad load;
  if (same->has_value()) {
    spdlog::info("these files are load {}, queued and not yet folded: not queued again", **same);
    load.id = **same;
    load.already_queued = true;
    return load;
  }
  load.id = NewLoadId(*prior);
  const std::string dir = work.QueueDir(load.id);
  CLICKATRON_RETURN_IF_ERROR(MakeDirs(dir));
  SortInputsOptions sort;
  sort.inputs = options.files;
  sort.format = options.format;
  sort.output = work.QueueSorted(load.id);
  sort.rejects_path = work.QueueRejects(load.id);
  sort.temp_dir = work.TempDir(load.id);
  sort.memory_bytes = cluster.rebuild.memory_mb << 20;
  sort.threads = cluster.rebuild.threads;
  sort.max_bad_line_ratio = options.max_bad_line_ratio.value_or(cluster.rebuild.max_bad_line_ratio);
  sort.strip_cr = true;
  sort.label = "load " + load.id;
  sort.accept = options.accept;
  Result<SortInputsResult> sorted = SortInputs(sort);
  if (!sorted.ok()) {
    // Kept for the operator to read; without queued.done it is never folded.
    (void)WriteFileAtomically(dir + "/failed.txt", sorted.status().ToString() + "\n");
    return sorted.status().WithContext(fmt::format("load {} not queued", load.id));
  }
  if (options.before_marker) {
    const Status prepared = options.before_marker(load.id);
    if (!prepared.ok()) {
      (void)WriteFileAtomically(dir + "/failed.txt", prepared.ToString() + "\n");
      return prepared.WithContext(fmt::format("{} not queued", load.id));
    }
  }
  load.figures = *sorted;
  if (sorted->bad_lines > 0) load.rejects_path = sort.rejects_path;
  nlohmann::json marker = {
      {"id", load.id},
      {"files", options.files},
      {"inputs", LoadInputsJson(*inputs)},
      {"format", format},
      {"lines", sorted->lines},
      {"bad_lines", sorted->bad_lines},
      {"records", sorted->records},
      {"created", FormatIsoTime(NowUnix())},
  };
  CLICKATRON_RETURN_IF_ERROR(WriteFileAtomically(work.QueueDone(load.id), marker.dump(2) + "\n"));
  spdlog::info("load {} queued: {} lines ({} bad) -> {} records in {:.1f}s", load.id, sorted->lines,
               sorted->bad_lines, sorted->records, sorted->seconds);
  return load;
}

Result<std::vector<std::string>> PendingLoads(const WorkDir& work_dir) {
  Result<std::vector<PriorLoad>> loads = ReadPriorLoads(work_dir);
  if (!loads.ok()) return loads.status();
  std::vector<std::string> ids;
  for (const PriorLoad& load : *loads) {
    if (!load.folded_into) ids.push_back(load.id);
  }
  return ids;
}

}  // namespace clickatron::rebuild
