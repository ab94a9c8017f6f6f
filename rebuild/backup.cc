#include "backup.h"

#include <fcntl.h>
#include <unistd.h>
#include <zlib.h>

#include <cerrno>
#include <cstring>
#include <memory>

#include <fmt/format.h>

#include "clickatron/file_util.h"

namespace clickatron::rebuild {

std::string BackupDir(const std::string& backup_root, uint64_t generation) {
  return fmt::format("{}/gen-{}", backup_root, generation);
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
