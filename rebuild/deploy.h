// Step: deploy a built generation, then let realtime clear the day.
//
// Before anything is touched every archive replica must answer GET /manifest:
// with a replica down the deploy does not start, so the old generation keeps
// serving everywhere. Then, shard by shard (docs/protocols.md, "Files shared
// between daemons"): the built file is linked (or copied) to FILE.new, its
// manifest written to FILE.manifest.new, both fsynced, the current pair kept
// as FILE.prev / FILE.manifest.prev, the manifest renamed then the file;
// every replica of the shard gets POST /reload and must then report the new
// generation at GET /manifest. If a replica fails, the shard's previous
// files are put back and its replicas reloaded onto them.
//
// A shard whose serving manifest already names this generation with the
// built file's checksum is not staged again (a rerun after a crash), only
// reloaded and verified.
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

// GET /manifest on every archive replica; UNAVAILABLE naming the ones down.
Status CheckArchiveReplicas(const ClusterConfig& cluster, int timeout_ms);

Status DeployGeneration(const DeployOptions& options);

// POST /exported?date=D on every realtime shard (all must accept).
Status TellRealtimeExported(const ClusterConfig& cluster, const std::string& date, int timeout_ms);

}  // namespace clickatron::rebuild
