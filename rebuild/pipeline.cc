#include "pipeline.h"

#include <unistd.h>

#include <algorithm>
#include <filesystem>
#include <mutex>
#include <map>
#include <set>

#include <fmt/format.h>
#include <nlohmann/json.hpp>
#include <spdlog/spdlog.h>

#include "archive_state.h"
#include "backup.h"
#include "bulk_load.h"
#include "restate.h"
#include "ring_days.h"
#include "clickatron/file_lock.h"
#include "clickatron/file_util.h"
#include "clickatron/http_client.h"
#include "clickatron/parallel_for.h"
#include "clickatron/realtime_shard_map.h"
#include "clickatron/ymdh.h"
#include "deploy.h"
#include "engine/engine.h"
#include "deletions.h"
#include "export.h"
#include "generation.h"
#include "late_inputs.h"
#include "sort_shard_task.h"
#include "sortmerge/progress.h"
#include "work_dir.h"

namespace clickatron::rebuild {
namespace {

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
    // Before the deploy: reads of g (and later generations) need not hide
    // the hours of the deletions it took out.
    TellDeletionsFolded(cluster, plan.deletions_folded, g, timeouts.http_ms);
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
        TellRealtimeExported(cluster, plan.day, g, timeouts.http_ms)
            .WithContext(fmt::format("generation {} is deployed, but realtime was not told {} is exported "
                                     "(rerun to retry)",
                                     g, plan.day)));
    spdlog::info("realtime told {} is exported: the ring may clear it", plan.day);
  }
  // Days the ring still held unexported, folded with plan.day: marked
  // complete here, with the generation (a run for a later day finishes this
  // generation first, so it never exports them again).
  for (const std::string& day : plan.older_days) {
    CLICKATRON_RETURN_IF_ERROR(
        TellRealtimeExported(cluster, day, g, timeouts.http_ms)
            .WithContext(fmt::format("generation {} is deployed, but realtime was not told {} (folded with {}) is "
                                     "exported (rerun to retry)",
                                     g, day, plan.day)));
    CLICKATRON_RETURN_IF_ERROR(MakeDirs(work.DayDir(day)));  // it has no tasks of its own
    CLICKATRON_RETURN_IF_ERROR(
        WriteFileAtomically(work.DayComplete(day), fmt::format("{{\"folded_with\": \"{}\"}}\n", plan.day)));
  }
  // Every shard learns how far the archive now reaches: days at or before
  // it are never open again, and any the ring still holds unexported (ones
  // DaysToExport left out) are marked exported. Best effort: a shard that is
  // down learns it from the archive when it starts, or from the next run.
  if (!plan.last_day.empty()) {
    if (Status told = TellRealtimeArchivedThrough(cluster, plan.last_day, g, timeouts.http_ms); !told.ok()) {
      spdlog::warn("realtime was not told the archive reaches {}: {}", plan.last_day, told.ToString());
    }
  }
  std::vector<std::string> late_done = plan.late_files;
  late_done.insert(late_done.end(), plan.late_still_sealed.begin(), plan.late_still_sealed.end());
  // A file not marked done (its API node went down after the fetch, or left
  // the cluster file) is no reason to stop: the deployed manifests name it,
  // so no later run folds it again, and the next run that finds it still
  // sealed on its node marks it done. Failing here instead stopped every
  // later night until that node came back.
  for (const std::string& late : late_done) {
    if (Status st = MarkLateInputDone(cluster, late, timeouts.http_ms); !st.ok()) {
      spdlog::warn("late data: {} is in generation {} but was not marked done on its API node ({}); the next run "
                   "marks it done and does not fold it again",
                   late, g, st.ToString());
    }
  }
  for (const std::string& id : plan.queue_ids) {
    CLICKATRON_RETURN_IF_ERROR(WriteFileAtomically(work.QueueFolded(id), fmt::format("{{\"generation\": {}}}\n", g)));
    ::unlink(work.QueueSorted(id).c_str());  // its data lives in the archive now
  }
  // Deployed, and its late files rewritten without what deletions took out:
  // the deletions' owners can see whether any file still holds them.
  TellDeletionsFolded(cluster, plan.deletions_folded, g, timeouts.http_ms, /*deployed=*/true);
  CLICKATRON_RETURN_IF_ERROR(WriteFileAtomically(work.GenFinished(g), NowIso() + "\n"));
  if (!plan.day.empty()) {
    CLICKATRON_RETURN_IF_ERROR(MakeDirs(work.DayDir(plan.day)));
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
  const WorkDir work(cluster.rebuild.work_dir);
  const bool deployed = FileExists(work.GenDeployed(plan.generation));
  // Built on plan.previous_generation: deployed (or finished) over anything
  // else (another rebuild host moved the archive on meanwhile), it would
  // drop that generation's days, or fold its own day a second time on top
  // of them. Deployed and since rolled back on every replica (operations.md
  // section 6) before its run finished, finishing it would tell realtime its
  // days are exported (the ring may clear days the archive lacks now) and
  // mark them complete: it is built anew instead.
  bool answered = false, served = false;
  std::string down;
  for (const ReplicaState& replica : AskArchiveReplicas(cluster, timeouts.http_ms)) {
    if (!replica.status.ok()) {
      down += (down.empty() ? "" : ", ") + replica.member->name;
      continue;
    }
    answered = true;
    const uint64_t serving = replica.manifest ? replica.manifest->generation : 0;
    // This plan's own file (another host may have built a generation of the
    // same number, another file): half-deployed, or deployed.
    if (serving == plan.generation && replica.shard < static_cast<int>(plan.manifests.size()) &&
        replica.manifest->crc32 == plan.manifests[static_cast<size_t>(replica.shard)].crc32) {
      served = true;
      continue;
    }
    // Not moved on: the base itself, or a replica behind it (a new archive
    // shard's member with no file yet, one that lags and catches up, or one
    // rolled back).
    if (serving <= plan.previous_generation) continue;
    return Status::FailedPrecondition(
        fmt::format("generation {} was built on generation {}, but {} now serves generation {}: another rebuild "
                    "moved the archive on. Deploying {} would replace it; remove {} to drop the unfinished "
                    "generation (its day is exported again by the next run)",
                    plan.generation, plan.previous_generation, replica.member->name, serving, plan.generation,
                    work.GenDir(plan.generation)),
        "STALE_PENDING_GENERATION");
  }
  if (deployed && answered && !served) {
    if (!down.empty()) {
      // Those that answer may be ones that lag behind the down ones.
      return Status::Unavailable(
          fmt::format("generation {} was deployed by an earlier run, no replica that answers serves it, and {} did "
                      "not answer: whether it was rolled back cannot be told; start them and rerun",
                      plan.generation, down),
          "REPLICA_UNAVAILABLE");
    }
    spdlog::warn("generation {} was deployed by an earlier run, but no archive replica serves it now (a rollback): "
                 "it is not finished, and the next build makes generation {} anew",
                 plan.generation, plan.generation);
    std::error_code ec;
    std::filesystem::remove_all(work.GenDir(plan.generation), ec);
    if (ec) return Status::Internal(fmt::format("removing {}: {}", work.GenDir(plan.generation), ec.message()));
    return Status::Ok();
  }
  spdlog::info("an earlier run built generation {} (day \"{}\") without finishing it: finishing it first",
               plan.generation, plan.day);
  return FinishGeneration(cluster, plan, timeouts);
}

