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

class ReadPath {
 public:
  // `clock` (which must outlive the ReadPath) says where "now" is: the end of
  // a query's window when it gives no reference time.
  static Result<std::unique_ptr<ReadPath>> Create(const DaemonContext& ctx, HttpServer& server, HttpClient& client,
                                                  const Clock& clock = SystemClock::Instance());
  virtual ~ReadPath() = default;
  virtual nlohmann::json StatsJson() const = 0;
  virtual std::string StatsPrometheus() const = 0;
};

}  // namespace clickatron::api
