// The data part of a /clicks answer, written as JSON text.
//
// Why not nlohmann::json: building a DOM node per unit and dumping it was a
// few percent of a busy API node's CPU for an answer of fixed shape. The
// output is what the DOM would dump (same keys, same order), so clients and
// docs see no difference.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "query/answer/query_params.h"
#include "query/merge/rollup.h"

namespace clickatron::api {

// {"clicks":[{"clicks":N,["complete":false,]"dt":T}, …newest first],
//  "tz_offset":…,"unit":…,"unit_reference_ts":…,"units":…}; sums[i] belongs
// to window unit i; a unit not over at `now` says "complete": false.
std::string SeriesJson(const WindowParams& w, const UnitWindow& window, const std::vector<int64_t>& sums,
                       int64_t now);
// The same with "clicks": one number (rollup=true).
std::string RollupJson(const WindowParams& w, int64_t clicks);
// /uniques: the same shapes with "uniques" for "clicks".
std::string UniquesSeriesJson(const WindowParams& w, const UnitWindow& window, const std::vector<uint64_t>& uniques,
                              int64_t now);
std::string UniquesRollupJson(const WindowParams& w, uint64_t uniques);

}  // namespace clickatron::api
