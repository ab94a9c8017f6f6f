// Parallel fetch + merge for one query; see query_gather.h.
#include "query/query_gather.h"

#include <fmt/format.h>

#include "clickatron/record.h"
#include "clickatron/ymdh.h"
#include "query/fetch/fan_in.h"
#include "query/gather/gather_steps.h"
#include "query/merge/read_records.h"

namespace clickatron::api {

using gather::RealtimeBodyInto;

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

bool QueryGather::MustReadAllDays(const ArchiveView& view, Attempt& job) {
  if (!job.all_days && realtime_.MaySkipPast(view.last_day, job.skip_epoch)) {
    ++stats_.realtime_skip_rereads;
    realtime_.SkipNoMoreThan(view.last_day);
    job.all_days = true;
    return true;
  }
  if (view.last_day) realtime_.SkipDaysThrough(*view.last_day);
  return false;
}

Result<bool> QueryGather::ArchiveHoldsHandedOverDays(Attempt& job, std::function<void()> run_again) {
  const ArchiveView& view = job.archive_total.view;
  if (!archive_.BehindRealtime(view)) return true;
  const std::pair<int, size_t> replica{job.session->shard, job.archive_total.replica};
  const uint64_t deployed = archive_.DeployedGeneration();
  if (auto known = rolled_back_.find(replica.first);
      known != rolled_back_.end() && known->second.view == view && known->second.deployed == deployed) {
    return true;  // the rollback two replicas showed
  }
  if (!job.handover_reread) {
    job.handover_reread = true;
    job.behind_replica = replica;  // BeginAttempt points the re-read elsewhere
    job.behind_view = view;
    // Fetched (not kept) from a file behind the deployed one: the replica
    // lags (a deploy it missed, a restore), and every query it answers
    // would be read twice. Other queries skip it for a while too, as they
    // skip a failed one; a rollback the other replicas show is recorded
    // below, and a penalised replica is still asked when all are.
    if (!job.archive_total.kept) {
      archive_.Penalize(static_cast<size_t>(replica.first), replica.second);
    }
    ++stats_.handover_rereads;
    // By the deployed generation's shard count: the answer may be a dropped
    // shard's, routed by the count before a re-partition.
    archive_.RouteByDeployed(std::move(run_again));
    return false;
  }
  if (job.behind_replica != replica) {
    if (job.behind_view == view) rolled_back_[replica.first] = RolledBack{view, deployed};
    return true;
  }
  if (archive_.Replicas(static_cast<size_t>(replica.first)) <= 1) return true;
  return ShardUnavailable(fmt::format(
      "archive replica {} of shard {} serves generation {}, older than the generation realtime says is deployed, "
      "and no other replica of the shard answered",
      archive_.ReplicaName(static_cast<size_t>(replica.first), replica.second), replica.first, view.generation));
}

bool RealtimeGap::CoversWindow(int64_t end_ts) const {
  if (realtime_missing.ok()) return true;
  return archived_through.has_value() && end_ts <= (*archived_through + 1) * kSecondsPerDay;
}

// Shard counts come from the readers: the archive's as the replicas serve
// it, realtime's by day (realtime_shard_map.h).
QueryGather::QueryGather(const ClusterConfig& cluster, CachedArchiveReader& archive, RealtimeReader& realtime,
                         LookupCache& lookups, ReadStats& stats, const DeletionLog* deletions)
    : unite_days_(cluster.api.realtime_unite_days),
      archive_(archive.reader()),
      archive_reads_(archive),
      realtime_(realtime),
      lookups_(lookups),
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

std::optional<std::vector<HourSpan>> QueryGather::DeletionsAsPlanned(std::string_view total_key, uint64_t generation,
                                                                     bool found, const HourSpan& window,
                                                                     std::vector<HourSpan>* planned,
                                                                     std::optional<std::vector<int64_t>>* splits) const {
  const size_t bar = total_key.find('|');
  if (bar == std::string_view::npos) return std::vector<HourSpan>{};
  const std::string_view ns = total_key.substr(0, bar), tkey = total_key.substr(bar + 1);
  std::vector<HourSpan> masks = DeletedHours(ns, tkey, generation);
  if (!found || !splits->has_value()) return masks;
  // Both sorted and merged, and a generation's masks are some of every
  // deletion's: each lies inside one planned range unless it is new. One
  // outside the window changes nothing the job reads.
  const bool as_planned = std::all_of(masks.begin(), masks.end(), [&](const HourSpan& m) {
    if (m.end_ts <= window.begin_ts || window.end_ts <= m.begin_ts) return true;
    return std::any_of(planned->begin(), planned->end(),
                       [&](const HourSpan& p) { return p.begin_ts <= m.begin_ts && m.end_ts <= p.end_ts; });
  });
  if (as_planned) return masks;
  *planned = DeletedHours(ns, tkey, 0);
  gather::AddDeletionSplits(*planned, *splits);
  return std::nullopt;
}

Status QueryGather::AddArchiveTotal(const ArchiveReader::Session& session, std::string_view key,
                                    const ArchiveReply& reply, HourlyCounts* hours, const HourSpan& span,
                                    const std::vector<HourSpan>* masks) {
  if (!reply.found) return Status::Ok();
  const size_t bar = key.find('|');
  const std::vector<HourSpan> deleted =
      masks != nullptr                ? *masks
      : bar == std::string_view::npos ? std::vector<HourSpan>{}
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
  // Found in the cache: the key is read again, so all of it is decoded now
  // and kept with it.
  if (reply.kept) {
    auto decoded = DecodeArchiveTotal(reply.body);
    if (decoded.ok()) {
      auto total = std::make_shared<const ArchiveTotalHours>(std::move(*decoded));
      archive_reads_.KeepDecodedTotal(session, key, reply, total);
      return AddArchiveTotalHours(*total, hours, span);
    }
  }
  // A first read, or a kept text that does not decode whole: only the
  // span's columns are decoded. Damage before the window, which a first
  // read skips, must not make every second query fail; a kept text that
  // failed whole, or any text whose window fails, is forgotten, so that the
  // next query asks a replica again.
  Status st = AddArchiveTotalColumns(reply.body, hours, span);
  if (reply.kept || !st.ok()) archive_reads_.Forget(session, key, reply.view);
  return st;
}

std::shared_ptr<const DecodedColumns> QueryGather::ColumnsOf(const ArchiveReader::Session& session,
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
    // As for a total (AddArchiveTotalUnmasked): forgotten, so that the next
    // query asks the replica again, and this one read from the text as a
    // first read is, which decodes only the columns it needs (damage in
    // another subtotal's column must not fail every second query).
    archive_reads_.Forget(session, key, answer.reply->view);
    return nullptr;
  }
  auto columns = std::make_shared<const DecodedColumns>(std::move(decoded).value());
  archive_reads_.KeepDecodedColumns(session, key, answer.reply->view, columns);
  return columns;
}

