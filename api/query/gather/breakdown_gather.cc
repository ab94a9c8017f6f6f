// QueryGather's breakdowns: subtotals (and visitors) of one key over a window; see query_gather.h.
#include "query/query_gather.h"

#include <fmt/format.h>

#include <algorithm>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "clickatron/record.h"
#include "clickatron/ymdh.h"
#include "query/fetch/fan_in.h"
#include "query/gather/gather_steps.h"
#include "query/merge/read_records.h"

namespace clickatron::api {

using gather::RealtimeBodyInto;
using gather::ForEachMgetAnswer;
using gather::AddDeletionSplits;
using gather::WholeUtcDays;
using gather::PlanJobReads;
using gather::HoursToRead;
using gather::HourOfAnswer;
using gather::UnaskedKey;
using gather::ForEachPlannedCode;

struct QueryGather::BreakdownJob : Attempt {
  std::string subtotal_prefix;  // sns.ns|tkey.
  int64_t begin_ts = 0, end_ts = 0;
  HourSpan skip{0, 0};  // hours between a window and its earlier one: not fetched
  std::optional<std::vector<int64_t>> splits;  // where the sums split (nullopt: read every hour)
  std::optional<int64_t> uniques_from;  // visitors too, of hours from here on
  std::vector<HourSpan> deleted;  // the key's deleted hours (any generation): never read as a span
  // Realtime may answer each UTC day's unique hours of a value as one union
  // (unite=day): every day of the visitors' window lies in one unit.
  bool unite_days = false;
  std::function<void(Result<BreakdownData>)> done;
  // This attempt's realtime answers.
  std::string realtime_total;
  std::string realtime_subtotals;
  std::string realtime_unique_subtotals;
  // Day and span records asked beside the total (EarlySpans): every run of
  // whole UTC days in the window up to the archive's last day as this node
  // last saw it (`early_last_day`), read before the total's hours are known.
  // Used when the total's answer ends on that day, from the same file.
  std::optional<int64_t> early_last_day;
  std::vector<DaySpan> early_spans;
  Result<std::vector<ArchiveReply>> early_replies = std::vector<ArchiveReply>{};
};

void QueryGather::FetchBreakdown(std::string sns, std::string ns, std::string tkey, int64_t begin_ts, int64_t end_ts,
                                 std::function<void(Result<BreakdownData>)> done, HourSpan skip,
                                 std::optional<int64_t> uniques_from, std::optional<std::vector<int64_t>> splits) {
  auto job = std::make_shared<BreakdownJob>();
  job->total_key = TotalArchiveKey(ns, tkey);
  job->subtotal_prefix = fmt::format("{}.{}.", sns, job->total_key);
  job->begin_ts = begin_ts;
  job->end_ts = end_ts;
  job->skip = skip;
  job->uniques_from = uniques_from;
  job->deleted = DeletedHours(ns, tkey, 0);
  AddDeletionSplits(job->deleted, splits);
  job->unite_days = unite_days_ && job->uniques_from && splits &&
                    WholeUtcDays(HourSpan{*job->uniques_from, end_ts}, skip, *splits);
  if (job->unite_days) ++stats_.realtime_united_reads;
  job->splits = std::move(splits);
  job->done = std::move(done);
  RunBreakdown(std::move(job));
}

namespace {

// The archive keys of a breakdown's spans and hours (`prefix`:
// sns.ns|tkey.): each subtotal record, and its unique twin from the
// visitors' first hour on.
Status AddBreakdownKeys(std::string_view prefix, std::optional<int64_t> uniques_from,
                        const std::vector<DaySpan>& spans, const std::vector<int64_t>& hours,
                        std::vector<std::string>* keys) {
  keys->reserve(keys->size() + 2 * (spans.size() + hours.size()));
  return ForEachPlannedCode(spans, hours, [&](std::string_view code, int64_t from_ts) {
    keys->push_back(fmt::format("{}{}", prefix, code));
    if (uniques_from && from_ts >= *uniques_from) keys->push_back(fmt::format("{}{}{}", kUniqueMark, prefix, code));
  });
}

}  // namespace

// A breakdown's whole days do not need the total's hours to be named: the
// spans that cover them depend on the window, its splits and the archive's
// last day alone. So they are asked in the same round trip as the total
// (the reader's coalescer sends them in one mget), on the last day this
// node last saw; a span without data is one the file lacks. Only hours
// outside those spans (a zone's edge days, days past the last day seen,
// deleted ranges) then need a second trip, and most windows have none with
// data. A wrong guess (a new generation, a replica behind) costs the spans
// read for nothing: the gather plans again from the total, as before.
std::vector<DaySpan> QueryGather::EarlySpans(const BreakdownJob& job, int64_t last_day) const {
  std::vector<std::pair<int64_t, int64_t>> excluded;
  if (job.skip.begin_ts < job.skip.end_ts) excluded.emplace_back(job.skip.begin_ts, job.skip.end_ts);
  for (const HourSpan& d : job.deleted) excluded.emplace_back(d.begin_ts, d.end_ts);
  std::vector<int64_t> splits = *job.splits;
  if (job.uniques_from) splits.push_back(*job.uniques_from);
  // No record has a code before 1970 (a compare= window may reach there)
  // nor after 2127 (a reference time may).
  const int64_t begin_ts = std::max<int64_t>(job.begin_ts, 0);
  const int64_t end_ts = std::min({job.end_ts, (last_day + 1) * kSecondsPerDay, kEndOfHourCodes});
  if (end_ts <= begin_ts) return {};
  return PlanWholeDaySpans(std::move(splits), begin_ts, end_ts, excluded, kMaxSpanLevel);
}

void QueryGather::RunBreakdown(std::shared_ptr<BreakdownJob> job) {
  BeginAttempt(*job);
  job->early_last_day = job->splits ? realtime_.skip_through() : std::nullopt;
  job->early_spans = job->early_last_day ? EarlySpans(*job, *job->early_last_day) : std::vector<DaySpan>{};
  if (job->early_spans.empty()) job->early_last_day.reset();
  auto join = FanIn::Create([this, job](Status st) {
    if (!st.ok()) {
      job->done(std::move(st));
      return;
    }
    FinishBreakdown(job);
  });
  auto archive_part = join->Part();
  auto total_part = join->Part();
  auto subtotal_part = join->Part();
  std::function<void(Status)> unique_part;
  if (job->uniques_from) unique_part = join->Part();
  std::function<void(Status)> early_part;
  std::vector<std::string> early_keys;
  if (job->early_last_day) {
    if (AddBreakdownKeys(job->subtotal_prefix, job->uniques_from, job->early_spans, {}, &early_keys).ok()) {
      early_part = join->Part();
    } else {
      job->early_last_day.reset();
    }
  }
  join->Arm();
  GetArchiveTotal(job, std::move(archive_part));
  if (early_part) {
    // Its failure is the total's to report: a gather without early spans
    // reads them again once the total is in. A session of its own: an answer
    // that reroutes one of two reads in flight must not make the other's
    // answer, from the old shard, look routed (the early answers are only
    // used when they name the total's file anyway).
    auto early_session = std::make_shared<ArchiveReader::Session>(*job->session);
    archive_reads_.MGet(early_session, early_keys,
                  [job, early_session, part = std::move(early_part)](Result<std::vector<ArchiveReply>> r) {
                    job->early_replies = std::move(r);
                    part(Status::Ok());
                  });
  }
  job->realtime_total.clear();
  job->realtime_subtotals.clear();
  job->realtime_unique_subtotals.clear();
  const auto realtime_done = [job](std::string* into, std::function<void(Status)> part) {
    return RealtimeBodyInto(job, into, &job->realtime_missing, std::move(part));
  };
  realtime_.FwmatchKey(job->total_key, job->total_key + ".",
                       realtime_done(&job->realtime_total, std::move(total_part)), job->all_days);
  realtime_.FwmatchKey(job->total_key, job->subtotal_prefix,
                       realtime_done(&job->realtime_subtotals, std::move(subtotal_part)), job->all_days);
  if (job->uniques_from) {
    realtime_.FwmatchKey(job->total_key, kUniqueMark + job->subtotal_prefix,
                         realtime_done(&job->realtime_unique_subtotals, std::move(unique_part)), job->all_days,
                         job->unite_days);
  }
}

void QueryGather::FinishBreakdown(std::shared_ptr<BreakdownJob> job) {
  const ArchiveView view = job->archive_total.view;
  if (!FirstAnswersUsable(job, &QueryGather::RunBreakdown)) return;
  const auto masks = DeletionsAsPlanned(job->total_key, view.generation, job->archive_total.found,
                                        HourSpan{job->begin_ts, job->end_ts}, &job->deleted, &job->splits);
  if (!masks) {
    // Realtime's visitors by UTC day only while no deleted range cuts a day.
    if (job->unite_days && !WholeUtcDays(HourSpan{*job->uniques_from, job->end_ts}, job->skip, *job->splits)) {
      job->unite_days = false;
    }
    return AgainForDeletions(job, &QueryGather::RunBreakdown);
  }
  HourlyCounts archived;
  if (Status st = AddArchiveTotal(*job->session, job->total_key, job->archive_total, &archived,
                                  HourSpan{job->begin_ts, job->end_ts}, &*masks);
      !st.ok()) {
    job->done(std::move(st));
    return;
  }
  // The archived hours of the total are the index of the archive subtotal
  // and unique records that exist: only those in the window are read. Every
  // served file has a day record for every UTC day with hours and a span
  // record for every aligned span with hours (format 2,
  // archive/file_loader.cc), so a record it lacks is a day or span without
  // hours of this namespace (or without visitors). Each run of whole UTC
  // days inside one sum is read as aligned day and span records, at most two
  // per level and one per 128 days (plan/archive_plan.h), the rest as hours;
  // visitors the same way, from uniques_from on.
  // The early spans stand when the total came from the file they were
  // planned on (its last day) and every answer of theirs from that file.
  std::vector<ArchiveReply> early;
  ArchivePlan plan;
  const bool early_stands = job->early_last_day && view.last_day == job->early_last_day &&
                            job->early_replies.ok() &&
                            std::all_of(job->early_replies->begin(), job->early_replies->end(),
                                        [&](const ArchiveReply& r) { return r.view == view; });
  if (early_stands) {
    ++stats_.early_span_reads;
    early = std::move(*job->early_replies);
    plan.spans = std::move(job->early_spans);
    plan.hours = HoursOutside(HoursToRead(archived, job->skip), plan.spans);
  } else if (job->splits && view.generation != 0) {
    // The same records the early read would have asked of this file, so a
    // breakdown answers alike whichever way it went (a subtotal hour loaded
    // without its total hour is in its day's record, not in the total's
    // hours: planned from those, the first query after a start read it as
    // 0 and the next ones, early, as its count). A file of loads alone
    // (no day archived yet) holds what it holds of every day: its whole
    // days through the window's end. No file at all (generation 0): nothing
    // to ask.
    const int64_t last_day = view.last_day ? *view.last_day : FloorDiv(job->end_ts - 1, kSecondsPerDay);
    plan.spans = EarlySpans(*job, last_day);
    plan.hours = HoursOutside(HoursToRead(archived, job->skip), plan.spans);
  } else {
    plan = PlanJobReads(archived, job->skip, job->splits, view.last_day, job->uniques_from);
  }
  std::vector<std::string> keys;
  if (Status st = AddBreakdownKeys(job->subtotal_prefix, job->uniques_from,
                                   early_stands ? std::vector<DaySpan>{} : plan.spans, plan.hours, &keys);
      !st.ok()) {
    return job->done(std::move(st));
  }
  auto answered = [this, job, view, plan = std::move(plan), early = std::move(early),
                   archived = std::move(archived)](Result<std::vector<ArchiveReply>> replies) mutable {
    if (!replies.ok()) return job->done(replies.status());
    if (!SameGeneration(*replies, view, &job->attempts, [&] { RunBreakdown(job); },
                        [&](Status st) { job->done(std::move(st)); })) {
      return;
    }
    replies->insert(replies->end(), std::make_move_iterator(early.begin()), std::make_move_iterator(early.end()));
    BreakdownData data;
    data.gap = job->Gap(view);
    data.archive_generation = view.generation;
    Status st = AddArchiveBreakdownLines(*job, *replies, plan, &data);
    if (!st.ok()) return job->done(std::move(st));
    data.total = std::move(archived);
    CompleteBreakdown(job, std::move(data));
  };
  // Nothing left to ask (the early spans held every archived hour, or there
  // is none): no second round trip.
  if (keys.empty()) return answered(std::vector<ArchiveReply>{});
  archive_reads_.MGet(job->session, keys, std::move(answered));
}

// Adds the lines of archive mget answers: subtotal hours, day and span
// records of the plan and, with uniques, their unique records. A span not
// asked for is CORRUPTION.
Status QueryGather::AddArchiveBreakdownLines(const BreakdownJob& job, const std::vector<ArchiveReply>& replies,
                                             const ArchivePlan& plan, BreakdownData* data) {
  // key = [~]sns.ns|tkey.YMDH or [~]sns.ns|tkey.SPAN. Room for a few values
  // per answer up front: a 365-day window's answers grew the vector (and
  // moved its strings) a dozen times.
  data->subtotals.reserve(data->subtotals.size() + 8 * replies.size());
  // A record's columns: decoded (and kept) once its answer comes from the
  // cache, else read from the text.
  auto add = [&](std::string_view key, const MgetAnswer& answer, bool unique, int64_t hour) -> Status {
    auto columns = ColumnsOf(*job.session, key, answer, unique ? RecordKind::kUniqueSubtotal : RecordKind::kSubtotal);
    if (columns) {
      unique ? AddDecodedSketches(*columns, hour, "", &data->unique_subtotals)
             : AddDecodedSubtotals(*columns, hour, &data->subtotals);
      return Status::Ok();
    }
    return unique ? AddArchiveUniqueSubtotals(answer.text, hour, "", &data->unique_subtotals)
                  : AddArchiveSubtotalColumns(answer.text, hour, &data->subtotals);
  };
  return ForEachMgetAnswer(replies, [&](std::string_view key, const MgetAnswer& answer) -> Status {
    const bool unique = job.uniques_from && IsUniqueKey(key);
    const std::string_view bare = unique ? key.substr(1) : key;
    std::optional<DaySpan> span;
    auto at = HourOfAnswer(bare, job.subtotal_prefix, plan, &span);
    if (!at.ok()) return at.status();
    // Visitors are asked from uniques_from on only.
    if (unique && *at < *job.uniques_from) return UnaskedKey(key);
    if (span) ++(span->level > 0 ? stats_.spans_read : unique ? stats_.day_uniques_read : stats_.day_subtotals_read);
    return add(key, answer, unique, *at);
  });
}

// The realtime half, once the archive's is in `data` (total: the archived hours).
void QueryGather::CompleteBreakdown(const std::shared_ptr<BreakdownJob>& job, BreakdownData data) {
  const ArchiveLastDay& last_day = data.gap.archived_through;
  Status st = AddRealtimeTotalLines(job->realtime_total, job->total_key + ".", last_day, &data.total,
                                    HourSpan{job->begin_ts, job->end_ts});
  if (st.ok()) {
    st = AddRealtimeSubtotalLines(job->realtime_subtotals, job->subtotal_prefix, last_day, job->begin_ts,
                                  job->end_ts, &data.subtotals);
  }
  if (st.ok() && job->uniques_from) {
    st = AddRealtimeUniqueLines(job->realtime_unique_subtotals, kUniqueMark + job->subtotal_prefix,
                                /*keyed_lines=*/true, last_day, HourSpan{*job->uniques_from, job->end_ts},
                                &data.unique_subtotals);
  }
  if (!st.ok()) return job->done(std::move(st));
  job->done(std::move(data));
}

}  // namespace clickatron::api
