// Parallel fetch + merge for one query; see query_gather.h.
#include "query/query_gather.h"

#include <fmt/format.h>

#include <algorithm>
#include <atomic>
#include <iterator>
#include <limits>
#include <optional>
#include <set>
#include <unordered_map>

#include "clickatron/key_codec.h"
#include "clickatron/record.h"
#include "clickatron/shard.h"
#include "clickatron/ymdh.h"
#include "query/fetch/fan_in.h"
#include "query/plan/archive_plan.h"
#include "query/merge/read_records.h"

namespace clickatron::api {
namespace {

int ShardFor(std::string_view shard_key, int shards) {
  return static_cast<int>(ShardOf(shard_key, static_cast<uint32_t>(std::max(shards, 1))));
}

// A realtime failure that still leaves the archived days whole.
bool RealtimeOnlyGap(const Status& st) { return st.code() == StatusCode::kUnavailable; }

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

// The hour of an mget answer's key `prefix` + YMDH (a 4- or 5-character
// code: see ymdh.h); CORRUPTION for a key the query did not ask for.
Result<int64_t> HourOfKey(std::string_view key, std::string_view prefix) {
  if (!key.starts_with(prefix) || !LooksLikeYmdh(key.substr(prefix.size()))) {
    return Status::Corruption(fmt::format("archive mget answered an unasked key {}", QuoteForMessage(key)));
  }
  return UnixFromYmdh(key.substr(prefix.size()));
}

}  // namespace

bool QueryGather::SameGeneration(const std::vector<ArchiveReply>& replies, const ArchiveView& view, int* attempts,
                                 const std::function<void()>& run_again,
                                 const std::function<void(Status)>& fail) {
  for (const ArchiveReply& reply : replies) {
    if (reply.view == view) continue;
    // A reload (or a failover to a replica on another generation) between
    // the two round trips: the day split would not hold. Start again.
    if (*attempts >= kMaxGenerationAttempts) {
      fail(Status::Unavailable(
          fmt::format("archive generation kept changing during the query ({} attempts)", *attempts),
          "SHARD_UNAVAILABLE"));
    } else {
      ++*attempts;
      ++stats_.generation_retries;
      run_again();
    }
    return false;
  }
  return true;
}

bool QueryGather::MustReadAllDays(const ArchiveView& view, bool* all_days) {
  if (!*all_days && realtime_.MaySkipPast(view.last_day)) {
    ++stats_.realtime_skip_rereads;
    *all_days = true;
    return true;
  }
  if (view.last_day) realtime_.SkipDaysThrough(*view.last_day);
  return false;
}

bool QueryGather::ArchiveHoldsHandedOverDays(const ArchiveView& view, bool* read_again,
                                             const std::function<void()>& run_again) {
  if (*read_again || !archive_.BehindRealtime(view)) return true;
  *read_again = true;
  ++stats_.handover_rereads;
  run_again();
  return false;
}

bool RealtimeGap::CoversWindow(int64_t end_ts) const {
  if (realtime_missing.ok()) return true;
  return archived_through.has_value() && end_ts <= (*archived_through + 1) * kSecondsPerDay;
}

// Shard counts come from the readers: the archive's as the replicas serve
// it, realtime's by day (realtime_shard_map.h).
QueryGather::QueryGather(const ClusterConfig& cluster, ArchiveReader& archive, RealtimeReader& realtime,
                         LookupCache& lookups, SketchTextCache& sketch_texts, ReadStats& stats,
                         const DeletionLog* deletions)
    : unite_days_(cluster.api.realtime_unite_days),
      archive_(archive),
      realtime_(realtime),
      lookups_(lookups),
      sketch_texts_(sketch_texts),
      stats_(stats),
      deletions_(deletions) {}

std::vector<HourSpan> QueryGather::DeletedHours(std::string_view ns, std::string_view tkey,
                                                uint64_t generation) const {
  std::vector<HourSpan> spans;
  if (deletions_ == nullptr) return spans;
  for (const DeletionLog::HourRange& r : deletions_->ArchiveMasks(ns, tkey, generation)) {
    spans.push_back(HourSpan{r.from_unix, r.to_unix});
  }
  return spans;
}

namespace {

// Deleted hours cut a query's sums as unit boundaries do: no day or span
// record read crosses one, so the hours on either side are read apart and
// those inside not at all (they are not in the total's archived hours).
void AddDeletionSplits(const std::vector<HourSpan>& deleted, std::optional<std::vector<int64_t>>& splits) {
  if (!splits || deleted.empty()) return;
  for (const HourSpan& d : deleted) {
    splits->push_back(d.begin_ts);
    splits->push_back(d.end_ts);
  }
  std::sort(splits->begin(), splits->end());
  splits->erase(std::unique(splits->begin(), splits->end()), splits->end());
}

}  // namespace

Status QueryGather::AddArchiveTotal(const ArchiveReader::Session& session, std::string_view key,
                                    const ArchiveReply& reply, HourlyCounts* hours, const HourSpan& span) {
  if (!reply.found) return Status::Ok();
  const size_t bar = key.find('|');
  const std::vector<HourSpan> deleted =
      bar == std::string_view::npos ? std::vector<HourSpan>{}
                                    : DeletedHours(key.substr(0, bar), key.substr(bar + 1), reply.view.generation);
  if (!deleted.empty()) {
    // Added alone, then the deleted hours taken out (`hours` holds no other
    // source's hours yet, but do not count on it).
    HourlyCounts archived;
    CLICKATRON_RETURN_IF_ERROR(AddArchiveTotalUnmasked(session, key, reply, &archived, span));
    for (const HourSpan& d : deleted) archived.EraseIn(d.begin_ts, d.end_ts);
    return hours->AddAscending(archived.begin(), archived.end());
  }
  return AddArchiveTotalUnmasked(session, key, reply, hours, span);
}

Status QueryGather::AddArchiveTotalUnmasked(const ArchiveReader::Session& session, std::string_view key,
                                            const ArchiveReply& reply, HourlyCounts* hours, const HourSpan& span) {
  if (reply.total_hours) return AddArchiveTotalHours(*reply.total_hours, hours, span);
  // Read once: only the span's columns are decoded.
  if (!reply.kept) return AddArchiveTotalColumns(reply.body, hours, span);
  // Kept: later queries of the key read it too, so all of it is decoded now
  // and kept with it.
  auto decoded = DecodeArchiveTotal(reply.body);
  if (!decoded.ok()) {
    archive_.Forget(session, key, reply.view);  // the next query asks the replica again
    return decoded.status();
  }
  auto total = std::make_shared<const ArchiveTotalHours>(std::move(*decoded));
  archive_.KeepDecodedTotal(session, key, reply, total);
  return AddArchiveTotalHours(*total, hours, span);
}

// ---- total -------------------------------------------------------------------

struct QueryGather::TotalJob {
  std::string key;
  std::shared_ptr<ArchiveReader::Session> session;
  HourSpan span;
  bool all_days = false;  // realtime read without skipping (FinishTotal)
  bool handover_reread = false;  // run again once: the archive answer lacked a handed-over day
  std::function<void(Result<TotalData>)> done;
  ArchiveReply archive;
  std::string realtime;
  Status realtime_missing;
};

void QueryGather::FetchTotal(std::string ns, std::string tkey, HourSpan span,
                             std::function<void(Result<TotalData>)> done) {
  auto state = std::make_shared<TotalJob>();
  state->key = TotalArchiveKey(ns, tkey);
  state->span = span;
  state->done = std::move(done);
  RunTotal(std::move(state));
}

void QueryGather::RunTotal(std::shared_ptr<TotalJob> state) {
  state->session = archive_.Begin(state->key);
  state->archive = ArchiveReply{};
  state->realtime.clear();
  state->realtime_missing = Status::Ok();
  auto join = FanIn::Create([this, state](Status st) {
    if (!st.ok()) return state->done(std::move(st));
    FinishTotal(state);
  });
  auto archive_part = join->Part();
  auto realtime_part = join->Part();
  join->Arm();
  archive_.Get(state->session, state->key,
               [state, part = std::move(archive_part)](Result<ArchiveReply> reply) {
                 if (reply.ok()) state->archive = std::move(*reply);
                 part(reply.status());
               });
  realtime_.FwmatchKey(state->key, state->key + ".",
                       RealtimeBodyInto(state, &state->realtime, &state->realtime_missing, std::move(realtime_part)),
                       state->all_days);
}

void QueryGather::FinishTotal(std::shared_ptr<TotalJob> state) {
  const ArchiveView& view = state->archive.view;
  if (!ArchiveHoldsHandedOverDays(view, &state->handover_reread, [&] { RunTotal(state); })) return;
  if (MustReadAllDays(view, &state->all_days)) return RunTotal(state);
  TotalData data;
  data.archive = view;
  data.gap = RealtimeGap{state->realtime_missing, data.archive.last_day, data.archive.generation, data.archive.file_crc32,
                         state->session};
  Status st = AddArchiveTotal(*state->session, state->key, state->archive, &data.hours, state->span);
  if (st.ok()) {
    st = AddRealtimeTotalLines(state->realtime, state->key + ".", data.archive.last_day, &data.hours, state->span);
  }
  if (!st.ok()) return state->done(std::move(st));
  state->done(std::move(data));
}

// ---- breakdown ---------------------------------------------------------------

struct QueryGather::BreakdownJob {
  std::string sns, ns, tkey;
  std::string total_key;        // ns|tkey
  std::string subtotal_prefix;  // sns.ns|tkey.
  int64_t begin_ts = 0, end_ts = 0;
  HourSpan skip{0, 0};  // hours between a window and its earlier one: not fetched
  std::optional<std::vector<int64_t>> splits;  // where the sums split (nullopt: read every hour)
  std::optional<int64_t> uniques_from;  // visitors too, of hours from here on
  int attempts = 1;  // the first run, and one more per generation change (SameGeneration)
  bool handover_reread = false;  // run again once: the archive answer lacked a handed-over day
  bool all_days = false;  // realtime read without skipping (FinishBreakdown)
  // Realtime may answer each UTC day's unique hours of a value as one union
  // (unite=day): every day of the visitors' window lies in one unit.
  bool unite_days = false;
  std::function<void(Result<BreakdownData>)> done;
  // One attempt's results.
  std::shared_ptr<ArchiveReader::Session> session;
  ArchiveReply archive_total;
  std::string realtime_total;
  std::string realtime_subtotals;
  std::string realtime_unique_subtotals;
  Status realtime_missing;
};

namespace {

// Whether the span, the gap it skips and every unit boundary fall on UTC
// midnights: then each UTC day of the span lies wholly inside one unit (or
// the gap), so its hours' visitors may be united before they are counted.
bool WholeUtcDays(const HourSpan& span, const HourSpan& skip, const std::vector<int64_t>& splits) {
  const auto midnight = [](int64_t ts) { return ts % kSecondsPerDay == 0; };
  if (!midnight(span.begin_ts) || !midnight(span.end_ts)) return false;
  if (skip.begin_ts < skip.end_ts && (!midnight(skip.begin_ts) || !midnight(skip.end_ts))) return false;
  return std::all_of(splits.begin(), splits.end(), midnight);
}

}  // namespace

void QueryGather::FetchBreakdown(std::string sns, std::string ns, std::string tkey, int64_t begin_ts, int64_t end_ts,
                                 std::function<void(Result<BreakdownData>)> done, HourSpan skip,
                                 std::optional<int64_t> uniques_from, std::optional<std::vector<int64_t>> splits) {
  auto job = std::make_shared<BreakdownJob>();
  job->total_key = TotalArchiveKey(ns, tkey);
  job->subtotal_prefix = fmt::format("{}.{}.", sns, job->total_key);
  job->sns = std::move(sns);
  job->ns = std::move(ns);
  job->tkey = std::move(tkey);
  job->begin_ts = begin_ts;
  job->end_ts = end_ts;
  job->skip = skip;
  job->uniques_from = uniques_from;
  if (splits) std::sort(splits->begin(), splits->end());
  AddDeletionSplits(DeletedHours(job->ns, job->tkey, 0), splits);
  job->unite_days = unite_days_ && job->uniques_from && splits &&
                    WholeUtcDays(HourSpan{*job->uniques_from, end_ts}, skip, *splits);
  if (job->unite_days) ++stats_.realtime_united_reads;
  job->splits = std::move(splits);
  job->done = std::move(done);
  RunBreakdown(std::move(job));
}

void QueryGather::RunBreakdown(std::shared_ptr<BreakdownJob> job) {
  job->session = archive_.Begin(job->total_key);
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
  join->Arm();
  archive_.Get(job->session, job->total_key, [job, part = std::move(archive_part)](Result<ArchiveReply> reply) {
    if (reply.ok()) job->archive_total = std::move(*reply);
    part(reply.status());
  });
  job->realtime_missing = Status::Ok();
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

namespace {

// The span (a day at level 0) of an mget answer's key `prefix` + span
// code, or nullopt when the rest is not a span code.
std::optional<DaySpan> SpanOfKey(std::string_view key, std::string_view prefix) {
  if (!key.starts_with(prefix) || !LooksLikeSpanCode(key.substr(prefix.size()))) return std::nullopt;
  Result<DaySpan> span = SpanFromCode(key.substr(prefix.size()));
  if (!span.ok()) return std::nullopt;
  return *span;
}



// The archived hours a breakdown may read, and where its sums split, for the
// archive read plan (plan/archive_plan.h): the hours in the window outside
// the skipped gap; the splits, the gap's ends, and the end of the archive's
// last day (a span never reaches past what the archive holds whole).
std::vector<int64_t> HoursToRead(const HourlyCounts& archived, HourSpan skip) {
  std::vector<int64_t> hours;
  hours.reserve(archived.size());
  for (const auto& [hour, count] : archived) {
    if (!skip.Contains(hour)) hours.push_back(hour);
  }
  return hours;
}
std::vector<int64_t> PlanSplits(std::vector<int64_t> splits, HourSpan skip, const ArchiveLastDay& last_day) {
  if (skip.begin_ts < skip.end_ts) {
    splits.push_back(skip.begin_ts);
    splits.push_back(skip.end_ts);
  }
  if (last_day) splits.push_back((*last_day + 1) * kSecondsPerDay);
  return splits;
}


// What a breakdown or /uniques job reads of the archive (plan/archive_plan.h):
// with its sums' splits known, runs of whole UTC days inside one sum as day
// and span records and the rest as hours; without (hourly units), every
// archived hour outside the skipped gap. `also_split`: one more split (a
// breakdown's visitors start at its window's first hour, so no span reaches
// across it).
ArchivePlan PlanJobReads(const HourlyCounts& archived, HourSpan skip,
                         const std::optional<std::vector<int64_t>>& splits, const ArchiveLastDay& last_day,
                         std::optional<int64_t> also_split) {
  std::vector<int64_t> hours = HoursToRead(archived, skip);
  if (!splits) return ArchivePlan{std::move(hours), {}};
  std::vector<int64_t> all = PlanSplits(*splits, skip, last_day);
  if (also_split) all.push_back(*also_split);
  return PlanArchiveReads(hours, std::move(all), kMaxSpanLevel);
}

// The span (a day at level 0) of an mget answer's key `prefix` + span code
// when the plan asked for it; nullopt when the rest is not a span code, and
// CORRUPTION for a span not asked.
Result<std::optional<DaySpan>> AskedSpanOfKey(std::string_view key, std::string_view prefix,
                                              const ArchivePlan& plan) {
  const std::optional<DaySpan> span = SpanOfKey(key, prefix);
  // The plan's spans do not overlap, so their order by first day is
  // SpanKeyLess's (by last day).
  if (span && !std::binary_search(plan.spans.begin(), plan.spans.end(), *span, SpanKeyLess)) {
    return Status::Corruption(fmt::format("archive mget answered an unasked key {}", QuoteForMessage(key)));
  }
  return span;
}

}  // namespace

void QueryGather::FinishBreakdown(std::shared_ptr<BreakdownJob> job) {
  const ArchiveView view = job->archive_total.view;
  if (!ArchiveHoldsHandedOverDays(view, &job->handover_reread, [&] { RunBreakdown(job); })) return;
  if (MustReadAllDays(view, &job->all_days)) return RunBreakdown(job);
  HourlyCounts archived;
  if (Status st = AddArchiveTotal(*job->session, job->total_key, job->archive_total, &archived,
                                  HourSpan{job->begin_ts, job->end_ts});
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
  ArchivePlan plan = PlanJobReads(archived, job->skip, job->splits, view.last_day, job->uniques_from);
  const auto with_visitors = [&](int64_t from_ts) { return job->uniques_from && from_ts >= *job->uniques_from; };
  std::vector<std::string> keys;
  keys.reserve(2 * (plan.spans.size() + plan.hours.size()));
  // The plan counts on every span and hour it names being read: one that
  // cannot be named fails the query rather than drop its clicks.
  for (const DaySpan& span : plan.spans) {
    auto code = SpanCode(span);
    if (!code.ok()) return job->done(code.status());
    keys.push_back(DaySubtotalArchiveKey(job->sns, job->ns, job->tkey, *code));
    if (with_visitors(span.first_day * kSecondsPerDay)) {
      keys.push_back(UniqueSubtotalArchiveKey(job->sns, job->ns, job->tkey, *code));
    }
  }
  for (const int64_t hour : plan.hours) {
    auto ymdh = YmdhFromUnix(hour);
    if (!ymdh.ok()) return job->done(ymdh.status());
    keys.push_back(SubtotalArchiveKey(job->sns, job->ns, job->tkey, *ymdh));
    if (with_visitors(hour)) keys.push_back(UniqueSubtotalArchiveKey(job->sns, job->ns, job->tkey, *ymdh));
  }
  archive_.MGet(job->session, keys,
                [this, job, view, plan = std::move(plan), archived = std::move(archived)](
                    Result<std::vector<ArchiveReply>> replies) mutable {
    if (!replies.ok()) return job->done(replies.status());
    if (!SameGeneration(*replies, view, &job->attempts, [&] { RunBreakdown(job); },
                        [&](Status st) { job->done(std::move(st)); })) {
      return;
    }
    auto data = std::make_shared<BreakdownData>();
    data->gap = RealtimeGap{job->realtime_missing, view.last_day, view.generation, view.file_crc32, job->session};
    Status st = AddArchiveBreakdownLines(*job, *replies, plan, data.get());
    if (!st.ok()) return job->done(std::move(st));
    data->total = std::move(archived);
    CompleteBreakdown(job, std::move(*data));
  });
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
    if (!columns.ok()) return columns.status();
    if (*columns) {
      unique ? AddDecodedSketches(**columns, hour, "", &data->unique_subtotals)
             : AddDecodedSubtotals(**columns, hour, &data->subtotals);
      return Status::Ok();
    }
    return unique ? AddArchiveUniqueSubtotals(answer.text, hour, "", &data->unique_subtotals)
                  : AddArchiveSubtotalColumns(answer.text, hour, &data->subtotals);
  };
  return ForEachMgetAnswer(replies, [&](std::string_view key, const MgetAnswer& answer) -> Status {
    const bool unique = job.uniques_from && IsUniqueKey(key);
    const std::string_view bare = unique ? key.substr(1) : key;
    auto span = AskedSpanOfKey(bare, job.subtotal_prefix, plan);
    if (!span.ok()) return span.status();
    if (*span) {
      // A day or span record stands for its days' hours, entered at the
      // first (all in one sum).
      ++((*span)->level > 0 ? stats_.spans_read : unique ? stats_.day_uniques_read : stats_.day_subtotals_read);
      return add(key, answer, unique, (*span)->first_day * kSecondsPerDay);
    }
    auto hour = HourOfKey(bare, job.subtotal_prefix);
    if (!hour.ok()) return hour.status();
    return add(key, answer, unique, *hour);
  });
}

Result<std::shared_ptr<const DecodedColumns>> QueryGather::ColumnsOf(const ArchiveReader::Session& session,
                                                                     std::string_view key, const MgetAnswer& answer,
                                                                     RecordKind kind) {
  if (answer.columns != nullptr) {
    ++stats_.archive_cache_decoded_hits;
    return *answer.columns;
  }
  if (!answer.reply->kept) return std::shared_ptr<const DecodedColumns>();
  auto decoded = kind == RecordKind::kSubtotal ? DecodeSubtotalRecord(answer.text)
                                               : DecodeUniqueRecord(answer.text, kind == RecordKind::kUniqueTotal);
  if (!decoded.ok()) {
    archive_.Forget(session, key, answer.reply->view);  // the next query asks the replica again
    return decoded.status();
  }
  auto columns = std::make_shared<const DecodedColumns>(std::move(decoded).value());
  archive_.KeepDecodedColumns(session, key, answer.reply->view, columns);
  return columns;
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
                                sketch_texts_, &data.unique_subtotals);
  }
  if (!st.ok()) return job->done(std::move(st));
  job->done(std::move(data));
}