// ---- what every gather job does ---------------------------------------------

void QueryGather::BeginAttempt(Attempt& job) {
  job.session = archive_.Begin(job.total_key);
  if (job.behind_replica && job.behind_replica->first == job.session->shard) {
    // A re-read of an answer that lacked a handed-over day: from another
    // replica, so that the same one answers again only if the others fail.
    archive_.StartAwayFrom(*job.session, job.behind_replica->second);
  }
  job.skip_epoch = realtime_.skip_epoch();
  job.archive_total = ArchiveReply{};
  job.realtime_missing = Status::Ok();
}

void QueryGather::GetArchiveTotal(std::shared_ptr<Attempt> job, std::function<void(Status)> part) {
  archive_reads_.Get(job->session, job->total_key, [job, part = std::move(part)](Result<ArchiveReply> reply) {
    if (reply.ok()) job->archive_total = std::move(*reply);
    part(reply.status());
  });
}

// ---- total -------------------------------------------------------------------

struct QueryGather::TotalJob : Attempt {
  HourSpan span;
  std::function<void(Result<TotalData>)> done;
  std::string realtime;
};

void QueryGather::FetchTotal(std::string ns, std::string tkey, HourSpan span,
                             std::function<void(Result<TotalData>)> done) {
  auto state = std::make_shared<TotalJob>();
  state->total_key = TotalArchiveKey(ns, tkey);
  state->span = span;
  state->done = std::move(done);
  RunTotal(std::move(state));
}

void QueryGather::RunTotal(std::shared_ptr<TotalJob> state) {
  BeginAttempt(*state);
  state->realtime.clear();
  auto join = FanIn::Create([this, state](Status st) {
    if (!st.ok()) return state->done(std::move(st));
    FinishTotal(state);
  });
  auto archive_part = join->Part();
  auto realtime_part = join->Part();
  join->Arm();
  GetArchiveTotal(state, std::move(archive_part));
  realtime_.FwmatchKey(state->total_key, state->total_key + ".",
                       RealtimeBodyInto(state, &state->realtime, &state->realtime_missing, std::move(realtime_part)),
                       state->all_days);
}

void QueryGather::FinishTotal(std::shared_ptr<TotalJob> state) {
  const ArchiveView& view = state->archive_total.view;
  if (!FirstAnswersUsable(state, &QueryGather::RunTotal)) return;
  TotalData data;
  data.gap = state->Gap(view);
  const std::string& key = state->total_key;
  Status st = AddArchiveTotal(*state->session, key, state->archive_total, &data.hours, state->span);
  if (st.ok()) st = AddRealtimeTotalLines(state->realtime, key + ".", view.last_day, &data.hours, state->span);
  if (!st.ok()) return state->done(std::move(st));
  state->done(std::move(data));
}

}  // namespace clickatron::api
