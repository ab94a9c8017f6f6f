// The data part of a /breakdown answer, written as JSON text.
//
// Why not nlohmann::json: a DOM node per row (and per unit without rollup),
// then its dump, was about 5% of an API node's CPU answering breakdowns
// (perf of bench-query's breakdown run). The output is what the DOM would
// dump (json_text.h): same keys, same order, same escaping.
#pragma once

#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "query/answer/query_params.h"
#include "query/merge/rollup.h"
#include "query/merge/unique_records.h"

namespace clickatron::api {

// A unit's top values, most clicks first.
using TopValues = std::vector<std::pair<std::string, int64_t>>;

// The clicks a unit's rows do not show (a dashboard's "other" and "(none)"
// rows, bitly v4's other_metrics):
struct RowsLeftOut {
  int64_t other = 0;  // of the values beyond the top `limit`
  int64_t none = 0;   // with no value in this subtotal namespace: the key's
                      // total less every value's clicks (0 if below it)
};

// {"breakdown": rows (rollup) | [{"breakdown": rows, ["compare_dt": T,]
//  ["complete": false,] "dt": T, "none": N, "other": N}, …newest first],
//  ["compare": {"window": …},] "limit", ["none", "other" (rollup),] "sns",
//  "tz_offset", "unit", "unit_reference_ts", "units"}; each row
//  {"clicks", ["compare": {"change", "clicks"},] ["uniques",] "value"}.
// tops[i] (and left_out[i], before[i], uniques[i]) belong to window unit i
// (to the whole window with rollup); missing ones are empty. `earlier` is
// compare='s window (its rows' "compare"), p.uniques adds "uniques"; a unit
// not over at `now` says "complete": false.
std::string BreakdownJson(const BreakdownParams& p, const UnitWindow& window, const std::vector<TopValues>& tops,
                          const std::vector<RowsLeftOut>& left_out, const std::optional<UnitWindow>& earlier,
                          const std::vector<KeyCounts>& before, const std::vector<KeyUniques>& uniques, int64_t now);

}  // namespace clickatron::api
