// Parsing and validation of /clicks, /breakdown and /uniques parameters. Every error is
// INVALID_ARGUMENT (400) with a reason that names the parameter
// (MISSING_ARG_NS, INVALID_UNIT, INVALID_TIMEZONE, …); nothing here does I/O
// except reading tzdata through TimeZoneDb.
//
// Defaults: unit=day, units=-1 (every unit that has data), timezone=0 (UTC),
// unit_reference_ts=now, rollup=false for /clicks and true for /breakdown,
// limit=100, no compare.
#pragma once

#include <cstdint>
#include <string>

#include <nlohmann/json.hpp>

#include "clickatron/query_string.h"
#include "clickatron/status.h"
#include "query/merge/rollup.h"
#include "clickatron/timezone.h"

namespace clickatron::api {

inline constexpr int kMinHourOffset = -12;
inline constexpr int kMaxHourOffset = 14;
inline constexpr int kDefaultBreakdownLimit = 100;
inline constexpr int kMaxBreakdownLimit = 1000;
// unit_reference_ts is accepted for years 1..9999: beyond that no calendar
// arithmetic is meaningful (and int64 sums could overflow).
inline constexpr int64_t kMinReferenceTs = -62135596800;  // 0001-01-01T00:00:00Z
inline constexpr int64_t kMaxReferenceTs = 253402300799;  // 9999-12-31T23:59:59Z

struct WindowParams {
  Unit unit = Unit::kDay;
  int64_t units = -1;             // N >= 1, or -1: every unit that has data
  int tz_offset = 0;              // whole hours east of UTC
  int64_t reference_ts = 0;       // resolved unix seconds
  nlohmann::json reference_echo;  // as given: a number, or "now"
  bool rollup = false;
  Compare compare = Compare::kNone;  // compare=previous|year
};

struct SeriesParams {
  std::string ns;
  std::string key;  // as given (not hashed)
  WindowParams window;
  // With sns= and skey=: one subtotal value's series (/clicks: JP's clicks;
  // /uniques: visitors from JP) instead of the key's.
  std::string sns;   // both empty, or both given
  std::string skey;  // as given (not hashed)
};

struct BreakdownParams {
  std::string sns;
  std::string ns;
  std::string key;
  WindowParams window;
  int limit = kDefaultBreakdownLimit;
  bool uniques = false;  // uniques=true: each row also gives its distinct visitors
};

// `now` is the unix time "now" stands for. sns= without skey= is
// MISSING_ARG_SKEY, skey= without sns= MISSING_ARG_SNS. /clicks and /uniques
// take the same parameters.
Result<SeriesParams> ParseSeriesParams(const QueryArgs& args, int64_t now, TimeZoneDb& zones);
Result<BreakdownParams> ParseBreakdownParams(const QueryArgs& args, int64_t now, TimeZoneDb& zones);
// A parameter that must stand once: missing or empty -> MISSING_ARG_<NAME>;
// given twice -> `reason`.
Result<std::string> RequiredArg(const QueryArgs& args, std::string_view name, std::string_view reason);

// "-5", "+9", "0" or a zone name resolved at `at`. Whole hours in -12..+14.
Result<int> ResolveTimezone(std::string_view text, int64_t at, TimeZoneDb& zones);

}  // namespace clickatron::api
