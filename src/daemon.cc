#include "clickatron/daemon.h"

#include <sys/stat.h>

#include <fmt/format.h>

#include <cstdio>
#include <cstdlib>
#include <cstring>

#include "clickatron/cluster_auth.h"
#include "clickatron/logging.h"
#include "clickatron/tls.h"

namespace clickatron {

Status CheckExposure(const ClusterConfig& cluster, const MemberConfig& member) {
  if (IsLoopbackHost(member.listen.host)) return Status::Ok();
  // What is missing, what anyone who reaches the member could then do, and the fix.
  std::string_view missing, risk, fix;
  if (cluster.cluster_secret.empty()) {
    missing = "[cluster] cluster_secret_file is not set";
    risk = "send batches, read and forge counts";
    fix = "create a secret (clickatron secret FILE) and name it in [cluster] cluster_secret_file";
  } else if (cluster.admin_token.empty()) {
    missing = "no admin token is set";
    risk = "export, clear or reload";
    fix = "set [cluster] admin_token_file (or admin_token)";
  } else {
    return Status::Ok();
  }
  return Status::InvalidArgument(fmt::format("member \"{}\" listens on {}, which other hosts can reach, and {}: "
                                             "anyone there could {}. Either {}, or listen on 127.0.0.1",
                                             member.name, member.listen.ToString(), missing, risk, fix),
                                 "INSECURE_LISTEN");
}

Result<DaemonContext> StartDaemon(int argc, char** argv, const std::string& daemon, MemberRole role) {
  // Every file and directory a daemon creates (oplog, late data, stores,
  // archive files, markers) is its owner's alone: 0600 and 0700, whatever
  // the umask it was started with. Counts and keys can name people; only
  // the data directory's own mode protected them before.
  ::umask(0077);
  std::string config_path, member_name;
  for (int i = 1; i < argc; ++i) {
    std::string_view arg = argv[i];
    auto value = [&](std::string_view flag) -> const char* {
      if (arg == flag && i + 1 < argc) return argv[++i];
      if (arg.size() > flag.size() + 1 && arg.substr(0, flag.size()) == flag && arg[flag.size()] == '=') {
        return argv[i] + flag.size() + 1;
      }
      return nullptr;
    };
    if (const char* v = value("--config")) {
      config_path = v;
    } else if (const char* v2 = value("--member")) {
      member_name = v2;
    } else if (arg == "--help" || arg == "-h") {
      // Asked for: the usage on stdout and a clean exit, before anything is opened.
      std::printf("usage: %s --config FILE --member NAME\n"
                  "Runs the cluster file's member NAME (docs/operations.md).\n",
                  daemon.c_str());
      std::exit(0);
    } else {
      return Status::InvalidArgument(
          fmt::format("unknown argument \"{}\"; usage: {} --config FILE --member NAME", arg, daemon), "USAGE");
    }
  }
  if (config_path.empty() || member_name.empty()) {
    return Status::InvalidArgument(fmt::format("usage: {} --config FILE --member NAME", daemon), "USAGE");
  }
  auto cluster = ClusterConfig::Load(config_path);
  if (!cluster.ok()) return cluster.status();
  const MemberConfig* member = cluster->FindMember(member_name);
  if (!member) return Status::InvalidArgument(fmt::format("{}: no member named \"{}\"", config_path, member_name), "BAD_CONFIG");
  if (member->role != role) {
    return Status::InvalidArgument(fmt::format("{}: member \"{}\" has role {}, not {}", config_path, member_name,
                                               MemberRoleName(member->role), MemberRoleName(role)),
                                   "BAD_CONFIG");
  }
  DaemonContext ctx{std::move(cluster).value(), *member, {}, nullptr};
  if (!ctx.member.data_dir.empty()) {
    auto lock = FileLock::Acquire(ctx.member.data_dir, "daemon.lock",
                                  fmt::format("another process uses data_dir {}: one daemon per data_dir "
                                              "(member \"{}\" started twice, or two members share it)",
                                              ctx.member.data_dir, member_name));
    if (!lock.ok()) return lock.status();
    ctx.data_dir_lock = std::move(lock).value();
  }
  InitLogging(daemon, member_name, ctx.cluster.log_level);
  ctx.http.daemon = daemon;
  ctx.http.member = member_name;
  ctx.http.listen = ctx.member.listen;
  ctx.http.limits = ctx.cluster.http;
  ctx.http.admin_token = ctx.cluster.admin_token;
  ctx.http.cluster_secret = ctx.cluster.cluster_secret;
  if (role == MemberRole::kApi) ctx.http.client_token = ctx.cluster.api.client_token;
  CLICKATRON_RETURN_IF_ERROR(CheckExposure(ctx.cluster, ctx.member).WithContext(config_path));
  if (ctx.cluster.tls_files().enabled()) {
    Result<std::shared_ptr<TlsContext>> tls = TlsContext::ForServer(ctx.cluster.tls_files());
    if (!tls.ok()) return tls.status().WithContext(config_path);
    ctx.http.tls = std::move(tls).value();
  }
  return ctx;
}

}  // namespace clickatron
