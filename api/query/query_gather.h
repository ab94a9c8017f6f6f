// Gathers what one query needs from the archive replicas and the realtime
// shard of its key, in parallel, and merges the two into hourly counts, each
// hour counted once (see read_records.h for which source owns which day).
//
//   total:     archive get "ns|tkey"  +  realtime fwmatch "ns|tkey."
//   breakdown: the total (its archived hours are the index of which archive
//              subtotal records exist) and realtime fwmatch "sns.ns|tkey.",
//              then archive mget of day and span records "sns.ns|tkey.SPAN"
//              for runs of whole UTC days inside one of the query's sums
//              (plan/archive_plan.h) and "sns.ns|tkey.YMDH" for the other
//              archived hours in the window: every served file has a record
//              for every day and span with hours (format 2), so one it lacks
//              is one without.
//   lookups:   archive mget + realtime mget of "l|HASH" on each hash's shards,
//              through a cache.
//
// Archive shards are those of the count the archive serves (ArchiveReader:
// it follows a change of archive_shards once the re-partitioned generation
// is deployed); realtime shards those of the cluster file.
//   uniques:   the total (its archived hours are the index of which archive
//              unique records exist) and realtime fwmatch "~ns|tkey." (or
//              "~sns.ns|tkey.skey."), then archive mget "~ns|tkey.YMDH" (or
//              "~sns.ns|tkey.YMDH") for the archived hours in the window, and
//              "~ns|tkey.SPAN" (or "~sns.ns|tkey.SPAN") instead of the hours
//              of runs of whole UTC days inside one unit, as the breakdown's
//              plan (format 2: a day and span record for every day and span
//              with unique hours). A breakdown with uniques adds realtime
//              fwmatch "~sns.ns|tkey." and the unique twins of its subtotal
//              keys ("~sns.ns|tkey.SPAN", "~sns.ns|tkey.YMDH") to its archive
//              mget, from the window's first hour on.
//
// Consistency: a gather's archive round trips (the total's get, then the
// mget) must see one archive file (a reload in between could count a day
// twice or not at all); when they do not, the gather starts again (a few
// times, then 503). And its archive answer must hold every day realtime has
// handed over and be of the deployed generation or a newer one
// (ArchiveHoldsHandedOverDays).
//
// Any source that cannot answer fails the gather with SHARD_UNAVAILABLE: a
// short series is never returned as if it were whole.
//
// Where it is: the steps every query shares and totals in query_gather.cc;
// breakdowns, /uniques and lookups in gather/ (one file each), with the
// helpers they share (gather/gather_steps.h) and the pure read plan
// (plan/archive_plan.h).
//
// Thread-safety: loop thread only.
#pragma once

#include <functional>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "clickatron/config.h"
#include "deletions/deletion_log.h"
#include "query/cache/cached_archive_reader.h"
#include "query/fetch/archive_reader.h"
#include "query/merge/decoded_columns.h"
#include "query/cache/lookup_cache.h"
#include "query/read_stats.h"
#include "query/fetch/realtime_reader.h"
#include "query/merge/rollup.h"
#include "query/plan/archive_plan.h"
#include "query/merge/unique_records.h"

namespace clickatron::api {

// When the realtime shard did not answer but the archive did, the data is
// whole only for the days the archive holds: `realtime_missing` says so, and
// the caller may still answer a window that ends by then (CoversWindow).
struct RealtimeGap {
  Status realtime_missing;  // OK when realtime answered
  ArchiveLastDay archived_through;
  uint64_t archive_generation = 0;  // the generation the archive answered from (0: none)
  std::optional<uint32_t> archive_crc32;  // and its file's crc32 (nullopt: not said)
  // The session that read it (its shard and replica serve that generation):
  // what else the query must know of the generation is asked there.
  std::shared_ptr<ArchiveReader::Session> archive_session;
  // True when the data is whole for a window ending at end_ts.
  bool CoversWindow(int64_t end_ts) const;
};

struct TotalData {
  HourlyCounts hours;
  RealtimeGap gap;
};

struct BreakdownData {
  HourlyCounts total;           // hours in the requested span
  HourlyBreakdown subtotals;    // hours in the requested span only
  HourlySketches unique_subtotals;  // with uniques: each subtotal key's visitors per hour
  RealtimeGap gap;
  uint64_t archive_generation = 0;  // the generation the archive records came from (0: none)
};

struct UniquesData {
  HourlySketches hours;                // hours in the requested span
  std::optional<int64_t> first_hour;   // the first hour with clicks or visitors; nullopt: none
  RealtimeGap gap;
};

// Which unique records a query reads: the key's, or one subtotal value's.
struct UniquesTarget {
  std::string ns, tkey;    // stored forms
  std::string sns, skey;   // both empty, or one subtotal value (skey stored)
};

// One key's answer in archive mget replies: a line's value (text), or the
// decoded columns the cache kept with it (columns, text empty).
struct MgetAnswer {
  std::string_view text;
  const std::shared_ptr<const DecodedColumns>* columns = nullptr;
  const ArchiveReply* reply = nullptr;  // the reply it came in (kept: from the cache)
};

class QueryGather {
 public:
  // Archive records are read through `archive` (the read cache's layer over
  // its reader, which routes the sessions).
  QueryGather(const ClusterConfig& cluster, CachedArchiveReader& archive, RealtimeReader& realtime,
              LookupCache& lookups, ReadStats& stats, const DeletionLog* deletions = nullptr);

