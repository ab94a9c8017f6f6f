// Unique-record decoding and rollup; see unique_records.h.
#include "query/unique_records.h"

namespace clickatron::api {
namespace {

Status AddSketch(std::string_view text, int64_t hour, std::string_view key, std::string_view what,
                 HourlySketches* out) {
  Result<UniqueSketch> sketch = UniqueSketch::FromText(text);
  if (!sketch.ok()) return BadPeerValue(what, sketch.status().message());
  out->push_back(HourSketch{hour, std::string(key), std::move(sketch).value()});
  return Status::Ok();
}

// The sketches of the window's hours united per (unit, key): one group for
// the whole window unless `per_unit`, and one key ("") unless `per_key`.
std::vector<std::map<std::string, UniqueSketch>> Unite(const UnitWindow& window, const HourlySketches& hours,
                                                        bool per_unit, bool per_key) {
  std::vector<std::map<std::string, UniqueSketch>> groups(per_unit ? window.size() : 1);
  static const std::string kAll;
  for (const HourSketch& h : hours) {
    const int64_t i = window.IndexOf(h.hour);
    if (i < 0) continue;
    groups[per_unit ? static_cast<size_t>(i) : 0][per_key ? h.key : kAll].Merge(h.sketch);
  }
  return groups;
}

KeyUniques Estimates(const std::map<std::string, UniqueSketch>& sketches) {
  KeyUniques out;
  for (const auto& [key, sketch] : sketches) out.emplace(key, sketch.Estimate());
  return out;
}

uint64_t EstimateOfAll(const std::map<std::string, UniqueSketch>& sketches) {
  auto it = sketches.find("");
  return it == sketches.end() ? 0 : it->second.Estimate();
}

}  // namespace

Status AddArchiveUniqueTotal(std::string_view value, int64_t hour, HourlySketches* out) {
  while (!value.empty() && (value.back() == '\n' || value.back() == '\r')) value.remove_suffix(1);
  return AddSketch(value, hour, "", "archive unique total", out);
}

Status AddArchiveUniqueSubtotals(std::string_view value, int64_t hour, std::string_view only_key,
                                 HourlySketches* out) {
  return ForEachColumn(value, "archive unique subtotal", [&](std::string_view key, std::string_view text) -> Status {
    if (!only_key.empty() && key != only_key) return Status::Ok();
    return AddSketch(text, hour, key, "archive unique subtotal", out);
  });
}

Status AddRealtimeUniqueLines(std::string_view body, std::string_view prefix, bool keyed_lines,
                              const ArchiveLastDay& last_day, const HourSpan& span, HourlySketches* out) {
  return ForEachRealtimeHourLine(
      body, prefix, keyed_lines, "realtime unique",
      [&](int64_t hour, std::string_view skey, std::string_view value) -> Status {
        if (HourIsArchived(hour, last_day) || !span.Contains(hour)) return Status::Ok();
        return AddSketch(value, hour, skey, "realtime unique", out);
      });
}

std::vector<uint64_t> UniquesByUnit(const UnitWindow& window, const HourlySketches& hours) {
  std::vector<uint64_t> out;
  for (const auto& unit : Unite(window, hours, /*per_unit=*/true, /*per_key=*/false)) out.push_back(EstimateOfAll(unit));
  return out;
}

uint64_t UniquesOverWindow(const UnitWindow& window, const HourlySketches& hours) {
  return EstimateOfAll(Unite(window, hours, /*per_unit=*/false, /*per_key=*/false).front());
}

std::vector<KeyUniques> KeyUniquesByUnit(const UnitWindow& window, const HourlySketches& hours) {
  std::vector<KeyUniques> out;
  for (const auto& unit : Unite(window, hours, /*per_unit=*/true, /*per_key=*/true)) out.push_back(Estimates(unit));
  return out;
}

KeyUniques KeyUniquesOverWindow(const UnitWindow& window, const HourlySketches& hours) {
  return Estimates(Unite(window, hours, /*per_unit=*/false, /*per_key=*/true).front());
}

}  // namespace clickatron::api
