// `clickatron status`: one line per cluster member — up or down, and the
// figure an operator looks at first for its role: the ring for a realtime
// shard, the generation and last day for an archive replica, queue depth and
// oplog lag for an API node.
#include <fmt/format.h>

#include <nlohmann/json.hpp>

#include <memory>

#include "clickatron/config.h"
#include "clickatron/http_client.h"
#include "clickatron/retention.h"
#include "commands.h"

namespace clickatron::tool {
namespace {

// The envelope's data of GET `target`, or null with `*error` set.
nlohmann::json FetchData(BlockingHttpClient& client, const HostPort& peer, const std::string& target,
                         std::string* error) {
  HttpRequestSpec spec;
  spec.target = target;
  spec.timeout_ms = 3000;
  HttpResponse r = client.Fetch(peer, spec);
  if (!r.ok() || r.status_code != 200) {
    // The member's own words (a 401 says whether the secret or the clock is
    // wrong: operations.md, Troubleshooting).
    *error = DescribeHttpAnswer(r);
    return nullptr;
  }
  nlohmann::json j = nlohmann::json::parse(r.body, nullptr, false);
  if (j.is_discarded() || !j.contains("data")) {
    *error = "answer is not the JSON envelope";
    return nullptr;
  }
  return j["data"];
}

std::string RealtimeSummary(const nlohmann::json& ring) {
  std::string out = fmt::format("today={}", ring.value("today", "?"));
  // Restarted after a crash: reads wait for the API nodes' re-send.
  if (ring.value("recovering", false)) out += " RECOVERING(reads 503 until the API nodes re-send)";
  if (ring.contains("stores") && ring["stores"].is_array()) {
    for (const auto& s : ring["stores"]) {
      out += fmt::format(" {}:{}({},~{} keys)", s.value("position", "?"), s.value("date", "?"),
                         s.value("state", "?"), s.value("records_estimate", 0));
    }
  }
  return out;
}

std::string ArchiveSummary(const nlohmann::json& manifest) {
  if (manifest.is_null()) return "no archive file yet";
  std::string out = fmt::format("generation={} last_day={} records={}", manifest.value("generation", 0),
                                 manifest.value("last_day", ""), manifest.value("records", 0));
  // Namespaces a retention policy rolled up (docs/protocols.md "Retention").
  if (manifest.contains("retention") && manifest["retention"].is_array()) {
    for (const auto& r : manifest["retention"]) {
      auto applied = AppliedRetention::FromJson(r);
      if (applied.ok()) out += fmt::format(" retention[{}: {}]", applied->ns, DescribeRetention(*applied));
    }
  }
  return out;
}

// The API's /stats carries its write path's figures under "write": per-shard
// sender state, queued batches and lag in sequence numbers (written − acknowledged).
std::string ApiSummary(const nlohmann::json& stats) {
  std::string out;
  const nlohmann::json write = stats.contains("write") ? stats["write"] : nlohmann::json::object();
  if (write.contains("shards") && write["shards"].is_array()) {
    for (const auto& s : write["shards"]) {
      out += fmt::format(" shard{}:{} queued={} lag={}", s.value("shard", -1), s.value("state", "?"),
                         s.value("queued_batches", 0), s.value("lag_seq", 0));
    }
  }
  if (write.contains("increments_in")) out += fmt::format(" increments_in={}", write["increments_in"].dump());
  return out.empty() ? "up" : out.substr(1);
}

Status RunStatus(const std::string& config_path, bool* all_up) {
  auto cluster = ClusterConfig::Load(config_path);
  if (!cluster.ok()) return cluster.status();
  BlockingHttpClient client(*cluster);
  *all_up = true;
  for (const MemberConfig& m : cluster->members) {
    if (m.role == MemberRole::kRebuild) continue;
    std::string error;
    std::string detail;
    switch (m.role) {
      case MemberRole::kRealtime: {
        auto ring = FetchData(client, m.listen, "/ring", &error);
        if (error.empty()) detail = RealtimeSummary(ring);
        break;
      }
      case MemberRole::kArchive: {
        auto manifest = FetchData(client, m.listen, "/manifest", &error);
        if (error.empty()) detail = ArchiveSummary(manifest);
        break;
      }
      default: {
        auto stats = FetchData(client, m.listen, "/stats", &error);
        if (error.empty()) detail = ApiSummary(stats);
        break;
      }
    }
    bool up = error.empty();
    *all_up &= up;
    PrintLine(fmt::format("{:<14} {:<9} {:<21} {:<4} {}", m.name, MemberRoleName(m.role), m.listen.ToString(),
                          up ? "up" : "DOWN", up ? detail : error));
  }
  return Status::Ok();
}

void AddStatusCommand(Command& app) {
  Command sub = app.AddCommand("status", "Show every cluster member: up/down, ring, archive generation, API queues");
  auto config = std::make_shared<std::string>("conf/local.toml");
  sub.Option("-c,--config", *config, "cluster file").ShowDefault();
  SetDetails(sub, "Exits 0 when every member answers, 3 when any is down.");
  SetAction(sub, [config] {
    bool all_up = true;
    CLICKATRON_RETURN_IF_ERROR(RunStatus(*config, &all_up));
    std::fflush(stdout);
    if (!all_up) std::exit(3);
    return Status::Ok();
  });
}

const bool kStatusRegistered = RegisterCommand(70, AddStatusCommand);

}  // namespace
}  // namespace clickatron::tool
