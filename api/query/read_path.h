// The query side of the API node (issue 6): /clicks, /breakdown, /lookup and
// the static dashboard page at /. Reads the archive replicas and the realtime
// ring of the key's shard and merges them, counting each hour once.
#pragma once

#include <memory>

#include <nlohmann/json.hpp>

#include "clickatron/clock.h"
#include "clickatron/daemon.h"
#include "clickatron/http_client.h"
#include "clickatron/http_server.h"
#include "clickatron/status.h"

namespace clickatron::api {

class DeletionLog;

struct ReadStats;
class KnownGeneration;
class ReadCache;

// What an API node's read paths (one per read loop, read_loops.h) share:
// the figures in /stats, the newest archive generation seen, and the one
// read cache ([api] read_cache_mb).
struct ReadShared {
  // For ctx's [api] read_loops (ApiConfig::ReadLoops).
  static std::shared_ptr<ReadShared> Make(const DaemonContext& ctx);
  std::shared_ptr<ReadStats> stats;
  std::shared_ptr<KnownGeneration> known_generation;
  std::shared_ptr<ReadCache> cache;  // never null once made
  int loops = 1;  // at least 1
  // The node's deletions (POST /delete): archive answers hide the hours they
  // delete. Null: none (a read path alone, in tests).
  const DeletionLog* deletions = nullptr;
};

class ReadPath {
 public:
  // `clock` (which must outlive the ReadPath) says where "now" is: the end of
  // a query's window when it gives no reference time. `shared` null: a node
  // with this one read path.
  static Result<std::unique_ptr<ReadPath>> Create(const DaemonContext& ctx, HttpServer& server, HttpClient& client,
                                                  const Clock& clock = SystemClock::Instance(),
                                                  std::shared_ptr<ReadShared> shared = nullptr);
  virtual ~ReadPath() = default;
  virtual nlohmann::json StatsJson() const = 0;
  virtual std::string StatsPrometheus() const = 0;
};

}  // namespace clickatron::api
