// /uniques: a key's distinct visitors per unit; see read_path_impl.h.
#include "query/read_path_impl.h"

namespace clickatron::api {

void ReadPathImpl::OnUniques(const HttpExchangePtr& ex) {
  auto params = ParseSeriesParams(ex->args(), Now(), zones_);
  if (!params.ok()) return Fail(ex, params.status());
  std::optional<QueryWindows> windows;  // units=-1: known once the data is
  HourSpan span;
  HourSpan skip{0, 0};
  std::optional<std::vector<int64_t>> splits;  // units=-1: unknown, every hour is read
  if (params->window.units != -1) {
    auto fixed = FixedWindows(params->window, max_query_hours_);
    if (!fixed.ok()) return Fail(ex, fixed.status());
    if (!fixed->MayHoldData()) return ReplyUniques(ex, *params, fixed->window, fixed->earlier, HourlySketches{});
    span = fixed->Span();
    skip = fixed->Gap();
    // Visitors unite per unit (rollup=false) or over each window: a UTC day
    // inside one of those may come as its day record.
    splits = fixed->SumSplits(params->window.unit, params->window.rollup);
    windows = std::move(*fixed);
  }
  UniquesTarget target;
  target.ns = params->ns;
  target.tkey = StoreKeyPart(params->key).stored;
  if (!params->sns.empty()) {
    target.sns = params->sns;
    target.skey = StoreKeyPart(params->skey).stored;
  }
  gather_.FetchUniques(
      std::move(target), span, skip, max_query_hours_,
      [this, ex, p = std::move(*params), windows = std::move(windows)](Result<UniquesData> data) mutable {
        if (!data.ok()) return Fail(ex, data.status());
        auto held = std::make_shared<UniquesData>(std::move(*data));
        Resolve(ex, p.ns, p.window, std::move(windows), [&] { return held->first_hour; }, held->gap,
                [this, ex, p, held](const QueryWindows& w, const nlohmann::json& resolution) {
                  ReplyUniques(ex, p, w.window, w.earlier, held->hours, resolution);
                });
      },
      std::move(splits));
}

void ReadPathImpl::ReplyUniques(const HttpExchangePtr& ex, const SeriesParams& p, const UnitWindow& window,
                                const std::optional<UnitWindow>& earlier, const HourlySketches& hours,
                                const nlohmann::json& resolution) {
  const WindowParams& w = p.window;
  if (!earlier) {
    if (w.rollup) {
      return ex->ReplyJsonData(
          WithResolution(UniquesRollupJson(w, UniquesOverWindow(window, hours)), resolution));
    }
    return ex->ReplyJsonData(
        WithResolution(UniquesSeriesJson(w, window, UniquesByUnit(window, hours), Now()), resolution));
  }
  auto data = ComparedJson(
      w, "uniques", window, *earlier, UniquesOverWindow(window, hours), UniquesOverWindow(*earlier, hours),
      [&](const UnitWindow& win) -> Result<std::vector<uint64_t>> { return UniquesByUnit(win, hours); }, Now(),
      resolution);
  if (!data.ok()) return Fail(ex, data.status());
  ex->ReplyJson(std::move(*data));
}

}  // namespace clickatron::api
