// Unit arithmetic and rollups; see rollup.h.
#include "query/merge/rollup.h"

#include <fmt/format.h>

#include <algorithm>
#include <limits>
#include <string_view>
#include <unordered_map>

#include "clickatron/ymdh.h"

namespace clickatron::api {
namespace {

constexpr int64_t kWeekSeconds = 7 * kSecondsPerDay;

int64_t MonthStartDays(int year, int month) { return DaysFromCivil({year, month, 1}); }

// `spans`: what the window covers, "the window spans N hours".
Status WindowTooLarge(std::string_view spans, int64_t max_hours) {
  return Status::InvalidArgument(
      fmt::format("{}, more than the {} hours a query may cover (api.max_query_hours)", spans, max_hours),
      "WINDOW_TOO_LARGE");
}

Status WindowTooLarge(int64_t hours, int64_t max_hours) {
  return WindowTooLarge(fmt::format("the window spans {} hours", hours), max_hours);
}

Status SumOverflow() { return Status::OutOfRange("a sum of clicks overflows a 64-bit counter"); }

}  // namespace

std::string_view UnitName(Unit unit) {
  switch (unit) {
    case Unit::kHour: return "hour";
    case Unit::kDay: return "day";
    case Unit::kWeek: return "week";
    case Unit::kMweek: return "mweek";
    case Unit::kMonth: return "month";
  }
  return "day";
}

std::optional<Unit> ParseUnit(std::string_view name) {
  for (Unit u : {Unit::kHour, Unit::kDay, Unit::kWeek, Unit::kMweek, Unit::kMonth}) {
    if (name == UnitName(u)) return u;
  }
  return std::nullopt;
}

namespace {

// Local-time unit arithmetic (seconds in the local clock, not UTC).
int64_t UnitStartLocal(Unit unit, int64_t local_seconds) {
  const int64_t days = FloorDiv(local_seconds, kSecondsPerDay);
  switch (unit) {
    case Unit::kHour: return FloorDiv(local_seconds, kSecondsPerHour) * kSecondsPerHour;
    case Unit::kDay: return days * kSecondsPerDay;
    case Unit::kWeek: return (days - WeekdayFromDays(days)) * kSecondsPerDay;
    case Unit::kMweek: return (days - (WeekdayFromDays(days) + 6) % 7) * kSecondsPerDay;
    case Unit::kMonth: {
      const CivilDate d = CivilFromDays(days);
      return MonthStartDays(d.year, d.month) * kSecondsPerDay;
    }
  }
  return local_seconds;
}

// The length of every unit of `unit` in one offset, 0 for months (whose
// lengths differ).
int64_t UnitStepSeconds(Unit unit) {
  switch (unit) {
    case Unit::kHour: return kSecondsPerHour;
    case Unit::kDay: return kSecondsPerDay;
    case Unit::kWeek:
    case Unit::kMweek: return kWeekSeconds;
    case Unit::kMonth: return 0;
  }
  return 0;
}

// The start of the unit after (`step` 1) or before (-1) the one that starts
// at local_start.
int64_t AdjacentUnitStartLocal(Unit unit, int64_t local_start, int step) {
  switch (unit) {
    case Unit::kHour: return local_start + step * kSecondsPerHour;
    case Unit::kDay: return local_start + step * kSecondsPerDay;
    case Unit::kWeek:
    case Unit::kMweek: return local_start + step * kWeekSeconds;
    case Unit::kMonth: {
      const CivilDate d = CivilFromDays(FloorDiv(local_start, kSecondsPerDay));
      if (step > 0) {
        return (d.month == 12 ? MonthStartDays(d.year + 1, 1) : MonthStartDays(d.year, d.month + 1)) * kSecondsPerDay;
      }
      return (d.month == 1 ? MonthStartDays(d.year - 1, 12) : MonthStartDays(d.year, d.month - 1)) * kSecondsPerDay;
    }
  }
  return local_start;
}

}  // namespace

Result<UnitWindow> UnitWindow::Ending(Unit unit, int offset_hours, int64_t reference_ts, int64_t units,
                                      int64_t max_hours) {
  if (units < 1) return Status::InvalidArgument(fmt::format("{} units: a window has one or more", units));
  // Every unit is at least an hour: refuse before building anything huge.
  if (units > max_hours) {
    return WindowTooLarge(fmt::format("{} units of a {} are at least {} hours", units, UnitName(unit), units),
                          max_hours);
  }
  const int64_t shift = offset_hours * kSecondsPerHour;
  const int64_t last = UnitStartLocal(unit, reference_ts + shift);
  const int64_t end = AdjacentUnitStartLocal(unit, last, 1);
  UnitWindow w;
  w.unit_ = unit;
  w.offset_hours_ = offset_hours;
  const int64_t step = UnitStepSeconds(unit);
  int64_t start = last;
  if (step != 0) {
    start = last - (units - 1) * step;
  } else {
    for (int64_t i = units - 1; i > 0; --i) start = AdjacentUnitStartLocal(unit, start, -1);
  }
  const int64_t hours = (end - start) / kSecondsPerHour;
  if (hours > max_hours) return WindowTooLarge(hours, max_hours);
  w.end_ts_ = end - shift;
  w.SetUnits(start, last, shift);
  return w;
}

void UnitWindow::SetUnits(int64_t first_local, int64_t last_local, int64_t shift) {
  step_ = UnitStepSeconds(unit_);
  if (step_ != 0) {
    first_ = first_local - shift;
    count_ = static_cast<size_t>((last_local - first_local) / step_ + 1);
    return;
  }
  for (int64_t s = first_local; s <= last_local; s = AdjacentUnitStartLocal(unit_, s, 1)) starts_.push_back(s - shift);
  count_ = starts_.size();
}

Result<UnitWindow> UnitWindow::Spanning(Unit unit, int offset_hours, int64_t first_ts, int64_t reference_ts,
                                        int64_t max_hours) {
  const int64_t shift = offset_hours * kSecondsPerHour;
  const int64_t last = UnitStartLocal(unit, reference_ts + shift);
  const int64_t end = AdjacentUnitStartLocal(unit, last, 1);
  const int64_t first = UnitStartLocal(unit, first_ts + shift);
  UnitWindow w;
  w.unit_ = unit;
  w.offset_hours_ = offset_hours;
  w.end_ts_ = end - shift;
  if (first > last) return w;
  const int64_t hours = (end - first) / kSecondsPerHour;
  if (hours > max_hours) return WindowTooLarge(hours, max_hours);
  w.SetUnits(first, last, shift);
  return w;
}

int64_t UnitWindow::IndexOf(int64_t utc_ts) const {
  if (empty() || utc_ts < begin_ts() || utc_ts >= end_ts_) return -1;
  if (step_ != 0) return (utc_ts - first_) / step_;
  return std::upper_bound(starts_.begin(), starts_.end(), utc_ts) - starts_.begin() - 1;
}

Result<std::vector<int64_t>> SumByUnit(const UnitWindow& window, const HourlyCounts& hours) {
  std::vector<int64_t> sums(window.size(), 0);
  if (window.empty()) return sums;
  // Hours and units are both in time order: one walk, unit by unit. Each
  // unit's hours are summed wide and checked once (a check per hour was a
  // tenth of a 365-day series' CPU): 2^63 hours of any count fit in 128 bits.
  auto it = hours.LowerBound(window.begin_ts());
  for (size_t i = 0; i < window.size(); ++i) {
    const int64_t unit_end = i + 1 < window.size() ? window.start(i + 1) : window.end_ts();
    __int128 sum = 0;
    for (; it != hours.end() && it->first < unit_end; ++it) sum += it->second;
    if (sum > std::numeric_limits<int64_t>::max() || sum < std::numeric_limits<int64_t>::min()) return SumOverflow();
    sums[i] = static_cast<int64_t>(sum);
  }
  return sums;
}

Result<int64_t> SumWindow(const UnitWindow& window, const HourlyCounts& hours) {
  int64_t sum = 0;
  if (window.empty()) return sum;
  for (auto it = hours.LowerBound(window.begin_ts()); it != hours.end() && it->first < window.end_ts(); ++it) {
    if (__builtin_add_overflow(sum, it->second, &sum)) return SumOverflow();
  }
  return sum;
}

namespace {

void DropZeros(ValueSums* counts) { std::erase_if(*counts, [](const auto& kv) { return kv.second == 0; }); }

}  // namespace

Result<std::vector<ValueSums>> SumBreakdownByUnit(const UnitWindow& window, const HourlyBreakdown& hours) {
  std::vector<ValueSums> units(window.size());
  bool negative = false;  // only a decrement can make a sum 0
  for (const SubtotalCount& c : hours) {
    const int64_t i = window.IndexOf(c.hour);
    if (i < 0) continue;
    int64_t& slot = units[static_cast<size_t>(i)][c.key];
    if (__builtin_add_overflow(slot, c.count, &slot)) return SumOverflow();
    negative |= c.count < 0;
  }
  if (negative) {
    for (auto& u : units) DropZeros(&u);
  }
  return units;
}

Result<ValueSums> SumBreakdownWindow(const UnitWindow& window, const HourlyBreakdown& hours) {
  ValueSums sums;
  if (window.empty()) return sums;
  // At most a value per line: no rehash on the way (a key with a million
  // values today rehashed its table some twenty times).
  sums.reserve(hours.size());
  bool negative = false;  // only a decrement can make a sum 0
  for (const SubtotalCount& c : hours) {
    if (c.hour < window.begin_ts() || c.hour >= window.end_ts()) continue;
    int64_t& slot = sums[c.key];
    if (__builtin_add_overflow(slot, c.count, &slot)) return SumOverflow();
    negative |= c.count < 0;
  }
  if (negative) DropZeros(&sums);
  return sums;
}

std::vector<std::string> TopCandidates(const ValueSums& counts, size_t limit) {
  std::vector<std::string> keys;
  if (limit == 0) return keys;
  if (counts.size() <= limit) {
    for (const auto& kv : counts) keys.emplace_back(kv.first);
    return keys;
  }
  // The best `limit` in one pass through a heap of `limit` entries whose
  // front is the worst kept: not a copy of every count, which for a million
  // values is the most memory this step takes.
  using Entry = std::pair<int64_t, std::string_view>;
  const auto better = [](const Entry& a, const Entry& b) {
    return a.first != b.first ? a.first > b.first : a.second < b.second;
  };
  std::vector<Entry> heap;
  heap.reserve(limit);
  for (const auto& [key, n] : counts) {
    const Entry e{n, key};
    if (heap.size() < limit) {
      heap.push_back(e);
      std::push_heap(heap.begin(), heap.end(), better);
    } else if (better(e, heap.front())) {
      std::pop_heap(heap.begin(), heap.end(), better);
      heap.back() = e;
      std::push_heap(heap.begin(), heap.end(), better);
    }
  }
  for (const Entry& e : heap) keys.emplace_back(e.second);
  return keys;
}

std::vector<std::pair<std::string, int64_t>> TopByClicks(const KeyCounts& counts, size_t limit) {
  std::vector<std::pair<std::string, int64_t>> all(counts.begin(), counts.end());
  const auto better = [](const auto& a, const auto& b) {
    return a.second != b.second ? a.second > b.second : a.first < b.first;
  };
  const size_t n = std::min(limit, all.size());
  std::partial_sort(all.begin(), all.begin() + n, all.end(), better);
  all.resize(n);
  return all;
}

std::string_view CompareName(Compare how) {
  switch (how) {
    case Compare::kPrevious: return "previous";
    case Compare::kYear: return "year";
    case Compare::kNone: break;
  }
  return "";
}

Result<UnitWindow> ComparedWindow(const UnitWindow& current, Compare how, int64_t max_hours) {
  if (current.empty() || how == Compare::kNone) return current;
  const int64_t offset = int64_t{current.offset_hours()} * 3600;
  int64_t reference = 0;
  if (how == Compare::kPrevious) {
    reference = current.begin_ts() - 1;  // the last second before the window: its unit ends the earlier one
  } else {
    const int64_t local = current.start(current.size() - 1) + offset;
    const int64_t days = FloorDiv(local, kSecondsPerDay);
    const int64_t time_of_day = local - days * kSecondsPerDay;
    CivilDate date = CivilFromDays(days);
    date.year -= 1;
    date.day = std::min(date.day, DaysInMonth(date.year, date.month));
    reference = DaysFromCivil(date) * kSecondsPerDay + time_of_day - offset;
  }
  return UnitWindow::Ending(current.unit(), current.offset_hours(), reference, static_cast<int64_t>(current.size()),
                            max_hours);
}

}  // namespace clickatron::api
