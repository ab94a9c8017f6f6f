// What a query may read of a namespace's rolled-up days (clickatron/
// retention.h), and what its answer says of them.
//
// A rolled-up day is one hour of the archive, its anchor (the day's middle),
// holding the whole day. Sums over units made of whole days of the policy's
// zone (day, week, mweek, month) take each such day whole, into the unit it
// belongs to: exact. A query by hour, or by the days of another zone, would
// see a day's clicks in one hour: refused, 400 RESOLUTION_EXPIRED, naming
// the boundary. Before kept_from nothing is kept: a window reaching there is
// answered (nothing counts there) and its "resolution" says from when
// anything is; refusing it would refuse every units=-1 window, which begins
// at the start of the unit holding the first day kept.
//
// Thread-safety: pure (but for the zone database the caller owns).
#pragma once

#include <cstdint>
#include <optional>

#include <nlohmann/json.hpp>

#include "clickatron/retention.h"
#include "clickatron/status.h"
#include "clickatron/timezone.h"
#include "query/answer/query_params.h"

namespace clickatron::api {

// `applied`: the namespace's boundaries in the generation the query read
// (null: none). [begin_ts, end_ts): everything the query sums (both windows
// of a compare). Returns the answer's "resolution" object ({"hourly_from",
// "zone", and "kept_from" when something was dropped}), null when the window
// reaches no rolled-up day, or RESOLUTION_EXPIRED.
Result<nlohmann::json> CheckResolution(const AppliedRetention* applied, int64_t begin_ts, int64_t end_ts,
                                       const WindowParams& window, TimeZoneDb& zones);

// `data_json` (a serialized object) with "resolution" added, when not null.
std::string WithResolution(std::string data_json, const nlohmann::json& resolution);

}  // namespace clickatron::api
