// The statsd door of the API node (docs/protocols.md, "statsd"): counter
// lines over UDP and TCP (an API member's statsd_udp and statsd_tcp), parsed
// by statsd_parser.h, handed to the write path a packet at a time, where
// they are combined and written to the oplog like /incr batches.
//
// statsd has no answers. Over UDP delivery is best-effort by nature: a
// datagram the kernel drops (a full receive buffer) or that is lost on the
// way is gone without a trace here, which is why app servers that need
// every click counted use /incr. Over TCP the lines of a connection are
// taken in order; one the write path cannot take (a shard's queue is full)
// is dropped and counted, as statsd servers do.
//
// Thread-safety: the event loop's thread only.
#pragma once

#include <array>
#include <cstdint>
#include <functional>
#include <memory>
#include <optional>
#include <vector>

#include <nlohmann/json_fwd.hpp>

#include "clickatron/config.h"
#include "clickatron/line_listeners.h"
#include "ingest/increment_parser.h"
#include "ingest/statsd_parser.h"

struct event_base;

namespace clickatron::api {

class StatsdDoor {
 public:
  // The limits for the next packet's lines (the clock's current hour).
  using LimitsFn = std::function<IncrementLimits()>;
  // Takes one packet's increments whole; false: refused (dropped).
  using TakeFn = std::function<bool(const std::vector<Increment>&)>;

  static Result<std::unique_ptr<StatsdDoor>> Open(event_base* base, std::optional<HostPort> udp,
                                                  std::optional<HostPort> tcp, LimitsFn limits, TakeFn take);

  // /stats' write.statsd (all zeros, and null addresses, when it is off).
  static nlohmann::json OffStatsJson();
  nlohmann::json StatsJson() const;

 private:
  StatsdDoor(LimitsFn limits, TakeFn take) : limits_(std::move(limits)), take_(std::move(take)) {}
  void OnLines(std::string_view lines);

  LimitsFn limits_;
  TakeFn take_;
  std::unique_ptr<LineListeners> listeners_;
  std::optional<HostPort> udp_, tcp_;
  HourCache hour_cache_;
  std::vector<Increment> scratch_;
  uint64_t lines_taken_ = 0;
  uint64_t lines_sampled_ = 0;
  uint64_t lines_overloaded_ = 0;
  std::array<uint64_t, kStatsdDropCount> dropped_{};
};

}  // namespace clickatron::api
