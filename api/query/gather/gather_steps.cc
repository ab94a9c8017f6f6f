// The shared steps of QueryGather's queries; see gather_steps.h.
#include "query/gather/gather_steps.h"

#include <fmt/format.h>

#include <algorithm>

#include "clickatron/key_codec.h"

namespace clickatron::api::gather {

Status UnaskedKey(std::string_view key) {
  return Status::Corruption(fmt::format("archive mget answered an unasked key {}", QuoteForMessage(key)));
}

void AddDeletionSplits(const std::vector<HourSpan>& deleted, std::optional<std::vector<int64_t>>& splits) {
  if (!splits) return;
  for (const HourSpan& d : deleted) {
    splits->push_back(d.begin_ts);
    splits->push_back(d.end_ts);
  }
}

bool WholeUtcDays(const HourSpan& span, const HourSpan& skip, const std::vector<int64_t>& splits) {
  const auto midnight = [](int64_t ts) { return ts % kSecondsPerDay == 0; };
  if (!midnight(span.begin_ts) || !midnight(span.end_ts)) return false;
  if (skip.begin_ts < skip.end_ts && (!midnight(skip.begin_ts) || !midnight(skip.end_ts))) return false;
  return std::all_of(splits.begin(), splits.end(), midnight);
}

namespace {

// The span (a day at level 0) of an mget answer's key `prefix` + span
// code, or nullopt when the rest is not a span code.
std::optional<DaySpan> SpanOfKey(std::string_view key, std::string_view prefix) {
  if (!key.starts_with(prefix) || !LooksLikeSpanCode(key.substr(prefix.size()))) return std::nullopt;
  Result<DaySpan> span = SpanFromCode(key.substr(prefix.size()));
  if (!span.ok()) return std::nullopt;
  return *span;
}

}  // namespace

std::vector<int64_t> HoursToRead(const HourlyCounts& archived, HourSpan skip) {
  std::vector<int64_t> hours;
  hours.reserve(archived.size());
  for (const auto& [hour, count] : archived) {
    if (!skip.Contains(hour)) hours.push_back(hour);
  }
  return hours;
}

namespace {

// Where its sums split: the splits, the gap's ends, and the end of the
// archive's last day (a span never reaches past what the archive holds whole).
std::vector<int64_t> PlanSplits(std::vector<int64_t> splits, HourSpan skip, const ArchiveLastDay& last_day) {
  if (skip.begin_ts < skip.end_ts) {
    splits.push_back(skip.begin_ts);
    splits.push_back(skip.end_ts);
  }
  if (last_day) splits.push_back((*last_day + 1) * kSecondsPerDay);
  return splits;
}

}  // namespace

ArchivePlan PlanJobReads(const HourlyCounts& archived, HourSpan skip,
                         const std::optional<std::vector<int64_t>>& splits, const ArchiveLastDay& last_day,
                         std::optional<int64_t> also_split) {
  std::vector<int64_t> hours = HoursToRead(archived, skip);
  if (!splits) return ArchivePlan{std::move(hours), {}};
  std::vector<int64_t> all = PlanSplits(*splits, skip, last_day);
  if (also_split) all.push_back(*also_split);
  return PlanArchiveReads(hours, std::move(all), kMaxSpanLevel);
}

Result<int64_t> HourOfAnswer(std::string_view key, std::string_view prefix, const ArchivePlan& plan,
                             std::optional<DaySpan>* span) {
  *span = SpanOfKey(key, prefix);
  if (*span) {
    // The plan's spans do not overlap, so their order by first day is
    // SpanKeyLess's (by last day).
    if (!std::binary_search(plan.spans.begin(), plan.spans.end(), **span, SpanKeyLess)) return UnaskedKey(key);
    return (*span)->first_day * kSecondsPerDay;
  }
  if (!key.starts_with(prefix) || !LooksLikeYmdh(key.substr(prefix.size()))) return UnaskedKey(key);
  return UnixFromYmdh(key.substr(prefix.size()));
}

}  // namespace clickatron::api::gather
