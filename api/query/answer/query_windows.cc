// Query windows; see query_windows.h.
#include "query/answer/query_windows.h"

#include <algorithm>

#include "clickatron/ymdh.h"

namespace clickatron::api {

namespace {

bool WindowMayHoldData(const UnitWindow& window) {
  static const int64_t kFirst = DaysFromCivil({kMinYmdhYear, 1, 1}) * kSecondsPerDay;
  return !window.empty() && window.end_ts() > kFirst && window.begin_ts() < kEndOfHourCodes;
}

// `window` and, with compare=, the earlier window set beside it.
Result<QueryWindows> WithEarlier(const WindowParams& w, Result<UnitWindow> window, int64_t max_hours) {
  if (!window.ok()) return window.status();
  QueryWindows out{std::move(*window), std::nullopt};
  if (w.compare != Compare::kNone) {
    auto earlier = ComparedWindow(out.window, w.compare, max_hours);
    if (!earlier.ok()) return earlier.status();
    out.earlier = std::move(*earlier);
  }
  return out;
}

}  // namespace

bool QueryWindows::MayHoldData() const {
  return WindowMayHoldData(window) || (earlier && WindowMayHoldData(*earlier));
}

nlohmann::json WindowEcho(const WindowParams& w) {
  return nlohmann::json{{"unit", UnitName(w.unit)},
                        {"units", w.units},
                        {"tz_offset", w.tz_offset},
                        {"unit_reference_ts", w.reference_echo}};
}

Result<QueryWindows> FixedWindows(const WindowParams& w, int64_t max_hours) {
  return WithEarlier(w, UnitWindow::Ending(w.unit, w.tz_offset, w.reference_ts, w.units, max_hours), max_hours);
}

Result<QueryWindows> WindowsOverData(const WindowParams& w, std::optional<int64_t> first_hour, int64_t max_hours) {
  // No data at all: a first hour after the reference makes the window empty.
  const int64_t first = first_hour.value_or(kMaxReferenceTs + 366 * kSecondsPerDay);
  return WithEarlier(w, UnitWindow::Spanning(w.unit, w.tz_offset, first, w.reference_ts, max_hours), max_hours);
}

Result<BreakdownReach> ReachOf(const WindowParams& w, const std::optional<QueryWindows>& windows, int64_t max_hours) {
  BreakdownReach reach;
  if (windows) {
    const HourSpan span = windows->Span();
    reach.begin_ts = span.begin_ts;
    reach.end_ts = span.end_ts;
    reach.skip = windows->Gap();
    reach.splits = windows->SumSplits(w.unit, w.rollup);
    return reach;
  }
  auto last = UnitWindow::Ending(w.unit, w.tz_offset, w.reference_ts, 1, max_hours);
  if (!last.ok()) return last.status();
  reach.end_ts = last->end_ts();
  return reach;
}

std::optional<int64_t> FirstHour(const HourlyCounts& total, const HourlyBreakdown& subtotals) {
  std::optional<int64_t> first;
  if (!total.empty()) first = total.begin()->first;
  for (const SubtotalCount& c : subtotals) first = std::min(first.value_or(c.hour), c.hour);
  return first;
}

nlohmann::json RelativeChange(int64_t current, int64_t earlier) {
  if (earlier == 0) return nullptr;
  return static_cast<double>(current - earlier) / static_cast<double>(earlier);
}

}  // namespace clickatron::api
