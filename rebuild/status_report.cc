#include "status_report.h"

#include <algorithm>
#include <filesystem>
#include <optional>
#include <vector>

#include <fmt/format.h>

#include "archive_state.h"
#include "bulk_load.h"
#include "clickatron/file_util.h"
#include "generation.h"
#include "task_dir.h"
#include "late_inputs.h"
#include "work_dir.h"

namespace clickatron::rebuild {

Result<std::string> StatusReport(const ClusterConfig& cluster) {
  const WorkDir work(cluster.rebuild.work_dir);
  std::string out;
  out += "archive replicas (GET /manifest):\n";
  // The oldest last day a replica that answered serves: a day marked
  // complete after it is one rolled back (operations.md, section 6). A
  // replica with no archive yet, or an empty one (a new host before its
  // first fetch, a wiped disk), says nothing of the days: its own line
  // below says what it serves.
  std::optional<std::string> served_through;
  for (const ReplicaState& r : AskArchiveReplicas(cluster, /*timeout_ms=*/5000)) {
    if (r.status.ok() && r.manifest && !r.manifest->last_day.empty() &&
        (!served_through || r.manifest->last_day < *served_through)) {
      served_through = r.manifest->last_day;
    }
    const std::string who = fmt::format("{} {}", r.member->name, r.member->listen.ToString());
    if (!r.status.ok()) {
      out += fmt::format("  shard {}: NOT ANSWERING ({}): {}\n", r.shard, who, r.status.message());
    } else if (!r.manifest) {
      out += fmt::format("  shard {}: no archive yet ({})\n", r.shard, who);
    } else {
      out += fmt::format("  shard {}: generation {}, {} records, {} bytes, last_day {}  ({})\n", r.shard,
                         r.manifest->generation, r.manifest->records, r.manifest->bytes,
                         r.manifest->last_day.empty() ? "-" : r.manifest->last_day, who);
    }
  }
  auto pending = FindPendingGeneration(work);
  if (!pending.ok()) return pending.status();
  if (pending->has_value()) {
    const GenerationPlan& p = **pending;
    out += fmt::format("unfinished generation {}: day \"{}\", {} late files, {} loads; {}\n", p.generation, p.day,
                       p.late_files.size(), p.queue_ids.size(),
                       FileExists(work.GenDeployed(p.generation)) ? "deployed, realtime not told yet"
                                                                  : "built, not deployed");
  }
  out += "days:\n";
  std::vector<std::string> days;
  std::error_code ec;
  if (std::filesystem::exists(work.DaysDir(), ec)) {
    for (const auto& entry : std::filesystem::directory_iterator(work.DaysDir(), ec)) {
      days.push_back(entry.path().filename().string());
    }
  }
  std::sort(days.begin(), days.end());
  for (const std::string& day : days) {
    const char* state = "in progress";
    if (FileExists(work.DayComplete(day))) {
      state = served_through && day > *served_through
                  ? "COMPLETE when built, but a replica serves an older last_day now (rolled back?)"
                  : "COMPLETE (deployed, realtime told)";
    }
    std::string sorted;
    bool rejects = false;
    for (int shard = 0; shard < cluster.realtime_shards; ++shard) {
      const TaskPaths task{fmt::format("{}/tasks/sort-{}", work.DayDir(day), shard)};
      sorted += TaskDone(task) ? "x" : ".";
      rejects |= FileExists(task.Out() + "/rejects.txt");
    }
    out += fmt::format("  {}  exported+sorted per realtime shard [{}]  rejects {}  {}\n", day, sorted,
                       rejects ? "yes" : "no", state);
  }
  auto loads = PendingLoads(work);
  if (!loads.ok()) return loads.status();
  out += fmt::format("queued loads: {}\n", loads->size());
  for (const std::string& id : *loads) out += "  " + id + "\n";
  // Sealed files each API node still holds (GET /late/files): folded by the
  // next run, or folded and waiting for their /late/done.
  for (const LateListing& listing : ListLateFiles(cluster, 5000)) {
    if (listing.status.ok()) {
      out += fmt::format("sealed late-data files on {}: {}\n", listing.member, listing.files.size());
    } else {
      out += fmt::format("sealed late-data files on {}: unknown ({})\n", listing.member, listing.status.message());
    }
  }
  return out;
}

}  // namespace clickatron::rebuild
