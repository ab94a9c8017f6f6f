// The deletions an API node knows (every node keeps every one: any node's
// reads must honour them, and the rebuild asks any node for them), each in
// DATA_DIR/deletions/ID.json, written atomically and fsynced before it is
// acknowledged.
//
// Thread-safety: thread-safe (the loop reads, the deletion runner writes).
#pragma once

#include <atomic>
#include <functional>
#include <cstdint>
#include <map>
#include <mutex>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "clickatron/status.h"
#include "deletions/deletion.h"

namespace clickatron::api {

class DeletionLog {
 public:
  // Reads every record in `dir` (made when missing). A record that does not
  // parse is an error: a deletion must not be forgotten quietly.
  static Result<std::unique_ptr<DeletionLog>> Open(std::string dir);

  // Writes the record durably; over an earlier copy of it, what that copy
  // had reached is kept (Deletion::KeepProgressOf: the runner, a peer's
  // copy and the rebuild each write it, in any order).
  Status Put(Deletion deletion);
  // Puts another node's copy (POST /delete/record, the start-up sync). A
  // copy of another deletion under an id this log has (other ns, key or
  // hours: two nodes took the id, their cluster files naming different
  // homes) is refused, 409 DELETION_ID_CONFLICT, never taken in its place:
  // that would undo an acknowledged deletion without a word. The same
  // deletion taken by two owners (a node of an older version, the same
  // cause) is kept under the owner whose name sorts first, on every node,
  // so that one of them runs it.
  Status PutCopy(Deletion copy);
  // Notes that archive generation `generation` folds in the deletions
  // `ids` (and with `deployed`, that it is deployed); the number of those
  // this node knows.
  Result<size_t> MarkFolded(const std::vector<std::string>& ids, uint64_t generation, bool deployed);
  // Whether a late-data line of batch `frame` is one a deletion whose
  // realtime part is done took out (a snapshot of those deletions).
  std::function<bool(const OplogHeader& frame, std::string_view line)> LateLinesDeleted() const;
  // Whether lookup record "l|HASH" of `hash` went with a deletion (a hashed
  // key deleted for all time): reads never resolve it again, from any cache
  // or generation (one atomic load with no deletion known).
  bool LookupDeleted(std::string_view hash) const;
  // Those `owner` runs whose archive part is done (folded in and deployed)
  // and that are not yet known to be physical.
  std::vector<Deletion> AwaitingPhysical(const std::string& owner) const;
  std::optional<Deletion> Get(const std::string& id) const;
  std::vector<Deletion> All() const;  // by id (so by creation time)
  // Those `owner` runs that are not finished (realtime part done, peers told):
  // the runner's work, without copying the finished ones every second.
  std::vector<Deletion> Unfinished(const std::string& owner) const;

  // Hours [from_unix, to_unix) a read must not take from an archive answer.
  struct HourRange {
    int64_t from_unix = 0, to_unix = 0;
    friend bool operator==(const HourRange&, const HourRange&) = default;
  };
  // The deleted hours of key `tkey` (stored form) of `ns` that archive
  // generation `generation` may still hold (0: any generation), sorted and
  // merged. Read loops ask on every archive read: with no deletion known it
  // is one atomic load.
  std::vector<HourRange> ArchiveMasks(std::string_view ns, std::string_view tkey, uint64_t generation) const;

 private:
  explicit DeletionLog(std::string dir) : dir_(std::move(dir)) {}
  std::string dir_;
  std::mutex write_mu_;  // held across a Put's read, file write and update
  mutable std::mutex mu_;
  std::map<std::string, Deletion> by_id_;
  std::atomic<bool> empty_{true};  // by_id_ is empty (read without mu_)
};

}  // namespace clickatron::api
