// The rebuild's working directory; see work_dir.h.
#include "work_dir.h"

#include <unistd.h>

#include <filesystem>
#include <string>
#include <system_error>

#include <spdlog/spdlog.h>

namespace clickatron::rebuild {
namespace {

// NAME.tmp.PID with PID all digits and not ours.
bool IsStaleTempName(const std::string& name, const std::string& own_suffix) {
  const size_t at = name.rfind(".tmp.");
  if (at == std::string::npos || at == 0 || at + 5 == name.size()) return false;
  for (size_t i = at + 5; i < name.size(); ++i) {
    if (name[i] < '0' || name[i] > '9') return false;
  }
  return name.compare(at, std::string::npos, own_suffix) != 0;
}

void RemoveStaleIn(const std::filesystem::path& dir, const std::string& own_suffix) {
  std::error_code ec;
  for (const auto& entry : std::filesystem::directory_iterator(dir, ec)) {
    const std::string name = entry.path().filename().string();
    if (!entry.is_regular_file(ec) || !IsStaleTempName(name, own_suffix)) continue;
    if (std::filesystem::remove(entry.path(), ec)) {
      spdlog::info("removed {}: left half-written by a rebuild that was stopped", entry.path().string());
    }
  }
}

}  // namespace

void RemoveStaleTempFiles(const WorkDir& work) {
  const std::string own_suffix = ".tmp." + std::to_string(::getpid());
  RemoveStaleIn(work.root(), own_suffix);
  for (const std::string& parent : {work.DaysDir(), work.GenRoot()}) {
    std::error_code ec;
    for (const auto& entry : std::filesystem::directory_iterator(parent, ec)) {
      if (entry.is_directory(ec)) RemoveStaleIn(entry.path(), own_suffix);
    }
  }
}

}  // namespace clickatron::rebuild
