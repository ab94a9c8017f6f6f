#include "clickatron/metrics_table.h"

#include <fmt/format.h>

#include <cmath>
#include <map>
#include <nlohmann/json.hpp>
#include <vector>

namespace clickatron {
namespace {

std::vector<std::string_view> Split(std::string_view text, char sep) {
  std::vector<std::string_view> out;
  while (!text.empty()) {
    size_t at = text.find(sep);
    std::string_view part = text.substr(0, at);
    if (!part.empty()) out.push_back(part);
    if (at == std::string_view::npos) break;
    text.remove_prefix(at + 1);
  }
  return out;
}

std::string FormatDouble(double v) {
  if (std::isnan(v)) return "NaN";
  if (std::isinf(v)) return v > 0 ? "+Inf" : "-Inf";
  return fmt::format("{}", v);
}

// The sample value of a figure, or "" when the JSON value is not one.
std::string SampleValue(const nlohmann::json& v, double scale) {
  if (v.is_boolean()) return v.get<bool>() ? "1" : "0";
  if (!v.is_number()) return "";
  if (scale == 1 && v.is_number_integer()) return v.dump();  // exact, even past 2^53
  return FormatDouble(v.get<double>() * scale);
}

std::string LabelText(const nlohmann::json& v) {
  return v.is_string() ? v.get<std::string>() : v.dump();
}

void AddLabel(std::string* labels, std::string_view name, std::string_view value) {
  *labels += fmt::format(",{}=\"{}\"", name, EscapeLabelValue(value));
}

void Walk(const nlohmann::json& node, const std::vector<std::string_view>& segments, size_t i, std::string labels,
          const MetricRow& row, std::string* out) {
  if (i == segments.size()) {
    std::string value = SampleValue(node, row.scale);
    if (value.empty()) return;
    std::string_view l = labels;
    if (!l.empty() && l.front() == ',') l.remove_prefix(1);
    *out += fmt::format("{}{{{}}} {}\n", row.name, l, value);
    return;
  }
  std::string_view seg = segments[i];
  if (seg.size() >= 2 && seg.front() == '{' && seg.back() == '}') {
    if (!node.is_object()) return;
    for (const auto& [key, child] : node.items()) {
      std::string l = labels;
      AddLabel(&l, seg.substr(1, seg.size() - 2), key);
      Walk(child, segments, i + 1, std::move(l), row, out);
    }
    return;
  }
  if (seg.size() >= 2 && seg.front() == '[' && seg.back() == ']') {
    if (!node.is_array()) return;
    const std::vector<std::string_view> names = Split(seg.substr(1, seg.size() - 2), ',');
    for (const nlohmann::json& element : node) {
      std::string l = labels;
      for (std::string_view name : names) {
        auto field = element.is_object() ? element.find(std::string(name)) : element.end();
        AddLabel(&l, name, field != element.end() ? LabelText(*field) : std::string());
      }
      Walk(element, segments, i + 1, std::move(l), row, out);
    }
    return;
  }
  if (!node.is_object()) return;
  auto child = node.find(std::string(seg));
  if (child != node.end()) Walk(*child, segments, i + 1, std::move(labels), row, out);
}

// The text format escapes \ and newlines in HELP text, and " too in label values.
std::string Escape(std::string_view text, bool quotes) {
  std::string out;
  out.reserve(text.size());
  for (char c : text) {
    if (c == '\\') {
      out += "\\\\";
    } else if (c == '\n') {
      out += "\\n";
    } else if (c == '"' && quotes) {
      out += "\\\"";
    } else {
      out += c;
    }
  }
  return out;
}

std::string EscapeHelp(std::string_view help) { return Escape(help, false); }

}  // namespace

std::string EscapeLabelValue(std::string_view value) { return Escape(value, true); }

std::string BaseLabels(std::string_view daemon, std::string_view member) {
  return fmt::format("daemon=\"{}\",member=\"{}\"", EscapeLabelValue(daemon), EscapeLabelValue(member));
}

std::string RenderMetrics(const nlohmann::json& stats, std::span<const MetricRow> rows, std::string_view base_labels) {
  // Families in order of first appearance, each with its samples.
  std::vector<std::pair<const MetricRow*, std::string>> families;
  std::map<std::string_view, size_t> index;
  for (const MetricRow& row : rows) {
    auto [it, fresh] = index.try_emplace(row.name, families.size());
    if (fresh) families.emplace_back(&row, std::string());
    std::string labels(base_labels);
    if (!row.labels.empty()) labels += fmt::format(",{}", row.labels);
    Walk(stats, Split(row.path, '/'), 0, std::move(labels), row, &families[it->second].second);
  }
  std::string out;
  for (const auto& [row, samples] : families) {
    out += fmt::format("# HELP {0} {1}\n# TYPE {0} {2}\n", row->name, EscapeHelp(row->help), row->type);
    out += samples;
  }
  return out;
}

}  // namespace clickatron
