#include "clickatron/generation_fetch.h"

#include <fcntl.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>

#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include "clickatron/file_util.h"
#include "clickatron/key_codec.h"
#include "clickatron/shard.h"
#include "clickatron/unique_fd.h"

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

Status FetchShardFile(BlockingHttpClient& client, const HostPort& source, const Manifest& expected,
                      const std::string& path, int timeout_ms) {
  const std::string who = fmt::format("generation {} of shard {} from {}", expected.generation, expected.shard,
                                      source.ToString());
  const std::string part = path + ".part";
  CLICKATRON_RETURN_IF_ERROR(MakeDirs(DirName(path)));
  UniqueFd out(::open(part.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644));
  if (!out.valid()) return Status::IoError(fmt::format("create {}: {}", part, std::strerror(errno)));
  uint64_t bytes = 0;
  uint32_t crc = 0;
  std::string head;  // the answer's start: an error answer says why
  HttpRequestSpec request;
  request.target = fmt::format("/file?shard={}", expected.shard);
  request.timeout_ms = timeout_ms;
  HttpResponse r = client.FetchStreaming(source, request, [&](std::string_view chunk) -> Status {
    if (head.size() < 4096) head.append(chunk.substr(0, 4096 - head.size()));
    bytes += chunk.size();
    if (bytes > expected.bytes) {
      return Status::Corruption(fmt::format("more than the manifest's {} bytes", expected.bytes));
    }
    crc = Crc32Extend(crc, chunk);
    return WriteAllToFd(out.get(), chunk, part);
  });
  const auto fail = [&](Status st) {
    ::unlink(part.c_str());
    return st;
  };
  if (!r.ok()) return fail(Status::Unavailable(fmt::format("{}: {}", who, r.transport.message())));
  if (r.status_code != 200) {
    r.body = std::move(head);
    return fail(Status::Unavailable(fmt::format("{}: {}", who, DescribeHttpAnswer(r))));
  }
  if (const std::string served = r.Header(kArchiveGenerationHeader);
      served != std::to_string(expected.generation)) {
    return fail(Status::Corruption(fmt::format("{}: the source now serves generation {}", who, served)));
  }
  if (bytes != expected.bytes || crc != expected.crc32) {
    return fail(Status::Corruption(fmt::format("{}: received {} bytes with crc32 {}, the manifest says {} bytes, "
                                               "crc32 {}",
                                               who, bytes, crc, expected.bytes, expected.crc32)));
  }
  if (::fsync(out.get()) != 0) return fail(Status::IoError(fmt::format("fsync {}: {}", part, std::strerror(errno))));
  if (Status closed = out.Close(); !closed.ok()) return fail(closed.WithContext(part));
  if (Status renamed = RenameDurably(part, path); !renamed.ok()) return fail(renamed);
  return WriteManifestAtomically(ManifestPathFor(path), expected);
}

}  // namespace clickatron
