// The archive half of a query plan: which records answer a key's subtotal
// (or unique) hours over a window, before anything is read. Pure: no I/O,
// no clock, any thread.
//
// The key's total is read first; its archived hours are the index of which
// subtotal and unique records exist (an hour with clicks is the only hour
// that can have them). The caller's sums split at known times (the window's
// ends, each unit's start with rollup=false, the earlier window of
// compare=). A UTC day with no split inside it belongs to one sum, and so
// does any run of such days with no split between them: the run may be read
// as aligned span records (ymdh.h's DaySpan: one day, or 2^k days), at most
// two per level below the top and one per 128 days at it (a year: at most
// 16). Everything else is read hour by
// hour: the hours at the window's edges, and in a zone whose days are not
// UTC days, so an answer is exact in every offset.
//
// A span with one archived hour of the total is read as that hour (it costs
// the same and needs no span record); a span with none is not read at all.
// No span reaches past 2127 (ymdh.h: it would have no code).
#pragma once

#include <cstdint>
#include <utility>
#include <vector>

#include "clickatron/ymdh.h"

namespace clickatron::api {

struct ArchivePlan {
  std::vector<int64_t> hours;   // hour starts (unix s), rising
  std::vector<DaySpan> spans;   // by first day, rising; none overlaps another or an hour above
  friend bool operator==(const ArchivePlan&, const ArchivePlan&) = default;
};

// `archived_hours`: the total's archived hour starts in the window, rising.
// `splits`: where the caller's sums split, any order (duplicates allowed);
// empty means none is known (hourly units): everything is read hour by hour. `max_level`: the longest span to use
// (0: day records only; kMaxSpanLevel with a file of format 2).
ArchivePlan PlanArchiveReads(const std::vector<int64_t>& archived_hours, std::vector<int64_t> splits,
                             int max_level);

// The hours of `hours` (rising) that no span of `spans` (by first day,
// disjoint) holds: what is left to read as hours beside those spans.
std::vector<int64_t> HoursOutside(const std::vector<int64_t>& hours, const std::vector<DaySpan>& spans);

// The spans PlanArchiveReads would cut for every run of whole UTC days
// inside [begin_ts, end_ts) with no split inside, whether or not they hold
// data: what a gather may read before it knows the total's hours (a span
// without data is one the file lacks). No span touches an `excluded` range
// (the gap between a window and its earlier one, deleted hours) or crosses
// a split. Sorted by first day.
std::vector<DaySpan> PlanWholeDaySpans(std::vector<int64_t> splits, int64_t begin_ts, int64_t end_ts,
                                       const std::vector<std::pair<int64_t, int64_t>>& excluded, int max_level);

}  // namespace clickatron::api