// ---- uniques -----------------------------------------------------------------

struct QueryGather::UniquesJob {
  UniquesTarget target;
  std::string total_key;        // ns|tkey: the index of archived hours
  std::string realtime_prefix;  // ~ns|tkey. or ~sns.ns|tkey.skey.
  std::string archive_prefix;   // ~ns|tkey. or ~sns.ns|tkey. (then YMDH)
  HourSpan span;
  HourSpan skip{0, 0};
  int64_t max_hours = 0;
  std::optional<std::vector<int64_t>> splits;  // where the units split (nullopt: read every hour)
  int attempts = 1;  // the first run, and one more per generation change (SameGeneration)
  bool handover_reread = false;  // run again once: the archive answer lacked a handed-over day
  bool all_days = false;  // realtime read without skipping (FinishUniques)
  // Realtime may answer each UTC day's hours of a record as one union
  // (unite=day): every day the query reads lies in one unit.
  bool unite_days = false;
  std::function<void(Result<UniquesData>)> done;
  // One attempt's results.
  std::shared_ptr<ArchiveReader::Session> session;
  ArchiveReply archive_total;
  std::string realtime;
  Status realtime_missing;
};

void QueryGather::AddRealtimeAndFinish(const std::shared_ptr<UniquesJob>& job, const ArchiveView& view,
                                       UniquesData data) {
  Status st = AddRealtimeUniqueLines(job->realtime, job->realtime_prefix, /*keyed_lines=*/false, view.last_day,
                                     job->span, sketch_texts_, &data.hours);
  if (!st.ok()) return job->done(std::move(st));
  for (const HourSketch& h : data.hours) data.first_hour = std::min(data.first_hour.value_or(h.hour), h.hour);
  job->done(std::move(data));
}

