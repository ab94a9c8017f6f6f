// clickatron-archive: one archive replica (docs/protocols.md). Maps the member's
// sorted file and answers get / mget / fwmatch by binary search over it;
// POST /reload or SIGHUP swaps in a new file without downtime.
#include <csignal>
#include <cstdio>

#include <spdlog/spdlog.h>

#include "archive_server.h"
#include "clickatron/daemon.h"
#include "clickatron/http_server.h"

using namespace clickatron;

int main(int argc, char** argv) {
  // SIGHUP's default action kills the process. Until the loop runs and takes
  // it over (a reload), a SIGHUP during start-up must do nothing: the file
  // is being loaded anyway.
  std::signal(SIGHUP, SIG_IGN);
  auto ctx = StartDaemon(argc, argv, "clickatron-archive", MemberRole::kArchive);
  if (!ctx.ok()) {
    std::fprintf(stderr, "%s\n", ctx.status().ToString().c_str());
    return 2;
  }
  auto server = HttpServer::Create(ctx->http);
  if (!server.ok()) {
    spdlog::critical("{}", server.status().ToString());
    return 1;
  }
  archive::ArchiveServerOptions options;
  options.load = archive::LoadOptions::From(ctx->member, ctx->cluster.archive);
  options.load.refuse_last_day_from_today = ctx->cluster.clock != "manual";
  options.scrub.interval_seconds = ctx->cluster.archive.scrub_interval_seconds;
  options.scrub.bytes_per_second = uint64_t(ctx->cluster.archive.scrub_mb_per_second) << 20;
  options.fetch.shard = ctx->member.shard;
  options.fetch.cluster_secret = ctx->cluster.cluster_secret;
  options.fetch.client_tls = ctx->cluster.client_tls;
  for (const MemberConfig* replica : ctx->cluster.ArchiveReplicas(ctx->member.shard)) {
    if (replica->name != ctx->member.name) options.peers.push_back(replica->listen);
  }
  auto archive = archive::ArchiveServer::Create(**server, options);
  if (!archive.ok()) {
    spdlog::critical("{}", archive.status().ToString());
    return 1;
  }
  (*server)->SetStatsProvider([&] { return (*archive)->StatsJson(); }, [&] { return (*archive)->StatsPrometheus(); });
  Status st = (*server)->Run();
  if (!st.ok()) {
    spdlog::critical("{}", st.ToString());
    return 1;
  }
  spdlog::info("stopped");
  return 0;
}
