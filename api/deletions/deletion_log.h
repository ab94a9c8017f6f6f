// The deletions an API node knows (every node keeps every one: any node's
// reads must honour them, and the rebuild asks any node for them), each in
// DATA_DIR/deletions/ID.json, written atomically and fsynced before it is
// acknowledged.
//
// Thread-safety: thread-safe (the loop reads, the deletion runner writes).
#pragma once

#include <map>
#include <mutex>
#include <optional>
#include <string>
#include <vector>

#include "clickatron/status.h"
#include "deletions/deletion.h"

namespace clickatron::api {

class DeletionLog {
 public:
  // Reads every record in `dir` (made when missing). A record that does not
  // parse is an error: a deletion must not be forgotten quietly.
  static Result<std::unique_ptr<DeletionLog>> Open(std::string dir);

  // Writes (or replaces) the record durably.
  Status Put(const Deletion& deletion);
  std::optional<Deletion> Get(const std::string& id) const;
  std::vector<Deletion> All() const;  // by id (so by creation time)
  // Those `owner` runs that are not finished (realtime part done, peers told):
  // the runner's work, without copying the finished ones every second.
  std::vector<Deletion> Unfinished(const std::string& owner) const;

 private:
  explicit DeletionLog(std::string dir) : dir_(std::move(dir)) {}
  std::string dir_;
  mutable std::mutex mu_;
  std::map<std::string, Deletion> by_id_;
};

}  // namespace clickatron::api
