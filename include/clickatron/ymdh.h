// YMDH: the compact hour code (docs/protocols.md, "Hour codes").
//
//   2000-2031:  b32(year - 2000) b32(month) b32(day) b32(hour), UTC, digits
//               0-9a-v: the seed's 4-character code, unchanged ("c3p1" is
//               2012-03-25 01:00 UTC).
//   other years: an era mark, b32(year - the era's first year), month, day,
//               hour: 5 characters. Eras: '/' 1970-1999, 'w' 2032-2063,
//               'x' 2064-2095, 'y' 2096-2127 ("w0111" is 2032-01-01 01:00).
//
// '/' sorts before every seed code's first character and 'w' < 'x' < 'y'
// after them, and no code is a prefix of another, so bytewise order of codes
// (alone, or followed by ',' or ':' in a line) is time order across every
// boundary. Times outside 1970-2127 are an error, never a wrapped code.
// Also the civil-calendar helpers (days since epoch <-> Y-M-D) used by the
// ring, the rebuild and the rollups.
//
// Thread-safety: pure functions of their arguments (no time zone database,
// no libc time calls, no shared state); any thread may call them.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>

#include "clickatron/status.h"

namespace clickatron {

inline constexpr int kMinYmdhYear = 1970;
inline constexpr int kMaxYmdhYear = 2127;
// The seed's 4-character codes.
inline constexpr int kFirstSeedYmdhYear = 2000;
inline constexpr int kLastSeedYmdhYear = 2031;
inline constexpr size_t kMaxYmdhLength = 5;
inline constexpr int64_t kSecondsPerHour = 3600;
inline constexpr int64_t kSecondsPerDay = 86400;
// 2128-01-01T00:00Z: the first instant no hour code reaches
// (DaysFromCivil({kMaxYmdhYear + 1, 1, 1}) * kSecondsPerDay; ymdh_test checks).
inline constexpr int64_t kEndOfHourCodes = 4985971200;

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
// OUT_OF_RANGE outside 1970..2127.
Result<std::string> YmdhFromUnix(int64_t unix_seconds);
// Unix seconds of the start of the hour a code names. INVALID_ARGUMENT for a
// code of neither shape or one that names no real hour (month 13, Feb 30,
// hour 24).
Result<int64_t> UnixFromYmdh(std::string_view ymdh);
// Cheap syntactic check of either shape (digits in range, not the calendar).
bool LooksLikeYmdh(std::string_view ymdh);

// Day codes: the YMDH code of a UTC day's first hour without its hour
// character ("c3p" is 2012-03-25, "w011" 2032-01-01). They name the archive's
// day subtotal records (docs/protocols.md). A day code is never an hour code
// (3 characters, or 4 starting with an era mark, which is no b32 digit), and
// it sorts before its day's hours and after the day before's.
// OUT_OF_RANGE outside 1970..2127.
Result<std::string> DayCodeFromDays(int64_t days);
// Days since epoch of the day a code names; INVALID_ARGUMENT for anything
// else (an hour code included).
Result<int64_t> DaysFromDayCode(std::string_view code);
// Cheap syntactic check, as LooksLikeYmdh.
bool LooksLikeDayCode(std::string_view code);

// Span codes name a span of 2^level whole UTC days, aligned on days since
// the epoch (its first day is a multiple of 2^level), in the archive's span
// records (docs/protocols.md, "Day and span records"). Level 0 is one day,
// named by its day code. A longer span is named by its last day's code, 'z'
// and the level as a digit ("c41z3": the 8 days that end 2012-04-01). So a
// span's key sorts right after its last day's hours ('z' is above every hour
// character) and before the next day's records, and a span code is never an
// hour or a day code ('z' is no b32 digit or era mark). A span whose last day
// is past 2127 has no code: OUT_OF_RANGE.
inline constexpr int kMaxSpanLevel = 7;  // 128 days: see docs/protocols.md for why
struct DaySpan {
  int64_t first_day = 0;  // days since epoch, a multiple of days()
  int level = 0;          // 0 .. kMaxSpanLevel
  int64_t days() const { return int64_t{1} << level; }
  int64_t last_day() const { return first_day + days() - 1; }
  friend bool operator==(const DaySpan&, const DaySpan&) = default;
};
// The span of `level` that holds `day`.
DaySpan SpanHolding(int64_t day, int level);
// The order of longer spans' records in a file (by last day, then level: the
// order of their codes); a day's own record comes before its hours instead.
inline bool SpanKeyLess(const DaySpan& a, const DaySpan& b) {
  return a.last_day() != b.last_day() ? a.last_day() < b.last_day() : a.level < b.level;
}
Result<std::string> SpanCode(const DaySpan& span);
// INVALID_ARGUMENT for anything but a day code or a span code (level 1 ..
// kMaxSpanLevel) of an aligned span.
Result<DaySpan> SpanFromCode(std::string_view code);
// Cheap syntactic check, as LooksLikeYmdh: a day code, or one followed by
// 'z' and a level digit.
bool LooksLikeSpanCode(std::string_view code);

// "2012-03-25" <-> days since epoch.
Result<int64_t> ParseDate(std::string_view yyyy_mm_dd);
std::string FormatDate(int64_t days);
// "2012-03-25T01:00:00Z" (also "…+00:00", fractional seconds refused) or a
// plain integer of unix seconds.
Result<int64_t> ParseTimestamp(std::string_view text);
// "2012-03-25T01:00:00Z".
std::string FormatIsoTime(int64_t unix_seconds);

}  // namespace clickatron
