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

// Asks "is d in the list?" for rising d, walking a sorted list once instead
// of searching it each time (a year's hours against its whole days).
class SortedWalk {
 public:
  explicit SortedWalk(const std::vector<int64_t>& sorted) : at_(sorted.begin()), end_(sorted.end()) {}
  // REQUIRES: d is not below any value asked before.
  bool Holds(int64_t d) {
    while (at_ != end_ && *at_ < d) ++at_;
    return at_ != end_ && *at_ == d;
  }

 private:
  std::vector<int64_t>::const_iterator at_, end_;
};

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
                         LookupCache& lookups, SketchTextCache& sketch_texts,
                         DayUnionCache& day_unions, DaySketchCache& day_sketches,
                         UniqueWindowCache& unique_windows, ReadStats& stats, const DeletionLog* deletions)
    : unite_days_(cluster.api.realtime_unite_days),
      archive_(archive),
      realtime_(realtime),
      lookups_(lookups),
      sketch_texts_(sketch_texts),
      day_unions_(day_unions),
      day_sketches_(day_sketches),
      unique_windows_(unique_windows),
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

// `days` (sorted) cut into runs that lie inside one sum: no split between
// a run's first day's start and its last day's end (each day already has
// none inside it).
std::vector<std::vector<int64_t>> RunsInOneSum(const std::vector<int64_t>& days, const std::vector<int64_t>& splits) {
  std::vector<std::vector<int64_t>> runs;
  size_t run_sum = 0;
  for (const int64_t day : days) {
    // Which sum the day is in: how many splits are at or before its start.
    const size_t sum = static_cast<size_t>(
        std::upper_bound(splits.begin(), splits.end(), day * kSecondsPerDay) - splits.begin());
    if (runs.empty() || sum != run_sum) {
      runs.emplace_back();
      run_sum = sum;
    }
    runs.back().push_back(day);
  }
  return runs;
}

// What a gather does with its whole days given the runs kept for them: the
// days to read as day records, and the long runs among those to keep once
// read. A long run kept for `file` is handed to `on_hit` instead (and not
// read).
struct RunPlan {
  std::vector<int64_t> to_read;
  std::vector<std::vector<int64_t>> to_keep;
};
template <typename Value, typename OnHit>
RunPlan PlanRuns(const std::vector<int64_t>& days, const std::vector<int64_t>& splits, DayRunCache<Value>& cache,
                 const ServedFile& file, int shard_count, std::string_view prefix, std::atomic<uint64_t>& hits,
                 std::atomic<uint64_t>& misses, const OnHit& on_hit) {
  RunPlan plan;
  for (std::vector<int64_t>& run : RunsInOneSum(days, splits)) {
    if (run.size() >= DayRuns::kMinDays) {
      if (const auto kept = cache.Find(file, shard_count, prefix, run)) {
        ++hits;
        on_hit(run, *kept);
        continue;
      }
      ++misses;
      plan.to_read.insert(plan.to_read.end(), run.begin(), run.end());
      plan.to_keep.push_back(std::move(run));
      continue;
    }
    plan.to_read.insert(plan.to_read.end(), run.begin(), run.end());
  }
  return plan;
}

// The index of the run (runs sorted, disjoint) that holds the UTC day whose
// first hour is `hour`; nullopt for another hour or a day in no run.
std::optional<size_t> RunAtDayStart(const std::vector<std::vector<int64_t>>& runs, int64_t hour) {
  const int64_t day = FloorDiv(hour, kSecondsPerDay);
  if (hour != day * kSecondsPerDay) return std::nullopt;
  // The run whose first day is the last at or before `day`.
  auto it = std::upper_bound(runs.begin(), runs.end(), day,
                             [](int64_t d, const std::vector<int64_t>& run) { return d < run.front(); });
  if (it == runs.begin()) return std::nullopt;
  --it;
  if (!std::binary_search(it->begin(), it->end(), day)) return std::nullopt;
  return static_cast<size_t>(it - runs.begin());
}

