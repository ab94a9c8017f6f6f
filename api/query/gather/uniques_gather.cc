// QueryGather's /uniques: one key's (or subtotal value's) visitors over a window; see query_gather.h.
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
using gather::HourOfAnswer;
using gather::ForEachPlannedCode;

struct QueryGather::UniquesJob : Attempt {
  UniquesTarget target;
  std::string realtime_prefix;  // ~ns|tkey. or ~sns.ns|tkey.skey.
  std::string archive_prefix;   // ~ns|tkey. or ~sns.ns|tkey. (then YMDH)
  HourSpan span;
  HourSpan skip{0, 0};
  int64_t max_hours = 0;
  std::optional<std::vector<int64_t>> splits;  // where the units split (nullopt: read every hour)
  std::vector<HourSpan> deleted;  // the key's deleted hours (any generation) the splits cut at
  // Realtime may answer each UTC day's hours of a record as one union
  // (unite=day): every day the query reads lies in one unit.
  bool unite_days = false;
  std::function<void(Result<UniquesData>)> done;
  std::string realtime;  // this attempt's
};

void QueryGather::AddRealtimeAndFinish(const std::shared_ptr<UniquesJob>& job, const ArchiveView& view,
                                       UniquesData data) {
  Status st = AddRealtimeUniqueLines(job->realtime, job->realtime_prefix, /*keyed_lines=*/false, view.last_day,
                                     job->span, &data.hours);
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
  job->deleted = DeletedHours(job->target.ns, job->target.tkey, 0);
  AddDeletionSplits(job->deleted, splits);
  job->unite_days = unite_days_ && splits && WholeUtcDays(span, skip, *splits);
  if (job->unite_days) ++stats_.realtime_united_reads;
  job->splits = std::move(splits);
  job->done = std::move(done);
  RunUniques(std::move(job));
}

void QueryGather::RunUniques(std::shared_ptr<UniquesJob> job) {
  BeginAttempt(*job);
  job->realtime.clear();
  auto join = FanIn::Create([this, job](Status st) {
    if (!st.ok()) return job->done(std::move(st));
    FinishUniques(job);
  });
  auto archive_part = join->Part();
  auto realtime_part = join->Part();
  join->Arm();
  GetArchiveTotal(job, std::move(archive_part));
  realtime_.FwmatchKey(job->total_key, job->realtime_prefix,
                       RealtimeBodyInto(job, &job->realtime, &job->realtime_missing, std::move(realtime_part)),
                       job->all_days, job->unite_days);
}

void QueryGather::FinishUniques(std::shared_ptr<UniquesJob> job) {
  const ArchiveView view = job->archive_total.view;
  if (!FirstAnswersUsable(job, &QueryGather::RunUniques)) return;
  const auto masks = DeletionsAsPlanned(job->total_key, view.generation, job->archive_total.found, job->span,
                                        &job->deleted, &job->splits);
  if (!masks) {
    if (job->unite_days && !WholeUtcDays(job->span, job->skip, *job->splits)) job->unite_days = false;
    return AgainForDeletions(job, &QueryGather::RunUniques);
  }
  HourlyCounts archived;
  if (Status st = AddArchiveTotal(*job->session, job->total_key, job->archive_total, &archived, job->span, &*masks);
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
  const auto add_key = [&](std::string_view code, int64_t) { keys.push_back(job->archive_prefix + std::string(code)); };
  if (Status st = ForEachPlannedCode(plan.spans, plan.hours, add_key); !st.ok()) {
    return job->done(std::move(st));
  }
  // A series (units=-1) starts at its first hour with visitors, the key's or
  // the value's (sns=, skey=), as /clicks starts at the first hour with
  // clicks: AddRealtimeAndFinish takes it from the hours read.
  auto answered = [this, job, view, plan = std::move(plan)](Result<std::vector<ArchiveReply>> replies) {
    if (!replies.ok()) return job->done(replies.status());
    if (!SameGeneration(*replies, view, &job->attempts, [&] { RunUniques(job); },
                        [&](Status st) { job->done(std::move(st)); })) {
      return;
    }
    UniquesData data;
    data.gap = job->Gap(view);
    const bool total = job->target.sns.empty();
    Status st = ForEachMgetAnswer(*replies, [&](std::string_view key, const MgetAnswer& answer) -> Status {
      std::optional<DaySpan> span;
      auto hour = HourOfAnswer(key, job->archive_prefix, plan, &span);
      if (!hour.ok()) return hour.status();
      if (span) ++(span->level > 0 ? stats_.spans_read : stats_.day_uniques_read);
      auto columns = ColumnsOf(*job->session, key, answer,
                               total ? RecordKind::kUniqueTotal : RecordKind::kUniqueSubtotal);
      if (columns) {
        AddDecodedSketches(*columns, *hour, total ? "" : job->target.skey, &data.hours);
        return Status::Ok();
      }
      return total ? AddArchiveUniqueTotal(answer.text, *hour, &data.hours)
                   : AddArchiveUniqueSubtotals(answer.text, *hour, job->target.skey, &data.hours);
    });
    if (!st.ok()) return job->done(std::move(st));
    AddRealtimeAndFinish(job, view, std::move(data));
  };
  // Nothing to ask (most sparse keys have no archived hour in a window): no
  // round trip.
  if (keys.empty()) return answered(std::vector<ArchiveReply>{});
  archive_reads_.MGet(job->session, keys, std::move(answered));
}

}  // namespace clickatron::api
