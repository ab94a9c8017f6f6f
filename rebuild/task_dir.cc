#include "task_dir.h"

#include <filesystem>

#include <fmt/format.h>
#include <spdlog/spdlog.h>

#include "clickatron/file_util.h"
#include "merge_shard_task.h"
#include "sort_shard_task.h"

namespace clickatron::rebuild {
namespace {

Status RemoveTree(const std::string& path) {
  std::error_code ec;
  std::filesystem::remove_all(path, ec);
  if (ec) return Status::IoError(fmt::format("remove {}: {}", path, ec.message()));
  return Status::Ok();
}

Result<nlohmann::json> ReadJsonFile(const std::string& path) {
  auto text = ReadFileToString(path);
  if (!text.ok()) return text.status();
  nlohmann::json j = nlohmann::json::parse(*text, nullptr, /*allow_exceptions=*/false);
  if (j.is_discarded() || !j.is_object()) return Status::Corruption(fmt::format("{}: not a JSON object", path));
  return j;
}

}  // namespace

Status WriteTaskSpec(const TaskPaths& task, const nlohmann::json& spec) {
  CLICKATRON_RETURN_IF_ERROR(RemoveTree(task.Out()));
  CLICKATRON_RETURN_IF_ERROR(MakeDirs(task.In()));
  return WriteFileAtomically(task.Spec(), spec.dump(2) + "\n");
}

bool TaskDone(const TaskPaths& task) { return FileExists(task.Done()); }

Result<nlohmann::json> ReadTaskDone(const TaskPaths& task) { return ReadJsonFile(task.Done()); }

Status RunTaskDir(const TaskPaths& task, const ClusterConfig& cluster, const TaskResources& resources) {
  auto spec = ReadJsonFile(task.Spec());
  if (!spec.ok()) return spec.status();
  CLICKATRON_RETURN_IF_ERROR(RemoveTree(task.Out()));
  CLICKATRON_RETURN_IF_ERROR(RemoveTree(task.Tmp()));
  CLICKATRON_RETURN_IF_ERROR(MakeDirs(task.Out()));
  CLICKATRON_RETURN_IF_ERROR(MakeDirs(task.Tmp()));
  const std::string kind = spec->value("kind", "");
  Result<nlohmann::json> done = Status::InvalidArgument(fmt::format("{}: unknown task kind \"{}\"", task.Spec(), kind));
  try {
    if (kind == "sort-shard") {
      auto parsed = SortShardSpec::FromJson(*spec);
      if (!parsed.ok()) return parsed.status().WithContext(task.Spec());
      done = RunSortShard(task, *parsed, cluster, resources);
    } else if (kind == "merge-shard") {
      auto parsed = MergeShardSpec::FromJson(*spec);
      if (!parsed.ok()) return parsed.status().WithContext(task.Spec());
      done = RunMergeShard(task, *parsed, cluster, resources);
    }
  } catch (const nlohmann::json::exception& e) {
    return Status::Corruption(fmt::format("{}: {}", task.Spec(), e.what()));
  }
  if (!done.ok()) return done.status();
  CLICKATRON_RETURN_IF_ERROR(RemoveTree(task.Tmp()));
  return WriteFileAtomically(task.Done(), done->dump(2) + "\n");
}

}  // namespace clickatron::rebuild