std::string SortTaskDir(const WorkDir& work, const std::string& date, int shard) {
  return fmt::format("{}/tasks/sort-{}", work.DayDir(date), shard);
}

// What realtime shard `shard` exports for `date`: the days before it that
// the shard still holds and was never told are exported, and that no
// generation folded (a day that left the ring unexported: a missed night, or
// the first Yesterday of a new cluster; they must be folded with `date`,
// because readers ignore realtime days the archive already reaches), then
// `date` itself, unless the shard was added after it (a shard at or above
// that day's count that does not hold it never had it).
//
// "No generation folded it" is the deployed archive's word, not this work
// dir's: a day at or before `archived_through` (the serving generation's
// last_day) is in the archive even if the ring says otherwise (a store wiped
// and refilled by the API's re-send, a rebuild host lost before it told
// realtime) or this work dir never saw it (a new rebuild host). Folding it
// again would count it twice; FinishGeneration's POST /archived marks it
// exported instead.
Result<std::vector<std::string>> DaysToExport(const ClusterConfig& cluster, const RealtimeShardMap& shards, int shard,
                                              const std::string& date, const std::string& archived_through,
                                              int timeout_ms) {
  const WorkDir work(cluster.rebuild.work_dir);
  auto ring = ReadRing(cluster, shard, timeout_ms);
  if (!ring.ok()) return ring.status();
  // Asked for a day not over yet (today, or later): said as such, not as an
  // export of another day failing.
  if (!ring->today.empty() && date >= ring->today) {
    return Status::FailedPrecondition(
        fmt::format("{} is not over: realtime shard {}'s today is {}; a run takes a day once it has ended "
                    "(yesterday or older)",
                    date, shard, ring->today),
        "DAY_STILL_CURRENT");
  }
  auto day_number = ParseDate(date);
  if (!day_number.ok()) return day_number.status();
  // Older than every day a shard that should hold it still has: nothing of
  // it is left to export. Said before anything is begun for it (a run that
  // failed in the export left the day "in progress" for good).
  if (!ring->states.empty() && date < ring->states.begin()->first &&
      shard < static_cast<int>(shards.CountForDay(*day_number))) {
    return Status::FailedPrecondition(
        fmt::format("{} is older than every day realtime shard {} holds (the oldest: {}): nothing of it is left to "
                    "export (history is loaded with clickatron-rebuild load)",
                    date, shard, ring->states.begin()->first),
        "DAY_NOT_IN_RING");
  }
  std::vector<std::string> days;
  for (const auto& [day, state] : ring->states) {
    if (day >= date || state == "exported" || FileExists(work.DayComplete(day))) continue;
    if (!archived_through.empty() && day <= archived_through) {
      spdlog::warn("{} is still in realtime shard {}'s ring unexported, but the archive already reaches {}: not "
                   "folded again (it is marked exported after this run's deploy)",
                   day, shard, archived_through);
      continue;
    }
    days.push_back(day);
  }
  if (ring->states.count(date) > 0 || shard < static_cast<int>(shards.CountForDay(*day_number))) days.push_back(date);
  return days;
}

