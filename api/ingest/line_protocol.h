// InfluxDB line protocol as a second door for increments: a body that
// Telegraf, an Influx client library or `curl --data-binary @file` sends to an
// Influx /write endpoint becomes the same Increments /incr makes.
//
//   u,key=jehiah,c=US value=3i,uniq="visitor-123" 1333245600
//   ^ ns  ^ key  ^ sub=c:US  ^ value ^ uniq       ^ ts in the precision
//
// Each line is translated into the query parameters of one /incr call and
// validated by ParseIncrement, so both doors accept and refuse exactly the
// same increments with the same reasons. Only the line protocol's own syntax
// and types are checked here (INVALID_LINE_PROTOCOL, UNKNOWN_FIELD, and
// INVALID_VALUE / INVALID_UNIQ / INVALID_TS for a value of the wrong type).
//
// Mapping: measurement -> ns; tag `key` -> key; any other tag T=V -> sub=T:V;
// field `value` (an integer, or a float with no fractional part) -> value;
// string field `uniq` -> uniq; any other field is refused. The timestamp is
// floored to unix seconds. Blank lines and '#' comments are skipped.
//
// Escapes, as InfluxDB parses them: `\,` and `\ ` in the measurement; `\,`,
// `\=` and `\ ` in tag keys, tag values and field keys; `\"` and `\\` in a
// double-quoted string field value. A backslash before any other character is
// a literal backslash.
//
// Thread-safety: pure functions; an HourCache belongs to one thread.
#pragma once

#include <functional>
#include <string_view>

#include "clickatron/status.h"
#include "ingest/increment_parser.h"

namespace clickatron::api {

enum class LineProtocolPrecision { kNanoseconds, kMicroseconds, kMilliseconds, kSeconds, kMinutes, kHours };

// The `precision` parameter of an Influx write: "ns" (also "n"), "us" (also
// "u"), "ms" or "s"; Influx 1 clients may also send "m" and "h" (both paths
// take every name: docs/openapi.yaml promises it, and a stricter
// /api/v2/write would refuse clients written to it); empty is nanoseconds,
// Influx's default. Anything else: INVALID_ARGUMENT with reason
// INVALID_PRECISION, naming every name taken.
Result<LineProtocolPrecision> ParsePrecision(std::string_view text);

// The precision of an Influx write's parameters, refusing what would place
// its points somewhere else than meant: `precision` twice
// (INVALID_PRECISION), and any parameter the Influx write APIs do not
// define (UNKNOWN_PARAMETER: a misspelt `precison=s` would leave the
// points in nanoseconds, counted in 1970). Taken: db, rp, u, p,
// consistency (Influx 1), org, orgID, bucket (Influx 2), precision; only
// precision means anything here.
Result<LineProtocolPrecision> InfluxWritePrecision(const QueryArgs& args);

// Parses a whole body, one point per line ('\n' or "\r\n"). Calls
// on_increment for each point in order. All or nothing: the first bad line
// stops the parse with INVALID_ARGUMENT whose message starts "line N: " (N
// 1-based, counting every physical line, blank and comment lines included)
// and whose reason names the problem, so the caller must not apply anything it
// was given before seeing OK. At most kMaxBatchIncrements points
// (BODY_TOO_LARGE, as for an /incr batch) and kMaxIncrementLineBytes a line
// (LINE_TOO_LONG).
Status ParseLineProtocol(std::string_view body, LineProtocolPrecision precision, const IncrementLimits& limits,
                         HourCache* cache, const std::function<void(const Increment&)>& on_increment);

}  // namespace clickatron::api
