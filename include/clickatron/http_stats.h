// Per-endpoint request statistics (simplehttp's /stats, kept): count, errors,
// average and 95th/99th percentile latency over a window of recent requests.
//
// Thread-safety: Record() and the readers may be called from any thread.
#pragma once

#include <array>
#include <cstdint>
#include <map>
#include <mutex>
#include <string>

#include <nlohmann/json_fwd.hpp>

namespace clickatron {

class EndpointStats {
 public:
  // Latencies kept for the percentiles: the most recent kWindow requests.
  static constexpr size_t kWindow = 2048;

  void Record(uint64_t latency_us, bool error);
  struct Snapshot {
    uint64_t requests = 0;
    uint64_t errors = 0;
    double average_us = 0;
    uint64_t p50_us = 0;
    uint64_t p95_us = 0;
    uint64_t p99_us = 0;
    uint64_t total_us = 0;
  };
  Snapshot Take() const;

 private:
  mutable std::mutex mu_;
  uint64_t requests_ = 0;  // GUARDED_BY(mu_)
  uint64_t errors_ = 0;    // GUARDED_BY(mu_)
  uint64_t total_us_ = 0;  // GUARDED_BY(mu_)
  std::array<uint32_t, kWindow> window_{};  // GUARDED_BY(mu_), ring of recent latencies
};

class HttpStats {
 public:
  void Record(const std::string& endpoint, uint64_t latency_us, bool error);
  // {"endpoint": {"requests":…, "errors":…, "average_us":…, "p95_us":…, "p99_us":…}, …}
  nlohmann::json ToJson() const;
  // Prometheus text: clickatron_http_requests_total{endpoint=…} and friends.
  // base_labels: `daemon="D",member="M"` (metrics_table.h BaseLabels).
  std::string ToPrometheus(std::string_view base_labels) const;

 private:
  mutable std::mutex mu_;
  std::map<std::string, EndpointStats> endpoints_;  // GUARDED_BY(mu_); nodes never move
};

}  // namespace clickatron