// Steps 1-2: one sort-shard task per realtime shard (sort_shard_task.h):
// export `date` and the older unexported days the shard holds, convert,
// sort, cut by archive shard. Every shard is tried whatever the others do, so
// a rerun after one failed does only that one.
Result<std::vector<TaskPaths>> SortShards(const ClusterConfig& cluster, Engine& engine, const std::string& date,
                                          const std::string& archived_through, const Timeouts& timeouts) {
  const WorkDir work(cluster.rebuild.work_dir);
  std::vector<TaskPaths> tasks, runnable;
  std::vector<std::string> unreachable;
  const RealtimeShardMap shards(cluster);
  for (int shard = 0; shard < shards.slots(); ++shard) {
    if (cluster.RealtimeMember(shard) == nullptr) {
      return Status::InvalidArgument(fmt::format("realtime shard {} has no member in {}", shard, cluster.path));
    }
    tasks.push_back(TaskPaths{SortTaskDir(work, date, shard)});
    if (TaskDone(tasks.back())) {
      // Its parts are cut by the archive shard count of its spec: done for
      // this run only if that is still the cluster's.
      auto done_spec = ReadSortShardSpec(tasks.back());
      if (done_spec.ok() && done_spec->archive_shards == cluster.archive_shards) {
        spdlog::info("export and sort of {} on realtime shard {}: done by an earlier run", date, shard);
        continue;
      }
      spdlog::info("export and sort of {} on realtime shard {}: done by an earlier run for another archive shard "
                   "count; running it again",
                   date, shard);
    }
    auto days = DaysToExport(cluster, shards, shard, date, archived_through, timeouts.http_ms);
    if (!days.ok() && (days.status().reason() == "DAY_STILL_CURRENT" || days.status().reason() == "DAY_NOT_IN_RING")) {
      return days.status();
    }
    if (!days.ok()) {
      unreachable.push_back(days.status().message());
      continue;
    }
    SortShardSpec spec;
    spec.realtime_shard = shard;
    spec.archive_shards = cluster.archive_shards;
    spec.export_timeout_ms = timeouts.export_ms;
    spec.days = *days;
    for (const std::string& day : spec.days) {
      if (day < date) {
        spdlog::warn("{} is still in realtime shard {}'s ring and was never exported: folding it with {}", day,
                     shard, date);
      }
    }
    if (spec.days.empty() || spec.days.back() != date) {
      spdlog::info("realtime shard {} never held {} (it was added after it): nothing of that day to export", shard,
                   date);
    }
    CLICKATRON_RETURN_IF_ERROR(WriteTaskSpec(tasks.back(), spec.ToJson()));
    runnable.push_back(tasks.back());
  }
  Progress progress(fmt::format("export and sort {}", date), 0);
  Status sorted = engine.Run("sort", runnable, &progress);
  progress.Finish();
  if (sorted.ok() && !unreachable.empty()) {
    std::string list;
    for (const std::string& u : unreachable) list += (list.empty() ? "" : "; ") + u;
    sorted = Status::Unavailable(list, "EXPORT_FAILED");
  }
  if (!sorted.ok()) {
    return sorted.WithContext(fmt::format("could not export and sort {}; nothing was deployed and the day stays in "
                                          "realtime",
                                          date));
  }
  return tasks;
}

