#include "deploy.h"

#include <fmt/format.h>
#include <spdlog/spdlog.h>

#include <chrono>
#include <thread>

#include "clickatron/generation_fetch.h"
#include "clickatron/http_client.h"
#include "publish_server.h"

namespace clickatron::rebuild {
namespace {

std::string Describe(const MemberConfig& member) {
  return fmt::format("{} ({})", member.name, member.listen.ToString());
}

// Is `replica` serving exactly `manifest`'s generation (generation and crc32)?
Result<bool> Serves(BlockingHttpClient* client, const MemberConfig& replica, const Manifest& manifest,
                    int timeout_ms) {
  auto served = FetchShardManifest(*client, replica.listen, manifest.shard, timeout_ms);
  if (!served.ok()) return served.status().WithContext(fmt::format("archive replica {}", Describe(replica)));
  return served->has_value() && (*served)->generation == manifest.generation &&
         (*served)->crc32 == manifest.crc32;
}

// POST /fetch on the replica: it fetches its shard from the publish server,
// checks it and swaps it in before answering.
Status FetchAndVerify(BlockingHttpClient* client, const MemberConfig& replica, const Manifest& manifest,
                      const HostPort& source, const DeployOptions& options) {
  auto already = Serves(client, replica, manifest, options.http_timeout_ms);
  if (!already.ok()) return already.status();
  if (*already) return Status::Ok();  // a rerun after a crash, or it caught up from a peer
  HttpRequestSpec fetch;
  fetch.method = "POST";
  fetch.target = fmt::format("/fetch?source={}&generation={}", source.ToString(), manifest.generation);
  fetch.bearer_token = options.cluster->admin_token;
  fetch.timeout_ms = options.reload_timeout_ms;
  const HttpResponse fetched = client->Fetch(replica.listen, fetch);
  if (!fetched.ok() || fetched.status_code != 200) {
    return Status::Unavailable(fmt::format("POST /fetch on archive replica {}: {}", Describe(replica), DescribeHttpAnswer(fetched)));
  }
  auto serves = Serves(client, replica, manifest, options.http_timeout_ms);
  if (!serves.ok()) return serves.status();
  if (!*serves) {
    return Status::Unavailable(fmt::format("archive replica {} does not serve generation {} after its fetch",
                                           Describe(replica), manifest.generation));
  }
  return Status::Ok();
}

}  // namespace

Status DeployGeneration(const DeployOptions& options) {
  const ClusterConfig& cluster = *options.cluster;
  // A generation is deployed to the shards it was cut into: one built before
  // archive_shards was changed (and not deployed then) has no file for some
  // shard of the cluster file, or files for shards it no longer lists.
  if (options.manifests.size() != static_cast<size_t>(cluster.archive_shards)) {
    return Status::FailedPrecondition(
        fmt::format("generation {} was built for {} archive shards and the cluster file says archive_shards = {}: "
                    "deploy it with the cluster file it was built for (rerun the rebuild with archive_shards = {}), "
                    "then change archive_shards; the next generation re-partitions the archive",
                    options.generation, options.manifests.size(), cluster.archive_shards, options.manifests.size()),
        "SHARD_COUNT_CHANGED");
  }
  auto publish = PublishServer::Start(cluster, options.built_files, options.manifests);
  if (!publish.ok()) return publish.status();
  const HostPort source = (*publish)->address();
  BlockingHttpClient client(cluster);
  // Every replica is asked, whatever the others do (one that is down too):
  // the error names all that failed. A replica that fails keeps serving what
  // it had, and one that succeeded serves the new generation: either way an
  // answer counts every click once (a replica's X-Archive-Last-Day tells the
  // API which realtime days it must not add), and realtime keeps the day
  // until every replica serves it. A replica that was down catches up from
  // the others of its shard when it starts, and a rerun asks whoever still
  // lacks the generation.
  std::vector<std::string> failed;
  // Highest shard first, shard 0 last. API nodes learn the shard count the
  // archive serves from shard 0 (api/query/fetch/archive_reader.h): when a
  // generation re-partitions the archive into more shards, the new shards
  // (read by nobody until then) and most of the others already serve it
  // when shard 0 switches the readers to the new count.
  for (int shard = cluster.archive_shards - 1; shard >= 0; --shard) {
    const Manifest& manifest = options.manifests[static_cast<size_t>(shard)];
    const std::vector<const MemberConfig*> replicas = cluster.ArchiveReplicas(shard);
    size_t serving = 0;
    for (const MemberConfig* replica : replicas) {
      const Status st = FetchAndVerify(&client, *replica, manifest, source, options);
      if (st.ok()) {
        ++serving;
      } else {
        spdlog::error("deploy of generation {} to archive shard {}: {}", options.generation, shard, st.ToString());
        failed.push_back(st.message());
      }
    }
    spdlog::info("archive shard {}: {} of {} replica(s) serve generation {} ({} records)", shard, serving,
                 replicas.size(), options.generation, manifest.records);
  }
  if (failed.empty()) return Status::Ok();
  std::string list;
  for (const std::string& f : failed) list += (list.empty() ? "" : "; ") + f;
  return Status::Unavailable(
      fmt::format("not every archive replica serves generation {} (the day stays in realtime; a replica that was "
                  "down catches up from its shard's other replicas when it starts; rerun to finish): {}",
                  options.generation, list),
      "REPLICA_UNAVAILABLE");
}

namespace {

// POST TARGET (admin) to every realtime shard, in shard order. With
// `stop_at_first`, the first failure is returned at once; otherwise every
// shard is tried and the failures are named together.
Status PostToEveryRealtimeShard(const ClusterConfig& cluster, const std::string& target, int timeout_ms,
                                bool stop_at_first) {
  BlockingHttpClient client(cluster);
  std::string failed;
  for (int shard = 0; shard < cluster.realtime_shards; ++shard) {
    const MemberConfig* member = cluster.RealtimeMember(shard);
    if (member == nullptr) return Status::InvalidArgument(fmt::format("realtime shard {} has no member", shard));
    HttpRequestSpec request;
    request.method = "POST";
    request.target = target;
    request.bearer_token = cluster.admin_token;
    request.timeout_ms = timeout_ms;
    const HttpResponse r = client.Fetch(member->listen, request);
    if (r.ok() && r.status_code == 200) continue;
    failed += fmt::format("{}realtime {}: {}", failed.empty() ? "" : "; ", Describe(*member), DescribeHttpAnswer(r));
    if (stop_at_first) break;
  }
  if (!failed.empty()) return Status::Unavailable(fmt::format("POST {} on {}", target, failed));
  return Status::Ok();
}

}  // namespace

Status TellRealtimeExported(const ClusterConfig& cluster, const std::string& date, uint64_t generation,
                            int timeout_ms) {
  return PostToEveryRealtimeShard(cluster, fmt::format("/exported?date={}&generation={}", date, generation),
                                  timeout_ms, /*stop_at_first=*/true);
}

Status TellRealtimeArchivedThrough(const ClusterConfig& cluster, const std::string& last_day, uint64_t generation,
                                   int timeout_ms) {
  return PostToEveryRealtimeShard(cluster, fmt::format("/archived?through={}&generation={}", last_day, generation),
                                  timeout_ms, /*stop_at_first=*/false);
}

}  // namespace clickatron::rebuild
