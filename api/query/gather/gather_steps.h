// The steps QueryGather's kinds of query share (query_gather.h): reading
// mget answers, naming what was asked, planning what to read of the archive,
// splitting sums. Pure functions and small templates, no state; in a
// namespace of their own so that the gather's files, compiled together in
// one unity file, share one definition of each.
#pragma once

#include <cstdint>
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "clickatron/record.h"
#include "clickatron/status.h"
#include "clickatron/ymdh.h"
#include "query/fetch/archive_reply.h"
#include "query/merge/hourly_counts.h"
#include "query/plan/archive_plan.h"
#include "query/query_gather.h"

namespace clickatron::api::gather {

// The callback of a realtime fwmatch: the body into *into. A shard that did
// not answer (UNAVAILABLE) only sets *missing (the archived days stay whole;
// the caller decides with RealtimeGap). `owner` keeps into/missing alive.
template <typename Owner>
std::function<void(Result<std::string>)> RealtimeBodyInto(std::shared_ptr<Owner> owner, std::string* into,
                                                          Status* missing, std::function<void(Status)> part) {
  return [owner = std::move(owner), into, missing, part = std::move(part)](Result<std::string> body) {
    if (body.ok()) {
      *into = std::move(*body);
    } else if (body.status().code() == StatusCode::kUnavailable) {
      *missing = body.status();
      return part(Status::Ok());
    }
    part(body.status());
  };
}

// Calls fn(key, answer) for every key found in archive mget answers: a
// line's value, or a kept key's decoded columns.
template <typename Fn>
Status ForEachMgetAnswer(const std::vector<ArchiveReply>& replies, Fn&& fn) {
  for (const ArchiveReply& reply : replies) {
    if (!reply.found) continue;
    auto lines = SplitKeyValueLines(reply.body);
    if (!lines.ok()) return lines.status();
    for (const auto& [key, value] : *lines) CLICKATRON_RETURN_IF_ERROR(fn(key, MgetAnswer{value, nullptr, &reply}));
    for (const DecodedLine& line : reply.decoded_lines) {
      CLICKATRON_RETURN_IF_ERROR(fn(line.key, MgetAnswer{{}, &line.columns, &reply}));
    }
  }
  return Status::Ok();
}

// Calls fn(code, from_ts) for each span of `spans` (its span code, from its
// first day's start) and each hour of `hours` (its YMDH), spans first: the
// archive keys a read plan names. A plan counts on every record it names
// being read: one that cannot be named fails the query (its status is
// returned) rather than drop its clicks.
template <typename Fn>
Status ForEachPlannedCode(const std::vector<DaySpan>& spans, const std::vector<int64_t>& hours, Fn&& fn) {
  for (const DaySpan& span : spans) {
    auto code = SpanCode(span);
    if (!code.ok()) return code.status();
    fn(std::string_view(*code), span.first_day * kSecondsPerDay);
  }
  for (const int64_t hour : hours) {
    auto ymdh = YmdhFromUnix(hour);
    if (!ymdh.ok()) return ymdh.status();
    fn(std::string_view(*ymdh), hour);
  }
  return Status::Ok();
}

// CORRUPTION: an archive mget answer holds `key`, which the query did not
// ask for.
Status UnaskedKey(std::string_view key);

// Deleted hours cut a query's sums as unit boundaries do: no day or span
// record read crosses one, so the hours on either side are read apart and
// those inside not at all (they are not in the total's archived hours).
// Splits stay in any order: the read plans sort them (archive_plan.h).
void AddDeletionSplits(const std::vector<HourSpan>& deleted, std::optional<std::vector<int64_t>>& splits);

// Whether the span, the gap it skips and every unit boundary fall on UTC
// midnights: then each UTC day of the span lies wholly inside one unit (or
// the gap), so its hours' visitors may be united before they are counted.
bool WholeUtcDays(const HourSpan& span, const HourSpan& skip, const std::vector<int64_t>& splits);

// The archived hours a query may read (plan/archive_plan.h): those in the
// window outside the skipped gap.
std::vector<int64_t> HoursToRead(const HourlyCounts& archived, HourSpan skip);

// What a breakdown or /uniques job reads of the archive (plan/archive_plan.h):
// with its sums' splits known, runs of whole UTC days inside one sum as day
// and span records and the rest as hours; without (hourly units), every
// archived hour outside the skipped gap. `also_split`: one more split (a
// breakdown's visitors start at its window's first hour, so no span reaches
// across it).
ArchivePlan PlanJobReads(const HourlyCounts& archived, HourSpan skip,
                         const std::optional<std::vector<int64_t>>& splits, const ArchiveLastDay& last_day,
                         std::optional<int64_t> also_split);

// The hour at which an mget answer's key `prefix` + code is entered: an
// hour record's (YMDH, see ymdh.h) at its hour, with *span nullopt; a day or
// span record the plan asked for at its first hour, which lies in the same
// sum as all of its hours, with *span that span (a day at level 0).
// CORRUPTION for a key the query did not ask for.
Result<int64_t> HourOfAnswer(std::string_view key, std::string_view prefix, const ArchivePlan& plan,
                             std::optional<DaySpan>* span);

}  // namespace clickatron::api::gather