// The older days the sort tasks folded with `date` (every day in their specs
// but `date`).
Result<std::vector<std::string>> OlderDaysOf(const std::vector<TaskPaths>& tasks, const std::string& date) {
  std::set<std::string> days;
  for (const TaskPaths& task : tasks) {
    auto spec = ReadSortShardSpec(task);
    if (!spec.ok()) return spec.status();
    for (const std::string& day : spec->days) {
      if (day != date) days.insert(day);
    }
  }
  return std::vector<std::string>(days.begin(), days.end());
}

}  // namespace

namespace {

}  // namespace

Status RunDay(const ClusterConfig& cluster, const RunOptions& options) {
  if (Result<int64_t> day = ParseDate(options.date); !day.ok()) return day.status();
  const WorkDir work(cluster.rebuild.work_dir);
  auto lock = LockWorkDir(work);
  if (!lock.ok()) return lock.status();
  if (FileExists(work.DayComplete(options.date))) {
    // A generation built by something else (a load whose deploy failed, a
    // --build-only run of a later day) is finished all the same, as any run
    // does first: rerunning a night's command must not leave it waiting.
    if (!options.build_only) CLICKATRON_RETURN_IF_ERROR(FinishPending(cluster, options.timeouts));
    spdlog::info("{} is already in a deployed generation and exported: nothing to do", options.date);
    return Status::Ok();
  }
  if (options.build_only) {
    auto pending = FindPendingGeneration(work);
    if (!pending.ok()) return pending.status();
    if (pending->has_value()) {
      spdlog::info("generation {} (day \"{}\") is built and waits for its deploy: nothing to build (--build-only)",
                   (*pending)->generation, (*pending)->day);
      return Status::Ok();
    }
  }
  CLICKATRON_RETURN_IF_ERROR(FinishPending(cluster, options.timeouts));
  if (FileExists(work.DayComplete(options.date))) return Status::Ok();

  auto previous = ReadServingArchive(cluster, options.timeouts.http_ms, options.timeouts.transfer_ms);
  if (!previous.ok()) return previous.status();
  if (!options.force && !previous->last_day.empty() && options.date <= previous->last_day) {
    return Status::FailedPrecondition(
        fmt::format("the archive (generation {}) already reaches {}; folding {} again would count it twice. "
                    "Use --force if {} is really not in it",
                    previous->generation, previous->last_day, options.date, options.date),
        "ALREADY_ARCHIVED");
  }
  // The build needs an API node to say which deletions exist (generation.cc
  // asks again, and that answer is the one folded in). Asked here first, so
  // a run while no API node answers stops before its export seals the day:
  // sealed, the day would take what those nodes still have to send (a
  // restarted shard's lost batches, say) as late data, a night behind.
  if (auto asked = FetchDeletionsToFold(cluster, previous->generation, options.timeouts.http_ms); !asked.ok()) {
    return asked.status().WithContext(fmt::format(
        "nothing is exported or built while no API node can say which deletions to fold in; {} stays in realtime",
        options.date));
  }
  // Days before this one that the ring still holds unexported (a missed
  // night, the first Yesterday of a new cluster) go into the same generation
  // (each sort task finds its shard's): readers ignore realtime days the
  // archive reaches, so they cannot wait.
  auto engine = MakeEngine(cluster);
  if (!engine.ok()) return engine.status();
  auto sort_tasks = SortShards(cluster, **engine, options.date, previous->last_day, options.timeouts);
  if (!sort_tasks.ok()) return sort_tasks.status();
  auto older = OlderDaysOf(*sort_tasks, options.date);
  if (!older.ok()) return older.status();

  BuildOptions build;
  build.cluster = &cluster;
  build.previous = &previous.value();
  build.engine = engine->get();
  build.day = options.date;
  build.sort_tasks = *sort_tasks;
  build.older_days = *older;
  build.http_timeout_ms = options.timeouts.http_ms;
  build.late_transfer_timeout_ms = options.timeouts.export_ms;
  build.transfer_timeout_ms = options.timeouts.transfer_ms;
  auto plan = BuildGeneration(build);
  if (!plan.ok()) return plan.status();
  if (options.build_only) {
    spdlog::info("generation {} is built in {} and not deployed (--build-only); the next run deploys it",
                 plan->generation, work.GenDir(plan->generation));
    return Status::Ok();
  }
  CLICKATRON_RETURN_IF_ERROR(FinishGeneration(cluster, *plan, options.timeouts));
  return Status::Ok();
}