// Per run (sorted, disjoint), the union of the sketches of `hours` at its
// days' first hours.
std::vector<UniqueSketch> UniteRuns(const std::vector<std::vector<int64_t>>& runs, const HourlySketches& hours) {
  std::vector<UniqueSketch> unions(runs.size());
  for (const HourSketch& h : hours) {
    const std::optional<size_t> i = RunAtDayStart(runs, h.hour);
    if (i && h.sketch) unions[*i].Merge(*h.sketch);
  }
  return unions;
}

// The UTC days of `archived` whose subtotal hours a breakdown may read as one
// day subtotal record: wholly inside [begin_ts, end_ts), no hour in `skip`,
// no split of the query's sums inside them (a unit or window boundary), and
// at least two archived hours (one hour is as cheap to read as its day).
std::vector<int64_t> WholeDays(const HourlyCounts& archived, int64_t begin_ts, int64_t end_ts, HourSpan skip,
                               const std::vector<int64_t>& splits) {
  std::vector<int64_t> days;
  int64_t day = 0;
  int hours = 0;
  const auto consider = [&] {
    if (hours < 2) return;
    const int64_t start = day * kSecondsPerDay, end = start + kSecondsPerDay;
    if (start < begin_ts || end > end_ts) return;
    if (skip.begin_ts < end && start < skip.end_ts) return;
    const auto split = std::upper_bound(splits.begin(), splits.end(), start);
    if (split != splits.end() && *split < end) return;
    days.push_back(day);
  };
  // A division only where a day begins: a busy key's window is 720 hours.
  int64_t day_end = std::numeric_limits<int64_t>::min();
  for (const auto& [hour, count] : archived) {
    if (hours > 0 && hour < day_end) {
      ++hours;
      continue;
    }
    consider();
    day = FloorDiv(hour, kSecondsPerDay);
    day_end = (day + 1) * kSecondsPerDay;
    hours = 1;
  }
  consider();
  return days;
}

// The span (a day at level 0) of an mget answer's key `prefix` + span
// code, or nullopt when the rest is not a span code.
std::optional<DaySpan> SpanOfKey(std::string_view key, std::string_view prefix) {
  if (!key.starts_with(prefix) || !LooksLikeSpanCode(key.substr(prefix.size()))) return std::nullopt;
  Result<DaySpan> span = SpanFromCode(key.substr(prefix.size()));
  if (!span.ok()) return std::nullopt;
  return *span;
}

