// The read path of one read loop (read_path.h): its readers, caches and
// gatherer, and the handlers of /clicks, /breakdown, /uniques and /lookup.
// Handlers parse and validate, ask QueryGather for the merged hourly data,
// roll it up (rollup.h) and answer; all on the loop thread. Shared steps
// and /lookup in read_path.cc, each query's handler in handlers/.
#pragma once

#include "query/read_path.h"

#include <fmt/format.h>

#include <type_traits>

#include "query/cache/cached_archive_reader.h"
#include "query/fetch/archive_reader.h"
#include "query/fetch/known_generation.h"
#include "clickatron/key_codec.h"
#include "clickatron/metrics_table.h"
#include "query/cache/lookup_cache.h"
#include "query/query_gather.h"
#include "query/answer/query_params.h"
#include "query/read_stats.h"
#include "query/fetch/realtime_reader.h"
#include "query/merge/rollup.h"
#include "query/answer/breakdown_json.h"
#include "query/answer/series_json.h"
#include "clickatron/timezone.h"
#include "query/answer/resolution.h"
#include "query/merge/unique_records.h"
#include "query/answer/query_windows.h"

namespace clickatron::api {

class ReadPathImpl : public ReadPath {
 public:
  ReadPathImpl(const DaemonContext& ctx, HttpServer& server, HttpClient& client, const Clock& clock,
               std::shared_ptr<ReadShared> shared)
      : clock_(clock),
        max_query_hours_(ctx.cluster.api.max_query_hours),
        metric_labels_(BaseLabels(ctx.http.daemon, ctx.http.member)),
        shared_(std::move(shared)),
        stats_(*shared_->stats),
        archive_(ctx.cluster, client, stats_,
                 ArchiveReader::Options{
                     .timeout_ms = ctx.cluster.api.request_timeout_ms,
                     .known_generation = shared_->known_generation}),
        archive_reads_(archive_, shared_->cache, stats_),
        realtime_(ctx.cluster, client, stats_,
                  RealtimeReader::Options{.timeout_ms = ctx.cluster.api.request_timeout_ms,
                                          .known_generation = shared_->known_generation}),
        lookups_(*shared_->cache),
        gather_(ctx.cluster, archive_reads_, realtime_, lookups_, stats_, shared_->deletions) {
    server.Route("/clicks", [this](const HttpExchangePtr& ex) { OnClicks(ex); }, kGet);
    server.Route("/breakdown", [this](const HttpExchangePtr& ex) { OnBreakdown(ex); }, kGet);
    server.Route("/lookup", [this](const HttpExchangePtr& ex) { OnLookup(ex); }, kGet);
    server.Route("/uniques", [this](const HttpExchangePtr& ex) { OnUniques(ex); }, kGet);
  }

  nlohmann::json StatsJson() const override { return stats_.ToJson(); }
  std::string StatsPrometheus() const override { return stats_.ToPrometheus(metric_labels_); }

 private:
  // Where the windows end when a query names no reference time.
  int64_t Now() const { return clock_.NowUnixSeconds(); }

  void Fail(const HttpExchangePtr& ex, const Status& st) {
    if (st.code() == StatusCode::kUnavailable) ++stats_.unavailable;
    ex->ReplyError(st);
  }

  // What every query does once its gather's data is in: makes the windows
  // when units=-1 (over the data, from first_hour() on), fails the query
  // when the realtime gap leaves them short, then runs `then` with the
  // windows and the answer's "resolution" (resolution.h), or fails the
  // query, once the manifest of the generation its data came from is known:
  // one GET /manifest per shard, generation and read loop, then at once. A
  // file of an older format (no day and span records to count on) fails
  // the query: its data was read as if it had them.
  void Resolve(const HttpExchangePtr& ex, const std::string& ns, const WindowParams& w,
               std::optional<QueryWindows> windows, const std::function<std::optional<int64_t>()>& first_hour,
               const RealtimeGap& archive, std::function<void(const QueryWindows&, const nlohmann::json&)> then);

