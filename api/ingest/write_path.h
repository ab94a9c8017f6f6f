// The increment side of the API node (issue 5): /incr (single and batch),
// validation, expansion into records, per-shard combining, the oplog, sending
// to realtime shards with exactly-once sequence numbers, late data.
#pragma once

#include <memory>
#include <vector>

#include <nlohmann/json.hpp>

#include "clickatron/clock.h"
#include "clickatron/daemon.h"
#include "clickatron/http_client.h"
#include "clickatron/http_server.h"
#include "clickatron/status.h"
#include "ingest/late_data.h"

namespace clickatron::api {

class WritePath {
 public:
  // Opens the oplog under ctx.member.data_dir, recovers (re-sends what shards
  // have not acknowledged) and registers its routes on `server`. `clock`
  // (which must outlive the WritePath) gives an increment without ts its
  // hour and ages the oplog's segments.
  static Result<std::unique_ptr<WritePath>> Create(const DaemonContext& ctx, HttpServer& server, HttpClient& client,
                                                   const Clock& clock = SystemClock::Instance());
  virtual ~WritePath() = default;
  // Figures for /stats (merged into data) and /metrics.
  virtual nlohmann::json StatsJson() const = 0;
  virtual std::string StatsPrometheus() const = 0;
  // Per realtime shard, the last oplog seq given to a batch: every increment
  // acknowledged so far is in a batch at or below it (a deletion's cut,
  // deletions/). The loop thread only.
  virtual std::vector<uint64_t> OplogHeads() const = 0;
  // This node's late-data files (deletions/ scrubs them and asks what they hold).
  virtual LateData& late() = 0;
};

}  // namespace clickatron::api
