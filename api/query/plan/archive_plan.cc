// Which archive records answer a window; see archive_plan.h.
#include "query/plan/archive_plan.h"

#include <algorithm>

namespace clickatron::api {
namespace {

// Days since epoch of the first whole UTC day at or after t, and of the day
// after the last whole one before t.
int64_t FirstWholeDay(int64_t t) { return -FloorDiv(-t, kSecondsPerDay); }
int64_t EndOfWholeDays(int64_t t) { return FloorDiv(t, kSecondsPerDay); }

// How many archived hours are in [begin, end).
size_t CountHours(const std::vector<int64_t>& hours, int64_t begin, int64_t end) {
  const auto lo = std::lower_bound(hours.begin(), hours.end(), begin);
  return static_cast<size_t>(std::lower_bound(lo, hours.end(), end) - lo);
}

// Calls fn(span) for the aligned spans, longest first, that cut each run of
// whole UTC days between two consecutive splits (sorted, distinct), with
// the run's first and end times.
template <typename Fn>
void ForEachRunSpan(const std::vector<int64_t>& splits, int max_level, Fn&& fn) {
  max_level = std::clamp(max_level, 0, kMaxSpanLevel);
  for (size_t i = 0; i + 1 < splits.size(); ++i) {
    int64_t day = FirstWholeDay(splits[i]);
    const int64_t end = EndOfWholeDays(splits[i + 1]);
    while (day < end) {
      int level = max_level;
      while (level > 0 && (SpanHolding(day, level).first_day != day || day + (int64_t{1} << level) > end)) --level;
      const DaySpan span{day, level};
      day += span.days();
      fn(span, splits[i], splits[i + 1]);
    }
  }
}

// The splits sorted and distinct, with the end of the hour codes' last year
// (no span reaches past it: it would have no code).
std::vector<int64_t> SortedSplits(std::vector<int64_t> splits) {
  splits.push_back(kEndOfHourCodes);
  std::sort(splits.begin(), splits.end());
  splits.erase(std::unique(splits.begin(), splits.end()), splits.end());
  return splits;
}

}  // namespace

std::vector<DaySpan> PlanWholeDaySpans(std::vector<int64_t> splits, int64_t begin_ts, int64_t end_ts,
                                       const std::vector<std::pair<int64_t, int64_t>>& excluded, int max_level) {
  std::vector<DaySpan> spans;
  splits.push_back(begin_ts);
  splits.push_back(end_ts);
  for (const auto& [from, to] : excluded) {
    splits.push_back(from);
    splits.push_back(to);
  }
  ForEachRunSpan(SortedSplits(std::move(splits)), max_level, [&](const DaySpan& span, int64_t from, int64_t to) {
    if (from < begin_ts || to > end_ts) return;
    for (const auto& [ex_from, ex_to] : excluded) {
      if (from < ex_to && ex_from < to) return;
    }
    spans.push_back(span);
  });
  return spans;
}

ArchivePlan PlanArchiveReads(const std::vector<int64_t>& archived_hours, std::vector<int64_t> splits,
                             int max_level) {
  ArchivePlan plan;
  // Each stretch between two splits is one sum; the whole UTC days inside it
  // are one run, cut into aligned spans, longest first.
  ForEachRunSpan(SortedSplits(std::move(splits)), max_level, [&](const DaySpan& span, int64_t, int64_t) {
    const int64_t begin = span.first_day * kSecondsPerDay;
    if (CountHours(archived_hours, begin, begin + span.days() * kSecondsPerDay) >= 2) plan.spans.push_back(span);
  });
  // Every archived hour no span holds is read as an hour.
  plan.hours = HoursOutside(archived_hours, plan.spans);
  return plan;
}

std::vector<int64_t> HoursOutside(const std::vector<int64_t>& hours, const std::vector<DaySpan>& spans) {
  std::vector<int64_t> outside;
  auto span = spans.begin();
  for (const int64_t hour : hours) {
    const int64_t day = FloorDiv(hour, kSecondsPerDay);
    while (span != spans.end() && span->last_day() < day) ++span;
    if (span == spans.end() || span->first_day > day) outside.push_back(hour);
  }
  return outside;
}

}  // namespace clickatron::api
