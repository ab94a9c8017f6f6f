// The rebuild's working directory; see work_dir.h.
#include "work_dir.h"

#include <filesystem>
#include <string>
#include <system_error>

#include <spdlog/spdlog.h>

#include "clickatron/file_util.h"

namespace clickatron::rebuild {
namespace {

// Calls fn(entry) for each entry of `dir` (none when it cannot be read; a
// read that fails halfway ends the walk: this is housekeeping).
template <typename Fn>
void ForEachEntry(const std::filesystem::path& dir, Fn&& fn) {
  std::error_code ec;
  for (std::filesystem::directory_iterator it(dir, ec), end; !ec && it != end; it.increment(ec)) fn(*it);
}

void RemoveTempFilesIn(const std::filesystem::path& dir) {
  ForEachEntry(dir, [](const std::filesystem::directory_entry& entry) {
    std::error_code ec;
    if (!IsAtomicWriteTempName(entry.path().filename().string()) || !entry.is_regular_file(ec)) return;
    if (std::filesystem::remove(entry.path(), ec)) {
      spdlog::info("removed {}: left half-written by a rebuild that was stopped", entry.path().string());
    }
  });
}

}  // namespace

// Every temporary name is stale once the lock is held: a write under one
// finishes (renamed) before its writer goes on, and this process has
// written nothing yet. Directories are not followed through symlinks.
void RemoveStaleTempFiles(const WorkDir& work) {
  RemoveTempFilesIn(work.root());
  for (const std::string& parent : {work.DaysDir(), work.GenRoot()}) {
    ForEachEntry(parent, [](const std::filesystem::directory_entry& entry) {
      std::error_code ec;
      if (entry.symlink_status(ec).type() == std::filesystem::file_type::directory) RemoveTempFilesIn(entry.path());
    });
  }
}

}  // namespace clickatron::rebuild
