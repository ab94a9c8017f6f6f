// /clicks: a key's clicks (or one subtotal value's) per unit, with compare=; see read_path_impl.h.
#include "query/read_path_impl.h"

namespace clickatron::api {

void ReadPathImpl::OnClicks(const HttpExchangePtr& ex) {
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

void ReadPathImpl::ValueClicks(const HttpExchangePtr& ex, SeriesParams p, std::optional<QueryWindows> windows) {
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

void ReadPathImpl::ReplyClicks(const HttpExchangePtr& ex, const SeriesParams& p, const UnitWindow& window,
                               const std::optional<UnitWindow>& earlier, const HourlyCounts& hours,
                               const nlohmann::json& resolution) {
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

void ReadPathImpl::ReplyComparedClicks(const HttpExchangePtr& ex, const SeriesParams& p, const UnitWindow& window,
                                       const UnitWindow& earlier, const HourlyCounts& hours,
                                       const nlohmann::json& resolution) {
  auto now_total = SumWindow(window, hours);
  auto then_total = SumWindow(earlier, hours);
  if (!now_total.ok()) return Fail(ex, now_total.status());
  if (!then_total.ok()) return Fail(ex, then_total.status());
  nlohmann::json data = WindowEcho(p.window);
  nlohmann::json compare = {{"window", CompareName(p.window.compare)},
                            {"change", RelativeChange(*now_total, *then_total)}};
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

}  // namespace clickatron::api
