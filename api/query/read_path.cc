// The query side of the API node: /clicks, /breakdown, /lookup (see
// read_path.h). Handlers parse and validate, ask QueryGather for the merged
// hourly data, roll it up (rollup.h) and answer; all on the loop thread.
#include "query/read_path.h"

#include <fmt/format.h>

#include <limits>
#include <type_traits>

#include "query/fetch/archive_reader.h"
#include "query/fetch/known_generation.h"
#include "clickatron/key_codec.h"
#include "clickatron/metrics_table.h"
#include "clickatron/record.h"
#include "clickatron/ymdh.h"
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
#include "query/cache/union_estimate_cache.h"

namespace clickatron::api {
namespace {

// No record can hold an hour outside the YMDH years: a window wholly outside
// them is answered without asking anyone.
bool WindowMayHoldData(const UnitWindow& window) {
  static const int64_t kFirst = DaysFromCivil({kMinYmdhYear, 1, 1}) * kSecondsPerDay;
  return !window.empty() && window.end_ts() > kFirst && window.begin_ts() < kEndOfHourCodes;
}

nlohmann::json WindowEcho(const WindowParams& w) {
  return nlohmann::json{{"unit", UnitName(w.unit)},
                        {"units", w.units},
                        {"tz_offset", w.tz_offset},
                        {"unit_reference_ts", w.reference_echo}};
}

// A query's window and, with compare=, the earlier one set beside it.
struct QueryWindows {
  UnitWindow window;
  std::optional<UnitWindow> earlier;

