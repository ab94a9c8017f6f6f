// Unique-record decoding and rollup; see unique_records.h.
#include "unique_records.h"

#include <fmt/format.h>

#include "clickatron/key_codec.h"
#include "clickatron/ymdh.h"

namespace clickatron::api {
namespace {

Status Bad(std::string_view what, std::string_view text) {
  return Status::Corruption(fmt::format("bad {} from a peer: {}", what, QuoteForMessage(text)));
}

std::string_view TrimNewline(std::string_view value) {
  while (!value.empty() && (value.back() == '\n' || value.back() == '\r')) value.remove_suffix(1);
  return value;
}

Status AddSketch(std::string_view text, int64_t hour, std::string_view key, std::string_view what,
                 HourlySketches* out) {
  Result<UniqueSketch> sketch = UniqueSketch::FromText(text);
  if (!sketch.ok()) return Bad(what, sketch.status().message());
  out->push_back(HourSketch{hour, std::string(key), std::move(sketch).value()});
  return Status::Ok();
}

}  // namespace

Status AddArchiveUniqueTotal(std::string_view value, int64_t hour, HourlySketches* out) {
  return AddSketch(TrimNewline(value), hour, "", "archive unique total", out);
}

Status AddArchiveUniqueSubtotals(std::string_view value, int64_t hour, std::string_view only_key,
                                 HourlySketches* out) {
  value = TrimNewline(value);
  size_t pos = 0;
  while (pos < value.size()) {
    size_t end = value.find(' ', pos);
    if (end == std::string_view::npos) end = value.size();
    const std::string_view column = value.substr(pos, end - pos);
    const size_t colon = column.find(':');
    if (colon == std::string_view::npos || colon == 0) return Bad("archive unique subtotal", column);
    const std::string_view key = column.substr(0, colon);
    if (only_key.empty() || key == only_key) {
      CLICKATRON_RETURN_IF_ERROR(AddSketch(column.substr(colon + 1), hour, key, "archive unique subtotal", out));
    }
    pos = end + 1;
  }
  return Status::Ok();
}

Status AddRealtimeUniqueLines(std::string_view body, std::string_view prefix, bool keyed_lines,
                              const ArchiveLastDay& last_day, const HourSpan& span, HourlySketches* out) {
  auto lines = SplitKeyValueLines(body);
  if (!lines.ok()) return lines.status();
  for (const auto& [key, value] : *lines) {
    const size_t dot = key.rfind('.');
    if (!key.starts_with(prefix) || dot == std::string_view::npos || dot + 1 < prefix.size()) {
      return Bad("realtime unique", key);
    }
    std::string_view skey;
    if (keyed_lines) {
      if (dot <= prefix.size()) return Bad("realtime unique", key);
      skey = key.substr(prefix.size(), dot - prefix.size());
      if (skey.find('.') != std::string_view::npos) return Bad("realtime unique", key);
    } else if (dot + 1 != prefix.size()) {
      return Bad("realtime unique", key);
    }
    auto hour = UnixFromYmdh(key.substr(dot + 1));
    if (!hour.ok()) return Bad("realtime unique", key);
    if (HourIsArchived(*hour, last_day) || !span.Contains(*hour)) continue;
    CLICKATRON_RETURN_IF_ERROR(AddSketch(value, *hour, skey, "realtime unique", out));
  }
  return Status::Ok();
}

std::vector<uint64_t> UniquesByUnit(const UnitWindow& window, const HourlySketches& hours) {
  std::vector<UniqueSketch> units(window.size());
  for (const HourSketch& h : hours) {
    const int64_t i = window.IndexOf(h.hour);
    if (i >= 0) units[static_cast<size_t>(i)].Merge(h.sketch);
  }
  std::vector<uint64_t> out;
  out.reserve(units.size());
  for (const UniqueSketch& u : units) out.push_back(u.Estimate());
  return out;
}

uint64_t UniquesOverWindow(const UnitWindow& window, const HourlySketches& hours) {
  UniqueSketch all;
  for (const HourSketch& h : hours) {
    if (window.IndexOf(h.hour) >= 0) all.Merge(h.sketch);
  }
  return all.Estimate();
}

std::vector<KeyUniques> KeyUniquesByUnit(const UnitWindow& window, const HourlySketches& hours) {
  std::vector<std::map<std::string, UniqueSketch>> units(window.size());
  for (const HourSketch& h : hours) {
    const int64_t i = window.IndexOf(h.hour);
    if (i >= 0) units[static_cast<size_t>(i)][h.key].Merge(h.sketch);
  }
  std::vector<KeyUniques> out(units.size());
  for (size_t i = 0; i < units.size(); ++i) {
    for (const auto& [key, sketch] : units[i]) out[i][key] = sketch.Estimate();
  }
  return out;
}

KeyUniques KeyUniquesOverWindow(const UnitWindow& window, const HourlySketches& hours) {
  std::map<std::string, UniqueSketch> keys;
  for (const HourSketch& h : hours) {
    if (window.IndexOf(h.hour) >= 0) keys[h.key].Merge(h.sketch);
  }
  KeyUniques out;
  for (const auto& [key, sketch] : keys) out[key] = sketch.Estimate();
  return out;
}

}  // namespace clickatron::api
