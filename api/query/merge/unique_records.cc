// Unique-record decoding and rollup; see unique_records.h.
#include "query/merge/unique_records.h"

#include <optional>

namespace clickatron::api {
namespace {

// The sketches of one (unit, key), counted as one union when asked.
class Union {
 public:
  void Add(const HourSketch& h) { parts_.push_back(h.sketch.get()); }
  uint64_t Estimate() const { return UniqueSketch::EstimateUnion(parts_); }

 private:
  // The hours the Union is made from own the sketches and outlive it.
  std::vector<const UniqueSketch*> parts_;
};

// The sketches of the window's hours united per unit (one union for the
// whole window unless `per_unit`).
std::vector<Union> Unite(const UnitWindow& window, const HourlySketches& hours, bool per_unit) {
  std::vector<Union> unions(per_unit ? window.size() : 1);
  for (const HourSketch& h : hours) {
    const int64_t i = window.IndexOf(h.hour);
    if (i >= 0) unions[per_unit ? static_cast<size_t>(i) : 0].Add(h);
  }
  return unions;
}

// The same per (unit, stored subtotal key).
std::vector<std::map<std::string, Union>> UniteByKey(const UnitWindow& window, const HourlySketches& hours,
                                                     bool per_unit) {
  std::vector<std::map<std::string, Union>> groups(per_unit ? window.size() : 1);
  for (const HourSketch& h : hours) {
    const int64_t i = window.IndexOf(h.hour);
    if (i >= 0) groups[per_unit ? static_cast<size_t>(i) : 0][h.key].Add(h);
  }
  return groups;
}

KeyUniques Estimates(const std::map<std::string, Union>& unions) {
  KeyUniques out;
  for (const auto& [key, u] : unions) out.emplace(key, u.Estimate());
  return out;
}

// A sketch's text from a peer (CORRUPTION naming `what` when it is not one).
Result<std::shared_ptr<const UniqueSketch>> DecodeSketch(std::string_view text, std::string_view what) {
  Result<UniqueSketch> sketch = UniqueSketch::FromText(text);
  if (!sketch.ok()) return BadPeerValue(what, sketch.status().message());
  return std::make_shared<const UniqueSketch>(std::move(sketch).value());
}

}  // namespace

Status ForEachArchiveSketch(
    std::string_view value, bool total, std::string_view only_key,
    const std::function<Status(std::string_view skey, std::shared_ptr<const UniqueSketch> sketch)>& fn) {
  const auto decoded = [&](std::string_view skey, std::string_view text, std::string_view what) -> Status {
    auto sketch = DecodeSketch(text, what);
    if (!sketch.ok()) return sketch.status();
    return fn(skey, std::move(sketch).value());
  };
  if (total) {
    while (!value.empty() && (value.back() == '\n' || value.back() == '\r')) value.remove_suffix(1);
    return decoded("", value, "archive unique total");
  }
  return ForEachColumn(value, "archive unique subtotal", [&](std::string_view skey, std::string_view text) -> Status {
    if (!only_key.empty() && skey != only_key) return Status::Ok();  // not decoded at all
    return decoded(skey, text, "archive unique subtotal");
  });
}

namespace {

Status AddArchiveSketches(std::string_view value, bool total, int64_t hour, std::string_view only_key,
                          HourlySketches* out) {
  return ForEachArchiveSketch(value, total, only_key,
                              [&](std::string_view skey, std::shared_ptr<const UniqueSketch> sketch) {
                                out->push_back(HourSketch{hour, std::string(skey), std::move(sketch)});
                                return Status::Ok();
                              });
}

}  // namespace

Status AddArchiveUniqueTotal(std::string_view value, int64_t hour, HourlySketches* out) {
  return AddArchiveSketches(value, /*total=*/true, hour, "", out);
}

Status AddArchiveUniqueSubtotals(std::string_view value, int64_t hour, std::string_view only_key,
                                 HourlySketches* out) {
  return AddArchiveSketches(value, /*total=*/false, hour, only_key, out);
}

Status AddRealtimeUniqueLines(std::string_view body, std::string_view prefix, bool keyed_lines,
                              const ArchiveLastDay& last_day, const HourSpan& span, HourlySketches* out) {
  return ForEachRealtimeHourLine(
      body, prefix, keyed_lines, "realtime unique",
      [&](int64_t hour, std::string_view skey, std::string_view value) -> Status {
        if (HourIsArchived(hour, last_day) || !span.Contains(hour)) return Status::Ok();
        auto sketch = DecodeSketch(value, "realtime unique");
        if (!sketch.ok()) return sketch.status();
        out->push_back(HourSketch{hour, std::string(skey), std::move(sketch).value()});
        return Status::Ok();
      });
}

std::vector<uint64_t> UniquesByUnit(const UnitWindow& window, const HourlySketches& hours) {
  std::vector<uint64_t> out;
  for (const Union& unit : Unite(window, hours, /*per_unit=*/true)) out.push_back(unit.Estimate());
  return out;
}

uint64_t UniquesOverWindow(const UnitWindow& window, const HourlySketches& hours) {
  return Unite(window, hours, /*per_unit=*/false).front().Estimate();
}

std::vector<KeyUniques> KeyUniquesByUnit(const UnitWindow& window, const HourlySketches& hours) {
  std::vector<KeyUniques> out;
  for (const auto& unit : UniteByKey(window, hours, /*per_unit=*/true)) out.push_back(Estimates(unit));
  return out;
}

KeyUniques KeyUniquesOverWindow(const UnitWindow& window, const HourlySketches& hours) {
  return Estimates(UniteByKey(window, hours, /*per_unit=*/false).front());
}

}  // namespace clickatron::api