  bool MayHoldData() const { return WindowMayHoldData(window) || (earlier && WindowMayHoldData(*earlier)); }
  // What one gather reads for both: from the earlier window's start (it
  // always comes first) to the window's end.
  HourSpan Span() const {
    return HourSpan{earlier && !earlier->empty() ? std::min(earlier->begin_ts(), window.begin_ts())
                                                 : window.begin_ts(),
                    window.end_ts()};
  }
  // The hours between the earlier window and the window (compare=year):
  // read for neither. Empty without compare= and for compare=previous.
  HourSpan Gap() const { return earlier ? HourSpan{earlier->end_ts(), window.begin_ts()} : HourSpan{0, 0}; }
  // Where a breakdown's sums split: the windows' ends, and with rollup=false
  // every unit start too. A UTC day between two splits is one sum's.
  // nullopt for hourly units (rollup=false): no day fits in one, every hour
  // is read (and 720 splits for 30 days would only say so slowly).
  std::optional<std::vector<int64_t>> SumSplits(Unit unit, bool rollup) const {
    if (!rollup && unit == Unit::kHour) return std::nullopt;
    std::vector<int64_t> splits;
    for (const UnitWindow* w : {&window, earlier ? &*earlier : nullptr}) {
      if (w == nullptr || w->empty()) continue;
      splits.push_back(w->begin_ts());
      splits.push_back(w->end_ts());
      if (!rollup) {
        for (size_t i = 0; i < w->size(); ++i) splits.push_back(w->start(i));
      }
    }
    return splits;
  }
};

Result<QueryWindows> WithEarlier(const WindowParams& w, Result<UnitWindow> window, int64_t max_hours) {
  if (!window.ok()) return window.status();
  QueryWindows out{std::move(*window), std::nullopt};
  if (w.compare != Compare::kNone) {
    auto earlier = ComparedWindow(out.window, w.compare, max_hours);
    if (!earlier.ok()) return earlier.status();
    out.earlier = std::move(*earlier);
  }
  return out;
}

// units=N: the windows are known before any data is read.
Result<QueryWindows> FixedWindows(const WindowParams& w, int64_t max_hours) {
  return WithEarlier(w, UnitWindow::Ending(w.unit, w.tz_offset, w.reference_ts, w.units, max_hours), max_hours);
}

// units=-1: from the unit of the first hour with data (nullopt: none) to the
// reference unit.
Result<QueryWindows> WindowsOverData(const WindowParams& w, std::optional<int64_t> first_hour, int64_t max_hours) {
  // No data at all: a first hour after the reference makes the window empty.
  const int64_t first = first_hour.value_or(kMaxReferenceTs + 366 * kSecondsPerDay);
  return WithEarlier(w, UnitWindow::Spanning(w.unit, w.tz_offset, first, w.reference_ts, max_hours), max_hours);
}

// What a breakdown gather reads for a query: [begin_ts, end_ts), the hours
// skipped between its windows and where its sums split. Without windows
// (units=-1, known once the data is) every hour up to the end of the
// reference unit, with no split known.
struct BreakdownReach {
  int64_t begin_ts = std::numeric_limits<int64_t>::min();
  int64_t end_ts = 0;
  HourSpan skip{0, 0};
  std::optional<std::vector<int64_t>> splits;
};

Result<BreakdownReach> ReachOf(const WindowParams& w, const std::optional<QueryWindows>& windows, int64_t max_hours) {
  BreakdownReach reach;
  if (windows) {
    const HourSpan span = windows->Span();
    reach.begin_ts = span.begin_ts;
    reach.end_ts = span.end_ts;
    reach.skip = windows->Gap();
    reach.splits = windows->SumSplits(w.unit, w.rollup);
    return reach;
  }
  auto last = UnitWindow::Ending(w.unit, w.tz_offset, w.reference_ts, 1, max_hours);
  if (!last.ok()) return last.status();
  reach.end_ts = last->end_ts();
  return reach;
}

std::optional<int64_t> FirstHour(const HourlyCounts& total, const HourlyBreakdown& subtotals) {
  std::optional<int64_t> first;
  if (!total.empty()) first = total.begin()->first;
  for (const SubtotalCount& c : subtotals) first = std::min(first.value_or(c.hour), c.hour);
  return first;
}

// (current - earlier) / earlier; null when the earlier count is 0.
nlohmann::json Change(int64_t current, int64_t earlier) {
  if (earlier == 0) return nullptr;
  return static_cast<double>(current - earlier) / static_cast<double>(earlier);
}

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
                     .known_generation = shared_->known_generation,
                     .cache = shared_->cache}),
        realtime_(ctx.cluster, client, stats_,
                  RealtimeReader::Options{.timeout_ms = ctx.cluster.api.request_timeout_ms,
                                          .known_generation = shared_->known_generation}),
        lookups_(*shared_->cache),
        sketch_texts_(*shared_->cache, stats_),
        unions_(*shared_->cache, stats_),
        gather_(ctx.cluster, archive_, realtime_, lookups_, sketch_texts_, stats_, shared_->deletions) {
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

  // Runs `then` with the answer's "resolution" (resolution.h), or fails the
  // query, once the manifest of the generation its data came from is known:
  // one GET /manifest per shard, generation and read loop, then at once. A
  // file of an older format (no day and span records to count on) fails
  // the query: its data was read as if it had them.
  void Resolve(const HttpExchangePtr& ex, const std::string& ns, const RealtimeGap& archive, HourSpan read,
               const WindowParams& w, std::function<void(const nlohmann::json&)> then) {
    const uint64_t generation = archive.archive_generation;
    if (generation == 0 || archive.archive_session == nullptr) return then(nlohmann::json());
    auto decide = [this, ex, ns, generation, read, w, then = std::move(then)](const ArchiveReader::ManifestFacts& rules) {
      if (!rules.manifest_read) {
        return Fail(ex, Status::Unavailable(fmt::format("the archive replica that answered did not say which days of "
                                                        "generation {} are rolled up (GET /manifest: no answer, or a "
                                                        "newer generation by then); try again",
                                                        generation),
                                            "SHARD_UNAVAILABLE"));
      }
      if (!rules.whole) {
        return Fail(ex, Status::Unavailable(
                            fmt::format("archive generation {} is of an older format (its manifest does not say "
                                        "format 2 with every day and span record): the API reads format 2 only; "
                                        "the rebuild's next run converts it, `clickatron manifest --force "
                                        "--generation N FILE` (N above {}) a file brought in by hand",
                                        generation, generation),
                            "OLD_ARCHIVE_FORMAT"));
      }
      const AppliedRetention* applied = rules.retention ? RetentionOf(*rules.retention, ns) : nullptr;
      auto resolution = CheckResolution(applied, read.begin_ts, read.end_ts, w, zones_);
      if (!resolution.ok()) return Fail(ex, resolution.status());
      then(*resolution);
    };
    // Every shard's manifest of a generation lists the same boundaries: the
    // shard and replica that served the data serve that generation (answered
    // at once once known: only manifests read are kept).
    archive_.ReadManifestFacts(archive.archive_session, generation, archive.archive_crc32, std::move(decide));
  }

  // ---- /clicks ---------------------------------------------------------------

  void OnClicks(const HttpExchangePtr& ex) {
    auto params = ParseSeriesParams(ex->args(), Now(), zones_);
    if (!params.ok()) return Fail(ex, params.status());
    std::optional<QueryWindows> windows;  // units=-1: known once the data is
    HourSpan span;
    if (params->window.units != -1) {
      auto fixed = FixedWindows(params->window, max_query_hours_);
      if (!fixed.ok()) return Fail(ex, fixed.status());
      if (!fixed->MayHoldData()) return ReplyClicks(ex, *params, fixed->window, fixed->earlier, HourlyCounts{});
      // One gather for both windows: the earlier one rides in the same
      // archive get and realtime scan (a key's total is one record).
      span = fixed->Span();
      windows = std::move(*fixed);
    }
    if (!params->sns.empty()) return ValueClicks(ex, std::move(*params), std::move(windows));
    // Locals first: the lambda below takes *params by move, and argument
    // evaluation order is unspecified.
    std::string ns = params->ns;
    std::string tkey = StoreKeyPart(params->key).stored;
    gather_.FetchTotal(std::move(ns), std::move(tkey), span,
                       [this, ex, p = std::move(*params), windows = std::move(windows)](Result<TotalData> data) mutable {
                         if (!data.ok()) return Fail(ex, data.status());
                         if (!windows) {
                           auto over = WindowsOverData(p.window, FirstHour(data->hours, {}), max_query_hours_);
                           if (!over.ok()) return Fail(ex, over.status());
                           windows = std::move(*over);
                         }
                         if (!data->gap.CoversWindow(windows->window.end_ts())) {
                           return Fail(ex, data->gap.realtime_missing);
                         }
                         auto held = std::make_shared<TotalData>(std::move(*data));
                         auto w = std::make_shared<QueryWindows>(std::move(*windows));
                         Resolve(ex, p.ns, held->gap, w->Span(), p.window,
                                 [this, ex, p, w, held](const nlohmann::json& resolution) {
                                   ReplyClicks(ex, p, w->window, w->earlier, held->hours, resolution);
                                 });
                       });
  }

  // /clicks with sns= and skey=: one subtotal value's clicks, read as a
  // breakdown's subtotals are (day records for whole UTC days inside a sum,
  // hours at the edges) and kept for that value only.
  void ValueClicks(const HttpExchangePtr& ex, SeriesParams p, std::optional<QueryWindows> windows) {
    auto reach = ReachOf(p.window, windows, max_query_hours_);
    if (!reach.ok()) return Fail(ex, reach.status());
    std::string sns = p.sns;
    std::string ns = p.ns;
    std::string tkey = StoreKeyPart(p.key).stored;
    gather_.FetchBreakdown(
        std::move(sns), std::move(ns), std::move(tkey), reach->begin_ts, reach->end_ts,
        [this, ex, p = std::move(p), windows = std::move(windows)](Result<BreakdownData> data) mutable {
          if (!data.ok()) return Fail(ex, data.status());
          const std::string skey = StoreKeyPart(p.skey).stored;
          HourlyCounts hours;
          for (const SubtotalCount& column : data->subtotals) {
            if (column.key != skey) continue;
            if (Status st = hours.Add(column.hour, column.count); !st.ok()) return Fail(ex, st);
          }
          if (!windows) {
            auto over = WindowsOverData(p.window, FirstHour(hours, {}), max_query_hours_);
            if (!over.ok()) return Fail(ex, over.status());
            windows = std::move(*over);
          }
          if (!data->gap.CoversWindow(windows->window.end_ts())) return Fail(ex, data->gap.realtime_missing);
          auto held = std::make_shared<HourlyCounts>(std::move(hours));
          auto w = std::make_shared<QueryWindows>(std::move(*windows));
          Resolve(ex, p.ns, data->gap, w->Span(), p.window,
                  [this, ex, p, w, held](const nlohmann::json& resolution) {
                    ReplyClicks(ex, p, w->window, w->earlier, *held, resolution);
                  });
        },
        reach->skip, std::nullopt, std::move(reach->splits));
  }

  void ReplyClicks(const HttpExchangePtr& ex, const SeriesParams& p, const UnitWindow& window,
                   const std::optional<UnitWindow>& earlier, const HourlyCounts& hours,
                   const nlohmann::json& resolution = nullptr) {
    if (earlier) return ReplyComparedClicks(ex, p, window, *earlier, hours, resolution);
    if (p.window.rollup) {
      auto sum = SumWindow(window, hours);
      if (!sum.ok()) return Fail(ex, sum.status());
      return ex->ReplyJsonData(WithResolution(RollupJson(p.window, *sum), resolution));
    }
    auto sums = SumByUnit(window, hours);
    if (!sums.ok()) return Fail(ex, sums.status());
    ex->ReplyJsonData(WithResolution(SeriesJson(p.window, window, *sums, Now()), resolution));
  }

  // "clicks" as without compare=, and "compare": the earlier window's in the
  // same shape, with the change of the totals.
  void ReplyComparedClicks(const HttpExchangePtr& ex, const SeriesParams& p, const UnitWindow& window,
                           const UnitWindow& earlier, const HourlyCounts& hours, const nlohmann::json& resolution) {
    auto now_total = SumWindow(window, hours);
    auto then_total = SumWindow(earlier, hours);
    if (!now_total.ok()) return Fail(ex, now_total.status());
    if (!then_total.ok()) return Fail(ex, then_total.status());
    nlohmann::json data = WindowEcho(p.window);
    nlohmann::json compare = {{"window", CompareName(p.window.compare)}, {"change", Change(*now_total, *then_total)}};
    const int64_t now = Now();
    if (p.window.rollup) {
      data["clicks"] = *now_total;
      compare["clicks"] = *then_total;
    } else {
      auto series = [&](const UnitWindow& w) -> Result<nlohmann::json> {
        auto sums = SumByUnit(w, hours);
        if (!sums.ok()) return sums.status();
        nlohmann::json list = nlohmann::json::array();
        for (size_t i = w.size(); i-- > 0;) {
          list.push_back({{"dt", w.start(i)}, {"clicks", (*sums)[i]}});
          if (!w.Complete(i, now)) list.back()["complete"] = false;
        }
        return list;
      };
      auto now_series = series(window);
      auto then_series = series(earlier);
      if (!now_series.ok()) return Fail(ex, now_series.status());
      if (!then_series.ok()) return Fail(ex, then_series.status());
      data["clicks"] = std::move(*now_series);
      compare["clicks"] = std::move(*then_series);
    }
    data["compare"] = std::move(compare);
    if (!resolution.is_null()) data["resolution"] = resolution;
    ex->ReplyJson(std::move(data));
  }

  // ---- /breakdown ------------------------------------------------------------

  void OnBreakdown(const HttpExchangePtr& ex) {
    auto params = ParseBreakdownParams(ex->args(), Now(), zones_);
    if (!params.ok()) return Fail(ex, params.status());
    const WindowParams& w = params->window;
    std::optional<QueryWindows> windows;  // units=-1: known once the data is
    if (w.units != -1) {
      auto fixed = FixedWindows(w, max_query_hours_);
      if (!fixed.ok()) return Fail(ex, fixed.status());
      if (!fixed->MayHoldData()) return ReplyBreakdown(ex, *params, fixed->window, {}, {}, fixed->earlier, {});
      windows = std::move(*fixed);
    }
    auto reach = ReachOf(w, windows, max_query_hours_);
    if (!reach.ok()) return Fail(ex, reach.status());
    // Locals first: the lambda below takes *params by move.
    std::string sns = params->sns;
    std::string ns = params->ns;
    std::string tkey = StoreKeyPart(params->key).stored;
    std::optional<int64_t> uniques_from;  // visitors are shown for the window only
    if (params->uniques) uniques_from = windows ? windows->window.begin_ts() : HourSpan{}.begin_ts;
    gather_.FetchBreakdown(
        std::move(sns), std::move(ns), std::move(tkey), reach->begin_ts, reach->end_ts,
        [this, ex, p = std::move(*params), windows = std::move(windows)](Result<BreakdownData> data) mutable {
          if (!data.ok()) return Fail(ex, data.status());
          if (!windows) {
            auto over = WindowsOverData(p.window, FirstHour(data->total, data->subtotals), max_query_hours_);
            if (!over.ok()) return Fail(ex, over.status());
            windows = std::move(*over);
          }
          if (!data->gap.CoversWindow(windows->window.end_ts())) return Fail(ex, data->gap.realtime_missing);
          std::vector<KeyUniques> uniques;
          if (p.uniques) {
            if (p.window.rollup) {
              uniques.push_back(KeyUniquesOverWindow(windows->window, data->unique_subtotals, &unions_));
            } else {
              uniques = KeyUniquesByUnit(windows->window, data->unique_subtotals, &unions_);
            }
          }
          auto held = std::make_shared<BreakdownData>(std::move(*data));
          auto w = std::make_shared<QueryWindows>(std::move(*windows));
          auto held_uniques = std::make_shared<std::vector<KeyUniques>>(std::move(uniques));
          Resolve(ex, p.ns, held->gap, w->Span(), p.window,
                  [this, ex, p, w, held, held_uniques](const nlohmann::json& resolution) {
                    ExpandAndReply(ex, p, w->window, w->earlier, held->total, held->subtotals,
                                   std::move(*held_uniques), resolution);
                  });
        },
        reach->skip, uniques_from, std::move(reach->splits));
  }

  // Per unit (or over the window), subtotal key -> sum.
  Result<std::vector<KeyCounts>> Groups(const BreakdownParams& p, const UnitWindow& window,
                                        const HourlyBreakdown& subtotals) {
    if (!p.window.rollup) return SumBreakdownByUnit(window, subtotals);
    auto sums = SumBreakdownWindow(window, subtotals);
    if (!sums.ok()) return sums.status();
    std::vector<KeyCounts> groups;
    groups.push_back(std::move(*sums));
    return groups;
  }

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
  void ExpandAndReply(const HttpExchangePtr& ex, BreakdownParams p, UnitWindow window,
                      std::optional<UnitWindow> earlier, const HourlyCounts& total, const HourlyBreakdown& subtotals,
                      std::vector<KeyUniques> uniques, const nlohmann::json& resolution) {
    auto current = Groups(p, window, subtotals);
    if (!current.ok()) return Fail(ex, current.status());
    std::vector<KeyCounts> groups = std::move(*current);
    auto totals = Totals(p, window, total);
    if (!totals.ok()) return Fail(ex, totals.status());
    std::vector<RowsLeftOut> left_out(groups.size());
    for (size_t g = 0; g < groups.size(); ++g) {
      int64_t values = 0;
      for (const auto& [key, n] : groups[g]) {
        if (__builtin_add_overflow(values, n, &values)) {
          return Fail(ex, Status::OutOfRange("a sum of clicks overflows a 64-bit counter"));
        }
      }
      left_out[g].other = values;  // less the rows' clicks, once they are known
      // The total and the values of today's hours come from two realtime
      // scans: an increment between them can put the values ahead of the
      // total for a moment. No clicks are "none" then, never fewer than none.
      left_out[g].none = std::max<int64_t>(0, (*totals)[g] - values);
    }
    std::vector<KeyCounts> earlier_groups;
    if (earlier) {
      auto before = Groups(p, *earlier, subtotals);
      if (!before.ok()) return Fail(ex, before.status());
      earlier_groups = std::move(*before);
      earlier_groups.resize(groups.size());
    }
    std::vector<std::string> hashes;
    for (size_t g = 0; g < groups.size(); ++g) {
      KeyCounts candidates, earlier_candidates;
      for (std::string& key : TopCandidates(groups[g], static_cast<size_t>(p.limit))) {
        if (key.size() == kHashLength) hashes.push_back(key);  // a 12-byte stored key is always a hash
        if (earlier) {
          auto it = earlier_groups[g].find(key);
          if (it != earlier_groups[g].end()) earlier_candidates.emplace(key, it->second);
        }
        candidates.emplace(key, groups[g][key]);
      }
      groups[g] = std::move(candidates);
      if (earlier) earlier_groups[g] = std::move(earlier_candidates);
    }
    gather_.ResolveHashes(std::move(hashes), [this, ex, p = std::move(p), window = std::move(window),
                                              earlier = std::move(earlier), groups = std::move(groups),
                                              earlier_groups = std::move(earlier_groups), left_out = std::move(left_out),
                                              uniques = std::move(uniques), resolution](
                                                 Result<std::map<std::string, std::string>> values) mutable {
      if (!values.ok()) return Fail(ex, values.status());
      // Stored key -> full value, for clicks and visitors alike. A stored
      // form is either the value itself or a hash of a value too long or odd
      // to store, so no two stored keys expand to one value.
      auto expand = [&](const auto& group) {
        std::decay_t<decltype(group)> expanded;
        for (const auto& [stored, n] : group) {
          auto it = values->find(stored);
          // A hash without a lookup record is shown as itself.
          expanded[it != values->end() ? it->second : stored] += n;
        }
        return expanded;
      };
      for (KeyUniques& group : uniques) group = expand(group);
      std::vector<std::vector<std::pair<std::string, int64_t>>> tops;
      for (size_t g = 0; g < groups.size(); ++g) {
        tops.push_back(TopByClicks(expand(groups[g]), static_cast<size_t>(p.limit)));
        for (const auto& row : tops.back()) left_out[g].other -= row.second;
      }
      std::vector<KeyCounts> before;
      for (const KeyCounts& group : earlier_groups) before.push_back(expand(group));
      ReplyBreakdown(ex, p, window, tops, left_out, earlier, before, uniques, resolution);
    });
  }

  void ReplyBreakdown(const HttpExchangePtr& ex, const BreakdownParams& p, const UnitWindow& window,
                      const std::vector<TopValues>& tops, const std::vector<RowsLeftOut>& left_out,
                      const std::optional<UnitWindow>& earlier, const std::vector<KeyCounts>& before,
                      const std::vector<KeyUniques>& uniques = {}, const nlohmann::json& resolution = nullptr) {
    ex->ReplyJsonData(WithResolution(BreakdownJson(p, window, tops, left_out, earlier, before, uniques, Now()),
                                     resolution));
  }

  // ---- /uniques --------------------------------------------------------------

  void OnUniques(const HttpExchangePtr& ex) {
    auto params = ParseUniquesParams(ex->args(), Now(), zones_);
    if (!params.ok()) return Fail(ex, params.status());
    std::optional<QueryWindows> windows;  // units=-1: known once the data is
    HourSpan span;
    HourSpan skip{0, 0};
    std::optional<std::vector<int64_t>> splits;  // units=-1: unknown, every hour is read
    if (params->series.window.units != -1) {
      auto fixed = FixedWindows(params->series.window, max_query_hours_);
      if (!fixed.ok()) return Fail(ex, fixed.status());
      if (!fixed->MayHoldData()) return ReplyUniques(ex, *params, fixed->window, fixed->earlier, HourlySketches{});
      span = fixed->Span();
      skip = fixed->Gap();
      // Visitors unite per unit (rollup=false) or over each window: a UTC day
      // inside one of those may come as its day record.
      splits = fixed->SumSplits(params->series.window.unit, params->series.window.rollup);
      windows = std::move(*fixed);
    }
    UniquesTarget target;
    target.ns = params->series.ns;
    target.tkey = StoreKeyPart(params->series.key).stored;
    if (!params->series.sns.empty()) {
      target.sns = params->series.sns;
      target.skey = StoreKeyPart(params->series.skey).stored;
    }
    gather_.FetchUniques(
        std::move(target), span, skip, max_query_hours_,
        [this, ex, p = std::move(*params), windows = std::move(windows)](Result<UniquesData> data) mutable {
          if (!data.ok()) return Fail(ex, data.status());
          if (!windows) {
            auto over = WindowsOverData(p.series.window, data->first_hour, max_query_hours_);
            if (!over.ok()) return Fail(ex, over.status());
            windows = std::move(*over);
          }
          if (!data->gap.CoversWindow(windows->window.end_ts())) return Fail(ex, data->gap.realtime_missing);
          auto held = std::make_shared<UniquesData>(std::move(*data));
          auto w = std::make_shared<QueryWindows>(std::move(*windows));
          Resolve(ex, p.series.ns, held->gap, w->Span(), p.series.window,
                  [this, ex, p, w, held](const nlohmann::json& resolution) {
                    ReplyUniques(ex, p, w->window, w->earlier, held->hours, resolution);
                  });
        },
        std::move(splits));
  }

  void ReplyUniques(const HttpExchangePtr& ex, const UniquesParams& p, const UnitWindow& window,
                    const std::optional<UnitWindow>& earlier, const HourlySketches& hours,
                    const nlohmann::json& resolution = nullptr) {
    const WindowParams& w = p.series.window;
    if (!earlier) {
      if (w.rollup) {
        return ex->ReplyJsonData(
            WithResolution(UniquesRollupJson(w, UniquesOverWindow(window, hours, &unions_)), resolution));
      }
      return ex->ReplyJsonData(
          WithResolution(UniquesSeriesJson(w, window, UniquesByUnit(window, hours, &unions_), Now()), resolution));
    }
    // compare=: "uniques" as without it, and "compare" with the earlier
    // window's, as /clicks answers it.
    const uint64_t now_total = UniquesOverWindow(window, hours, &unions_);
    const uint64_t then_total = UniquesOverWindow(*earlier, hours, &unions_);
    const int64_t now = Now();
    nlohmann::json data = WindowEcho(w);
    nlohmann::json compare = {{"window", CompareName(w.compare)},
                              {"change", Change(static_cast<int64_t>(now_total), static_cast<int64_t>(then_total))}};
    if (w.rollup) {
      data["uniques"] = now_total;
      compare["uniques"] = then_total;
    } else {
      auto series = [&](const UnitWindow& win) {
        const std::vector<uint64_t> per_unit = UniquesByUnit(win, hours, &unions_);
        nlohmann::json list = nlohmann::json::array();
        for (size_t i = win.size(); i-- > 0;) {
          list.push_back({{"dt", win.start(i)}, {"uniques", per_unit[i]}});
          if (!win.Complete(i, now)) list.back()["complete"] = false;
        }
        return list;
      };
      data["uniques"] = series(window);
      compare["uniques"] = series(*earlier);
    }
    data["compare"] = std::move(compare);
    if (!resolution.is_null()) data["resolution"] = resolution;
    ex->ReplyJson(std::move(data));
  }

  // ---- /lookup ---------------------------------------------------------------

  void OnLookup(const HttpExchangePtr& ex) {
    const std::string* hash = ex->args().Get("hash");
    if (hash == nullptr || hash->empty()) {
      return Fail(ex, Status::InvalidArgument("parameter hash is required", "MISSING_ARG_HASH"));
    }
    if (!LooksLikeHash(*hash)) {
      return Fail(ex, Status::InvalidArgument(
                          fmt::format("hash {} is not 12 characters of base64", QuoteForMessage(*hash)),
                          "INVALID_HASH"));
    }
    gather_.ResolveHashes({*hash}, [this, ex, hash = *hash](Result<std::map<std::string, std::string>> values) {
      if (!values.ok()) return Fail(ex, values.status());
      auto it = values->find(hash);
      if (it == values->end()) return Fail(ex, Status::NotFound(fmt::format("no lookup record for {}", hash)));
      ex->ReplyJson({{"hash", hash}, {"value", it->second}});
    });
  }

  const Clock& clock_;
  const int64_t max_query_hours_;
  const std::string metric_labels_;  // daemon and member, on every sample of /metrics
  const std::shared_ptr<ReadShared> shared_;
  ReadStats& stats_;  // the node's, shared by its read loops
  TimeZoneDb zones_;
  ArchiveReader archive_;
  RealtimeReader realtime_;
  LookupCache lookups_;
  SketchTextCache sketch_texts_;
  UnionEstimateCache unions_;
  QueryGather gather_;  // after the readers: destroyed first
};

}  // namespace

