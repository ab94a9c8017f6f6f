#include "backup.h"

#include <algorithm>
#include <filesystem>

#include <fmt/format.h>

#include "clickatron/file_util.h"
#include "clickatron/gzip_file.h"

namespace clickatron::rebuild {

std::string BackupDir(const std::string& backup_root, uint64_t generation) {
  return fmt::format("{}/gen-{}", backup_root, generation);
}

Result<std::vector<uint64_t>> PruneBackups(const std::string& backup_root, uint64_t newest, uint64_t keep) {
  std::vector<uint64_t> removed;
  if (keep == 0 || newest <= keep) return removed;
  std::error_code ec;
  if (!std::filesystem::exists(backup_root, ec)) return removed;
  std::vector<uint64_t> old;
  for (const auto& entry : std::filesystem::directory_iterator(backup_root, ec)) {
    const std::string name = entry.path().filename().string();
    if (!entry.is_directory() || !name.starts_with("gen-") || name.size() == 4 || name.size() > 24 ||
        name.find_first_not_of("0123456789", 4) != std::string::npos) {
      continue;
    }
    const uint64_t g = std::stoull(name.substr(4));
    if (g <= newest - keep) old.push_back(g);
  }
  if (ec) return Status::IoError(fmt::format("list {}: {}", backup_root, ec.message()));
  std::sort(old.begin(), old.end());
  for (uint64_t g : old) {
    std::filesystem::remove_all(BackupDir(backup_root, g), ec);
    if (ec) return Status::IoError(fmt::format("remove {}: {}", BackupDir(backup_root, g), ec.message()));
    removed.push_back(g);
  }
  return removed;
}

Status BackupShardFile(const BackupOptions& options) {
  CLICKATRON_RETURN_IF_ERROR(MakeDirs(DirName(options.dest_gz)));
  CLICKATRON_RETURN_IF_ERROR(CompressFileAtomically(options.source, options.dest_gz, options.level));
  std::string plain = options.dest_gz;
  if (plain.size() > 3 && plain.compare(plain.size() - 3, 3, ".gz") == 0) plain.resize(plain.size() - 3);
  return WriteManifestAtomically(ManifestPathFor(plain), options.manifest);
}

}  // namespace clickatron::rebuild
