// Time zone names -> the UTC offset in force at one instant, read from the
// system tzdata (TZif files under /usr/share/zoneinfo, RFC 8536).
//
// Why our own reader: the C library's localtime_r only knows one zone, the
// process's TZ, and changing TZ with setenv() is not safe in a threaded
// daemon. A TZif file is small: transition times, offset types, and a POSIX
// TZ rule (the footer) for instants after the last listed transition.
//
// Why not Debian's date/tz (libhowardhinnant-date-dev 3.0.1, built with
// USE_OS_TZDB=1 over these same files): it ignores the footer. After a zone's
// last listed transition it keeps that transition's offset forever (upstream:
// HowardHinnant/date issue #794, open). Compared over every zone both know,
// 1970..2039 (tests/timezone/tzdb_differential_test.cc), the two agree up
// to each zone's last listed transition and differ after it. Debian's TZif
// files list transitions through 2037, so 197 of the 598 zones are off in
// date/tz by their DST amount (an hour; Australia/Lord_Howe half an hour,
// Antarctica/Troll two) for the half of 2038 and of 2039 that their last
// listed transition does not cover, from 2038-03-14T05:00Z on: every zone
// whose footer has DST (America/New_York, Europe/London, Australia/Sydney,
// ...) but Asia/Gaza and Asia/Hebron, which list theirs beyond 2040. The C
// library agrees with us on every stretch compared. With zic's "slim" files,
// which stop listing at a zone's last rule change, date/tz would be wrong from
// that change on (2007 for New York). Using it would mean keeping our POSIX
// rule code anyway, beside a second source of offsets.
//
// Thread-safety: TimeZoneDb caches parsed zones without a lock; one instance
// belongs to one thread (the API's loop). The free functions are pure.
#pragma once

#include <cstdint>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "clickatron/status.h"

namespace clickatron {

// A POSIX TZ rule such as "EST5EDT,M3.2.0,M11.1.0" (the TZif footer).
struct PosixTzRule {
  struct Date {
    enum Kind { kJulianNoLeap, kZeroBasedDay, kMonthWeekDay } kind = kMonthWeekDay;
    int day = 0;      // Jn: 1..365; n: 0..365; Mm.w.d: weekday 0..6 (0 = Sunday)
    int month = 0;    // Mm.w.d
    int week = 0;     // Mm.w.d: 1..5 (5 = the last)
    int64_t time = 2 * 3600;  // seconds after local midnight (may be negative or > 24h)
  };
  int64_t std_offset = 0;  // seconds east of UTC (note: POSIX writes them west)
  bool has_dst = false;
  int64_t dst_offset = 0;
  Date dst_start;  // in local standard time
  Date dst_end;    // in local daylight time
};
Result<PosixTzRule> ParsePosixTz(std::string_view text);
// Offset (seconds east of UTC) the rule gives at `unix_seconds`.
int64_t PosixTzOffsetAt(const PosixTzRule& rule, int64_t unix_seconds);
// The first instant after `unix_seconds` at which PosixTzOffsetAt may give a
// different answer; nullopt when it never changes (no DST). May name an
// instant where the offset stays the same (a new year), never skips one
// where it changes: the offset is constant from `unix_seconds` up to it.
std::optional<int64_t> PosixTzNextChangeAfter(const PosixTzRule& rule, int64_t unix_seconds);

// One parsed TZif file.
// A fixed whole-hour offset written as an offset: "+9", "-5", "0",
// "+09:00", "-05:00" (ISO 8601's form, minutes "00"). Seconds east of UTC,
// or nullopt for anything else (a zone name, minutes that are not zero, more
// than 14 hours).
std::optional<int64_t> ParseWholeHourOffset(std::string_view text);

class ZoneInfo {
 public:
  static Result<ZoneInfo> Parse(std::string_view tzif_data);
  // Offset (seconds east of UTC) in force at `unix_seconds`.
  int64_t OffsetAt(int64_t unix_seconds) const;
  // The first instant after `unix_seconds` at which OffsetAt may change, in
  // the sense of PosixTzNextChangeAfter. Walking these lets a caller compare
  // whole stretches of time with another source instead of probing it hour
  // by hour.
  std::optional<int64_t> NextChangeAfter(int64_t unix_seconds) const;

 private:
  std::vector<int64_t> transitions_;     // ascending
  std::vector<uint8_t> transition_type_; // index into offsets_ per transition
  std::vector<int64_t> offsets_;         // utoff of each local time type
  std::optional<PosixTzRule> footer_;
};

class TimeZoneDb {
 public:
  explicit TimeZoneDb(std::string root = "/usr/share/zoneinfo") : root_(std::move(root)) {}
  // Offset in seconds east of UTC at `unix_seconds` for an IANA name
  // ("America/New_York", "UTC", "Etc/GMT+5"). NOT_FOUND for an unknown name;
  // INVALID_ARGUMENT for a name that could escape the tzdata directory.
  Result<int64_t> OffsetSecondsAt(std::string_view name, int64_t unix_seconds);
  // The parsed zone behind a name, with the same errors.
  Result<std::shared_ptr<const ZoneInfo>> Find(std::string_view name);

 private:
  static constexpr size_t kMaxCachedZones = 1024;  // there are ~600 zone names
  std::string root_;
  std::map<std::string, std::shared_ptr<const ZoneInfo>, std::less<>> cache_;
};

}  // namespace clickatron