// The day of an mget answer's key `prefix` + day code, or nullopt when the
// rest is not a day code.
std::optional<int64_t> DayOfKey(std::string_view key, std::string_view prefix) {
  const std::optional<DaySpan> span = SpanOfKey(key, prefix);
  if (!span || span->level != 0) return std::nullopt;
  return span->first_day;
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
  // records that exist: only those in the window are read. Every served
  // file has a day record for every UTC day with hours and a span record
  // for every aligned span with hours (format 2, archive/file_loader.cc), so
  // a record it lacks is a day or span without hours of this namespace.
  // Without visitors, each run of whole UTC days inside one sum is read as
  // aligned span records, at most two per level and one per 128 days
  // (plan/archive_plan.h), the rest as hours. With visitors, each whole day
  // inside one sum is read as its day records (subtotals, and visitors from
  // uniques_from on), the rest as hours.
  std::vector<int64_t> days, unique_days;
  std::vector<DaySpan> spans;  // the spans longer than a day asked for, sorted
  std::vector<int64_t> hours;  // the subtotal hours asked for
  if (job->splits && !job->uniques_from) {
    const ArchivePlan plan = PlanArchiveReads(HoursToRead(archived, job->skip),
                                              PlanSplits(*job->splits, job->skip, view.last_day), kMaxSpanLevel);
    for (const DaySpan& span : plan.spans) (span.level == 0 ? days.push_back(span.first_day) : spans.push_back(span));
    hours = plan.hours;
  } else {
    if (job->splits) days = WholeDays(archived, job->begin_ts, job->end_ts, job->skip, *job->splits);
    if (job->uniques_from) {
      for (const int64_t day : days) {
        if (day * kSecondsPerDay >= *job->uniques_from) unique_days.push_back(day);
      }
    }
    // Only the hours outside the whole days get their code formatted: a busy
    // key's 30-day window has 720 archived hours and about 48 to read.
    SortedWalk whole_days(days);
    for (const auto& [hour, count] : archived) {
      if (!job->skip.Contains(hour) && !whole_days.Holds(FloorDiv(hour, kSecondsPerDay))) hours.push_back(hour);
    }
  }
  std::vector<std::string> keys;
  for (const int64_t day : days) {
    auto code = DayCodeFromDays(day);
    if (!code.ok()) return job->done(code.status());
    keys.push_back(DaySubtotalArchiveKey(job->sns, job->ns, job->tkey, *code));
    if (std::binary_search(unique_days.begin(), unique_days.end(), day)) {
      keys.push_back(UniqueSubtotalArchiveKey(job->sns, job->ns, job->tkey, *code));
    }
  }
  // The plan counts on every span and hour it names being read: one that
  // cannot be named fails the query rather than drop its clicks.
  for (const DaySpan& span : spans) {
    auto code = SpanCode(span);
    if (!code.ok()) return job->done(code.status());
    keys.push_back(DaySubtotalArchiveKey(job->sns, job->ns, job->tkey, *code));
  }
  for (const int64_t hour : hours) {
    auto ymdh = YmdhFromUnix(hour);
    if (!ymdh.ok()) return job->done(ymdh.status());
    keys.push_back(SubtotalArchiveKey(job->sns, job->ns, job->tkey, *ymdh));
    // Visitors of the hours outside whole days, from uniques_from on.
    if (job->uniques_from && hour >= *job->uniques_from) {
      keys.push_back(UniqueSubtotalArchiveKey(job->sns, job->ns, job->tkey, *ymdh));
    }
  }
  archive_.MGet(job->session, keys,
                [this, job, view, days = std::move(days), unique_days = std::move(unique_days),
                 spans = std::move(spans), archived = std::move(archived)](
                    Result<std::vector<ArchiveReply>> replies) mutable {
    if (!replies.ok()) return job->done(replies.status());
    if (!SameGeneration(*replies, view, &job->attempts, [&] { RunBreakdown(job); },
                        [&](Status st) { job->done(std::move(st)); })) {
      return;
    }
    auto data = std::make_shared<BreakdownData>();
    data->gap = RealtimeGap{job->realtime_missing, view.last_day, view.generation, view.file_crc32, job->session};
    std::vector<int64_t> days_found, unique_days_found;
    Status st = AddArchiveBreakdownLines(*job, *replies, days, unique_days, spans, data.get(), &days_found,
                                         &unique_days_found);
    if (!st.ok()) return job->done(std::move(st));
    stats_.day_subtotals_read += days_found.size();
    stats_.day_uniques_read += unique_days_found.size();
    data->total = std::move(archived);
    CompleteBreakdown(job, std::move(*data));
  });
}