void QueryGather::FetchUniques(UniquesTarget target, HourSpan span, HourSpan skip, int64_t max_hours,
                               std::function<void(Result<UniquesData>)> done,
                               std::optional<std::vector<int64_t>> splits) {
  auto job = std::make_shared<UniquesJob>();
  job->total_key = TotalArchiveKey(target.ns, target.tkey);
  job->archive_prefix = target.sns.empty() ? fmt::format("{}{}.", kUniqueMark, job->total_key)
                                           : fmt::format("{}{}.{}.", kUniqueMark, target.sns, job->total_key);
  job->realtime_prefix = target.sns.empty() ? job->archive_prefix : fmt::format("{}{}.", job->archive_prefix, target.skey);
  job->target = std::move(target);
  job->span = span;
  job->skip = skip;
  job->max_hours = max_hours;
  if (splits) std::sort(splits->begin(), splits->end());
  AddDeletionSplits(DeletedHours(job->target.ns, job->target.tkey, 0), splits);
  job->unite_days = unite_days_ && splits && WholeUtcDays(span, skip, *splits);
  if (job->unite_days) ++stats_.realtime_united_reads;
  job->splits = std::move(splits);
  job->done = std::move(done);
  RunUniques(std::move(job));
}

void QueryGather::RunUniques(std::shared_ptr<UniquesJob> job) {
  job->session = archive_.Begin(job->total_key);
  auto join = FanIn::Create([this, job](Status st) {
    if (!st.ok()) return job->done(std::move(st));
    FinishUniques(job);
  });
  auto archive_part = join->Part();
  auto realtime_part = join->Part();
  join->Arm();
  archive_.Get(job->session, job->total_key, [job, part = std::move(archive_part)](Result<ArchiveReply> reply) {
    if (reply.ok()) job->archive_total = std::move(*reply);
    part(reply.status());
  });
  job->realtime_missing = Status::Ok();
  job->realtime.clear();
  realtime_.FwmatchKey(job->total_key, job->realtime_prefix,
                       RealtimeBodyInto(job, &job->realtime, &job->realtime_missing, std::move(realtime_part)),
                       job->all_days, job->unite_days);
}

