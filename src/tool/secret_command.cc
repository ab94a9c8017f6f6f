// `clickatron secret FILE`: writes a fresh random secret (or token) to FILE,
// readable by its owner only, for [cluster] cluster_secret_file and
// admin_token_file. Never overwrites: replacing a cluster's secret is a
// decision (every member must get the new one), not a side effect.
#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <fmt/format.h>

#include <cerrno>
#include <cstring>
#include <memory>

#include "clickatron/cluster_auth.h"
#include "clickatron/file_util.h"
#include "clickatron/unique_fd.h"
#include "commands.h"

namespace clickatron::tool {
namespace {

Status WriteNewSecret(const std::string& path) {
  Result<std::string> secret = GenerateSecret();
  if (!secret.ok()) return secret.status();
  if (const std::string dir = DirName(path); !dir.empty()) CLICKATRON_RETURN_IF_ERROR(MakeDirs(dir));
  // O_EXCL: never replace an existing secret; mode 600 from the start, so
  // the secret is never readable by others, not even for a moment.
  UniqueFd fd(::open(path.c_str(), O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0600));
  if (!fd.valid()) {
    if (errno == EEXIST) return Status::FailedPrecondition(fmt::format("{} exists: not replacing a secret", path), "EXISTS");
    return Status::IoError(fmt::format("create {}: {}", path, std::strerror(errno)));
  }
  const std::string text = *secret + "\n";
  Status st;
  if (::write(fd.get(), text.data(), text.size()) != static_cast<ssize_t>(text.size()) || ::fsync(fd.get()) != 0) {
    st = Status::IoError(fmt::format("write {}: {}", path, std::strerror(errno)));
  }
  // A secret half on disk is worse than none: a close error counts too.
  if (Status closed = fd.Close(); st.ok() && !closed.ok()) st = closed.WithContext(path);
  if (!st.ok()) {
    ::unlink(path.c_str());
    return st;
  }
  PrintLine(fmt::format("wrote a new secret to {} (mode 600)", path));
  return Status::Ok();
}

void AddSecretCommand(Command& app) {
  Command sub = app.AddCommand("secret", "Write a new random secret to FILE (mode 600; never overwrites)");
  SetDetails(sub,
             "For [cluster] cluster_secret_file and admin_token_file: 32 random bytes as 64 hex digits.\n"
             "Copy the cluster secret to every member host (same path or its own, mode 600).");
  auto path = std::make_shared<std::string>();
  sub.Option("FILE", *path, "where to write it").Required();
  SetAction(sub, [path] { return WriteNewSecret(*path); });
}

const bool kSecretRegistered = RegisterCommand(75, AddSecretCommand);

}  // namespace
}  // namespace clickatron::tool
