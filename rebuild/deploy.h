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

// On success, returns only after WaitForArchiveCaches: then no API node
// answers from the previous generation.
Status DeployGeneration(const DeployOptions& options);

// Sleeps ClusterConfig::DeployDrainMs: API nodes use an archive answer
// they kept only while its replica confirmed the generation within
// archive_cache_confirm_ms, and a query's reads take well under a second,
// so after this every query reads the generation now served. Realtime must
// not clear a day the new generation holds before that (a query would add an
// answer without the day to realtime without it).
void WaitForArchiveCaches(const ClusterConfig& cluster);

// POST /exported?date=D on every realtime shard (all must accept).
Status TellRealtimeExported(const ClusterConfig& cluster, const std::string& date, int timeout_ms);

// POST /archived?through=LAST_DAY to every realtime shard: the deployed
// archive holds every day through it (realtime/ring.h). Tries every shard;
// UNAVAILABLE naming those that did not take it.
Status TellRealtimeArchivedThrough(const ClusterConfig& cluster, const std::string& last_day, int timeout_ms);

}  // namespace clickatron::rebuild
