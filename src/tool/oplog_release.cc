#include "oplog_release.h"

#include <fmt/format.h>

#include <chrono>
#include <memory>
#include <thread>

#include <nlohmann/json.hpp>

#include "clickatron/config.h"
#include "clickatron/http_client.h"
#include "clickatron/query_string.h"
#include "commands.h"

namespace clickatron::tool {
namespace {

struct ReleaseOptions {
  std::string config;
  std::string api;
  int shard = 0;
  int wait_seconds = 60;
};

// The API node's stats for one shard's sender ("write.shards[i]").
Result<nlohmann::json> SenderStats(BlockingHttpClient& client, const MemberConfig& api, int shard) {
  HttpRequestSpec spec;
  spec.target = "/stats";
  const HttpResponse r = client.Fetch(api.listen, spec);
  if (!r.ok()) return r.transport.WithContext(fmt::format("GET {} /stats", api.name));
  auto j = nlohmann::json::parse(r.body, nullptr, false);
  if (r.status_code != 200 || j.is_discarded() || !j["data"]["write"]["shards"].is_array()) {
    return Status::Unavailable(fmt::format("GET {} /stats: HTTP {} {}", api.name, r.status_code, r.body.substr(0, 200)));
  }
  for (const auto& s : j["data"]["write"]["shards"]) {
    if (s.value("shard", -1) == shard) return s;
  }
  return Status::NotFound(fmt::format("{} has no sender for shard {}", api.name, shard));
}

Status Release(const ReleaseOptions& o) {
  auto cluster = ClusterConfig::Load(o.config);
  if (!cluster.ok()) return cluster.status();
  const MemberConfig* api = cluster->FindMember(o.api);
  if (api == nullptr || api->role != MemberRole::kApi) {
    return Status::InvalidArgument(fmt::format("{}: no API member named \"{}\"", o.config, o.api));
  }
  const MemberConfig* realtime = cluster->RealtimeMember(o.shard);
  if (realtime == nullptr) return Status::InvalidArgument(fmt::format("{}: no realtime shard {}", o.config, o.shard));
  BlockingHttpClient client(*cluster);

  auto stats = SenderStats(client, *api, o.shard);
  if (!stats.ok()) return stats.status();
  if (stats->value("state", "") != "held" || !(*stats)["held"].is_object()) {
    return Status::FailedPrecondition(
        fmt::format("{} is not held on shard {} (state {}): nothing to release", o.api, o.shard,
                    stats->value("state", "?")),
        "NOT_HELD");
  }
  const uint64_t applied = (*stats)["held"].value("applied", uint64_t{0});
  const uint64_t watermark = (*stats)["held"].value("shard_watermark", uint64_t{0});
  PrintLine(fmt::format("{} is held on shard {} ({}): the shard's watermark for it is {}, its batches were applied up "
                        "to {}; lowering the watermark to {}",
                        o.api, o.shard, realtime->name, watermark, applied, applied));

  HttpRequestSpec reset;
  reset.method = "POST";
  reset.target = fmt::format("/watermark/reset?source={}&seq={}&expect={}", PercentEncode(o.api), applied, watermark);
  reset.bearer_token = cluster->admin_token;
  reset.timeout_ms = 60000;
  const HttpResponse r = client.Fetch(realtime->listen, reset);
  if (!r.ok()) return r.transport.WithContext(fmt::format("POST {} /watermark/reset", realtime->name));
  if (r.status_code != 200) {
    return Status::Unavailable(
        fmt::format("POST {} /watermark/reset: HTTP {} {}", realtime->name, r.status_code, r.body.substr(0, 300)));
  }

  const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(o.wait_seconds);
  for (;;) {
    auto now = SenderStats(client, *api, o.shard);
    if (now.ok() && now->value("state", "") != "held") {
      PrintLine(fmt::format("released: {} re-sends its oplog above seq {} to shard {} (state {})", o.api, applied,
                            o.shard, now->value("state", "?")));
      return Status::Ok();
    }
    if (std::chrono::steady_clock::now() >= deadline) {
      return Status::Unavailable(fmt::format(
          "the watermark is lowered, but {} still shows shard {} held after {} s; see its log and /stats", o.api,
          o.shard, o.wait_seconds));
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(200));  // polling another process: no event to wait on
  }
}

}  // namespace

void AddOplogReleaseCommand(Command& oplog) {
  Command release =
      oplog.AddCommand("release", "End a \"watermark ahead\" hold: lower the shard's watermark to what it applied");
  auto ro = std::make_shared<ReleaseOptions>();
  release.Option("--config", ro->config, "the cluster file").Required();
  release.Option("--api", ro->api, "the API member that is held").Required();
  release.Option("--shard", ro->shard, "the realtime shard it is held on").Required().NonNegative();
  release.Option("--wait-seconds", ro->wait_seconds, "how long to wait for the API node to resume").Positive();
  SetAction(release, [ro] { return Release(*ro); });
}

}  // namespace clickatron::tool
