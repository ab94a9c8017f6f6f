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

// A realtime failure that still leaves the archived days whole.
inline bool RealtimeOnlyGap(const Status& st) { return st.code() == StatusCode::kUnavailable; }

// The callback of a realtime fwmatch: the body into *into. A shard that did
// not answer only sets *missing (the archived days stay whole; the caller
// decides with RealtimeGap). `owner` keeps into/missing alive.
template <typename Owner>
std::function<void(Result<std::string>)> RealtimeBodyInto(std::shared_ptr<Owner> owner, std::string* into,
                                                          Status* missing, std::function<void(Status)> part) {
  return [owner = std::move(owner), into, missing, part = std::move(part)](Result<std::string> body) {
    if (body.ok()) {
      *into = std::move(*body);
    } else if (RealtimeOnlyGap(body.status())) {
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

// The archive shard of `shard_key` among `shards` (at least one).
int ShardFor(std::string_view shard_key, int shards);

// The hour of an mget answer's key `prefix` + YMDH (a 4- or 5-character
// code: see ymdh.h); CORRUPTION for a key the query did not ask for.
Result<int64_t> HourOfKey(std::string_view key, std::string_view prefix);

// Deleted hours cut a query's sums as unit boundaries do: no day or span
// record read crosses one, so the hours on either side are read apart and
// those inside not at all (they are not in the total's archived hours).
void AddDeletionSplits(const std::vector<HourSpan>& deleted, std::optional<std::vector<int64_t>>& splits);

// Whether the span, the gap it skips and every unit boundary fall on UTC
// midnights: then each UTC day of the span lies wholly inside one unit (or
// the gap), so its hours' visitors may be united before they are counted.
bool WholeUtcDays(const HourSpan& span, const HourSpan& skip, const std::vector<int64_t>& splits);

// The span (a day at level 0) of an mget answer's key `prefix` + span
// code, or nullopt when the rest is not a span code.
std::optional<DaySpan> SpanOfKey(std::string_view key, std::string_view prefix);

// The archived hours a query may read, and where its sums split, for the
// archive read plan (plan/archive_plan.h): the hours in the window outside
// the skipped gap.
std::vector<int64_t> HoursToRead(const HourlyCounts& archived, HourSpan skip);

// Where its sums split: the splits, the gap's ends, and the end of the
// archive's last day (a span never reaches past what the archive holds whole).
std::vector<int64_t> PlanSplits(std::vector<int64_t> splits, HourSpan skip, const ArchiveLastDay& last_day);

// What a breakdown or /uniques job reads of the archive (plan/archive_plan.h):
// with its sums' splits known, runs of whole UTC days inside one sum as day
// and span records and the rest as hours; without (hourly units), every
// archived hour outside the skipped gap. `also_split`: one more split (a
// breakdown's visitors start at its window's first hour, so no span reaches
// across it).
ArchivePlan PlanJobReads(const HourlyCounts& archived, HourSpan skip,
                         const std::optional<std::vector<int64_t>>& splits, const ArchiveLastDay& last_day,
                         std::optional<int64_t> also_split);

// The span (a day at level 0) of an mget answer's key `prefix` + span code
// when the plan asked for it; nullopt when the rest is not a span code, and
// CORRUPTION for a span not asked.
Result<std::optional<DaySpan>> AskedSpanOfKey(std::string_view key, std::string_view prefix,
                                              const ArchivePlan& plan);

}  // namespace clickatron::api::gather
