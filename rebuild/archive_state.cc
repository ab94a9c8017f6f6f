#include "archive_state.h"

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

Result<ServingArchive> ReadServingArchive(const ClusterConfig& cluster, int timeout_ms, int transfer_timeout_ms) {
  const std::vector<ReplicaState> replicas = AskArchiveReplicas(cluster, timeout_ms);
  BlockingHttpClient client(cluster);
  ServingArchive state;
  bool any = false;
  bool none = false;
  for (int shard = 0; shard < cluster.archive_shards; ++shard) {
    // The newest generation a replica of this shard serves, and who serves it.
    const Manifest* newest = nullptr;
    std::vector<const MemberConfig*> sources;
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
      if (newest != nullptr && m.generation == newest->generation && !SameContents(m, *newest)) {
        return Status::FailedPrecondition(fmt::format(
            "archive shard {}: replicas serve two different files as generation {} ({} has crc32 {}, another {})",
            shard, m.generation, r.member->name, m.crc32, newest->crc32));
      }
      if (newest == nullptr || m.generation > newest->generation) {
        newest = &m;
        sources.clear();
      }
      if (m.generation == newest->generation) sources.push_back(r.member);
    }
    if (!answered) {
      return Status::Unavailable(fmt::format("archive shard {}: no replica answers GET /manifest: {}", shard, down),
                                 "REPLICA_UNAVAILABLE");
    }
    if (newest == nullptr) {
      none = true;
      continue;
    }
    const Manifest& m = *newest;
    if (any && m.generation != state.generation) {
      return Status::FailedPrecondition(fmt::format(
          "archive shards serve different generations ({} and {}): a deploy stopped half-way; "
          "rerun the rebuild to finish it (or restore the files of one generation from the backup)",
          state.generation, m.generation));
    }
    any = true;
    state.generation = m.generation;
    if (m.last_day > state.last_day) state.last_day = m.last_day;
    state.late_inputs.insert(m.late_inputs.begin(), m.late_inputs.end());
    state.manifests.push_back(m);
    auto copy = LocalCopy(cluster, m, sources, client, transfer_timeout_ms);
    if (!copy.ok()) return copy.status();
    state.files.push_back(std::move(copy).value());
  }
  if (any && none) {
    return Status::FailedPrecondition(
        fmt::format("some archive shards have a file (generation {}) and some do not", state.generation));
  }
  if (any) {
    // Every file of one generation was cut with the same shard count.
    state.shard_count = state.manifests.front().shard_count;
    for (const Manifest& m : state.manifests) {
      if (m.shard_count != state.shard_count) {
        return Status::FailedPrecondition("archive manifests disagree on shard_count");
      }
    }
    if (state.shard_count != cluster.archive_shards) {
      return Status::FailedPrecondition(fmt::format(
          "the serving archive has {} shards but the cluster file says archive_shards = {}; "
          "resharding is not supported by this rebuild",
          state.shard_count, cluster.archive_shards));
    }
  } else {
    state.shard_count = cluster.archive_shards;
  }
  return state;
}

}  // namespace clickatron::rebuild
