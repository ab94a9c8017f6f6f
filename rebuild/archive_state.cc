#include "archive_state.h"

#include <fmt/format.h>

#include "clickatron/file_util.h"

namespace clickatron::rebuild {
namespace {

// The manifest beside shard `shard`'s serving file, or nullopt when the shard
// has no file yet.
Result<std::optional<Manifest>> ShardManifest(const ClusterConfig& cluster, int shard, std::string* file) {
  const std::vector<const MemberConfig*> replicas = cluster.ArchiveReplicas(shard);
  if (replicas.empty()) return Status::InvalidArgument(fmt::format("archive shard {} has no member", shard));
  *file = replicas.front()->file;
  const std::string manifest_path = ManifestPathFor(*file);
  const bool has_file = FileExists(*file);
  const bool has_manifest = FileExists(manifest_path);
  if (!has_file && !has_manifest) return std::optional<Manifest>();
  if (!has_manifest) {
    return Status::FailedPrecondition(
        fmt::format("{} exists without its manifest {}; refusing to guess what it holds", *file, manifest_path));
  }
  if (!has_file) {
    return Status::FailedPrecondition(fmt::format("{} exists but {} does not", manifest_path, *file));
  }
  Result<Manifest> manifest = ReadManifest(manifest_path);
  if (!manifest.ok()) return manifest.status();
  return std::optional<Manifest>(std::move(manifest).value());
}

}  // namespace

Result<std::vector<uint64_t>> ServingGenerations(const ClusterConfig& cluster) {
  std::vector<uint64_t> generations;
  for (int shard = 0; shard < cluster.archive_shards; ++shard) {
    std::string file;
    auto manifest = ShardManifest(cluster, shard, &file);
    if (!manifest.ok()) return manifest.status();
    generations.push_back(manifest->has_value() ? (*manifest)->generation : 0);
  }
  return generations;
}

Result<ServingArchive> ReadServingArchive(const ClusterConfig& cluster) {
  ServingArchive state;
  bool any = false;
  bool none = false;
  for (int shard = 0; shard < cluster.archive_shards; ++shard) {
    std::string file;
    auto manifest = ShardManifest(cluster, shard, &file);
    if (!manifest.ok()) return manifest.status();
    if (!manifest->has_value()) {
      none = true;
      continue;
    }
    const Manifest& m = **manifest;
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
    state.files.push_back(file);
    state.manifests.push_back(m);
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
