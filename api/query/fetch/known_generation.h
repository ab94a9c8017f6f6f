// The newest archive generation this API node has seen any replica serve,
// kept in DATA_DIR/archive-generation so that it survives a restart.
//
// Why: generations are cluster-wide (the rebuild deploys G to every shard),
// so a replica that answers with no file (generation 0) once the cluster has
// an archive has lost its file, and its answers would silently drop every
// archived day. An API node remembers the newest generation in memory; but a
// node restarted while the only replica it can reach has lost its file would
// have nothing to compare with, and would answer short series as whole ones.
// The file makes the comparison hold across restarts.
//
// The file changes about once a night (when a new generation first answers);
// it is written atomically (temp file, fsync, rename) by the loop that saw
// the generation first, which a once-a-night fsync can afford. A file that cannot be read is
// reported and ignored; a failed write is reported and tried again at the
// next answer, while the node goes on with what it knows in memory.
//
// An archive wiped on purpose (a new cluster on an old data dir) makes every
// read 503 until DATA_DIR/archive-generation is removed; the error says so.
//
// Thread-safety: thread-safe; one per API node, shared by its read loops.
#pragma once

#include <atomic>
#include <cstdint>
#include <limits>
#include <optional>
#include <mutex>
#include <string>

namespace clickatron::api {

class KnownGeneration {
 public:
  // path empty: memory only (tests, members without a data_dir).
  explicit KnownGeneration(std::string path);

  uint64_t newest() const { return newest_.load(std::memory_order_acquire); }
  const std::string& path() const { return path_; }
  // Records that a replica served `generation`; persists it when it is newer.
  void Saw(uint64_t generation);

  // What realtime shards say of the archive on their read answers
  // (X-Realtime-Archived-Through, X-Realtime-Archive-Generation,
  // docs/protocols.md): the newest day a shard may have cleared because the
  // deployed archive holds it, and the newest generation the rebuild told it
  // every replica serves. Both only rise. This is what makes kept archive
  // answers safe without timing: an answer of a file that ends before a day
  // realtime handed over, or of an older generation than the deployed one,
  // is not used (archive_reader.h), and a query whose archive answer ends
  // before it is read again (query_gather.h).
  void SawHandover(uint64_t deployed_generation, std::optional<int64_t> through_day);
  uint64_t deployed() const { return deployed_.load(std::memory_order_acquire); }
  // True when an archive answer whose file ends at `last_day` lacks a day
  // realtime has handed over (and may have cleared).
  bool Behind(const std::optional<int64_t>& last_day) const {
    const int64_t through = handed_over_.load(std::memory_order_acquire);
    return through != kNone && (!last_day || *last_day < through);
  }

 private:
  const std::string path_;
  std::atomic<uint64_t> newest_{0};
  // What the file holds; below newest_ after a failed write. Read without
  // the lock for the common case (nothing new), written under it.
  std::atomic<uint64_t> persisted_{0};
  std::mutex write_mu_;  // one writer of the file at a time
  static constexpr int64_t kNone = std::numeric_limits<int64_t>::min();
  std::atomic<uint64_t> deployed_{0};
  std::atomic<int64_t> handed_over_{kNone};
};

}  // namespace clickatron::api
