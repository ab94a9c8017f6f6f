// /uniques: a key's distinct visitors per unit; see read_path_impl.h.
#include "query/read_path_impl.h"

namespace clickatron::api {

void ReadPathImpl::OnUniques(const HttpExchangePtr& ex) {
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

void ReadPathImpl::ReplyUniques(const HttpExchangePtr& ex, const UniquesParams& p, const UnitWindow& window,
                                const std::optional<UnitWindow>& earlier, const HourlySketches& hours,
                                const nlohmann::json& resolution) {
  const WindowParams& w = p.series.window;
  if (!earlier) {
    if (w.rollup) {
      return ex->ReplyJsonData(
          WithResolution(UniquesRollupJson(w, UniquesOverWindow(window, hours)), resolution));
    }
    return ex->ReplyJsonData(
        WithResolution(UniquesSeriesJson(w, window, UniquesByUnit(window, hours), Now()), resolution));
  }
  // compare=: "uniques" as without it, and "compare" with the earlier
  // window's, as /clicks answers it.
  const uint64_t now_total = UniquesOverWindow(window, hours);
  const uint64_t then_total = UniquesOverWindow(*earlier, hours);
  const int64_t now = Now();
  nlohmann::json data = WindowEcho(w);
  nlohmann::json compare = {
      {"window", CompareName(w.compare)},
      {"change", RelativeChange(static_cast<int64_t>(now_total), static_cast<int64_t>(then_total))}};
  if (w.rollup) {
    data["uniques"] = now_total;
    compare["uniques"] = then_total;
  } else {
    auto series = [&](const UnitWindow& win) {
      const std::vector<uint64_t> per_unit = UniquesByUnit(win, hours);
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

}  // namespace clickatron::api
