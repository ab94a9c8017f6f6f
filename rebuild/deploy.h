// Step: deploy a built generation, then let realtime clear the day.
//
// The rebuild serves the built files itself
// (publish_server.h) and tells every replica of every shard
// POST /fetch?source=ADDRESS&generation=G: the replica fetches its shard's
// file over HTTP, checks it against its manifest and swaps it in (its own
// files only: no path is shared between hosts), and must then report G with
// the built file's crc32 at GET /manifest. A replica that already serves G
// (a rerun after a crash) is not asked again.
//
// A replica that fails (or is down) keeps what it served; the others serve
// G. That is safe (each answer names its generation's last day, and realtime
// keeps the day until every replica serves G). A replica that was down
// catches up from its shard's other replicas when it starts, and a rerun
// asks whoever still lacks G.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "clickatron/config.h"
#include "clickatron/manifest.h"
#include "clickatron/status.h"

namespace clickatron::rebuild {

struct DeployOptions {
  const ClusterConfig* cluster = nullptr;
  uint64_t generation = 0;
  std::vector<std::string> built_files;  // index: shard
  std::vector<Manifest> manifests;       // index: shard
  int http_timeout_ms = 10000;
  int reload_timeout_ms = 600000;        // a replica answers /reload once the file is loaded
};

// Returns once every replica serves the generation (or fails). Nothing waits
// for API nodes: realtime tells them, on its read answers, which generation
// is deployed and which days it hands over (TellRealtime* below), and they
// stop using answers they kept of an older file from the first such answer
// (api/query/fetch/known_generation.h). The rebuild needs no API node's settings.
Status DeployGeneration(const DeployOptions& options);

// POST /exported?date=D&generation=G on every realtime shard (all must
// accept): G, deployed on every replica, holds D.
Status TellRealtimeExported(const ClusterConfig& cluster, const std::string& date, uint64_t generation,
                            int timeout_ms);

// POST /archived?through=LAST_DAY&generation=G to every realtime shard: the
// deployed archive (G) holds every day through it (realtime/ring.h). Tries
// every shard; UNAVAILABLE naming those that did not take it.
Status TellRealtimeArchivedThrough(const ClusterConfig& cluster, const std::string& last_day, uint64_t generation,
                                   int timeout_ms);

}  // namespace clickatron::rebuild
