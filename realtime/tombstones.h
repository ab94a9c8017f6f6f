// Tombstones: the realtime shard's part of a deletion (POST /delete on an
// API node; docs/protocols.md, "Deletions").
//
// A deletion takes out every record of namespace `ns` (one key, or every key)
// over the hours [from, to) that was acknowledged before it, and nothing
// acknowledged after it. A shard holds sums, not the batches they came from,
// so it cannot take one batch's lines back out of a sum; it keeps the
// deletion exact in two steps instead:
//
//   1. Install (POST /tombstone): the tombstone is persisted, pending. From
//      then on a batch holding a line it matches is refused (503
//      TOMBSTONE_PENDING; the API node's sender retries it), so nothing it
//      matches is added. Once everything applied before is checkpointed, the
//      matching records are deleted from every day's store. What the shard
//      held then was all acknowledged before the deletion.
//   2. Cut (POST /tombstone/cut): per API node, the last oplog seq it had
//      acknowledged when the deletion was made (asked after step 1). A
//      matching line of a batch at or below its node's cut was acknowledged
//      before the deletion: dropped. One above it came after: applied.
//
// Batches that carried no matching line are never held up. A lookup line
// is never a reason to refuse a batch (a lookup is shared by every record
// naming the value): while pending, a matching one is dropped. A tombstone
// is retired once every API node's durable watermark here has reached its
// cut (no batch at or below it can be sent again); its id and cut are
// remembered (the last kRememberedRetired of them), so a retried install or
// cut of it is answered as done.
//
// Each tombstone gets the shard's next epoch on install (for the rebuild,
// to tell exports made before it from those made after).
//
// Persisted as one JSON document in the store's metadata ("tombstones"),
// with a synced write at each change.
//
// Thread-safety: the loop thread only.
#pragma once

#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include <nlohmann/json_fwd.hpp>

#include "apply_batch.h"
#include "clickatron/status.h"
#include "shard_store.h"

namespace clickatron::realtime {

struct Tombstone {
  std::string id;
  std::string ns;
  std::string tkey;        // stored form; "" = every key of ns
  std::string lookup;      // "l|HASH" deleted with it ("" none): the key's own lookup
  int64_t from_unix = 0;   // the first hour deleted
  int64_t to_unix = 0;     // the hour after the last one deleted
  uint64_t epoch = 0;      // this shard's epoch when it was installed
  bool deleted = false;    // step 1 done: the stores hold none of its records
  std::optional<std::map<std::string, uint64_t>> cut;  // nullopt: pending

  // Whether a realtime record key (counter, unique or lookup) is one of its records.
  bool Matches(std::string_view key) const;
  nlohmann::json ToJson() const;
  static Result<Tombstone> FromJson(const nlohmann::json& json);
};

class Tombstones;

// What a batch of `source` at `seq` may add under `all` (Tombstones::Filter).
enum class TombstoneVerdict { kApply, kRefuse };
TombstoneVerdict FilterBatch(const std::vector<Tombstone>& all, const std::string& source, uint64_t seq,
                             ParsedBatch* batch, uint64_t* dropped);

class Tombstones {
 public:
  // Loads the persisted set (none in a new store).
  static Result<Tombstones> Load(ShardStore* store);

  // Persists `t` pending with the next epoch; an id already installed is
  // left as it is (its copy is returned either way).
  Result<Tombstone> Install(Tombstone t);
  Status MarkDeleted(const std::string& id);
  // NOT_FOUND for an unknown id; a second cut must be the same one.
  Status SetCut(const std::string& id, std::map<std::string, uint64_t> cut);
  // Drops the tombstones whose cut every source's durable watermark has
  // reached (a source with none counts as 0).
  Status Retire(const std::map<std::string, uint64_t>& durable);
  // A retired tombstone's cut, if it is still remembered.
  const std::map<std::string, uint64_t>* RetiredCut(const std::string& id) const;

  using Verdict = TombstoneVerdict;
  // What a batch of `source` at `seq` may add: kRefuse (503) when a pending
  // tombstone matches one of its lines; else its lines that a cut tombstone
  // takes out are removed from *batch (*dropped counts them).
  Verdict Filter(const std::string& source, uint64_t seq, ParsedBatch* batch, uint64_t* dropped) const {
    return FilterBatch(all_, source, seq, batch, dropped);
  }

  const std::vector<Tombstone>& all() const { return all_; }
  const Tombstone* Find(const std::string& id) const;
  uint64_t epoch() const { return epoch_; }
  // The highest epoch E such that every tombstone of epoch <= E has had its
  // records deleted from the stores: an export read after this has none of
  // their records (GET /export says it in X-Tombstone-Epoch).
  uint64_t DeletedThrough() const;
  bool empty() const { return all_.empty(); }

 private:
  explicit Tombstones(ShardStore* store) : store_(store) {}
  Status Persist() const;
  Tombstone* Mutable(const std::string& id) { return const_cast<Tombstone*>(Find(id)); }

  static constexpr size_t kRememberedRetired = 1000;

  ShardStore* store_;
  std::vector<Tombstone> all_;
  // Retired ids and their cuts, oldest first.
  std::vector<std::pair<std::string, std::map<std::string, uint64_t>>> retired_;
  uint64_t epoch_ = 0;  // tombstones ever installed here
};

}  // namespace clickatron::realtime
