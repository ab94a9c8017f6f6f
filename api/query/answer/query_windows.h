// The windows a query reads (its own and, with compare=, the earlier one)
// and what a gather reads for them: the span, the gap between the windows,
// where sums split. Pure: no I/O, no clock.
#pragma once

#include <cstdint>
#include <limits>
#include <optional>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "clickatron/status.h"
#include "query/answer/query_params.h"
#include "query/merge/hourly_counts.h"
#include "query/merge/read_records.h"
#include "query/merge/rollup.h"

namespace clickatron::api {

// The window's parameters as answers echo them.
nlohmann::json WindowEcho(const WindowParams& w);

// A query's window and, with compare=, the earlier one set beside it.
struct QueryWindows {
  UnitWindow window;
  std::optional<UnitWindow> earlier;

  // No record can hold an hour outside the YMDH years: windows wholly outside
  // them are answered without asking anyone.
  bool MayHoldData() const;
  // What one gather reads for both: from the earlier window's start (it
  // always comes first) to the window's end.
  HourSpan Span() const {
    return HourSpan{earlier && !earlier->empty() ? std::min(earlier->begin_ts(), window.begin_ts())
                                                 : window.begin_ts(),
                    window.end_ts()};
  }
  // The hours between the earlier window and the window (compare=year):
  // read for neither. Empty without compare= and for compare=previous.
  HourSpan Gap() const { return earlier ? HourSpan{earlier->end_ts(), window.begin_ts()} : HourSpan{0, 0}; }
  // Where a breakdown's sums split: the windows' ends, and with rollup=false
  // every unit start too. A UTC day between two splits is one sum's.
  // nullopt for hourly units (rollup=false): no day fits in one, every hour
  // is read (and 720 splits for 30 days would only say so slowly).
  std::optional<std::vector<int64_t>> SumSplits(Unit unit, bool rollup) const {
    if (!rollup && unit == Unit::kHour) return std::nullopt;
    std::vector<int64_t> splits;
    for (const UnitWindow* w : {&window, earlier ? &*earlier : nullptr}) {
      if (w == nullptr || w->empty()) continue;
      splits.push_back(w->begin_ts());
      splits.push_back(w->end_ts());
      if (!rollup) {
        for (size_t i = 0; i < w->size(); ++i) splits.push_back(w->start(i));
      }
    }
    return splits;
  }
};

// units=N: the windows are known before any data is read.
Result<QueryWindows> FixedWindows(const WindowParams& w, int64_t max_hours);

// units=-1: from the unit of the first hour with data (nullopt: none) to the
// reference unit.
Result<QueryWindows> WindowsOverData(const WindowParams& w, std::optional<int64_t> first_hour, int64_t max_hours);

// What a breakdown gather reads for a query: [begin_ts, end_ts), the hours
// skipped between its windows and where its sums split. Without windows
// (units=-1, known once the data is) every hour up to the end of the
// reference unit, with no split known.
struct BreakdownReach {
  int64_t begin_ts = std::numeric_limits<int64_t>::min();
  int64_t end_ts = 0;
  HourSpan skip{0, 0};
  std::optional<std::vector<int64_t>> splits;
};

Result<BreakdownReach> ReachOf(const WindowParams& w, const std::optional<QueryWindows>& windows, int64_t max_hours);

// The first hour with data among a total and its subtotals (nullopt: none).
std::optional<int64_t> FirstHour(const HourlyCounts& total, const HourlyBreakdown& subtotals);

// (current - earlier) / earlier; null when the earlier count is 0.
nlohmann::json RelativeChange(int64_t current, int64_t earlier);

// A compare= answer of /clicks and /uniques: `field` as without compare=
// (the window's total with rollup, else its units newest first), and
// "compare": the earlier window's in the same shape, with the change of the
// totals; "resolution" when it is not null. per_unit(w) gives w's values
// per unit (a Result), index as in w; a unit not over at `now` says
// "complete": false.
template <typename N, typename PerUnit>
Result<nlohmann::json> ComparedJson(const WindowParams& w, const std::string& field, const UnitWindow& window,
                                    const UnitWindow& earlier, N now_total, N then_total, PerUnit per_unit,
                                    int64_t now, const nlohmann::json& resolution) {
  nlohmann::json data = WindowEcho(w);
  nlohmann::json compare = {
      {"window", CompareName(w.compare)},
      {"change", RelativeChange(static_cast<int64_t>(now_total), static_cast<int64_t>(then_total))}};
  if (w.rollup) {
    data[field] = now_total;
    compare[field] = then_total;
  } else {
    const auto series = [&](const UnitWindow& win) -> Result<nlohmann::json> {
      auto values = per_unit(win);
      if (!values.ok()) return values.status();
      nlohmann::json list = nlohmann::json::array();
      for (size_t i = win.size(); i-- > 0;) {
        list.push_back({{"dt", win.start(i)}, {field, (*values)[i]}});
        if (!win.Complete(i, now)) list.back()["complete"] = false;
      }
      return list;
    };
    auto now_series = series(window);
    if (!now_series.ok()) return now_series.status();
    auto then_series = series(earlier);
    if (!then_series.ok()) return then_series.status();
    data[field] = std::move(*now_series);
    compare[field] = std::move(*then_series);
  }
  data["compare"] = std::move(compare);
  if (!resolution.is_null()) data["resolution"] = resolution;
  return data;
}

}  // namespace clickatron::api
