// A replica getting a generation of its shard from another host
// (clickatron/generation_fetch.h has the protocol): from the rebuild's publish
// server when told to (POST /fetch), or from the other replicas of its shard
// when it starts (catching up on a deploy it missed while it was down).
//
// The fetched file is checked as any load is (file_loader.h) under the name
// FILE.fetch, and only then put in place: the serving pair is kept as
// FILE.prev / FILE.manifest.prev, the manifest renamed over FILE.manifest, then
// the file over FILE. A replica never serves, or leaves under its own name, a
// file that failed a check.
//
// Runs on the reload thread (archive/reloader.h): one fetch at a time.
#pragma once

#include <cstdint>
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "clickatron/config.h"
#include "clickatron/status.h"
#include "clickatron/tls.h"
#include "file_loader.h"
#include "sorted_file.h"

namespace clickatron::archive {

struct FetcherOptions {
  LoadOptions load;
  int shard = 0;
  std::string cluster_secret;                     // signs the requests
  std::shared_ptr<const TlsContext> client_tls;  // set: the cluster speaks TLS
  int timeout_ms = 600000;                       // per request (a file of GBs)
  // Set: true ends a fetch under way (the daemon is stopping: its stop
  // waits for the fetch's thread).
  std::function<bool()> cancelled;
};

// What the replica serves when the fetch starts.
struct ServingId {
  uint64_t generation = 0;
  uint32_t crc32 = 0;
};

// The generation `source` has for this shard, which must be `want` when
// given. A null file when that is what the replica already serves.
Result<SortedFilePtr> FetchGeneration(const FetcherOptions& options, const HostPort& source,
                                      std::optional<uint64_t> want, ServingId serving);

// Asks every peer for its manifest and fetches the newest generation when it
// is newer than `serving`; a null file when none is. Peers that do not answer
// are skipped (and named in the log).
Result<SortedFilePtr> CatchUpFromPeers(const FetcherOptions& options, const std::vector<HostPort>& peers,
                                       ServingId serving);

}  // namespace clickatron::archive
