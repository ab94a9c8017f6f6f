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
                       auto held = std::make_shared<TotalData>(std::move(*data));
                       Resolve(ex, p.ns, p.window, std::move(windows), [&] { return FirstHour(held->hours, {}); },
                               held->gap, [this, ex, p, held](const QueryWindows& w, const nlohmann::json& resolution) {
                                 ReplyClicks(ex, p, w.window, w.earlier, held->hours, resolution);
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
        auto held = std::make_shared<HourlyCounts>(std::move(hours));
        Resolve(ex, p.ns, p.window, std::move(windows), [&] { return FirstHour(*held, {}); }, data->gap,
                [this, ex, p, held](const QueryWindows& w, const nlohmann::json& resolution) {
                  ReplyClicks(ex, p, w.window, w.earlier, *held, resolution);
                });
      },
      reach->skip, std::nullopt, std::move(reach->splits));
}

void ReadPathImpl::ReplyClicks(const HttpExchangePtr& ex, const SeriesParams& p, const UnitWindow& window,
                               const std::optional<UnitWindow>& earlier, const HourlyCounts& hours,
                               const nlohmann::json& resolution) {
  if (earlier) {
    auto now_total = SumWindow(window, hours);
    if (!now_total.ok()) return Fail(ex, now_total.status());
    auto then_total = SumWindow(*earlier, hours);
    if (!then_total.ok()) return Fail(ex, then_total.status());
    auto data = ComparedJson(
        p.window, "clicks", window, *earlier, *now_total, *then_total,
        [&](const UnitWindow& w) { return SumByUnit(w, hours); }, Now(), resolution);
    if (!data.ok()) return Fail(ex, data.status());
    return ex->ReplyJson(std::move(*data));
  }
  if (p.window.rollup) {
    auto sum = SumWindow(window, hours);
    if (!sum.ok()) return Fail(ex, sum.status());
    return ex->ReplyJsonData(WithResolution(RollupJson(p.window, *sum), resolution));
  }
  auto sums = SumByUnit(window, hours);
  if (!sums.ok()) return Fail(ex, sums.status());
  ex->ReplyJsonData(WithResolution(SeriesJson(p.window, window, *sums, Now()), resolution));
}

}  // namespace clickatron::api