// Adds the lines of archive mget answers: subtotal hours, span records (only
// of `spans`), day records (only of `days`, each noted in *days_found) and,
// with uniques, unique subtotal hours and day unique records (only of
// `unique_days`, each noted in *unique_days_found). A key not asked for is
// CORRUPTION.
Status QueryGather::AddArchiveBreakdownLines(const BreakdownJob& job, const std::vector<ArchiveReply>& replies,
                                             const std::vector<int64_t>& days,
                                             const std::vector<int64_t>& unique_days,
                                             const std::vector<DaySpan>& spans, BreakdownData* data,
                                             std::vector<int64_t>* days_found,
                                             std::vector<int64_t>* unique_days_found) {
  // key = [~]sns.ns|tkey.YMDH or [~]sns.ns|tkey.DAY. Room for a few values
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
    std::optional<DaySpan> span = SpanOfKey(unique ? key.substr(1) : key, job.subtotal_prefix);
    if (span && span->level > 0) {
      // A span record stands for its days' hours, entered at the first.
      if (unique || !std::binary_search(spans.begin(), spans.end(), *span, SpanKeyLess)) {
        return Status::Corruption(fmt::format("archive mget answered an unasked key {}", QuoteForMessage(key)));
      }
      ++stats_.spans_read;
      return add(key, answer, false, span->first_day * kSecondsPerDay);
    }
    if (std::optional<int64_t> day = span ? std::optional<int64_t>(span->first_day) : std::nullopt) {
      const std::vector<int64_t>& asked = unique ? unique_days : days;
      if (!std::binary_search(asked.begin(), asked.end(), *day)) {
        return Status::Corruption(fmt::format("archive mget answered an unasked key {}", QuoteForMessage(key)));
      }
      // A day record stands for its day's hours, entered at the first.
      (unique ? unique_days_found : days_found)->push_back(*day);
      return add(key, answer, unique, *day * kSecondsPerDay);
    }
    auto hour = HourOfKey(unique ? key.substr(1) : key, job.subtotal_prefix);
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
  bool keep_window = true;  // UniqueWindowCache may answer and keep it: no deletion covers the key
  std::function<void(Result<UniquesData>)> done;
  // One attempt's results.
  std::shared_ptr<ArchiveReader::Session> session;
  ArchiveReply archive_total;
  std::string realtime;
  Status realtime_missing;
};

// A run is of a key's records, or of one subtotal value's among them.
std::string QueryGather::RunPrefix(const UniquesJob& job) { return job.archive_prefix + "\n" + job.target.skey; }

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
  // A window kept before a deletion must not answer after it (the deletion's
  // ends may be unit boundaries already, so the splits would not tell).
  const std::vector<HourSpan> deleted = DeletedHours(job->target.ns, job->target.tkey, 0);
  job->keep_window = deleted.empty();
  AddDeletionSplits(deleted, splits);
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
  // A busy key's window asked before on this file: its archive part as
  // kept, realtime's hours on top.
  const std::optional<ServedFile> file = ArchiveReplyCache::FileOf(view);
  if (unique_windows_.enabled() && file && job->splits && job->keep_window) {
    const auto kept = unique_windows_.Find(
        *file, job->session->shard_count, RunPrefix(*job), job->span, job->skip, *job->splits);
    if (kept == nullptr) {
      ++stats_.unique_window_misses;
    } else {
      ++stats_.unique_window_hits;
      UniquesData data;
      data.gap = RealtimeGap{job->realtime_missing, view.last_day, view.generation, view.file_crc32, job->session};
      data.first_hour = kept->first_hour;
      data.hours = kept->hours;
      return AddRealtimeAndFinish(job, view, std::move(data));
    }
  }
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
  // A UTC day wholly inside one unit is read as its day unique record
  // (every served file has one for every day with unique hours: a day it
  // lacks had no visitors); the days at the edges are read by their hours.
  std::vector<int64_t> days = job->splits ? WholeDays(archived, job->span.begin_ts, job->span.end_ts, job->skip,
                                                      *job->splits)
                                          : std::vector<int64_t>{};
  ReadArchiveUniques(job, std::move(archived), std::move(days));
}

