#include "backup.h"

#include <fcntl.h>
#include <unistd.h>
#include <zlib.h>

#include <cerrno>
#include <algorithm>
#include <cstring>
#include <filesystem>
#include <memory>

#include <fmt/format.h>

#include "clickatron/file_util.h"

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
  const int in = ::open(options.source.c_str(), O_RDONLY | O_CLOEXEC);
  if (in < 0) return Status::IoError(fmt::format("open {}: {}", options.source, std::strerror(errno)));
  const std::string tmp = options.dest_gz + ".tmp";
  gzFile out = gzopen(tmp.c_str(), fmt::format("wb{}", options.level).c_str());
  if (out == nullptr) {
    ::close(in);
    return Status::IoError(fmt::format("create {}: {}", tmp, std::strerror(errno)));
  }
  gzbuffer(out, 1u << 20);
  constexpr size_t kBlock = 1u << 20;
  std::unique_ptr<char[]> block(new char[kBlock]);
  Status st;
  while (st.ok()) {
    const ssize_t n = ::read(in, block.get(), kBlock);
    if (n < 0) {
      if (errno == EINTR) continue;
      st = Status::IoError(fmt::format("read {}: {}", options.source, std::strerror(errno)));
      break;
    }
    if (n == 0) break;
    if (gzwrite(out, block.get(), static_cast<unsigned>(n)) != static_cast<int>(n)) {
      int err = 0;
      st = Status::IoError(fmt::format("gzip {}: {}", tmp, gzerror(out, &err)));
    }
  }
  ::close(in);
  if (gzclose(out) != Z_OK && st.ok()) st = Status::IoError(fmt::format("gzclose {}", tmp));
  if (st.ok()) st = FsyncFile(tmp);
  if (!st.ok()) {
    ::unlink(tmp.c_str());
    return st;
  }
  CLICKATRON_RETURN_IF_ERROR(RenameDurably(tmp, options.dest_gz));
  std::string plain = options.dest_gz;
  if (plain.size() > 3 && plain.compare(plain.size() - 3, 3, ".gz") == 0) plain.resize(plain.size() - 3);
  return WriteManifestAtomically(ManifestPathFor(plain), options.manifest);
}

}  // namespace clickatron::rebuild
