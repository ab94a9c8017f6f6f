// Task "sort-shard": one realtime shard's part of a nightly run.
//
// Exports each of `days` from realtime shard `realtime_shard` (GET /export,
// export.h), converts and sorts them into one combined file (sort_inputs.h),
// and cuts that by archive shard:
//
//   out/archive-A.csv   the sorted records of archive shard A, A < archive_shards
//   out/rejects.txt     bad lines, if any
//
// Every merge-shard task then reads its archive-A.csv from every sort-shard
// task. The bad-line limit ([rebuild] max_bad_line_ratio) holds per task.
#pragma once

#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "clickatron/config.h"
#include "clickatron/status.h"
#include "task_dir.h"

namespace clickatron::rebuild {

struct SortShardSpec {
  int realtime_shard = 0;
  std::vector<std::string> days;  // YYYY-MM-DD, each exported from the shard
  int archive_shards = 1;
  int export_timeout_ms = 6 * 3600 * 1000;

  nlohmann::json ToJson() const;
  static Result<SortShardSpec> FromJson(const nlohmann::json& json);
};

// The spec in a sort-shard task's in/task.json.
Result<SortShardSpec> ReadSortShardSpec(const TaskPaths& task);

// The part of archive shard `archive_shard` in a finished task's out/.
std::string SortShardPart(const TaskPaths& task, int archive_shard);

// Returns the figures for out/done.json.
Result<nlohmann::json> RunSortShard(const TaskPaths& task, const SortShardSpec& spec, const ClusterConfig& cluster,
                                    const TaskResources& resources);

}  // namespace clickatron::rebuild