void QueryGather::ReadArchiveUniques(std::shared_ptr<UniquesJob> job, HourlyCounts archived,
                                     std::vector<int64_t> days) {
  const ArchiveView view = job->archive_total.view;
  // Runs of those days inside one unit whose day records were united before
  // on this file are added as that union, entered at the run's first day;
  // the long ones read now are united and kept once read.
  std::vector<HourSketch> kept_unions;
  std::vector<std::vector<int64_t>> runs_to_keep;
  std::vector<int64_t> days_to_read;  // the days asked: `days` itself unless runs were planned
  bool planned = false;
  const std::optional<ServedFile> file = ArchiveReplyCache::FileOf(view);
  const int shard_count = job->session->shard_count;
  const std::string run_prefix = RunPrefix(*job);
  if (day_unions_.enabled() && file && job->splits && !days.empty()) {
    RunPlan plan = PlanRuns(days, *job->splits, day_unions_, *file, shard_count, run_prefix, stats_.day_unions_hits,
                            stats_.day_unions_misses,
                            [&](const std::vector<int64_t>& run, const KeptUnion& kept) {
                              if (!kept.sketch->empty()) {
                                kept_unions.push_back(HourSketch{run.front() * kSecondsPerDay, job->target.skey,
                                                                 kept.sketch, kept.estimate});
                              }
                            });
    days_to_read = std::move(plan.to_read);
    runs_to_keep = std::move(plan.to_keep);
    planned = true;
  }
  const std::vector<int64_t>& asked_days = planned ? days_to_read : days;
  // Of those, the days read before on this file come from the day cache, a
  // day without visitors too; the rest are asked of the archive, and kept
  // once read.
  std::vector<HourSketch> kept_days;
  std::vector<int64_t> read_days;
  const bool keep_days = day_sketches_.enabled() && file && !asked_days.empty();
  if (keep_days) {
    const auto kept = day_sketches_.Find(*file, shard_count, run_prefix);
    for (const int64_t day : asked_days) {
      const KeptDay* k = kept ? DaySketchCache::DayIn(*kept, day) : nullptr;
      if (k == nullptr) {
        read_days.push_back(day);
        continue;
      }
      if (k->sketch) kept_days.push_back(HourSketch{day * kSecondsPerDay, job->target.skey, k->sketch, k->estimate});
    }
    stats_.day_sketches_hits += asked_days.size() - read_days.size();
    stats_.day_sketches_misses += read_days.size();
  } else {
    read_days = asked_days;
  }
  // The archived hours of the total are the index of the unique records
  // that can exist (an hour with visitors always has clicks).
  std::vector<std::string> keys;
  keys.reserve(archived.size() + read_days.size());
  // Only days actually asked stay in read_days: a day not asked must not be
  // kept as one without visitors.
  std::vector<int64_t> asked;
  asked.reserve(read_days.size());
  for (const int64_t day : read_days) {
    auto code = DayCodeFromDays(day);
    if (!code.ok()) continue;
    keys.push_back(job->archive_prefix + *code);
    asked.push_back(day);
  }
  read_days = std::move(asked);
  // The hours outside the days read whole: both lists ascend, so a day read
  // whole is stepped over at once (a busy key's 30 days are 720 hours).
  auto next_day = days.begin();
  for (auto it = archived.begin(); it != archived.end();) {
    const int64_t day = FloorDiv(it->first, kSecondsPerDay);
    while (next_day != days.end() && *next_day < day) ++next_day;
    if (next_day != days.end() && *next_day == day) {
      it = archived.LowerBound((day + 1) * kSecondsPerDay);
      continue;
    }
    if (!job->skip.Contains(it->first)) {
      auto ymdh = YmdhFromUnix(it->first);
      if (ymdh.ok()) keys.push_back(job->archive_prefix + *ymdh);
    }
    ++it;
  }
  auto answered = [this, job, view, archived = std::move(archived), read_days = std::move(read_days),
                   kept_days = std::move(kept_days), keep_days, kept_unions = std::move(kept_unions),
                   runs_to_keep = std::move(runs_to_keep), file, shard_count,
                   run_prefix](Result<std::vector<ArchiveReply>> replies) mutable {
    if (!replies.ok()) return job->done(replies.status());
    if (!SameGeneration(*replies, view, &job->attempts, [&] { RunUniques(job); },
                        [&](Status st) { job->done(std::move(st)); })) {
      return;
    }
    UniquesData data;
    data.gap = RealtimeGap{job->realtime_missing, view.last_day, view.generation, view.file_crc32, job->session};
    if (!archived.empty()) data.first_hour = archived.begin()->first;
    uint64_t days_read = 0;
    // Per day of read_days, its sketch once answered; a day asked and not
    // answered has no record on this file: no visitors.
    std::vector<std::shared_ptr<const UniqueSketch>> read_sketches(keep_days ? read_days.size() : 0);
    bool keep = keep_days;
    const bool total = job->target.sns.empty();
    Status st = ForEachMgetAnswer(*replies, [&](std::string_view key, const MgetAnswer& answer) -> Status {
      // A day record stands for its day's hours: entered at its first hour,
      // which lies in the same unit as all of them.
      int64_t hour = 0;
      size_t read_at = 0;  // a day record's place in read_days
      std::optional<int64_t> day = DayOfKey(key, job->archive_prefix);
      if (day) {
        // Only the days asked: a day added from a kept union or kept day is
        // not read.
        read_at = std::lower_bound(read_days.begin(), read_days.end(), *day) - read_days.begin();
        if (read_at == read_days.size() || read_days[read_at] != *day) {
          return Status::Corruption(fmt::format("archive mget answered an unasked key {}", QuoteForMessage(key)));
        }
        ++days_read;
        hour = *day * kSecondsPerDay;
      } else {
        auto h = HourOfKey(key, job->archive_prefix);
        if (!h.ok()) return h.status();
        hour = *h;
      }
      const size_t before = data.hours.size();
      auto columns = ColumnsOf(*job->session, key, answer,
                               total ? RecordKind::kUniqueTotal : RecordKind::kUniqueSubtotal);
      if (!columns.ok()) return columns.status();
      Status added = Status::Ok();
      if (*columns) {
        AddDecodedSketches(**columns, hour, total ? "" : job->target.skey, &data.hours);
      } else {
        added = total ? AddArchiveUniqueTotal(answer.text, hour, &data.hours)
                      : AddArchiveUniqueSubtotals(answer.text, hour, job->target.skey, &data.hours);
      }
      // A day record adds one sketch, or none (no column of the value
      // asked); more would be a subtotal read whole, which is not kept.
      if (added.ok() && day && keep) {
        const size_t count = data.hours.size() - before;
        if (count > 1) keep = false;
        if (count == 1) read_sketches[read_at] = data.hours.back().sketch;
      }
      return added;
    });
    if (st.ok() && keep) {
      std::vector<KeptDay> to_keep;
      to_keep.reserve(read_days.size());
      for (size_t i = 0; i < read_days.size(); ++i) {
        to_keep.push_back(KeptDay{static_cast<int32_t>(read_days[i]), std::move(read_sketches[i])});
      }
      day_sketches_.Add(*file, shard_count, run_prefix, std::move(to_keep));
    }
    // Kept days are entered at their first hours, as the days read.
    data.hours.insert(data.hours.end(), std::make_move_iterator(kept_days.begin()),
                      std::make_move_iterator(kept_days.end()));
    if (st.ok() && file && !runs_to_keep.empty()) {
      // The runs read now, from their day records (read or kept): the only
      // entries at their days' first hours (a whole day's hours are not
      // read, realtime's lines come next).
      std::vector<UniqueSketch> unions = UniteRuns(runs_to_keep, data.hours);
      for (size_t i = 0; i < runs_to_keep.size(); ++i) {
        // A copy holds no room the merges left spare (charged by MemoryBytes).
        auto kept = std::make_shared<const UniqueSketch>(unions[i]);
        const size_t bytes = kept->MemoryBytes();
        const uint64_t estimate = kept->Estimate();
        day_unions_.Put(*file, shard_count, run_prefix, runs_to_keep[i], KeptUnion{std::move(kept), estimate}, bytes);
      }
    }
    data.hours.insert(data.hours.end(), std::make_move_iterator(kept_unions.begin()),
                      std::make_move_iterator(kept_unions.end()));
    if (!st.ok()) return job->done(std::move(st));
    stats_.day_uniques_read += days_read;
    if (unique_windows_.enabled() && file && job->splits && job->keep_window &&
        archived.size() >= UniqueWindowCache::kMinArchivedHours) {
      unique_windows_.Put(*file, shard_count, run_prefix, job->span, job->skip, *job->splits,
                          UniqueWindowCache::Part{data.hours, data.first_hour});
    }
    AddRealtimeAndFinish(job, view, std::move(data));
  };
  // Nothing to ask (most sparse keys have no archived hour in a window, and
  // a busy key's kept days may be all of its archived part): no round trip.
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
