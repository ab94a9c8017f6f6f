// /metrics from /stats: every daemon keeps one table that maps the figures of
// its /stats JSON to Prometheus families, and renders /metrics from the very
// JSON it serves as /stats. A figure and its metric are then one row apart,
// and tests/integration/metrics_test.cc fails when a /stats figure has no row.
//
// Text format 0.0.4: each family once, HELP and TYPE first, its samples
// together; every sample carries the daemon's base labels (daemon, member).
//
// Thread-safety: pure functions of their arguments; any thread may call them.
#pragma once

#include <span>
#include <string>
#include <string_view>

#include <nlohmann/json_fwd.hpp>

namespace clickatron {

struct MetricRow {
  // Where the figure is in /stats' data: keys separated by '/', e.g.
  // "/realtime/memory/active_bytes". Two segment forms walk many figures:
  //   "{label}"          every key of an object; the key is the label's value
  //   "[label,label2]"   every element of an array; each label's value is the
  //                      element's field of that name (string or number)
  // A figure that is missing or null yields no sample; a bool is 1 or 0.
  std::string_view path;
  std::string_view name;  // the full metric name
  std::string_view type;  // "counter" (name ends in _total) or "gauge"
  std::string_view help;
  std::string_view labels = {};  // constant labels, `state="applied"`
  double scale = 1;              // the sample is the figure times this: 1e-3 for ms -> seconds
};

// `daemon="D",member="M"`, escaped.
std::string BaseLabels(std::string_view daemon, std::string_view member);

// A label value escaped for the text format (\\, \", \n).
std::string EscapeLabelValue(std::string_view value);

// The families of `rows` with their samples from `stats`, in the order the
// families first appear in `rows`; rows sharing a name form one family (its
// HELP and TYPE from the first).
std::string RenderMetrics(const nlohmann::json& stats, std::span<const MetricRow> rows, std::string_view base_labels);

}  // namespace clickatron
