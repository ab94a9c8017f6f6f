#include "clickatron/generation_fetch.h"

#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include "clickatron/fetch_to_file.h"
#include "clickatron/file_util.h"
#include "clickatron/key_codec.h"
#include "clickatron/shard.h"
#include "clickatron/ymdh.h"

namespace clickatron {

Result<std::optional<Manifest>> FetchShardManifest(BlockingHttpClient& client, const HostPort& source, int shard,
                                                   int timeout_ms) {
  HttpRequestSpec request;
  request.target = fmt::format("/manifest?shard={}", shard);
  request.timeout_ms = timeout_ms;
  const HttpResponse r = client.Fetch(source, request);
  if (!r.ok() || r.status_code != 200) {
    return Status::Unavailable(fmt::format("GET /manifest?shard={} from {}: {}", shard, source.ToString(), DescribeHttpAnswer(r)));
  }
  nlohmann::json j = nlohmann::json::parse(r.body, nullptr, /*allow_exceptions=*/false);
  if (!j.is_object() || !j.contains("data")) {
    return Status::Corruption(fmt::format("{}: /manifest is not an envelope", source.ToString()));
  }
  if (j["data"].is_null()) return std::optional<Manifest>();
  Result<Manifest> manifest = Manifest::FromJson(j["data"]);
  if (!manifest.ok()) return manifest.status().WithContext(fmt::format("{}: /manifest", source.ToString()));
  if (manifest->shard != shard) {
    return Status::Corruption(
        fmt::format("{} answered shard {}'s manifest for shard {}", source.ToString(), manifest->shard, shard));
  }
  return std::optional<Manifest>(std::move(manifest).value());
}

Result<std::optional<int64_t>> FetchArchiveLastDay(const ClusterConfig& cluster, int timeout_ms) {
  BlockingHttpClient client(cluster);
  std::optional<Manifest> newest;
  bool answered = false;
  std::string errors;
  for (const MemberConfig* replica : cluster.ArchiveReplicas(0)) {
    Result<std::optional<Manifest>> m = FetchShardManifest(client, replica->listen, 0, timeout_ms);
    if (!m.ok()) {
      errors += (errors.empty() ? "" : "; ") + m.status().message();
      continue;
    }
    answered = true;
    if (m->has_value() && (!newest || (*m)->generation > newest->generation)) newest = std::move(*m);
  }
  if (!answered) {
    return Status::Unavailable(
        fmt::format("no replica of archive shard 0 answered GET /manifest: {}", errors.empty() ? "none listed" : errors),
        "SHARD_UNAVAILABLE");
  }
  if (!newest || newest->last_day.empty()) return std::optional<int64_t>();
  Result<int64_t> day = ParseDate(newest->last_day);
  if (!day.ok()) return day.status().WithContext("the archive's last_day");
  return std::optional<int64_t>(*day);
}

Status FetchShardFile(BlockingHttpClient& client, const HostPort& source, const Manifest& expected,
                      const std::string& path, int timeout_ms) {
  const std::string who = fmt::format("generation {} of shard {} from {}", expected.generation, expected.shard,
                                      source.ToString());
  CLICKATRON_RETURN_IF_ERROR(MakeDirs(DirName(path)));
  uint32_t crc = 0;
  HttpRequestSpec request;
  request.target = fmt::format("/file?shard={}", expected.shard);
  request.timeout_ms = timeout_ms;
  FetchToFileOptions options;
  options.on_chunk = [&](std::string_view chunk, uint64_t offset) -> Status {
    if (offset + chunk.size() > expected.bytes) {
      return Status::Corruption(fmt::format("more than the manifest's {} bytes", expected.bytes));
    }
    crc = Crc32Extend(crc, chunk);
    return Status::Ok();
  };
  options.check = [&](const HttpResponse& r, const std::string&, uint64_t bytes) -> Status {
    if (const std::string served = r.Header(kArchiveGenerationHeader); served != std::to_string(expected.generation)) {
      return Status::Corruption(fmt::format("{}: the source now serves generation {}", who, served));
    }
    if (bytes != expected.bytes || crc != expected.crc32) {
      return Status::Corruption(fmt::format("{}: received {} bytes with crc32 {}, the manifest says {} bytes, "
                                            "crc32 {}",
                                            who, bytes, crc, expected.bytes, expected.crc32));
    }
    return Status::Ok();
  };
  Result<uint64_t> fetched = FetchToFile(client, source, std::move(request), path, who, options);
  if (!fetched.ok()) return fetched.status();
  return WriteManifestAtomically(ManifestPathFor(path), expected);
}

}  // namespace clickatron
