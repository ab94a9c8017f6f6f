// An independent reference for the read path's rollups, used by the unit and
// integration tests. It shares no code with api/query/merge/rollup.cc or core's calendar:
// civil dates come from counting days year by year, weekdays from 1970-01-01
// being a Thursday, and a query window is found by walking hour by hour from
// the reference hour, collecting units until there are enough.
#pragma once

#include <cstdint>
#include <map>
#include <string>
#include <tuple>
#include <utility>
#include <vector>

namespace clickatron::testing::oracle {

struct Civil {
  int64_t year, month, day, hour;
};

inline bool Leap(int64_t y) { return (y % 4 == 0 && y % 100 != 0) || y % 400 == 0; }
inline int64_t MonthLength(int64_t y, int64_t m) {
  static const int kLen[] = {31, 28, 31, 30, 31, 30, 31, 31, 30, 31, 30, 31};
  return m == 2 && Leap(y) ? 29 : kLen[m - 1];
}

// Seconds since 1970 (>= 0) to civil time, by plain counting.
inline Civil ToCivil(int64_t seconds) {
  int64_t days = seconds / 86400;
  const int64_t hour = (seconds % 86400) / 3600;
  int64_t year = 1970;
  while (days >= (Leap(year) ? 366 : 365)) days -= Leap(year) ? 366 : 365, ++year;
  int64_t month = 1;
  while (days >= MonthLength(year, month)) days -= MonthLength(year, month), ++month;
  return Civil{year, month, days + 1, hour};
}

// 0 = Sunday.
inline int64_t Weekday(int64_t seconds) { return (seconds / 86400 + 4) % 7; }

// A unit is identified by a tuple; hours of one unit share it.
using UnitKey = std::tuple<int64_t, int64_t, int64_t, int64_t>;

// unit: "hour", "day", "week", "mweek", "month"; local = utc + offset hours.
inline UnitKey KeyOf(const std::string& unit, int64_t local_seconds) {
  const Civil c = ToCivil(local_seconds);
  if (unit == "hour") return {c.year, c.month, c.day, c.hour};
  if (unit == "day") return {c.year, c.month, c.day, 0};
  if (unit == "month") return {c.year, c.month, 0, 0};
  // A week is named by the civil date of its first day.
  const int64_t back = unit == "week" ? Weekday(local_seconds) : (Weekday(local_seconds) + 6) % 7;
  const Civil first = ToCivil(local_seconds - back * 86400);
  return {first.year, first.month, first.day, -1};
}

// Where the unit that starts at `dt` (unix seconds) ends: walking its hours
// forward until the unit changes.
inline int64_t UnitEnd(const std::string& unit, int64_t offset_hours, int64_t dt) {
  const int64_t shift = offset_hours * 3600;
  int64_t local = (dt + shift) / 3600 * 3600;
  const UnitKey key = KeyOf(unit, local);
  while (KeyOf(unit, local + 3600) == key) local += 3600;
  return local + 3600 - shift;
}

struct UnitSum {
  int64_t dt;
  int64_t clicks;
};

// The units of the window newest first, each with its start (unix seconds)
// and the sum of `hours` (utc hour start -> count) inside it.
//   units >= 1: that many units ending with the one holding reference_ts.
//   units == -1: from the unit holding first_data_ts to the reference unit
//                (nothing if first_data_ts is later).
inline std::vector<UnitSum> Rollup(const std::string& unit, int64_t offset_hours, int64_t reference_ts,
                                   int64_t units, const std::map<int64_t, int64_t>& hours,
                                   int64_t first_data_ts = 0) {
  const int64_t shift = offset_hours * 3600;
  const int64_t ref_hour_local = (reference_ts + shift) / 3600 * 3600;
  const UnitKey ref_key = KeyOf(unit, ref_hour_local);
  const UnitKey stop_key = units == -1 ? KeyOf(unit, (first_data_ts + shift) / 3600 * 3600) : UnitKey{};
  if (units == -1 && stop_key > ref_key) return {};
  // Walk forward to the end of the reference unit.
  int64_t local = ref_hour_local;
  while (KeyOf(unit, local + 3600) == ref_key) local += 3600;
  // Walk backwards hour by hour.
  std::vector<UnitSum> out;
  UnitKey current = ref_key;
  int64_t sum = 0;
  int64_t start = local;
  for (;; local -= 3600) {
    const UnitKey key = KeyOf(unit, local);
    if (key != current) {
      out.push_back({start - shift, sum});
      if (units != -1 && static_cast<int64_t>(out.size()) == units) break;
      if (units == -1 && current == stop_key) break;
      current = key;
      sum = 0;
    }
    start = local;
    auto it = hours.find(local - shift);
    if (it != hours.end()) sum += it->second;
  }
  return out;
}

}  // namespace clickatron::testing::oracle
