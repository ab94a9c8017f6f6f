#include "pipeline.h"

#include <fcntl.h>
#include <sys/file.h>
#include <unistd.h>

#include <algorithm>
#include <filesystem>
#include <mutex>
#include <set>

#include <fmt/format.h>
#include <nlohmann/json.hpp>
#include <spdlog/spdlog.h>

#include "archive_state.h"
#include "backup.h"
#include "bulk_load.h"
#include "clickatron/file_util.h"
#include "clickatron/http_client.h"
#include "clickatron/parallel_for.h"
#include "clickatron/unique_fd.h"
#include "clickatron/ymdh.h"
#include "deploy.h"
#include "export.h"
#include "generation.h"
#include "late_inputs.h"
#include "sortmerge/progress.h"
#include "work_dir.h"

namespace clickatron::rebuild {
namespace {

// One rebuild at a time per work_dir (flock: released when the process dies).
class WorkLock {
 public:
  static Result<std::unique_ptr<WorkLock>> Acquire(const std::string& work_dir) {
    CLICKATRON_RETURN_IF_ERROR(MakeDirs(work_dir));
    const std::string path = work_dir + "/lock";
    UniqueFd fd(::open(path.c_str(), O_RDWR | O_CREAT | O_CLOEXEC, 0644));
    if (!fd.valid()) return Status::IoError(fmt::format("open {}", path));
    if (::flock(fd.get(), LOCK_EX | LOCK_NB) != 0) {
      return Status::FailedPrecondition(
          fmt::format("another clickatron-rebuild is running on {} (it holds {})", work_dir, path), "LOCKED");
    }
    return std::unique_ptr<WorkLock>(new WorkLock(std::move(fd)));
  }