  // /clicks (handlers/clicks_handler.cc)
  void OnClicks(const HttpExchangePtr& ex);

  // /clicks with sns= and skey=: one subtotal value's clicks, read as a
  // breakdown's subtotals are (day records for whole UTC days inside a sum,
  // hours at the edges) and kept for that value only.
  void ValueClicks(const HttpExchangePtr& ex, SeriesParams p, std::optional<QueryWindows> windows);

  void ReplyClicks(const HttpExchangePtr& ex, const SeriesParams& p, const UnitWindow& window,
                   const std::optional<UnitWindow>& earlier, const HourlyCounts& hours,
                   const nlohmann::json& resolution = nullptr);

  // /breakdown (handlers/breakdown_handler.cc)
  void OnBreakdown(const HttpExchangePtr& ex);

  // Per unit (or over the window), subtotal key -> sum.
  Result<std::vector<ValueSums>> Groups(const BreakdownParams& p, const UnitWindow& window,
                                        const HourlyBreakdown& subtotals);

  // The key's total per unit (or over the window), as Groups sums values.
  Result<std::vector<int64_t>> Totals(const BreakdownParams& p, const UnitWindow& window, const HourlyCounts& total) {
    if (!p.window.rollup) return SumByUnit(window, total);
    auto sum = SumWindow(window, total);
    if (!sum.ok()) return sum.status();
    return std::vector<int64_t>{*sum};
  }

  // Sums per unit (or over the window), then expands the hashes among the
  // keys that could make the top list, then ranks by full value. With an
  // earlier window, the same keys' sums there (unit i beside unit i): rows
  // are ranked by the current window only. What the rows leave out is
  // counted before the candidates are cut: "other" is every value's clicks
  // less the rows', "none" the key's total less every value's clicks.
  // `data_generation`: the archive generation the values were read from
  // (their hashes' lookups must not come from an older one).
  void ExpandAndReply(const HttpExchangePtr& ex, BreakdownParams p, UnitWindow window,
                      std::optional<UnitWindow> earlier, const HourlyCounts& total, const HourlyBreakdown& subtotals,
                      std::vector<KeyUniques> uniques, const nlohmann::json& resolution, uint64_t data_generation);

  void ReplyBreakdown(const HttpExchangePtr& ex, const BreakdownParams& p, const UnitWindow& window,
                      const std::vector<TopValues>& tops, const std::vector<RowsLeftOut>& left_out,
                      const std::optional<UnitWindow>& earlier, const std::vector<KeyCounts>& before,
                      const std::vector<KeyUniques>& uniques = {}, const nlohmann::json& resolution = nullptr) {
    ex->ReplyJsonData(WithResolution(BreakdownJson(p, window, tops, left_out, earlier, before, uniques, Now()),
                                     resolution));
  }

  // /uniques (handlers/uniques_handler.cc)
  void OnUniques(const HttpExchangePtr& ex);

  void ReplyUniques(const HttpExchangePtr& ex, const SeriesParams& p, const UnitWindow& window,
                    const std::optional<UnitWindow>& earlier, const HourlySketches& hours,
                    const nlohmann::json& resolution = nullptr);

  // /lookup
  void OnLookup(const HttpExchangePtr& ex);

  const Clock& clock_;
  const int64_t max_query_hours_;
  const std::string metric_labels_;  // daemon and member, on every sample of /metrics
  const std::shared_ptr<ReadShared> shared_;
  ReadStats& stats_;  // the node's, shared by its read loops
  TimeZoneDb zones_;
  ArchiveReader archive_;
  CachedArchiveReader archive_reads_;  // the read cache's layer over archive_
  RealtimeReader realtime_;
  LookupCache lookups_;
  QueryGather gather_;  // after the readers: destroyed first
};

}  // namespace clickatron::api
