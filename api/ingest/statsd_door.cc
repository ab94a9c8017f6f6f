#include "ingest/statsd_door.h"

#include <nlohmann/json.hpp>
#include <spdlog/spdlog.h>

namespace clickatron::api {
namespace {

nlohmann::json Address(const std::optional<HostPort>& where, uint16_t bound_port) {
  if (!where) return nullptr;
  HostPort bound = *where;
  if (bound_port != 0) bound.port = bound_port;
  return bound.ToString();
}

}  // namespace

Result<std::unique_ptr<StatsdDoor>> StatsdDoor::Open(event_base* base, std::optional<HostPort> udp,
                                                     std::optional<HostPort> tcp, LimitsFn limits, TakeFn take) {
  std::unique_ptr<StatsdDoor> door(new StatsdDoor(std::move(limits), std::move(take)));
  LineListeners::Options options;
  options.udp = udp;
  options.tcp = tcp;
  auto listeners =
      LineListeners::Open(base, options, [d = door.get()](std::string_view lines) { d->OnLines(lines); });
  if (!listeners.ok()) return listeners.status().WithContext("statsd");
  door->listeners_ = std::move(listeners).value();
  door->udp_ = udp;
  door->tcp_ = tcp;
  spdlog::info("statsd: udp {}, tcp {}", Address(udp, door->listeners_->udp_port()).dump(),
               Address(tcp, door->listeners_->tcp_port()).dump());
  return door;
}

void StatsdDoor::OnLines(std::string_view lines) {
  scratch_.clear();
  const StatsdPacketResult r = ParseStatsdPacket(lines, limits_(), &hour_cache_,
                                                 [this](const Increment& inc) { scratch_.push_back(inc); });
  for (size_t i = 0; i < kStatsdDropCount; ++i) dropped_[i] += r.dropped[i];
  if (scratch_.empty()) return;
  if (!take_(scratch_)) {
    lines_overloaded_ += r.taken;
    return;
  }
  lines_taken_ += r.taken;
  lines_sampled_ += r.sampled;
}

nlohmann::json StatsdDoor::OffStatsJson() {
  nlohmann::json dropped = nlohmann::json::object();
  for (size_t i = 0; i < kStatsdDropCount; ++i) dropped[std::string(StatsdDropName(static_cast<StatsdDrop>(i)))] = 0;
  dropped["overloaded"] = 0;
  return {{"udp", nullptr},        {"tcp", nullptr},           {"datagrams", 0},
          {"tcp_connections", 0},  {"tcp_connections_open", 0}, {"tcp_connections_refused", 0},
          {"tcp_lines_too_long", 0}, {"lines_taken", 0},       {"lines_sampled", 0},
          {"dropped", std::move(dropped)}};
}

nlohmann::json StatsdDoor::StatsJson() const {
  const LineListenerStats s = listeners_->stats();
  nlohmann::json dropped = nlohmann::json::object();
  for (size_t i = 0; i < kStatsdDropCount; ++i) {
    dropped[std::string(StatsdDropName(static_cast<StatsdDrop>(i)))] = dropped_[i];
  }
  dropped["overloaded"] = lines_overloaded_;
  return {{"udp", Address(udp_, listeners_->udp_port())},
          {"tcp", Address(tcp_, listeners_->tcp_port())},
          {"datagrams", s.datagrams},
          {"tcp_connections", s.connections_accepted},
          {"tcp_connections_open", s.connections_open},
          {"tcp_connections_refused", s.connections_refused},
          {"tcp_lines_too_long", s.lines_too_long},
          {"lines_taken", lines_taken_},
          {"lines_sampled", lines_sampled_},
          {"dropped", std::move(dropped)}};
}

}  // namespace clickatron::api
