// YMDH: the compact 4-character hour code (DESIGN §1).
//
//   YMDH = b32(year % 100) b32(month) b32(day) b32(hour), UTC, digits 0-9a-v.
//   "c3p1" is 2012-03-25 01:00 UTC. Bytewise order of codes is time order.
//
// The year digit holds 0..31, so the format covers 2000-01-01 00:00 through
// 2031-12-31 23:00 UTC. Anything outside is an error, never a wrapped code.
// Also the civil-calendar helpers (days since epoch <-> Y-M-D) used by the
// ring, the rebuild and the rollups. All functions are pure and thread-safe.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>

#include "clickatron/status.h"

namespace clickatron {

inline constexpr int kMinYmdhYear = 2000;
inline constexpr int kMaxYmdhYear = 2031;
inline constexpr int64_t kSecondsPerHour = 3600;
inline constexpr int64_t kSecondsPerDay = 86400;

struct CivilDate {
  int year = 1970;
  int month = 1;  // 1..12
  int day = 1;    // 1..31
  friend bool operator==(const CivilDate&, const CivilDate&) = default;
};

// Days since 1970-01-01 for a proleptic Gregorian date, and back.
int64_t DaysFromCivil(const CivilDate& date);
CivilDate CivilFromDays(int64_t days);
int DaysInMonth(int year, int month);
// 0 = Sunday … 6 = Saturday.
int WeekdayFromDays(int64_t days);

// Floor division that rounds toward -inf (unix seconds may be negative).
inline int64_t FloorDiv(int64_t a, int64_t b) { return a / b - ((a % b != 0) && ((a < 0) != (b < 0))); }

// The YMDH code of the hour holding unix_seconds (floored to the hour).
// OUT_OF_RANGE outside 2000..2031.
Result<std::string> YmdhFromUnix(int64_t unix_seconds);
// Unix seconds of the start of the hour a code names. INVALID_ARGUMENT for a
// code that is not 4 b32 digits or names no real hour (month 13, Feb 30, hour 24).
Result<int64_t> UnixFromYmdh(std::string_view ymdh);
// Cheap syntactic check: 4 characters from [0-9a-v].
bool LooksLikeYmdh(std::string_view ymdh);

// "2012-03-25" <-> days since epoch.
Result<int64_t> ParseDate(std::string_view yyyy_mm_dd);
std::string FormatDate(int64_t days);
// "2012-03-25T01:00:00Z" (also "…+00:00", fractional seconds refused) or a
// plain integer of unix seconds.
Result<int64_t> ParseTimestamp(std::string_view text);
// "2012-03-25T01:00:00Z".
std::string FormatIsoTime(int64_t unix_seconds);

}  // namespace clickatron