namespace {

// `load --now`, `restate --now`: a generation with queue entry `id` in it,
// built and deployed at once.
Status FoldNow(const ClusterConfig& cluster, const std::string& id, const Timeouts& timeouts) {
  const WorkDir work(cluster.rebuild.work_dir);
  auto lock = LockWorkDir(work);
  if (!lock.ok()) return lock.status().WithContext(fmt::format("{} stays queued", id));
  CLICKATRON_RETURN_IF_ERROR(FinishPending(cluster, timeouts));
  auto engine = MakeEngine(cluster);
  if (!engine.ok()) return engine.status();
  // Twice at most: a build an earlier --now started (and failed) has its
  // inputs fixed without this entry, and goes first; the next takes this one.
  for (int attempt = 0; attempt < 2 && !FileExists(work.QueueFolded(id)); ++attempt) {
    auto previous = ReadServingArchive(cluster, timeouts.http_ms, timeouts.transfer_ms);
    if (!previous.ok()) return previous.status();
    BuildOptions build;
    build.cluster = &cluster;
    build.previous = &previous.value();
    build.engine = engine->get();
    build.include_late = false;  // late data waits for the nightly run (unless a restatement needs it)
    build.transfer_timeout_ms = timeouts.transfer_ms;
    build.include_queue = true;
    auto plan = BuildGeneration(build);
    if (!plan.ok()) return plan.status();
    CLICKATRON_RETURN_IF_ERROR(FinishGeneration(cluster, *plan, timeouts));
  }
  if (!FileExists(work.QueueFolded(id))) {
    return Status::Internal(fmt::format("{} is still queued after two generations", id));
  }
  return Status::Ok();
}

}  // namespace

Status LoadHistory(const ClusterConfig& cluster, const LoadOptions& options) {
  BulkLoadOptions load;
  load.files = options.files;
  load.format = options.format;
  load.max_bad_line_ratio = options.max_bad_line_ratio;
  load.force = options.force;
  auto queued = QueueBulkLoad(cluster, load);
  if (!queued.ok() && options.now && queued.status().reason() == "ALREADY_LOADED") {
    // The same `load --now` run again after it was stopped between noting
    // the load folded and finishing its generation: still refused (its
    // lines are in the archive), but the generation is finished now, not
    // left for the next night. The refusal is the answer either way: a run
    // holding the lock, or a finish that fails, is only logged.
    const WorkDir work(cluster.rebuild.work_dir);
    auto lock = LockWorkDir(work);
    Status finished = lock.ok() ? FinishPending(cluster, options.timeouts) : lock.status();
    if (!finished.ok()) {
      spdlog::warn("a generation left unfinished was not finished now ({}); the next run finishes it",
                   finished.ToString());
    }
  }
  if (!queued.ok()) return queued.status();
  if (!options.now) {
    spdlog::info("load {} is {}queued for the next generation", queued->id,
                 queued->already_queued ? "already " : "");
    return Status::Ok();
  }
  return FoldNow(cluster, queued->id, options.timeouts);
}

Status Restate(const ClusterConfig& cluster, const RestateOptions& options, bool now, const Timeouts& timeouts) {
  auto queued = QueueRestatement(cluster, options);
  if (!queued.ok()) return queued.status();
  if (!now) {
    spdlog::info("restatement {} is queued for the next generation", queued->id);
    return Status::Ok();
  }
  return FoldNow(cluster, queued->id, timeouts);
}

}  // namespace clickatron::rebuild
