#include "late_inputs.h"

#include <algorithm>
#include <filesystem>

#include <fmt/format.h>

#include "clickatron/file_util.h"
#include "clickatron/oplog_record.h"

namespace clickatron::rebuild {

std::vector<std::string> LateDataDirs(const ClusterConfig& cluster) {
  std::vector<std::string> dirs;
  if (!cluster.rebuild.oplog_dirs.empty()) {
    for (const std::string& dir : cluster.rebuild.oplog_dirs) dirs.push_back(dir + "/late");
  } else {
    for (const MemberConfig* api : cluster.MembersWithRole(MemberRole::kApi)) {
      dirs.push_back(api->data_dir + "/late");
    }
  }
  return dirs;
}

Result<std::vector<std::string>> ListLateInputs(const LateInputsOptions& options) {
  // (created, path): oldest first across every API node.
  std::vector<std::pair<int64_t, std::string>> found;
  for (const std::string& dir : options.dirs) {
    std::error_code ec;
    if (!std::filesystem::exists(dir, ec)) continue;
    for (const auto& entry : std::filesystem::directory_iterator(dir, ec)) {
      const std::string name = entry.path().filename().string();
      int64_t created = 0;
      bool sealed = false;
      if (!ParseLateFileName(name, &created, &sealed) || !sealed) continue;
      const std::string path = dir + "/" + name;
      if (options.already_folded.count(path) > 0) continue;
      found.emplace_back(created, path);
    }
    if (ec) return Status::IoError(fmt::format("list {}: {}", dir, ec.message()));
  }
  std::sort(found.begin(), found.end());
  std::vector<std::string> paths;
  for (auto& [created, path] : found) paths.push_back(std::move(path));
  return paths;
}

std::string LateDonePath(const std::string& sealed_path) {
  constexpr std::string_view kSealed = ".sealed";
  if (sealed_path.size() > kSealed.size() &&
      sealed_path.compare(sealed_path.size() - kSealed.size(), kSealed.size(), kSealed) == 0) {
    return sealed_path.substr(0, sealed_path.size() - kSealed.size()) + ".done";
  }
  return sealed_path + ".done";
}

Status MarkLateInputDone(const std::string& sealed_path) {
  const std::string done = LateDonePath(sealed_path);
  if (!FileExists(sealed_path) && FileExists(done)) return Status::Ok();
  return RenameDurably(sealed_path, done);
}

}  // namespace clickatron::rebuild