 private:
  explicit WorkLock(UniqueFd fd) : fd_(std::move(fd)) {}
  UniqueFd fd_;  // closing it releases the lock
};

std::string NowIso() {
  return FormatIsoTime(
      std::chrono::duration_cast<std::chrono::seconds>(std::chrono::system_clock::now().time_since_epoch()).count());
}

// Generations before `keep` are gone from the serving tier (the backups hold
// them): their builds, and copies fetched from replicas, which are only
// needed while they are the previous generation.
void RemoveOlderGenerations(const WorkDir& work, uint64_t keep) {
  for (const std::string& root : {work.GenRoot(), work.FetchedRoot()}) {
    std::error_code ec;
    if (!std::filesystem::exists(root, ec)) continue;
    for (const auto& entry : std::filesystem::directory_iterator(root, ec)) {
      const std::string name = entry.path().filename().string();
      if (name.empty() || name.find_first_not_of("0123456789") != std::string::npos) continue;
      if (std::stoull(name) < keep) std::filesystem::remove_all(entry.path(), ec);
    }
  }
}

// Steps 4 and 5 for a built generation; each one skipped when done.
Status FinishGeneration(const ClusterConfig& cluster, const GenerationPlan& plan, const Timeouts& timeouts) {
  const WorkDir work(cluster.rebuild.work_dir);
  const uint64_t g = plan.generation;
  if (!FileExists(work.GenDeployed(g))) {
    DeployOptions deploy;
    deploy.cluster = &cluster;
    deploy.generation = g;
    deploy.built_files = plan.shard_files;
    deploy.manifests = plan.manifests;
    deploy.http_timeout_ms = timeouts.http_ms;
    deploy.reload_timeout_ms = timeouts.transfer_ms;
    CLICKATRON_RETURN_IF_ERROR(DeployGeneration(deploy).WithContext(fmt::format("deploying generation {}", g)));
    CLICKATRON_RETURN_IF_ERROR(WriteFileAtomically(work.GenDeployed(g), NowIso() + "\n"));
    spdlog::info("generation {} deployed on every archive replica", g);
  }
  if (!plan.day.empty()) {
    CLICKATRON_RETURN_IF_ERROR(
        TellRealtimeExported(cluster, plan.day, timeouts.http_ms)
            .WithContext(fmt::format("generation {} is deployed, but realtime was not told {} is exported "
                                     "(rerun to retry)",
                                     g, plan.day)));
    spdlog::info("realtime told {} is exported: the ring may clear it", plan.day);
  }
  std::vector<std::string> late_done = plan.late_files;
  late_done.insert(late_done.end(), plan.late_still_sealed.begin(), plan.late_still_sealed.end());
  for (const std::string& late : late_done) {
    CLICKATRON_RETURN_IF_ERROR(MarkLateInputDone(cluster, late, timeouts.http_ms)
                                   .WithContext(fmt::format("generation {} is deployed, but its late-data file was "
                                                            "not marked done (rerun to retry)",
                                                            g)));
  }
  for (const std::string& id : plan.queue_ids) {
    CLICKATRON_RETURN_IF_ERROR(WriteFileAtomically(work.QueueFolded(id), fmt::format("{{\"generation\": {}}}\n", g)));
    ::unlink(work.QueueSorted(id).c_str());  // its data lives in the archive now
  }
  CLICKATRON_RETURN_IF_ERROR(WriteFileAtomically(work.GenFinished(g), NowIso() + "\n"));
  if (!plan.day.empty()) {
    CLICKATRON_RETURN_IF_ERROR(
        WriteFileAtomically(work.DayComplete(plan.day), fmt::format("{{\"generation\": {}}}\n", g)));
  }
  RemoveOlderGenerations(work, g);
  // Old backup copies go last, once this generation is safely finished; a
  // failure to remove them costs disk, not data, so it does not fail the run.
  if (auto pruned = PruneBackups(cluster.rebuild.backup_dir, g, static_cast<uint64_t>(cluster.rebuild.backup_keep));
      !pruned.ok()) {
    spdlog::warn("could not prune old backups: {}", pruned.status().ToString());
  } else if (!pruned->empty()) {
    spdlog::info("removed the backup copies of generations {}..{} (backup_keep = {})", pruned->front(),
                 pruned->back(), cluster.rebuild.backup_keep);
  }
  spdlog::info("generation {} finished (day \"{}\", {} late files, {} loads)", g, plan.day, plan.late_files.size(),
               plan.queue_ids.size());
  return Status::Ok();
}

Status FinishPending(const ClusterConfig& cluster, const Timeouts& timeouts) {
  auto pending = FindPendingGeneration(WorkDir(cluster.rebuild.work_dir));
  if (!pending.ok()) return pending.status();
  if (!pending->has_value()) return Status::Ok();
  const GenerationPlan& plan = **pending;
  spdlog::info("an earlier run built generation {} (day \"{}\") without finishing it: finishing it first",
               plan.generation, plan.day);
  return FinishGeneration(cluster, plan, timeouts);
}

// Step 1: every realtime shard's export of `date`, in parallel.
Status ExportAll(const ClusterConfig& cluster, const std::string& date, const Timeouts& timeouts) {
  const WorkDir work(cluster.rebuild.work_dir);
  CLICKATRON_RETURN_IF_ERROR(MakeDirs(work.DayDir(date)));
  std::vector<int> todo;
  for (int shard = 0; shard < cluster.realtime_shards; ++shard) {
    if (cluster.RealtimeMember(shard) == nullptr) {
      return Status::InvalidArgument(fmt::format("realtime shard {} has no member in {}", shard, cluster.path));
    }
    if (FileExists(work.ExportPath(date, shard))) {
      spdlog::info("export of {} from realtime shard {}: done by an earlier run", date, shard);
    } else {
      todo.push_back(shard);
    }
  }
  if (todo.empty()) return Status::Ok();
  Progress progress(fmt::format("export {}", date), 0);
  std::mutex mutex;
  std::vector<std::string> failures;  // guarded by mutex
  // Every shard is tried, whatever the others do: the error names all that failed.
  const auto threads = static_cast<size_t>(std::max(1, cluster.rebuild.threads));
  const Status exported = ParallelFor(todo.size(), threads, [&](size_t i) {
    const int shard = todo[i];
    const MemberConfig& member = *cluster.RealtimeMember(shard);
    ExportOptions options;
    options.peer = member.listen;
    options.member_name = member.name;
    options.date = date;
    options.admin_token = cluster.admin_token;
    options.cluster_secret = cluster.cluster_secret;
    options.tls = cluster.client_tls;
    options.path = work.ExportPath(date, shard);
    options.timeout_ms = timeouts.export_ms;
    options.progress = &progress;
    auto result = ExportDay(options);
    std::lock_guard<std::mutex> lock(mutex);
    if (!result.ok()) {
      failures.push_back(fmt::format("realtime shard {}: {}", shard, result.status().message()));
    } else {
      spdlog::info("exported {} from realtime shard {} ({}): {} records, {} bytes", date, shard, member.name,
                   result->lines, result->bytes);
    }
    return Status::Ok();
  });
  progress.Finish();
  CLICKATRON_RETURN_IF_ERROR(exported);
  if (!failures.empty()) {
    std::string list;
    for (const std::string& f : failures) list += (list.empty() ? "" : "; ") + f;
    return Status::Unavailable(
        fmt::format("could not export {}; nothing was deployed and the day stays in realtime: {}", date, list),
        "EXPORT_FAILED");
  }
  return Status::Ok();
}

// Step 2: the day's exports converted, sorted and combined.
Status SortDay(const ClusterConfig& cluster, const std::string& date, const std::vector<std::string>& older_days) {
  const WorkDir work(cluster.rebuild.work_dir);
  if (FileExists(work.DaySortedDone(date)) && FileExists(work.DaySorted(date))) {
    spdlog::info("sort of {}: done by an earlier run", date);
    return Status::Ok();
  }
  SortInputsOptions sort;
  for (const std::string& day : older_days) {
    for (int shard = 0; shard < cluster.realtime_shards; ++shard) sort.inputs.push_back(work.ExportPath(day, shard));
  }
  for (int shard = 0; shard < cluster.realtime_shards; ++shard) sort.inputs.push_back(work.ExportPath(date, shard));
  sort.format = InputFormat::kRealtime;
  sort.output = work.DaySorted(date);
  sort.rejects_path = work.DayRejects(date);
  sort.temp_dir = work.TempDir("day-" + date);
  sort.memory_bytes = cluster.rebuild.memory_mb << 20;
  sort.threads = cluster.rebuild.threads;
  sort.max_bad_line_ratio = cluster.rebuild.max_bad_line_ratio;
  sort.label = "sort " + date;
  auto sorted = SortInputs(sort);
  if (!sorted.ok()) return sorted.status().WithContext(fmt::format("sorting {}", date));
  const nlohmann::json marker = {{"lines", sorted->lines},     {"bad_lines", sorted->bad_lines},
                                 {"records", sorted->records}, {"runs", sorted->runs},
                                 {"seconds", sorted->seconds}, {"finished", NowIso()}};
  CLICKATRON_RETURN_IF_ERROR(WriteFileAtomically(work.DaySortedDone(date), marker.dump(2) + "\n"));
  spdlog::info("sorted {}: {} lines ({} bad) -> {} records, {} runs, {:.1f}s", date, sorted->lines,
               sorted->bad_lines, sorted->records, sorted->runs, sorted->seconds);
  return Status::Ok();
}

}  // namespace

namespace {

// Days before `date` that some realtime shard still holds and has not been
// told are exported: a day that left the ring unexported (a missed night, or
// the first Yesterday of a new cluster). They must be folded before `date`,
// because readers ignore realtime days the archive already reaches.
Result<std::vector<std::string>> UnexportedDaysBefore(const ClusterConfig& cluster, const std::string& date,
                                                      int timeout_ms) {
  std::set<std::string> days;
  BlockingHttpClient client(cluster);
  for (int shard = 0; shard < cluster.realtime_shards; ++shard) {
    const MemberConfig* member = cluster.RealtimeMember(shard);
    HttpRequestSpec spec;
    spec.target = "/ring";
    spec.timeout_ms = timeout_ms;
    HttpResponse r = client.Fetch(member->listen, spec);
    if (!r.ok() || r.status_code != 200) {
      return Status::Unavailable(fmt::format("realtime shard {} ({}) did not answer /ring: {}", shard, member->name,
                                             r.ok() ? std::to_string(r.status_code) : r.transport.message()),
                                 "EXPORT_FAILED");
    }
    auto j = nlohmann::json::parse(r.body, nullptr, false);
    if (j.is_discarded() || !j["data"]["stores"].is_array()) {
      return Status::Corruption(fmt::format("realtime shard {}: /ring is not the expected JSON", shard));
    }
    for (const auto& store : j["data"]["stores"]) {
      std::string day = store.value("date", "");
      if (!day.empty() && day < date && store.value("state", "") != "exported") days.insert(day);
    }
  }
  return std::vector<std::string>(days.begin(), days.end());
}

// A shard that never had `day` (it was added later, or cleared it) has an
// empty export: write it so the export step does not ask for it.
Status WriteEmptyExportsWhereAbsent(const ClusterConfig& cluster, const std::string& day, int timeout_ms) {
  const WorkDir work(cluster.rebuild.work_dir);
  CLICKATRON_RETURN_IF_ERROR(MakeDirs(work.DayDir(day)));
  BlockingHttpClient client(cluster);
  for (int shard = 0; shard < cluster.realtime_shards; ++shard) {
    if (FileExists(work.ExportPath(day, shard))) continue;
    HttpRequestSpec spec;
    spec.target = "/ring";
    spec.timeout_ms = timeout_ms;
    HttpResponse r = client.Fetch(cluster.RealtimeMember(shard)->listen, spec);
    if (!r.ok() || r.status_code != 200) continue;  // the export step reports the shard
    auto j = nlohmann::json::parse(r.body, nullptr, false);
    bool has_day = false;
    if (!j.is_discarded() && j["data"]["stores"].is_array()) {
      for (const auto& store : j["data"]["stores"]) has_day |= store.value("date", "") == day;
    }
    if (!has_day) CLICKATRON_RETURN_IF_ERROR(WriteFileAtomically(work.ExportPath(day, shard), ""));
  }
  return Status::Ok();
}

// Older days folded into `date`'s generation are recorded beside it, so a
// rerun after a crash tells realtime about them too (and never folds them
// again: each gets its DayComplete marker once the generation is deployed).
std::string OlderDaysPath(const WorkDir& work, const std::string& date) { return work.DayDir(date) + "/older-days.json"; }

Status TellOlderDaysExported(const ClusterConfig& cluster, const std::string& date, const Timeouts& timeouts) {
  const WorkDir work(cluster.rebuild.work_dir);
  auto text = ReadFileToString(OlderDaysPath(work, date));
  if (!text.ok()) return Status::Ok();  // none were folded with this day
  auto days = nlohmann::json::parse(*text, nullptr, false);
  if (days.is_discarded() || !days.is_array()) return Status::Corruption(OlderDaysPath(work, date) + " is not a JSON list");
  for (const auto& d : days) {
    const std::string day = d.get<std::string>();
    CLICKATRON_RETURN_IF_ERROR(TellRealtimeExported(cluster, day, timeouts.http_ms));
    CLICKATRON_RETURN_IF_ERROR(
        WriteFileAtomically(work.DayComplete(day), fmt::format("{{\"folded_with\": \"{}\"}}\n", date)));
  }
  return Status::Ok();
}

}  // namespace

Status RunDay(const ClusterConfig& cluster, const RunOptions& options) {
  if (Result<int64_t> day = ParseDate(options.date); !day.ok()) return day.status();
  const WorkDir work(cluster.rebuild.work_dir);
  auto lock = WorkLock::Acquire(work.root());
  if (!lock.ok()) return lock.status();
  if (FileExists(work.DayComplete(options.date))) {
    CLICKATRON_RETURN_IF_ERROR(TellOlderDaysExported(cluster, options.date, options.timeouts));
    spdlog::info("{} is already in a deployed generation and exported: nothing to do", options.date);
    return Status::Ok();
  }
  CLICKATRON_RETURN_IF_ERROR(FinishPending(cluster, options.timeouts));
  if (FileExists(work.DayComplete(options.date))) {
    return TellOlderDaysExported(cluster, options.date, options.timeouts);
  }

  auto previous = ReadServingArchive(cluster, options.timeouts.http_ms, options.timeouts.transfer_ms);
  if (!previous.ok()) return previous.status();
  if (!options.force && !previous->last_day.empty() && options.date <= previous->last_day) {
    return Status::FailedPrecondition(
        fmt::format("the archive (generation {}) already reaches {}; folding {} again would count it twice. "
                    "Use --force if {} is really not in it",
                    previous->generation, previous->last_day, options.date, options.date),
        "ALREADY_ARCHIVED");
  }
  CLICKATRON_RETURN_IF_ERROR(ExportAll(cluster, options.date, options.timeouts));
  // Days before this one that the ring still holds unexported (a missed
  // night, the first Yesterday of a new cluster) go into the same generation:
  // readers ignore realtime days the archive reaches, so they cannot wait.
  // The list is fixed by the first run that sorts this day.
  std::vector<std::string> older;
  if (auto saved = ReadFileToString(OlderDaysPath(work, options.date)); saved.ok()) {
    auto j = nlohmann::json::parse(*saved, nullptr, false);
    if (!j.is_discarded() && j.is_array()) older = j.get<std::vector<std::string>>();
  } else {
    auto found = UnexportedDaysBefore(cluster, options.date, options.timeouts.http_ms);
    if (!found.ok()) return found.status();
    for (const std::string& day : *found) {
      if (!FileExists(work.DayComplete(day))) older.push_back(day);
    }
    CLICKATRON_RETURN_IF_ERROR(MakeDirs(work.DayDir(options.date)));
    CLICKATRON_RETURN_IF_ERROR(WriteFileAtomically(OlderDaysPath(work, options.date), nlohmann::json(older).dump() + "\n"));
  }
  for (const std::string& day : older) {
    spdlog::warn("{} is still in the realtime ring and was never exported: folding it with {}", day, options.date);
    CLICKATRON_RETURN_IF_ERROR(WriteEmptyExportsWhereAbsent(cluster, day, options.timeouts.http_ms));
    CLICKATRON_RETURN_IF_ERROR(ExportAll(cluster, day, options.timeouts));
  }
  CLICKATRON_RETURN_IF_ERROR(SortDay(cluster, options.date, older));

  BuildOptions build;
  build.cluster = &cluster;
  build.previous = &previous.value();
  build.day = options.date;
  build.day_sorted = work.DaySorted(options.date);
  build.http_timeout_ms = options.timeouts.http_ms;
  build.late_transfer_timeout_ms = options.timeouts.export_ms;
  auto plan = BuildGeneration(build);
  if (!plan.ok()) return plan.status();
  CLICKATRON_RETURN_IF_ERROR(FinishGeneration(cluster, *plan, options.timeouts));
  return TellOlderDaysExported(cluster, options.date, options.timeouts);
}

Status LoadHistory(const ClusterConfig& cluster, const LoadOptions& options) {
  auto queued = QueueBulkLoad(cluster, {options.files, options.format, options.max_bad_line_ratio});
  if (!queued.ok()) return queued.status();
  if (!options.now) {
    spdlog::info("load {} is queued for the next generation", queued->id);
    return Status::Ok();
  }
  const WorkDir work(cluster.rebuild.work_dir);
  auto lock = WorkLock::Acquire(work.root());
  if (!lock.ok()) return lock.status().WithContext(fmt::format("load {} stays queued", queued->id));
  CLICKATRON_RETURN_IF_ERROR(FinishPending(cluster, options.timeouts));
  if (FileExists(work.QueueFolded(queued->id))) return Status::Ok();
  auto previous = ReadServingArchive(cluster, options.timeouts.http_ms, options.timeouts.transfer_ms);
  if (!previous.ok()) return previous.status();
  BuildOptions build;
  build.cluster = &cluster;
  build.previous = &previous.value();
  build.include_late = false;  // late data waits for the nightly run
  build.include_queue = true;
  auto plan = BuildGeneration(build);
  if (!plan.ok()) return plan.status();
  return FinishGeneration(cluster, *plan, options.timeouts);
}

}  // namespace clickatron::rebuild
