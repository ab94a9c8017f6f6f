// Moving archive generations between hosts over HTTP (docs/protocols.md,
// "Moving generations"). A *source* is an archive replica, or the rebuild's
// publish server while it deploys; both answer, as internal routes (signed
// with the cluster secret when one is configured):
//
//   GET /manifest?shard=S   envelope, data = the manifest of the shard's file (null: none)
//   GET /file?shard=S       the file's bytes; X-Archive-Generation names the generation
//
// A fetch writes the file under a temporary name, checks its size, crc32 and
// generation against the manifest while the bytes arrive (no second pass),
// fsyncs it and renames it into place, then writes its manifest beside it.
// So a file under its final name is always whole and has been checked; a
// transfer that breaks off leaves nothing but the temporary file, which the
// next fetch overwrites.
//
// Thread-safety: blocking calls; any thread (each with its own client).
#pragma once

#include <optional>
#include <string>

#include "clickatron/config.h"
#include "clickatron/http_client.h"
#include "clickatron/manifest.h"
#include "clickatron/status.h"

namespace clickatron {

inline constexpr std::string_view kArchiveGenerationHeader = "X-Archive-Generation";

// The manifest `source` has for `shard`; nullopt when it has no file.
// UNAVAILABLE when the source does not answer or answers an error.
Result<std::optional<Manifest>> FetchShardManifest(BlockingHttpClient& client, const HostPort& source, int shard,
                                                   int timeout_ms);

// How far the deployed archive reaches: the last_day of the newest
// generation any replica of archive shard 0 serves (every replica is asked:
// one that lags would understate it). nullopt when no replica serves a file
// with a day; UNAVAILABLE when none answered.
Result<std::optional<int64_t>> FetchArchiveLastDay(const ClusterConfig& cluster, int timeout_ms);

// Fetches shard `expected.shard`'s file from `source` into `path` and writes
// `expected` to ManifestPathFor(path). CORRUPTION when the bytes do not match
// `expected` (size, crc32) or the source serves another generation;
// UNAVAILABLE when the transfer fails.
Status FetchShardFile(BlockingHttpClient& client, const HostPort& source, const Manifest& expected,
                      const std::string& path, int timeout_ms);

}  // namespace clickatron
