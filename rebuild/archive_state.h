// What the archive tier serves now, read from the manifests beside the
// serving files (member.file + ".manifest" of each shard's first replica).
// The rebuild merges with these files, numbers the next generation after
// them and skips late-data files they already hold.
#pragma once

#include <cstdint>
#include <optional>
#include <set>
#include <string>
#include <vector>

#include "clickatron/config.h"
#include "clickatron/manifest.h"
#include "clickatron/status.h"

namespace clickatron::rebuild {

struct ServingArchive {
  uint64_t generation = 0;        // 0: no archive yet
  std::string last_day;           // "" when none
  int shard_count = 0;            // of the files (may differ from the config after a reshard)
  std::vector<std::string> files; // the serving file of shard i ("" if it does not exist yet)
  std::vector<Manifest> manifests;
  std::set<std::string> late_inputs;  // union over shards
};

// FAILED_PRECONDITION when the shards disagree on the generation (a deploy
// that stopped half-way and has no pending generation to finish it).
Result<ServingArchive> ReadServingArchive(const ClusterConfig& cluster);

// The generation each shard's first replica file holds (0 if none).
Result<std::vector<uint64_t>> ServingGenerations(const ClusterConfig& cluster);

}  // namespace clickatron::rebuild