  // ns and tkey in stored form (tkey hashed when needed). Only hours in
  // `span` are kept.
  void FetchTotal(std::string ns, std::string tkey, HourSpan span, std::function<void(Result<TotalData>)> done);
  // Total and subtotal hours in [begin_ts, end_ts); archive subtotal
  // records of hours in `skip` are not fetched (the gap between a window and
  // the earlier one it is compared with).
  // With `uniques_from`, also every subtotal key's visitors per hour from
  // that hour on (the current window: an earlier one's are never shown).
  // `splits`: every time at which the caller's sums split (unit starts,
  // window ends). A UTC day with no split inside it is one sum's, so its
  // subtotals may come as its day record, entered at the day's first hour;
  // nullopt: every hour is read (the caller does not know its units yet).
  void FetchBreakdown(std::string sns, std::string ns, std::string tkey, int64_t begin_ts, int64_t end_ts,
                      std::function<void(Result<BreakdownData>)> done, HourSpan skip = HourSpan{0, 0},
                      std::optional<int64_t> uniques_from = std::nullopt,
                      std::optional<std::vector<int64_t>> splits = std::nullopt);
  // The visitors per hour of `target` in `span`, skipping archived hours in
  // `skip` (as FetchBreakdown). An unbounded span (units=-1) with more
  // archived hours than `max_hours` answers WINDOW_TOO_LARGE: any window
  // over them would be larger still. `splits` as for FetchBreakdown: a UTC
  // day with no split inside it may come as its day unique record (the
  // union of its hours), entered at the day's first hour.
  void FetchUniques(UniquesTarget target, HourSpan span, HourSpan skip, int64_t max_hours,
                    std::function<void(Result<UniquesData>)> done,
                    std::optional<std::vector<int64_t>> splits = std::nullopt);
  // The full values behind hashes. A hash with no lookup record in any source
  // is absent from the map (the caller decides); SHARD_UNAVAILABLE when a
  // hash is unresolved and one of its sources did not answer, or its archive
  // shard answered from a generation older than `data_generation` (the one
  // the hashes were read from: a deploy under way has reached their shard,
  // not yet the lookup's, whose record a `load --now` may have brought with
  // them; shown as bare hashes, the answer would mix two generations).
  void ResolveHashes(std::vector<std::string> hashes,
                     std::function<void(Result<std::map<std::string, std::string>>)> done,
                     uint64_t data_generation = 0);

