// Step: take out what deletions delete (POST /delete on an API node;
// docs/protocols.md, "Deletions").
//
// A deletion covers what was acknowledged before it. Its realtime part is
// done on the shards (tombstones); what it deleted may still be in:
//   - the previous generation: taken out unless that generation (or one it
//     was built from) already folded the deletion in;
//   - an export of a day made before its tombstone on that shard (the
//     export answers the epoch up to which it is clean, X-Tombstone-Epoch);
//   - late data: a frame of batch (source, shard, seq) at or below the
//     deletion's cut for that shard and API node was acknowledged before it;
//   - a load or restatement queued before it.
// Every deletion the API nodes know is folded into every generation built
// after it: one whose cut is not taken yet takes its records out of every
// input (all of it came before its cut). A generation built without a
// deletion that existed cannot be told apart later from what came after it,
// so a run whose API nodes all fail to answer builds nothing.
//
// Thread-safety: a FoldedDeletion is a value; the fetch and tell functions
// block on HTTP.
#pragma once

#include <cstdint>
#include <map>
#include <string>
#include <string_view>
#include <vector>

#include <nlohmann/json_fwd.hpp>

#include "clickatron/config.h"
#include "clickatron/deletion_scope.h"
#include "clickatron/status.h"
#include "drop_rules.h"

namespace clickatron::rebuild {

// What it covers (ns, tkey, lookup, hours, cuts) is its DeletionScope.
struct FoldedDeletion : DeletionScope {
  std::string id;
  int64_t created_unix = 0;
  int64_t cut_unix = 0;            // when its cut was taken (0: not yet, or not recorded)
  uint64_t folded_into = 0;        // the first generation that folded it in (0: none yet)
  std::map<int, uint64_t> epochs;  // realtime shard -> its tombstone's epoch there

  // From an API node's GET /deletions entry.
  static Result<FoldedDeletion> FromApiJson(const nlohmann::json& json);
  nlohmann::json ToJson() const;
  static Result<FoldedDeletion> FromJson(const nlohmann::json& json);

  // Its rule for archive lines (drop_rules.h).
  DropRule Rule() const;
  // Whether the previous generation may still hold its records.
  bool InPrevious(uint64_t previous_generation) const {
    return folded_into == 0 || folded_into > previous_generation;
  }
  // Whether an export of realtime shard `shard` that is clean up to
  // `export_epoch` may hold its records.
  bool InExport(int shard, uint64_t export_epoch) const;
  // Whether a load or restatement queued at `queued_unix` may have come
  // before its cut: before it or in its second (every one while there is no
  // cut yet).
  bool InLoad(int64_t queued_unix) const;
};

// Every deletion the API nodes know, by id. An API node that does not answer
// is skipped (every deletion is copied to every node before its realtime
// part starts); one whose copy lacks where another node says it was folded
// in (or that a generation up to `previous_generation`, deployed, did) is
// told now. UNAVAILABLE when no API node answers.
Result<std::vector<FoldedDeletion>> FetchDeletionsToFold(const ClusterConfig& cluster, uint64_t previous_generation,
                                                         int timeout_ms);

// Tells every API node that `generation` folds in `ids` (POST /delete/folded),
// before its deploy; with `deployed`, after it (then also with no ids: the
// owners of earlier deletions look again whether any file still holds them).
// A node that does not answer is told by a later run (FetchDeletionsToFold);
// meanwhile its reads hide those hours of this generation too.
void TellDeletionsFolded(const ClusterConfig& cluster, const std::vector<std::string>& ids, uint64_t generation,
                         int timeout_ms, bool deployed = false);

}  // namespace clickatron::rebuild