void QueryGather::FinishUniques(std::shared_ptr<UniquesJob> job) {
  const ArchiveView view = job->archive_total.view;
  if (!ArchiveHoldsHandedOverDays(view, &job->handover_reread, [&] { RunUniques(job); })) return;
  if (MustReadAllDays(view, &job->all_days)) return RunUniques(job);
  HourlyCounts archived;
  if (Status st = AddArchiveTotal(*job->session, job->total_key, job->archive_total, &archived, job->span);
      !st.ok()) {
    return job->done(std::move(st));
  }
  const bool unbounded = job->span.begin_ts == HourSpan{}.begin_ts;
  if (unbounded && static_cast<int64_t>(archived.size()) > job->max_hours) {
    return job->done(Status::InvalidArgument(
        fmt::format("the key has {} archived hours of data, more than the {} a query may span; name units",
                    archived.size(), job->max_hours),
        "WINDOW_TOO_LARGE"));
  }
  // The archived hours of the total are the index of the unique records
  // that can exist (an hour with visitors always has clicks). Runs of whole
  // UTC days inside one unit are read as their day and span records (every
  // served file has one for every day and span with unique hours: one it
  // lacks had no visitors), the rest as hours: a year's window is at most
  // 16 sketches and its edge hours, not 365 days of them.
  ArchivePlan plan = PlanJobReads(archived, job->skip, job->splits, view.last_day, std::nullopt);
  std::vector<std::string> keys;
  keys.reserve(plan.spans.size() + plan.hours.size());
  for (const DaySpan& span : plan.spans) {
    auto code = SpanCode(span);
    if (!code.ok()) return job->done(code.status());
    keys.push_back(job->archive_prefix + *code);
  }
  for (const int64_t hour : plan.hours) {
    auto ymdh = YmdhFromUnix(hour);
    if (!ymdh.ok()) return job->done(ymdh.status());
    keys.push_back(job->archive_prefix + *ymdh);
  }
  std::optional<int64_t> first_hour;
  if (!archived.empty()) first_hour = archived.begin()->first;
  auto answered = [this, job, view, plan = std::move(plan), first_hour](Result<std::vector<ArchiveReply>> replies) {
    if (!replies.ok()) return job->done(replies.status());
    if (!SameGeneration(*replies, view, &job->attempts, [&] { RunUniques(job); },
                        [&](Status st) { job->done(std::move(st)); })) {
      return;
    }
    UniquesData data;
    data.gap = RealtimeGap{job->realtime_missing, view.last_day, view.generation, view.file_crc32, job->session};
    data.first_hour = first_hour;
    const bool total = job->target.sns.empty();
    Status st = ForEachMgetAnswer(*replies, [&](std::string_view key, const MgetAnswer& answer) -> Status {
      // A day or span record stands for its days' hours: entered at its
      // first hour, which lies in the same unit as all of them.
      int64_t hour = 0;
      auto span = AskedSpanOfKey(key, job->archive_prefix, plan);
      if (!span.ok()) return span.status();
      if (*span) {
        ++((*span)->level > 0 ? stats_.spans_read : stats_.day_uniques_read);
        hour = (*span)->first_day * kSecondsPerDay;
      } else {
        auto h = HourOfKey(key, job->archive_prefix);
        if (!h.ok()) return h.status();
        hour = *h;
      }
      auto columns = ColumnsOf(*job->session, key, answer,
                               total ? RecordKind::kUniqueTotal : RecordKind::kUniqueSubtotal);
      if (!columns.ok()) return columns.status();
      if (*columns) {
        AddDecodedSketches(**columns, hour, total ? "" : job->target.skey, &data.hours);
        return Status::Ok();
      }
      return total ? AddArchiveUniqueTotal(answer.text, hour, &data.hours)
                   : AddArchiveUniqueSubtotals(answer.text, hour, job->target.skey, &data.hours);
    });
    if (!st.ok()) return job->done(std::move(st));
    AddRealtimeAndFinish(job, view, std::move(data));
  };
  // Nothing to ask (most sparse keys have no archived hour in a window): no
  // round trip.
  if (keys.empty()) return answered(std::vector<ArchiveReply>{});
  archive_.MGet(job->session, keys, std::move(answered));
}

