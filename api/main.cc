// clickatron-api: the increment and query front end.
#include <chrono>
#include <cstdio>

#include <spdlog/spdlog.h>

#include "clickatron/daemon.h"
#include "clickatron/http_client.h"
#include "clickatron/http_server.h"
#include "dashboard/dashboard.h"
#include "deletions/deletion_service.h"
#include "ingest/write_path.h"
#include "openapi/openapi.h"
#include "query/fetch/known_generation.h"
#include "query/read_loops.h"
#include "query/read_path.h"

using namespace clickatron;

int main(int argc, char** argv) {
  auto ctx = StartDaemon(argc, argv, "clickatron-api", MemberRole::kApi);
  if (!ctx.ok()) {
    std::fprintf(stderr, "%s\n", ctx.status().ToString().c_str());
    return 2;
  }
  auto shared = api::ReadShared::Make(*ctx);
  ctx->http.share_port = shared->loops > 1;  // the read loops' siblings listen on it too
  // Clients keep connections to an API node (every HTTP library's pool): a
  // stop answers what they send on them for up to a second, 503 STOPPING
  // with Connection: close, rather than closing them under a request.
  ctx->http.stop_linger = std::chrono::seconds(1);
  auto server = HttpServer::Create(ctx->http);
  if (!server.ok()) {
    spdlog::critical("{}", server.status().ToString());
    return 1;
  }
  // Many connections per realtime shard: batches are sent in parallel while a
  // slow fsync on one shard does not stall the others.
  HttpClient::Options client_options;
  client_options.connections_per_peer = 16;
  client_options.cluster_secret = ctx->cluster.cluster_secret;
  client_options.tls = ctx->cluster.client_tls;
  auto client = HttpClient::Create((*server)->base(), client_options);
  auto write = api::WritePath::Create(*ctx, **server, *client);
  if (!write.ok()) {
    spdlog::critical("write path: {}", write.status().ToString());
    return 1;
  }
  api::LateData& late = (*write)->late();
  api::LateFiles late_files{
      .scrub_done = [&late](std::function<void(Status)> done) { late.ScrubDone(std::move(done)); },
      .holds = [&late](api::LateFiles::LinePredicate covered, std::function<void(Result<bool>)> done) {
        late.Holds(std::move(covered), std::move(done));
      }};
  auto deletions = api::DeletionService::Create(
      *ctx, **server, *client, [w = write->get()] { return w->OplogHeads(); }, std::move(late_files),
      [known = shared->known_generation](uint64_t generation) { known->SawHandover(generation, std::nullopt); });
  if (!deletions.ok()) {
    spdlog::critical("deletions: {}", deletions.status().ToString());
    return 1;
  }
  shared->deletions = &(*deletions)->log();
  // A late file marked done is rewritten without what deletions took out.
  late.SetScrubber([log = &(*deletions)->log()] { return log->LateLinesDeleted(); });
  auto read = api::ReadPath::Create(*ctx, **server, *client, SystemClock::Instance(), shared);
  if (!read.ok()) {
    spdlog::critical("read path: {}", read.status().ToString());
    return 1;
  }
  auto static_pages = [](HttpServer& s) {
    s.Route("/", api::ServeDashboard, kGet);
    s.Route("/dashboard.js", api::ServeDashboardScript, kGet);
    s.Route("/openapi.yaml", api::ServeOpenApi, kGet);
  };
  static_pages(**server);
  // Last: siblings hand the first loop every route it has by now.
  auto read_loops = api::ReadLoops::Start(*ctx, **server, client_options, shared, static_pages);
  if (!read_loops.ok()) {
    spdlog::critical("read loops: {}", read_loops.status().ToString());
    return 1;
  }
  // The siblings stop with the first loop, each answering the queries it
  // took and lingering for its clients as it does, and are joined last.
  (*server)->OnStopDrain([&](std::function<void()> drained) {
    (*read_loops)->BeginStop();
    drained();
  });
  (*server)->OnStop([&] { (*read_loops)->Stop(); });
  (*server)->SetStatsProvider(
      [&] {
        nlohmann::json j = (*write)->StatsJson();
        j.update((*read)->StatsJson());
        return j;
      },
      [&] { return (*write)->StatsPrometheus() + (*read)->StatsPrometheus(); });
  Status st = (*server)->Run();
  if (!st.ok()) {
    spdlog::critical("{}", st.ToString());
    return 1;
  }
  spdlog::info("stopped");
  return 0;
}
