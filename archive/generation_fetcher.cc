#include "generation_fetcher.h"

#include <unistd.h>

#include <cerrno>
#include <cstring>

#include <fmt/format.h>
#include <spdlog/spdlog.h>

#include "clickatron/file_util.h"
#include "clickatron/generation_fetch.h"
#include "clickatron/http_client.h"
#include "clickatron/manifest.h"

namespace clickatron::archive {
namespace {

// `path` (if it exists) gets a second name `to`, replacing what `to` was.
Status KeepAs(const std::string& path, const std::string& to) {
  if (!FileExists(path)) return Status::Ok();
  ::unlink(to.c_str());
  if (::link(path.c_str(), to.c_str()) != 0) {
    return Status::IoError(fmt::format("link {} {}: {}", path, to, std::strerror(errno)));
  }
  return Status::Ok();
}

// FILE.fetch (+ manifest), checked, becomes FILE; the serving pair is kept as .prev.
Status PutInPlace(const std::string& fetched, const std::string& path) {
  CLICKATRON_RETURN_IF_ERROR(KeepAs(path, path + ".prev"));
  CLICKATRON_RETURN_IF_ERROR(KeepAs(ManifestPathFor(path), ManifestPathFor(path) + ".prev"));
  // Manifest first: a crash between the two renames leaves a pair that fails
  // its check (the replica answers 503 and catches up), never a wrong one.
  CLICKATRON_RETURN_IF_ERROR(RenameDurably(ManifestPathFor(fetched), ManifestPathFor(path)));
  return RenameDurably(fetched, path);
}

}  // namespace

Result<SortedFilePtr> FetchGeneration(const FetcherOptions& options, const HostPort& source,
                                      std::optional<uint64_t> want, ServingId serving) {
  BlockingHttpClient client(options.cluster_secret, options.client_tls);
  client.SetCancelled(options.cancelled);
  auto manifest = FetchShardManifest(client, source, options.shard, options.timeout_ms);
  if (!manifest.ok()) return manifest.status();
  if (!manifest->has_value()) {
    return Status::NotFound(fmt::format("{} has no file for shard {}", source.ToString(), options.shard));
  }
  const Manifest& m = **manifest;
  if (want && m.generation != *want) {
    return Status::FailedPrecondition(
        fmt::format("{} has generation {} of shard {}, not {}", source.ToString(), m.generation, options.shard, *want),
        "GENERATION_MISMATCH");
  }
  if (m.generation == serving.generation && m.crc32 == serving.crc32) return SortedFilePtr();
  const std::string& path = options.load.path;
  const std::string fetched = path + ".fetch";
  spdlog::info("fetching generation {} of shard {} ({} bytes) from {}", m.generation, options.shard, m.bytes,
               source.ToString());
  if (Status got = FetchShardFile(client, source, m, fetched, options.timeout_ms); !got.ok()) {
    // A whole file whose manifest could not be written (a full disk) would
    // otherwise stay, a shard's size, until the next fetch.
    ::unlink(fetched.c_str());
    ::unlink(ManifestPathFor(fetched).c_str());
    return got;
  }
  LoadOptions check = options.load;
  check.path = fetched;
  check.served_path = path;
  Result<SortedFilePtr> loaded = LoadSortedFile(check);
  if (!loaded.ok() || !(*loaded)->has_file()) {
    ::unlink(fetched.c_str());
    ::unlink(ManifestPathFor(fetched).c_str());
    if (loaded.ok()) return Status::Corruption(fmt::format("{} vanished while it was checked", fetched));
    return loaded.status();
  }
  CLICKATRON_RETURN_IF_ERROR(PutInPlace(fetched, path));
  return loaded;
}

Result<SortedFilePtr> CatchUpFromPeers(const FetcherOptions& options, const std::vector<HostPort>& peers,
                                       ServingId serving) {
  BlockingHttpClient client(options.cluster_secret, options.client_tls);
  const HostPort* newest = nullptr;
  uint64_t newest_generation = serving.generation;
  std::string unanswered;
  size_t answered = 0;
  for (const HostPort& peer : peers) {
    auto manifest = FetchShardManifest(client, peer, options.shard, /*timeout_ms=*/5000);
    if (!manifest.ok()) {
      unanswered += (unanswered.empty() ? "" : "; ") + manifest.status().message();
      continue;
    }
    ++answered;
    if (manifest->has_value() && (*manifest)->generation > newest_generation) {
      newest = &peer;
      newest_generation = (*manifest)->generation;
    }
  }
  if (answered == 0) return Status::Unavailable("no other replica of the shard answered: " + unanswered);
  if (!unanswered.empty()) spdlog::warn("catching up, not asked: {}", unanswered);
  if (newest == nullptr) return SortedFilePtr();
  spdlog::info("catching up: {} serves generation {}, this replica {}", newest->ToString(), newest_generation,
               serving.generation);
  return FetchGeneration(options, *newest, newest_generation, serving);
}

}  // namespace clickatron::archive
