#include "status_report.h"

#include <algorithm>
#include <filesystem>
#include <map>
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
  // What every shard serves at least: per shard, the oldest last day of
  // its replicas that answered with an archive (a replica with none, a new
  // host or a wiped disk, says nothing while another has one; a shard whose
  // every replica that answered has none serves no day). A day marked
  // complete after that was rolled back (operations.md, section 6), or is
  // missing from a shard.
  std::map<int, std::optional<std::string>> shard_served;  // shards that answered
  const std::vector<ReplicaState> replicas = AskArchiveReplicas(cluster, /*timeout_ms=*/5000);
  for (const ReplicaState& r : replicas) {
    if (r.status.ok()) {
      std::optional<std::string>& served = shard_served[r.shard];
      const bool has_days = r.manifest && !r.manifest->last_day.empty();
      if (has_days && (!served || r.manifest->last_day < *served)) served = r.manifest->last_day;
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
  std::optional<std::string> served_through;
  for (const auto& [shard, served] : shard_served) {
    const std::string last = served.value_or(std::string());
    if (!served_through || last < *served_through) served_through = last;
  }
  auto pending = FindPendingGeneration(work);
  if (!pending.ok()) return pending.status();
  if (pending->has_value()) {
    const GenerationPlan& p = **pending;
    // A deploy that failed part way (a replica down) left the others on it:
    // this build, by its crc32 too (a rollback's next build reuses the
    // number, and a replica that missed the rollback serves the old one).
    const auto serving = std::count_if(replicas.begin(), replicas.end(), [&](const ReplicaState& r) {
      const auto shard = static_cast<size_t>(r.shard);
      return r.status.ok() && r.manifest && r.manifest->generation == p.generation && shard < p.manifests.size() &&
             r.manifest->crc32 == p.manifests[shard].crc32;
    });
    // Every replica serving it while no run noted its deploy: the run
    // stopped between the last replica's answer and that note, or a replica
    // down during the deploy has caught up from its peers since.
    const bool everywhere = serving > 0 && static_cast<size_t>(serving) == replicas.size();
    const std::string state =
        FileExists(work.GenDeployed(p.generation)) ? "deployed, realtime not told yet"
        : everywhere ? fmt::format("every archive replica ({}) serves it, its deploy not yet noted (the next run "
                                   "finishes it)",
                                   serving)
        : serving > 0 ? fmt::format("partly deployed: {} of {} archive replicas serve it (the next run deploys it "
                                    "to the others)",
                                    serving, replicas.size())
                      : "built, not deployed";
    out += fmt::format("unfinished generation {}: day \"{}\", {} late files, {} loads; {}\n", p.generation, p.day,
                       p.late_files.size(), p.queue_ids.size(), state);
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
                  ? "COMPLETE when built, but not every archive shard serves it now (rolled back, or a shard's replicas restored or wiped?)"
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