std::shared_ptr<ReadShared> ReadShared::Make(const DaemonContext& ctx) {
  auto shared = std::make_shared<ReadShared>();
  shared->stats = std::make_shared<ReadStats>();
  shared->known_generation = std::make_shared<KnownGeneration>(
      ctx.member.data_dir.empty() ? std::string() : ctx.member.data_dir + "/archive-generation");
  shared->loops = ctx.cluster.api.ReadLoops();
  shared->cache = std::make_shared<ReadCache>(static_cast<size_t>(ctx.cluster.api.read_cache_mb) << 20);
  shared->stats->cache = shared->cache.get();
  return shared;
}

Result<std::unique_ptr<ReadPath>> ReadPath::Create(const DaemonContext& ctx, HttpServer& server, HttpClient& client,
                                                   const Clock& clock, std::shared_ptr<ReadShared> shared) {
  if (ctx.cluster.api.max_query_hours < 1) {
    return Status::InvalidArgument("api.max_query_hours must be at least 1");
  }
  if (!shared) {
    shared = ReadShared::Make(ctx);
    shared->loops = 1;  // this read path is the node's only one
  }
  return std::unique_ptr<ReadPath>(std::make_unique<ReadPathImpl>(ctx, server, client, clock, std::move(shared)));
}

}  // namespace clickatron::api
