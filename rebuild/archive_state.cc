#include "archive_state.h"

#include <algorithm>
#include <utility>

#include <fmt/format.h>
#include <spdlog/spdlog.h>

#include "clickatron/file_util.h"
#include "clickatron/generation_fetch.h"
#include "clickatron/http_client.h"
#include "work_dir.h"

namespace clickatron::rebuild {
namespace {

bool SameContents(const Manifest& a, const Manifest& b) {
  return a.generation == b.generation && a.crc32 == b.crc32 && a.bytes == b.bytes;
}

// `path` with a manifest beside it describing `want`.
bool HasCopy(const std::string& path, const Manifest& want) {
  if (!FileExists(path)) return false;
  auto manifest = ReadManifest(ManifestPathFor(path));
  return manifest.ok() && SameContents(*manifest, want);
}

// A local file holding shard `shard`'s generation `want`: the work dir's own
// build of it, or a copy fetched from one of `sources` now.
Result<std::string> LocalCopy(const ClusterConfig& cluster, const Manifest& want,
                              const std::vector<const MemberConfig*>& sources, BlockingHttpClient& client,
                              int timeout_ms) {
  const WorkDir work(cluster.rebuild.work_dir);
  const std::string built = work.GenShard(want.generation, want.shard);
  if (HasCopy(built, want)) return built;
  const std::string fetched = work.FetchedShard(want.generation, want.shard);
  if (HasCopy(fetched, want)) return fetched;
  CLICKATRON_RETURN_IF_ERROR(MakeDirs(DirName(fetched)));
  std::string errors;
  for (const MemberConfig* source : sources) {
    spdlog::info("archive shard {}: this work dir has no copy of generation {}: fetching it from {} ({} bytes)",
                 want.shard, want.generation, source->name, want.bytes);
    const Status st = FetchShardFile(client, source->listen, want, fetched, timeout_ms);
    if (st.ok()) return fetched;
    spdlog::warn("{}", st.ToString());
    errors += (errors.empty() ? "" : "; ") + st.message();
  }
  return Status::Unavailable(
      fmt::format("archive shard {}: no replica gave generation {}: {}", want.shard, want.generation, errors));
}

}  // namespace

std::vector<ReplicaState> AskArchiveReplicas(const ClusterConfig& cluster, int timeout_ms) {
  BlockingHttpClient client(cluster);
  std::vector<ReplicaState> states;
  for (int shard = 0; shard < cluster.archive_shards; ++shard) {
    for (const MemberConfig* member : cluster.ArchiveReplicas(shard)) {
      ReplicaState state{member, shard, Status::Ok(), std::nullopt};
      auto manifest = FetchShardManifest(client, member->listen, shard, timeout_ms);
      if (!manifest.ok()) {
        state.status = manifest.status();
      } else {
        state.manifest = std::move(manifest).value();
      }
      states.push_back(std::move(state));
    }
  }
  return states;
}

namespace {

// Shrinking archive_shards: the old shards beyond the new count have no
// member in the cluster file any more, so their files of generation
// `generation` can only come from this work dir (its own build, kept until
// the next generation is finished, or a copy in fetched/).
Result<std::pair<std::string, Manifest>> LocalCopyOfDroppedShard(const ClusterConfig& cluster, uint64_t generation,
                                                                  int shard, int shard_count) {
  const WorkDir work(cluster.rebuild.work_dir);
  // Why a file found there is not that copy: an operator who put another
  // generation's file in place is told so, not that nothing is there.
  std::string refused;
  for (const std::string& path : {work.GenShard(generation, shard), work.FetchedShard(generation, shard)}) {
    if (!FileExists(path)) continue;
    auto manifest = ReadManifest(ManifestPathFor(path));
    if (manifest.ok() && manifest->generation == generation && manifest->shard == shard &&
        manifest->shard_count == shard_count) {
      return std::pair{path, *std::move(manifest)};
    }
    refused += manifest.ok() ? fmt::format("; {} is there, but its manifest says generation {}, shard {} of {}",
                                           path, manifest->generation, manifest->shard, manifest->shard_count)
                             : fmt::format("; {} is there, but its manifest cannot be read: {}", path,
                                           manifest.status().message());
  }
  return Status::FailedPrecondition(
      fmt::format("the serving archive (generation {}) has {} shards and the cluster file says archive_shards = {}: "
                  "re-partitioning it needs the file of archive shard {}, whose replicas are no longer in the cluster "
                  "file, and this work dir has no copy of it ({} or {}, with its manifest{}). Run the rebuild on the "
                  "host whose work dir built generation {}, or copy that shard's file and its manifest from one of "
                  "its old replicas (or gunzip backup_dir/gen-{}/shard-{}.csv.gz, manifest beside it) to {}",
                  generation, shard_count, cluster.archive_shards, shard, work.GenShard(generation, shard),
                  work.FetchedShard(generation, shard), refused, generation, generation, shard,
                  work.FetchedShard(generation, shard)),
      "RESHARD_NEEDS_FILE");
}

}  // namespace

Result<ServingArchive> ReadServingArchive(const ClusterConfig& cluster, int timeout_ms, int transfer_timeout_ms) {
  const std::vector<ReplicaState> replicas = AskArchiveReplicas(cluster, timeout_ms);
  BlockingHttpClient client(cluster);
  // Per shard of the cluster file: the newest generation a replica serves
  // (nullptr: none has a file), and who serves it.
  struct Served {
    const Manifest* newest = nullptr;
    std::vector<const MemberConfig*> sources;
  };
  std::vector<Served> served(static_cast<size_t>(cluster.archive_shards));
  for (int shard = 0; shard < cluster.archive_shards; ++shard) {
    Served& sv = served[static_cast<size_t>(shard)];
    std::string down;
    bool answered = false;
    for (const ReplicaState& r : replicas) {
      if (r.shard != shard) continue;
      if (!r.status.ok()) {
        down += fmt::format("{}{}: {}", down.empty() ? "" : "; ", r.member->name, r.status.message());
        continue;
      }
      answered = true;
      if (!r.manifest) continue;
      const Manifest& m = *r.manifest;
      if (sv.newest != nullptr && m.generation == sv.newest->generation && !SameContents(m, *sv.newest)) {
        return Status::FailedPrecondition(fmt::format(
            "archive shard {}: replicas serve two different files as generation {} ({} has crc32 {}, another {})",
            shard, m.generation, r.member->name, m.crc32, sv.newest->crc32));
      }
      if (sv.newest == nullptr || m.generation > sv.newest->generation) {
        sv.newest = &m;
        sv.sources.clear();
      }
      if (m.generation == sv.newest->generation) sv.sources.push_back(r.member);
    }
    if (!answered) {
      return Status::Unavailable(fmt::format("archive shard {}: no replica answers GET /manifest: {}", shard, down),
                                 "REPLICA_UNAVAILABLE");
    }
  }

  // A shard outside the newest generation's layout that serves an older
  // generation holds a file left from before the count was lowered (its
  // replica stopped then, started again now that the count is raised):
  // nothing the archive holds is in it, and this run's deploy replaces it.
  // (A re-partition stopped half-way is the other order: the newer files
  // are the ones cut into more shards.)
  const Manifest* newest = nullptr;
  for (const Served& sv : served) {
    if (sv.newest != nullptr && (newest == nullptr || sv.newest->generation > newest->generation)) newest = sv.newest;
  }
  for (size_t shard = 0; newest != nullptr && shard < served.size(); ++shard) {
    Served& sv = served[shard];
    if (sv.newest == nullptr || sv.newest->generation >= newest->generation ||
        static_cast<int>(shard) < newest->shard_count) {
      continue;
    }
    spdlog::warn("archive shard {} serves generation {} (cut into {} shards), a file left from before the count was "
                 "lowered: generation {} has {} shards; this run's deploy replaces it",
                 shard, sv.newest->generation, sv.newest->shard_count, newest->generation, newest->shard_count);
    sv.newest = nullptr;
    sv.sources.clear();
  }

  // The generation and the shard count its files were cut with: every file
  // served must agree on both.
  ServingArchive state;
  for (const Served& sv : served) {
    if (sv.newest == nullptr) continue;
    const Manifest& m = *sv.newest;
    if (state.generation != 0 && m.generation != state.generation) {
      return Status::FailedPrecondition(fmt::format(
          "archive shards serve different generations ({} and {}): a deploy stopped half-way; "
          "rerun the rebuild to finish it (or restore the files of one generation from the backup)",
          state.generation, m.generation));
    }
    if (state.generation != 0 && m.shard_count != state.shard_count) {
      return Status::FailedPrecondition(
          fmt::format("archive manifests of generation {} disagree on shard_count ({} and {})", m.generation,
                      state.shard_count, m.shard_count));
    }
    state.generation = m.generation;
    state.shard_count = m.shard_count;
  }
  if (state.generation == 0) {
    state.shard_count = cluster.archive_shards;
    return state;
  }
  if (state.shard_count < 1) {
    return Status::Corruption(fmt::format("archive manifests of generation {} say shard_count {}", state.generation,
                                          state.shard_count));
  }
  if (state.shard_count != cluster.archive_shards) {
    spdlog::warn("the serving archive (generation {}) has {} shards and the cluster file says archive_shards = {}: "
                 "the next generation re-partitions it",
                 state.generation, state.shard_count, cluster.archive_shards);
  }
  // Shards of the old count are the files to build on. Growing, the new
  // shards' members have no file yet; shrinking, the dropped shards' files
  // come from this work dir.
  for (int shard = 0; shard < std::max(state.shard_count, cluster.archive_shards); ++shard) {
    const bool old_shard = shard < state.shard_count;
    const bool listed = shard < cluster.archive_shards;
    const Manifest* m = listed ? served[static_cast<size_t>(shard)].newest : nullptr;
    if (listed && old_shard && m == nullptr) {
      return Status::FailedPrecondition(fmt::format(
          "some archive shards have a file (generation {}) and shard {} does not", state.generation, shard));
    }
    if (listed && !old_shard && m != nullptr) {
      return Status::FailedPrecondition(fmt::format(
          "archive shard {} serves a file of generation {}, whose files were cut into {} shards", shard,
          m->generation, state.shard_count));
    }
    if (!old_shard) continue;
    if (!listed) {
      auto copy = LocalCopyOfDroppedShard(cluster, state.generation, shard, state.shard_count);
      if (!copy.ok()) return copy.status();
      spdlog::info("archive shard {} of generation {} (not in the cluster file any more): {}", shard,
                   state.generation, copy->first);
      state.files.push_back(copy->first);
      state.manifests.push_back(copy->second);
    } else {
      auto copy = LocalCopy(cluster, *m, served[static_cast<size_t>(shard)].sources, client, transfer_timeout_ms);
      if (!copy.ok()) return copy.status();
      state.files.push_back(std::move(copy).value());
      state.manifests.push_back(*m);
    }
    const Manifest& kept = state.manifests.back();
    if (kept.last_day > state.last_day) state.last_day = kept.last_day;
    state.late_inputs.insert(kept.late_inputs.begin(), kept.late_inputs.end());
  }
  return state;
}

}  // namespace clickatron::rebuild
