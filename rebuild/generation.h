// Building one archive generation: the previous generation's files merged
// with the new sorted inputs (a day, late data, bulk loads), one sorted file
// per archive shard with its manifest, and a gzip backup of each.
//
// The plan (gen/G/plan.json) is written last and is the marker that G is
// built: from then on G's files are only ever redeployed as they are, never
// rebuilt with other content, so late data and loads are folded exactly once.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "archive_state.h"
#include "clickatron/config.h"
#include "clickatron/manifest.h"
#include "clickatron/status.h"
#include "task_dir.h"
#include "work_dir.h"

namespace clickatron::rebuild {

class Engine;

// The time now as ISO 8601 UTC, for the created stamps of plans and files.
std::string NowIso();

struct GenerationPlan {
  uint64_t generation = 0;
  uint64_t previous_generation = 0;
  std::string day;                      // the realtime day folded in ("" for a load)
  // Older days the realtime ring still held unexported, folded in with `day`.
  std::vector<std::string> older_days;
  std::vector<std::string> queue_ids;   // bulk loads folded in
  // Late-data files folded in, as late-input ids "<api member>/late-<unix>.sealed".
  std::vector<std::string> late_files;
  // Late inputs an earlier generation folded whose API node still had them
  // sealed (their /late/done was lost): marked done with this generation.
  std::vector<std::string> late_still_sealed;
  std::string last_day;
  std::vector<std::string> shard_files; // built files, index: shard
  std::vector<Manifest> manifests;      // index: shard
  std::string created;
  // Deletions whose records this generation took out of the previous one
  // (deletions.h): API nodes are told before it is deployed.
  std::vector<std::string> deletions_folded;

  nlohmann::json ToJson() const;
  static Result<GenerationPlan> FromJson(const nlohmann::json& json);
};

struct BuildOptions {
  const ClusterConfig* cluster = nullptr;
  const ServingArchive* previous = nullptr;
  Engine* engine = nullptr;              // where the merge-shard tasks run
  std::string day;                       // "" for none
  // The day's finished sort-shard tasks: merge task A reads part A of each.
  std::vector<TaskPaths> sort_tasks;
  std::vector<std::string> older_days;   // folded with `day` (the sort tasks exported them)
  bool include_late = true;
  int http_timeout_ms = 10000;               // GET /late/files of each API member
  int late_transfer_timeout_ms = 3600 * 1000;  // one GET /late/file, whole
  int transfer_timeout_ms = 6 * 3600 * 1000;   // a merge task's fetch of the previous generation
  bool include_queue = true;
  bool backup = true;                    // false only for benchmarks
};

// NOT_FOUND when there is nothing new to fold in.
Result<GenerationPlan> BuildGeneration(const BuildOptions& options);

// The built-but-not-finished generation in work_dir, if any (a rerun
// continues with it). Partial generation directories (no plan) are removed.
Result<std::optional<GenerationPlan>> FindPendingGeneration(const WorkDir& work_dir);

}  // namespace clickatron::rebuild