 private:
  // What every gather job holds for one attempt and carries to the next (a
  // read again after a handover, of all days, after a generation change).
  struct Attempt {
    std::string total_key;  // ns|tkey: the key's total record, the index of every other record read
    std::shared_ptr<ArchiveReader::Session> session;
    ArchiveReply archive_total;  // the answer for total_key
    Status realtime_missing;
    int attempts = 1;  // the first run, and one more per generation change (SameGeneration)
    bool handover_reread = false;  // run again once: the archive answer lacked a handed-over day
    // The (shard, replica) whose answer lacked it.
    std::optional<std::pair<int, size_t>> behind_replica;
    ArchiveView behind_view;  // what that answer said of its file
    bool all_days = false;  // realtime read without skipping (MustReadAllDays)
    uint64_t skip_epoch = 0;  // the realtime reader's when the attempt began
    // What the caller is told of this attempt's sources, its archive
    // answers being of `view`.
    RealtimeGap Gap(const ArchiveView& view) const {
      return RealtimeGap{realtime_missing, view.last_day, view.generation, view.file_crc32, session};
    }
  };
  // A new attempt of `job`: its session, and none of the last attempt's
  // answers.
  void BeginAttempt(Attempt& job);
  // Gets the job's total record on its session into its archive_total;
  // `part` gets the read's status.
  void GetArchiveTotal(std::shared_ptr<Attempt> job, std::function<void(Status)> part);
  struct TotalJob;
  struct BreakdownJob;
  struct UniquesJob;
  // A gather's first answers are in, its archive answer of `view`: true
  // when realtime, read skipping days (RealtimeReader::skip_through), may
  // lack days that answer does not hold; *all_days is then set and the
  // caller runs the gather again, archive and realtime together as the
  // first time (a realtime read sent a round trip after the archive answer
  // could find such a day already cleared). Otherwise raises the skip to
  // the answer's last day. An answer ending before the skip lowers it
  // (a rollback, a manifest put right), so that the next queries skip no
  // more than the archive holds and are not all read twice.
  bool MustReadAllDays(const ArchiveView& view, Attempt& job);
  // A gather's first answers are in: true when its archive answer holds
  // every day realtime has handed over to the archive (known_generation.h:
  // realtime may have cleared them) and is of the deployed generation or a
  // newer one. Otherwise the answer came from a file older than the
  // deployed one (kept, or sent just before a deploy): the
  // first time, it notes the replica that answered, calls run_again (the
  // next read takes no kept answer of such a file, and starts at another
  // replica of the shard) and returns false. An answer asked
  // again that still lacks the day, from another replica or from a shard
  // with one replica, is the archive's own (a rollback to an older
  // generation): the gather goes on with it (true). From the same replica
  // again, while the shard has others: they did not answer, and that one
  // serves an older file than the others (restored from a backup while
  // they were away): SHARD_UNAVAILABLE, not an answer without the days it
  // lacks.
  // `run_again` may run later (after shard 0 is asked which count the
  // deployed generation is cut into): it must own what it uses.
  Result<bool> ArchiveHoldsHandedOverDays(Attempt& job, std::function<void()> run_again);
  // Both checks of a gather's first answers, as every Finish* makes them:
  // true when `job` goes on with them; false when it was run again (`run`)
  // or failed (its `done` called).
  template <typename Job>
  bool FirstAnswersUsable(const std::shared_ptr<Job>& job, void (QueryGather::*run)(std::shared_ptr<Job>)) {
    const Result<bool> holds = ArchiveHoldsHandedOverDays(*job, [this, job, run] { (this->*run)(job); });
    if (!holds.ok()) {
      job->done(holds.status());
      return false;
    }
    if (!*holds) return false;
    if (!MustReadAllDays(job->archive_total.view, *job)) return true;
    (this->*run)(job);
    return false;
  }
  void RunTotal(std::shared_ptr<TotalJob> job);
  void FinishTotal(std::shared_ptr<TotalJob> job);
  static constexpr int kMaxGenerationAttempts = 3;
  // The hours of key `tkey` of `ns` deleted (POST /delete) that archive
  // generation `generation` may still hold (0: any), sorted and disjoint.
  std::vector<HourSpan> DeletedHours(std::string_view ns, std::string_view tkey, uint64_t generation) const;
  // The archived hours in `span` of a total record's answer (none when not
  // found), less the deleted hours its generation still holds: the total's
  // hours are the index of every other record a query reads, so a deleted
  // hour is read nowhere. From its decoded columns when the cache kept them
  // with it; a kept answer without them is decoded whole and they are kept
  // (the key's next queries bisect them); another answer is read from its
  // text.
  // `masks`: those deleted hours, as taken by DeletionsAsPlanned (null:
  // taken now).
  Status AddArchiveTotal(const ArchiveReader::Session& session, std::string_view key, const ArchiveReply& reply,
                         HourlyCounts* hours, const HourSpan& span, const std::vector<HourSpan>* masks = nullptr);
  // A deletion taken after a job planned its reads (its splits, when it
  // began) may cover hours it planned to read as a span: the total would be
  // masked with it and the span read whole, a breakdown's rows from before
  // the deletion beside a total from after it (a probe saw 8 in 7,000
  // breakdowns in flight during deletions). So a job's answer leaves out
  // the deleted hours taken once, here: those of `total_key` an answer of
  // archive `generation` (`found`: it has the key) still holds, when each
  // that reaches into `window` lies inside a range of `planned` (the job's
  // deletions, which it split at). Otherwise nullopt: `planned` and
  // `splits` take in the deletions known now and the job runs again
  // (AgainForDeletions). A job that read no span (no splits, or no total in
  // the file) mixes nothing: its masks are taken as they are.
  std::optional<std::vector<HourSpan>> DeletionsAsPlanned(std::string_view total_key, uint64_t generation, bool found,
                                                          const HourSpan& window, std::vector<HourSpan>* planned,
                                                          std::optional<std::vector<int64_t>>* splits) const;
  // Runs `job` again after DeletionsAsPlanned said no (counting the
  // attempt), or fails it with SHARD_UNAVAILABLE after kMaxGenerationAttempts.
  template <typename Job>
  void AgainForDeletions(const std::shared_ptr<Job>& job, void (QueryGather::*run)(std::shared_ptr<Job>)) {
    if (job->attempts >= kMaxGenerationAttempts) {
      return job->done(Status::Unavailable(
          "deletions of the key kept arriving during the query (" + std::to_string(job->attempts) + " attempts)",
          "SHARD_UNAVAILABLE"));
    }
    ++job->attempts;
    ++stats_.deletion_retries;
    (this->*run)(job);
  }
  Status AddArchiveTotalUnmasked(const ArchiveReader::Session& session, std::string_view key,
                                 const ArchiveReply& reply, HourlyCounts* hours, const HourSpan& span);
  void RunUniques(std::shared_ptr<UniquesJob> job);
  void FinishUniques(std::shared_ptr<UniquesJob> job);
  // Adds realtime's lines to a job's archive part and answers it.
  void AddRealtimeAndFinish(const std::shared_ptr<UniquesJob>& job, const ArchiveView& view, UniquesData data);
  // After a job's second round trip (an archive mget that must see the
  // generation its get saw): true when every answer did. Otherwise it calls
  // run_again (counting the attempt), or `fail` with SHARD_UNAVAILABLE after
  // kMaxGenerationAttempts, and returns false.
  bool SameGeneration(const std::vector<ArchiveReply>& replies, const ArchiveView& view, int* attempts,
                      const std::function<void()>& run_again, const std::function<void(Status)>& fail);
  // The day and span records a breakdown asks beside its total, on the
  // archive's last day `last_day` (breakdown_gather.cc says why).
  std::vector<DaySpan> EarlySpans(const BreakdownJob& job, int64_t last_day) const;
  void RunBreakdown(std::shared_ptr<BreakdownJob> job);
  void FinishBreakdown(std::shared_ptr<BreakdownJob> job);
  Status AddArchiveBreakdownLines(const BreakdownJob& job, const std::vector<ArchiveReply>& replies,
                                  const ArchivePlan& plan, BreakdownData* data);
  void CompleteBreakdown(const std::shared_ptr<BreakdownJob>& job, BreakdownData data);
  // The decoded columns of a subtotal or unique record's mget answer: those
  // the cache kept with it; for a kept answer without them, its text decoded
  // as `kind` and kept with it now (its key was asked at least twice: the
  // next queries will read them); nullptr for an answer a replica sent, or
  // a kept one that does not decode whole (forgotten): read its text.
  enum class RecordKind { kSubtotal, kUniqueSubtotal, kUniqueTotal };
  std::shared_ptr<const DecodedColumns> ColumnsOf(const ArchiveReader::Session& session, std::string_view key,
                                                  const MgetAnswer& answer, RecordKind kind);

