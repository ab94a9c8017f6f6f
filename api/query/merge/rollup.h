// Hourly data rolled up into query units (hour, day, week, mweek, month) in
// one fixed whole-hour UTC offset. Pure arithmetic, no I/O, thread-safe.
//
// A unit is a span of local civil time: local = utc + offset_hours * 3600.
// week starts on Sunday, mweek on Monday, month on the 1st. A unit's "dt" is
// the unix time (UTC) of its local start.
#pragma once

#include <cstdint>
#include <map>
#include <unordered_map>
#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "clickatron/status.h"
#include "query/merge/hourly_counts.h"

namespace clickatron::api {

enum class Unit { kHour, kDay, kWeek, kMweek, kMonth };
// compare=: the earlier window a query's answer is set beside.
enum class Compare { kNone, kPrevious, kYear };
std::string_view CompareName(Compare how);
std::string_view UnitName(Unit unit);
std::optional<Unit> ParseUnit(std::string_view name);

// Subtotal columns as they come: (hour, subtotal key, count), in any order,
// a key possibly more than once per hour (the rollup sums them). Flat on
// purpose: a hot key's breakdown holds thousands of columns per query, and a
// map per hour cost most of its CPU; the rollup needs only one pass.
struct SubtotalCount {
  int64_t hour = 0;
  std::string key;
  int64_t count = 0;
};
using HourlyBreakdown = std::vector<SubtotalCount>;

// The consecutive units of a query window, oldest first.
class UnitWindow {
 public:
  // `units` (>= 1) units ending with the one that holds reference_ts.
  // WINDOW_TOO_LARGE (400) when they span more than max_hours hours.
  static Result<UnitWindow> Ending(Unit unit, int offset_hours, int64_t reference_ts, int64_t units,
                                   int64_t max_hours);
  // From the unit that holds first_ts to the one that holds reference_ts
  // (units=-1: "every unit that has data"). Empty when first_ts is later than
  // the reference unit. WINDOW_TOO_LARGE as above.
  static Result<UnitWindow> Spanning(Unit unit, int offset_hours, int64_t first_ts, int64_t reference_ts,
                                     int64_t max_hours);

  Unit unit() const { return unit_; }
  int offset_hours() const { return offset_hours_; }
  size_t size() const { return count_; }
  bool empty() const { return count_ == 0; }
  // dt of unit i, i = 0 the oldest.
  int64_t start(size_t i) const { return step_ != 0 ? first_ + static_cast<int64_t>(i) * step_ : starts_[i]; }
  // Where unit i ends: the next unit's start, or the window's end.
  int64_t end(size_t i) const { return i + 1 < count_ ? start(i + 1) : end_ts_; }
  // False while unit i is not over at `now` (it ends after it): its sum
  // will still grow. Answers mark such units "complete": false.
  bool Complete(size_t i, int64_t now) const { return end(i) <= now; }
  // [begin_ts, end_ts): the UTC span the window covers.
  int64_t begin_ts() const { return empty() ? end_ts_ : start(0); }
  int64_t end_ts() const { return end_ts_; }
  // The unit that holds utc_ts, or -1 outside the window.
  int64_t IndexOf(int64_t utc_ts) const;

 private:
  // Sets the units from `first` (UTC) to the one before `end_ts_`.
  void SetUnits(int64_t first_local, int64_t last_local, int64_t shift);

  Unit unit_ = Unit::kDay;
  int offset_hours_ = 0;
  // Hours, days and weeks in one offset are all one length: the window is
  // its first start, that step and a count, not a start per unit (a window
  // of 43,920 hours held 343 KiB for as long as its query was gathered, and
  // a thousand such queries from slow readers held a third of a GiB).
  // Months differ: their starts are listed (at most a few hundred).
  int64_t first_ = 0;
  int64_t step_ = 0;  // 0: months, in starts_
  size_t count_ = 0;
  std::vector<int64_t> starts_;
  int64_t end_ts_ = 0;
};

// The earlier window of `current` (same unit, offset and number of units):
//   kPrevious  the units just before it (compare=previous of March is February);
//   kYear      the units a year earlier: the unit holding the local time of
//              current's last unit start, one calendar year back (Feb 29 ->
//              Feb 28), and as many units before it, aligned on the unit in
//              the window's offset (a week still starts on its Sunday).
// An empty current window gives an empty one. WINDOW_TOO_LARGE as Ending.
Result<UnitWindow> ComparedWindow(const UnitWindow& current, Compare how, int64_t max_hours);

// Sum per unit (index as in the window). OUT_OF_RANGE if a sum overflows.
Result<std::vector<int64_t>> SumByUnit(const UnitWindow& window, const HourlyCounts& hours);
// Sum over the whole window.
Result<int64_t> SumWindow(const UnitWindow& window, const HourlyCounts& hours);

// Subtotal key -> clicks, ordered (rows, and the few candidates for them).
using KeyCounts = std::map<std::string, int64_t>;
// Per unit, subtotal key -> sum; and the same over the whole window. Keys
// whose sum is 0 are dropped (a breakdown lists who clicked). Hashed and
// keyed by views into `hours`, valid while it lives: a key with a million
// values today is summed without a string copy or a tree insert per value
// (a tree of them was half of a 12-second breakdown's time).
using ValueSums = std::unordered_map<std::string_view, int64_t>;
Result<std::vector<ValueSums>> SumBreakdownByUnit(const UnitWindow& window, const HourlyBreakdown& hours);
Result<ValueSums> SumBreakdownWindow(const UnitWindow& window, const HourlyBreakdown& hours);

// The stored keys of a top-`limit` list: the `limit` with most clicks,
// those tied at the cut taken by stored key (bytewise). Not by full value:
// that would need a lookup of every tied hash first, and a long tail of
// values seen once ties them all (300,000 lookups for one list).
std::vector<std::string> TopCandidates(const ValueSums& counts, size_t limit);
// Top `limit` by clicks descending, ties by value ascending (bytewise): the
// rows' order once TopCandidates' keys are expanded.
std::vector<std::pair<std::string, int64_t>> TopByClicks(const KeyCounts& counts, size_t limit);

}  // namespace clickatron::api
