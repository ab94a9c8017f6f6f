#include "sort_shard_task.h"

#include <algorithm>
#include <chrono>
#include <limits>
#include <thread>

#include <fmt/format.h>
#include <spdlog/spdlog.h>

#include "clickatron/file_util.h"
#include "export.h"
#include "sort_inputs.h"
#include "split.h"

namespace clickatron::rebuild {

nlohmann::json SortShardSpec::ToJson() const {
  return {{"kind", "sort-shard"},
          {"realtime_shard", realtime_shard},
          {"days", days},
          {"archive_shards", archive_shards},
          {"export_timeout_ms", export_timeout_ms}};
}

Result<SortShardSpec> SortShardSpec::FromJson(const nlohmann::json& j) {
  SortShardSpec spec;
  spec.realtime_shard = j.at("realtime_shard").get<int>();
  spec.days = j.at("days").get<std::vector<std::string>>();
  spec.archive_shards = j.at("archive_shards").get<int>();
  spec.export_timeout_ms = j.value("export_timeout_ms", spec.export_timeout_ms);
  if (spec.archive_shards < 1 || spec.realtime_shard < 0) {
    return Status::InvalidArgument("sort-shard: archive_shards must be >= 1 and realtime_shard >= 0");
  }
  return spec;
}

Result<SortShardSpec> ReadSortShardSpec(const TaskPaths& task) {
  auto j = ReadTaskSpec(task);
  if (!j.ok()) return j.status();
  try {
    auto spec = SortShardSpec::FromJson(*j);
    if (!spec.ok()) return spec.status().WithContext(task.Spec());
    return spec;
  } catch (const nlohmann::json::exception& e) {
    return Status::Corruption(fmt::format("{}: {}", task.Spec(), e.what()));
  }
}

std::string SortShardPart(const TaskPaths& task, int archive_shard) {
  return fmt::format("{}/archive-{}.csv", task.Out(), archive_shard);
}

Result<nlohmann::json> RunSortShard(const TaskPaths& task, const SortShardSpec& spec, const ClusterConfig& cluster,
                                    const TaskResources& resources) {
  const MemberConfig* member = cluster.RealtimeMember(spec.realtime_shard);
  if (member == nullptr) {
    return Status::InvalidArgument(
        fmt::format("realtime shard {} has no member in {}", spec.realtime_shard, cluster.path));
  }
  SortInputsOptions sort;
  nlohmann::json exported = nlohmann::json::object();
  // The least of the days' export epochs: the merge takes out of this
  // task's records those of every deletion installed here after it.
  uint64_t tombstone_epoch = std::numeric_limits<uint64_t>::max();
  // A shard restarted after a crash exports nothing until its API nodes
  // have re-sent what it lost (about a second; realtime/recovery_gate.h):
  // waited for rather than failing the night. Twice the shard's own wait at
  // least (that wait starts over while a re-send applies), a minute at least.
  const int64_t recovery_wait_s =
      std::max<int64_t>(60, 2 * std::chrono::duration_cast<std::chrono::seconds>(cluster.api.RecoveryWait()).count());
  for (const std::string& day : spec.days) {
    ExportOptions options;
    options.peer = member->listen;
    options.member_name = member->name;
    options.date = day;
    options.admin_token = cluster.admin_token;
    options.cluster_secret = cluster.cluster_secret;
    options.tls = cluster.client_tls;
    options.path = fmt::format("{}/export-{}.csv", task.Tmp(), day);
    options.timeout_ms = spec.export_timeout_ms;
    auto result = ExportDay(options);
    for (int waited = 0; !result.ok() && waited < recovery_wait_s &&
                         result.status().reason() == "SHARD_RECOVERING";
         ++waited) {
      if (waited == 0) spdlog::info("realtime shard {} ({}) is recovering from a crash: waiting to export {}",
                                    spec.realtime_shard, member->name, day);
      std::this_thread::sleep_for(std::chrono::seconds(1));
      result = ExportDay(options);
    }
    if (!result.ok()) {
      return Status::Unavailable(fmt::format("could not export {} from realtime shard {} ({}): {}", day,
                                             spec.realtime_shard, member->name, result.status().message()),
                                 "EXPORT_FAILED");
    }
    spdlog::info("exported {} from realtime shard {} ({}): {} records, {} bytes", day, spec.realtime_shard,
                 member->name, result->lines, result->bytes);
    exported[day] = result->lines;
    tombstone_epoch = std::min(tombstone_epoch, result->tombstone_epoch);
    sort.inputs.push_back(options.path);
  }
  sort.format = InputFormat::kRealtime;
  sort.output = task.Tmp() + "/sorted.csv";
  sort.rejects_path = task.Out() + "/rejects.txt";
  sort.temp_dir = task.Tmp() + "/runs";
  sort.memory_bytes = resources.memory_bytes;
  sort.threads = resources.threads;
  sort.max_bad_line_ratio = cluster.rebuild.max_bad_line_ratio;
  sort.label = fmt::format("sort realtime shard {}", spec.realtime_shard);
  auto sorted = SortInputs(sort);
  if (!sorted.ok()) return sorted.status().WithContext(fmt::format("sorting realtime shard {}", spec.realtime_shard));
  std::vector<std::string> parts;
  for (int a = 0; a < spec.archive_shards; ++a) parts.push_back(SortShardPart(task, a));
  CLICKATRON_RETURN_IF_ERROR(SplitSortedFile(sort.output, static_cast<uint32_t>(spec.archive_shards), parts));
  spdlog::info("realtime shard {}: {} lines ({} bad) -> {} records in {} archive-shard parts, {:.1f}s",
               spec.realtime_shard, sorted->lines, sorted->bad_lines, sorted->records, spec.archive_shards,
               sorted->seconds);
  if (spec.days.empty()) tombstone_epoch = 0;
  return nlohmann::json{{"exported", exported},         {"lines", sorted->lines},
                        {"bad_lines", sorted->bad_lines}, {"records", sorted->records},
                        {"runs", sorted->runs},           {"seconds", sorted->seconds},
                        {"tombstone_epoch", tombstone_epoch}};
}

}  // namespace clickatron::rebuild