  // Takes lookup lines of `keys` from one source's answer (bodies), or marks
  // them as from a source that did not answer (st UNAVAILABLE).
  // `generation`: the archive generation that answered (0: realtime, or
  // none).
  using LookupAbsorb = std::function<Status(const std::vector<std::string>& keys, const Status& st,
                                            const std::vector<std::string_view>& bodies, uint64_t generation)>;
  // Archive mget of lookup keys "l|HASH" on their shards under
  // `shard_count` (see the .cc).
  void ArchiveLookups(std::vector<std::string> keys, int shard_count, int attempts_left, LookupAbsorb absorb,
                      std::function<void(Status)> done);

  const bool unite_days_;  // [api] realtime_unite_days
  ArchiveReader& archive_;                // sessions, routing, manifest facts
  CachedArchiveReader& archive_reads_;    // the records, through the read cache
  RealtimeReader& realtime_;
  LookupCache& lookups_;
  ReadStats& stats_;
  const DeletionLog* deletions_;  // null: a node without deletions (tests)
  // By archive shard: a file older than the deployed generation that two
  // of its replicas served (a rollback of the archive, not one replica
  // restored from a backup), and the deployed generation when it was seen.
  // Answers of that file are taken without reading them again, and without
  // needing both replicas up, until a newer generation is deployed.
  struct RolledBack {
    ArchiveView view;
    uint64_t deployed = 0;
  };
  std::map<int, RolledBack> rolled_back_;
};

}  // namespace clickatron::api
