// What the archive tier serves now, asked over HTTP (GET /manifest?shard=S of
// every replica), and a copy of it in the rebuild's own work dir to merge
// with: the generation as this work dir built it (gen/G/), or else fetched
// from a replica that serves it (fetched/G/; a new rebuild host, files
// restored from a backup, or a `clickatron manifest` import). The rebuild
// numbers the next generation after it and skips late-data files it holds.
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
  std::vector<std::string> files; // a local copy of shard i's serving file
  std::vector<Manifest> manifests;
  std::set<std::string> late_inputs;  // union over shards
};

// Per shard, the newest generation a replica serves (replicas that do not
// answer are skipped; a shard none answers for is UNAVAILABLE), with a local
// copy of its file, fetched when the work dir has none. FAILED_PRECONDITION
// when the shards disagree on the generation (a deploy that stopped half-way
// and has no pending generation to finish it) or on shard_count, or two
// replicas serve one generation with different contents.
//
// The files are those of the serving generation's own shard count, which
// differs from the cluster file's archive_shards once it was changed (the
// next generation re-partitions them). Raised: the new shards' members have
// no file yet. Lowered: the dropped shards have no member in the cluster
// file, so their files must be in this work dir (gen/G/ or fetched/G/);
// FAILED_PRECONDITION (RESHARD_NEEDS_FILE) naming them otherwise.
// `transfer_timeout_ms` bounds the fetch of a whole file.
Result<ServingArchive> ReadServingArchive(const ClusterConfig& cluster, int timeout_ms, int transfer_timeout_ms);

// What each replica of each shard answers at GET /manifest?shard=S.
struct ReplicaState {
  const MemberConfig* member = nullptr;
  int shard = 0;
  Status status;                    // not ok: it did not answer
  std::optional<Manifest> manifest; // nullopt: it has no file
};
std::vector<ReplicaState> AskArchiveReplicas(const ClusterConfig& cluster, int timeout_ms);

}  // namespace clickatron::rebuild
