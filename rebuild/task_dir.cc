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

bool TaskDone(const TaskPaths& task) {
  auto done = ReadJsonFile(task.Done());
  if (!done.ok() || !done->contains("files") || !(*done)["files"].is_object()) return false;
  for (const auto& [name, size] : (*done)["files"].items()) {
    std::error_code ec;
    const auto actual = std::filesystem::file_size(task.Out() + "/" + name, ec);
    if (ec || !size.is_number_unsigned() || actual != size.get<uint64_t>()) return false;
  }
  return true;
}

Result<nlohmann::json> ReadTaskDone(const TaskPaths& task) { return ReadJsonFile(task.Done()); }

Result<nlohmann::json> ReadTaskSpec(const TaskPaths& task) { return ReadJsonFile(task.Spec()); }

Status RunTaskDir(const TaskPaths& task, const ClusterConfig& cluster, const TaskResources& resources) {
  auto spec = ReadTaskSpec(task);
  if (!spec.ok()) return spec.status();
  TaskPaths staging = task;
  staging.out_name = "out.partial";
  CLICKATRON_RETURN_IF_ERROR(RemoveTree(task.Out()));
  CLICKATRON_RETURN_IF_ERROR(RemoveTree(staging.Out()));
  CLICKATRON_RETURN_IF_ERROR(RemoveTree(task.Tmp()));
  CLICKATRON_RETURN_IF_ERROR(MakeDirs(staging.Out()));
  CLICKATRON_RETURN_IF_ERROR(MakeDirs(task.Tmp()));
  const std::string kind = spec->value("kind", "");
  Result<nlohmann::json> done = Status::InvalidArgument(fmt::format("{}: unknown task kind \"{}\"", task.Spec(), kind));
  try {
    if (kind == "sort-shard") {
      auto parsed = SortShardSpec::FromJson(*spec);
      if (!parsed.ok()) return parsed.status().WithContext(task.Spec());
      done = RunSortShard(staging, *parsed, cluster, resources);
    } else if (kind == "merge-shard") {
      auto parsed = MergeShardSpec::FromJson(*spec);
      if (!parsed.ok()) return parsed.status().WithContext(task.Spec());
      done = RunMergeShard(staging, *parsed, cluster, resources);
    }
  } catch (const nlohmann::json::exception& e) {
    return Status::Corruption(fmt::format("{}: {}", task.Spec(), e.what()));
  }
  if (!done.ok()) return done.status();
  CLICKATRON_RETURN_IF_ERROR(RemoveTree(task.Tmp()));
  // Every result file and its size: a copy of out/ that lost one, or got
  // one cut short, is not done (TaskDone).
  nlohmann::json files = nlohmann::json::object();
  std::error_code ec;
  for (const auto& entry : std::filesystem::recursive_directory_iterator(staging.Out(), ec)) {
    if (!entry.is_regular_file()) continue;
    files[std::filesystem::relative(entry.path(), staging.Out()).string()] = entry.file_size();
  }
  if (ec) return Status::IoError(fmt::format("list {}: {}", staging.Out(), ec.message()));
  (*done)["files"] = std::move(files);
  CLICKATRON_RETURN_IF_ERROR(WriteFileAtomically(staging.Done(), done->dump(2) + "\n"));
  return RenameDurably(staging.Out(), task.Out());
}

}  // namespace clickatron::rebuild
