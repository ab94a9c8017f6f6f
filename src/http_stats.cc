#include "clickatron/http_stats.h"

#include <fmt/format.h>

#include <algorithm>
#include <nlohmann/json.hpp>
#include <vector>

namespace clickatron {

void EndpointStats::Record(uint64_t latency_us, bool error) {
  std::lock_guard lock(mu_);
  window_[requests_ % kWindow] = static_cast<uint32_t>(std::min<uint64_t>(latency_us, UINT32_MAX));
  ++requests_;
  errors_ += error;
  total_us_ += latency_us;
}

EndpointStats::Snapshot EndpointStats::Take() const {
  std::vector<uint32_t> sample;
  Snapshot s;
  {
    std::lock_guard lock(mu_);
    s.requests = requests_;
    s.errors = errors_;
    s.total_us = total_us_;
    size_t n = std::min<uint64_t>(requests_, kWindow);
    sample.assign(window_.begin(), window_.begin() + n);
  }
  if (s.requests > 0) s.average_us = static_cast<double>(s.total_us) / s.requests;
  if (!sample.empty()) {
    std::sort(sample.begin(), sample.end());
    auto at = [&](double q) { return sample[std::min(sample.size() - 1, static_cast<size_t>(q * sample.size()))]; };
    s.p50_us = at(0.50);
    s.p95_us = at(0.95);
    s.p99_us = at(0.99);
  }
  return s;
}

void HttpStats::Record(const std::string& endpoint, uint64_t latency_us, bool error) {
  EndpointStats* stats;
  {
    std::lock_guard lock(mu_);
    stats = &endpoints_[endpoint];
  }
  stats->Record(latency_us, error);
}

nlohmann::json HttpStats::ToJson() const {
  nlohmann::json out = nlohmann::json::object();
  std::lock_guard lock(mu_);
  for (const auto& [name, stats] : endpoints_) {
    auto s = stats.Take();
    out[name] = {{"requests", s.requests}, {"errors", s.errors},  {"average_us", s.average_us},
                 {"p50_us", s.p50_us},     {"p95_us", s.p95_us},  {"p99_us", s.p99_us}};
  }
  return out;
}

std::string HttpStats::ToPrometheus(std::string_view base_labels) const {
  std::string out;
  out += "# HELP clickatron_http_requests_total Requests handled, by endpoint.\n";
  out += "# TYPE clickatron_http_requests_total counter\n";
  std::lock_guard lock(mu_);
  std::vector<std::pair<std::string, EndpointStats::Snapshot>> snaps;
  for (const auto& [name, stats] : endpoints_) snaps.emplace_back(name, stats.Take());
  for (const auto& [name, s] : snaps) {
    out += fmt::format("clickatron_http_requests_total{{{},endpoint=\"{}\"}} {}\n", base_labels, name, s.requests);
  }
  out += "# HELP clickatron_http_errors_total Requests answered with a 4xx or 5xx status.\n";
  out += "# TYPE clickatron_http_errors_total counter\n";
  for (const auto& [name, s] : snaps) {
    out += fmt::format("clickatron_http_errors_total{{{},endpoint=\"{}\"}} {}\n", base_labels, name, s.errors);
  }
  out += "# HELP clickatron_http_latency_seconds Request latency over the recent window.\n";
  out += "# TYPE clickatron_http_latency_seconds summary\n";
  for (const auto& [name, s] : snaps) {
    for (auto [q, v] : {std::pair{"0.5", s.p50_us}, {"0.95", s.p95_us}, {"0.99", s.p99_us}}) {
      out += fmt::format("clickatron_http_latency_seconds{{{},endpoint=\"{}\",quantile=\"{}\"}} {:.6f}\n",
                         base_labels, name, q, v / 1e6);
    }
    out += fmt::format("clickatron_http_latency_seconds_sum{{{},endpoint=\"{}\"}} {:.6f}\n", base_labels, name,
                       s.total_us / 1e6);
    out += fmt::format("clickatron_http_latency_seconds_count{{{},endpoint=\"{}\"}} {}\n", base_labels, name,
                       s.requests);
  }
  return out;
}

}  // namespace clickatron