// ---- lookups -----------------------------------------------------------------

void QueryGather::ResolveHashes(std::vector<std::string> hashes,
                                std::function<void(Result<std::map<std::string, std::string>>)> done) {
  struct State {
    std::map<std::string, std::string> values;
    std::set<std::string> pending;           // not in the cache
    std::set<std::string> source_failed;     // a source of this hash did not answer
  };
  auto state = std::make_shared<State>();
  std::vector<std::string> archive_keys;
  std::map<int, std::vector<std::string>> by_realtime_shard;
  for (std::string& hash : hashes) {
    if (state->values.count(hash) || state->pending.count(hash)) continue;
    // A key erased for all time: its full value is not shown, kept or not.
    if (deletions_ != nullptr && deletions_->LookupDeleted(hash)) continue;
    if (const auto cached = lookups_.Get(hash)) {
      ++stats_.lookup_cache_hits;
      state->values.emplace(hash, *cached);
      continue;
    }
    archive_keys.push_back(LookupKey(hash));
    for (int shard : realtime_.shard_map().ShardsOfKey(hash)) by_realtime_shard[shard].push_back(LookupKey(hash));
    state->pending.insert(std::move(hash));
  }
  if (state->pending.empty()) {
    done(std::move(state->values));
    return;
  }
  stats_.lookups_fetched += state->pending.size();

  auto join = FanIn::Create([this, state, done = std::move(done)](Status st) {
    if (!st.ok()) {
      done(std::move(st));
      return;
    }
    for (const std::string& hash : state->pending) {
      auto it = state->values.find(hash);
      if (it != state->values.end()) {
        lookups_.Put(hash, it->second);
      } else if (state->source_failed.count(hash)) {
        done(Status::Unavailable(fmt::format("the lookup record of {} is on a shard that did not answer", hash),
                                 "SHARD_UNAVAILABLE"));
        return;
      } else {
        ++stats_.lookups_missing;
      }
    }
    done(std::move(state->values));
  });
  // Lines "l|HASH,value" from either source; a source that fails marks its
  // hashes, which only matters for hashes no other source resolved.
  const auto absorb = [state](const std::vector<std::string>& keys, const Status& st,
                              const std::vector<std::string_view>& bodies) -> Status {
    if (!st.ok()) {
      if (st.code() != StatusCode::kUnavailable) return st;
      for (const std::string& key : keys) state->source_failed.insert(key.substr(2));
      return Status::Ok();
    }
    for (std::string_view body : bodies) {
      auto lines = SplitKeyValueLines(body);
      if (!lines.ok()) return lines.status();
      for (const auto& [key, value] : *lines) {
        if (!key.starts_with("l|")) continue;
        std::string hash(key.substr(2));
        if (state->pending.count(hash)) state->values.emplace(std::move(hash), std::string(value));
      }
    }
    return Status::Ok();
  };
  std::vector<std::function<void()>> sends;
  sends.push_back([this, keys = std::move(archive_keys), part = join->Part(), absorb]() mutable {
    archive_.WhenRouted([this, keys = std::move(keys), part = std::move(part), absorb]() mutable {
      ArchiveLookups(std::move(keys), archive_.ShardCount(), /*attempts_left=*/3, absorb, std::move(part));
    });
  });
  for (auto& [shard, keys] : by_realtime_shard) {
    auto part = join->Part();
    sends.push_back([this, shard, keys = std::move(keys), part, absorb]() {
      realtime_.MGet(shard, keys, [keys, part, absorb](Result<std::vector<std::string>> replies) {
        std::vector<std::string_view> bodies;
        if (replies.ok()) {
          for (const std::string& r : *replies) bodies.push_back(r);
        }
        part(absorb(keys, replies.status(), bodies));
      });
    });
  }
  join->Arm();
  for (auto& send : sends) send();
}

