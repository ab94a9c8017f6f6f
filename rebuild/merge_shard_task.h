// Task "merge-shard": one archive shard of a new generation.
//
// Merges the previous generation's file of shard `shard` with that shard's
// part of every new input (each input is filtered by shard, so a whole file
// and a part cut by a sort-shard task are both fine), adds the day subtotal
// records, and writes
//
//   out/shard-S.csv, out/shard-S.csv.manifest   the new generation's file
//   `backup` (+ .manifest beside it)           its gzip copy, when asked
//
// In a re-partition (archive_shards changed) there is no previous file of
// shard S to merge into: every previous file is an input (`reshard_from`).
//
// The result depends only on the lines that go in, never on how they were
// cut into inputs or which host ran the task: the engines' runs give
// byte-identical files.
#pragma once

#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "clickatron/config.h"
#include "clickatron/file_util.h"
#include "clickatron/manifest.h"
#include "clickatron/status.h"
#include "drop_rules.h"
#include "task_dir.h"

namespace clickatron::rebuild {

// A whole file of the previous generation and the manifest it must match.
struct PreviousShardFile {
  std::string file;
  Manifest manifest;
};

struct MergeShardSpec {
  int shard = 0;
  int shard_count = 1;
  uint64_t generation = 0;
  std::string last_day;
  std::string created;
  std::vector<std::string> late_inputs;  // for the manifest
  // The previous generation's file and its manifest (none for the first).
  std::string previous_file;
  std::optional<Manifest> previous_manifest;
  // Instead of previous_file: fetch it from a replica of the shard (GET
  // /file?shard=S, checked against previous_manifest as it arrives) into
  // tmp/. A task on another host so pulls the largest input straight from
  // the archive tier instead of having it shipped from the rebuild host.
  bool fetch_previous = false;
  int fetch_timeout_ms = 6 * 3600 * 1000;
  // A reshard (the previous generation was cut into another shard count):
  // every file of the previous generation, each checked against its
  // manifest and then read as one more input through the shard filter. There
  // is then no previous_file: nothing is merged into in place, and the day
  // records in those files are dropped and made again from their hours.
  std::vector<PreviousShardFile> reshard_from;
  std::vector<std::string> inputs;  // sorted archive files
  // Restatements and deletions this generation folds (drop_rules.h): the
  // previous generation (or the files of a reshard) obeys the rules
  // previous_drops names (every rule when the spec has no list), inputs[i]
  // the rules input_drops[i] names (indices into drop_rules; none when the
  // list is shorter). With any rule on it the previous file is read in full,
  // so its day and span records are made again from the hours left. A
  // rule's keys_file resolves like an input.
  std::vector<DropRule> drop_rules;
  std::vector<std::vector<int>> input_drops;
  std::vector<int> previous_drops;
  std::string backup;               // the .csv.gz to write (relative: under out/); "" for none
  // Retention (retention_rollup.h): the boundaries this generation applies,
  // per namespace. Where one moved since the previous generation's, the
  // previous file's ranges of the policies' namespaces are read so that their
  // newly aged days roll up (NamespaceRanges).
  std::vector<AppliedRetention> retention;
  // Whether any boundary differs from the previous file's manifest (true
  // without one).
  bool RetentionMoved() const;

  nlohmann::json ToJson() const;
  static Result<MergeShardSpec> FromJson(const nlohmann::json& json);
};

std::string MergeShardOutput(const TaskPaths& task, int shard);  // out/shard-S.csv

// A previous generation's file mapped whole, once its bytes match its
// manifest (CORRUPTION otherwise): a reshard reads it as an input, so the
// merge's own checksum of its base does not cover it, and nothing may be
// built on a damaged file.
Result<std::unique_ptr<MappedFile>> MapCheckedPreviousFile(const std::string& path, const Manifest& manifest);

// Returns the figures for out/done.json, the manifest among them.
// `cluster` names the replicas fetch_previous asks.
Result<nlohmann::json> RunMergeShard(const TaskPaths& task, const MergeShardSpec& spec, const ClusterConfig& cluster,
                                     const TaskResources& resources);

}  // namespace clickatron::rebuild