void QueryGather::ArchiveLookups(std::vector<std::string> keys, int shard_count, int attempts_left,
                                 LookupAbsorb absorb, std::function<void(Status)> done) {
  // Grouped by their shards under `shard_count`; a group answered for
  // another count (a re-partitioned generation is being deployed) is
  // grouped again by the count the answer named, a few times, then counts as
  // a source that did not answer.
  std::map<int, std::vector<std::string>> by_shard;
  for (std::string& key : keys) by_shard[ShardFor(std::string_view(key).substr(2), shard_count)].push_back(std::move(key));
  struct Pending {
    std::vector<std::string> misrouted;
    int named_count = 0;  // the count a misrouted group's answer named
    size_t groups = 0;
    Status failed;
  };
  auto pending = std::make_shared<Pending>();
  pending->groups = by_shard.size();
  auto group_done = [this, pending, attempts_left, absorb, done]() {
    if (--pending->groups > 0) return;
    if (!pending->failed.ok()) return done(pending->failed);
    if (pending->misrouted.empty()) return done(Status::Ok());
    if (attempts_left <= 1) {
      return done(absorb(pending->misrouted, Status::Unavailable("lookups answered for another archive shard count",
                                                             "SHARD_UNAVAILABLE"),
                         {}));
    }
    ArchiveLookups(std::move(pending->misrouted), pending->named_count, attempts_left - 1, absorb, done);
  };
  if (by_shard.empty()) return done(Status::Ok());
  for (auto& [shard, group] : by_shard) {
    auto session = archive_.BeginShard(shard, shard_count);
    archive_.MGet(session, group, [session, group, pending, absorb, group_done](
                                      Result<std::vector<ArchiveReply>> replies) mutable {
      if (replies.ok()) {
        for (const ArchiveReply& r : *replies) {
          if (ArchiveReader::Misrouted(*session, r.view)) {
            pending->misrouted.insert(pending->misrouted.end(), group.begin(), group.end());
            pending->named_count = r.view.shard_count;
            return group_done();
          }
        }
      }
      std::vector<std::string_view> bodies;
      if (replies.ok()) {
        for (const ArchiveReply& r : *replies) bodies.push_back(r.body);
      }
      if (Status st = absorb(group, replies.status(), bodies); !st.ok() && pending->failed.ok()) pending->failed = st;
      group_done();
    });
  }
}

}  // namespace clickatron::api
