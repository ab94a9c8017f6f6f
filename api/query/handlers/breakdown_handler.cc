// /breakdown: a key's top subtotal values per unit, with other, none and visitors; see read_path_impl.h.
#include "query/read_path_impl.h"

namespace clickatron::api {

void ReadPathImpl::OnBreakdown(const HttpExchangePtr& ex) {
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
        auto held = std::make_shared<BreakdownData>(std::move(*data));
        Resolve(ex, p.ns, p.window, std::move(windows), [&] { return FirstHour(held->total, held->subtotals); },
                held->gap, [this, ex, p, held](const QueryWindows& w, const nlohmann::json& resolution) {
                  std::vector<KeyUniques> uniques;
                  if (p.uniques) {
                    if (p.window.rollup) {
                      uniques.push_back(KeyUniquesOverWindow(w.window, held->unique_subtotals));
                    } else {
                      uniques = KeyUniquesByUnit(w.window, held->unique_subtotals);
                    }
                  }
                  ExpandAndReply(ex, p, w.window, w.earlier, held->total, held->subtotals, std::move(uniques),
                                 resolution, held->archive_generation);
                });
      },
      reach->skip, uniques_from, std::move(reach->splits));
}

Result<std::vector<ValueSums>> ReadPathImpl::Groups(const BreakdownParams& p, const UnitWindow& window,
                                                    const HourlyBreakdown& subtotals) {
  if (!p.window.rollup) return SumBreakdownByUnit(window, subtotals);
  auto sums = SumBreakdownWindow(window, subtotals);
  if (!sums.ok()) return sums.status();
  std::vector<ValueSums> groups;
  groups.push_back(std::move(*sums));
  return groups;
}

void ReadPathImpl::ExpandAndReply(const HttpExchangePtr& ex, BreakdownParams p, UnitWindow window,
                                  std::optional<UnitWindow> earlier, const HourlyCounts& total,
                                  const HourlyBreakdown& subtotals, std::vector<KeyUniques> uniques,
                                  const nlohmann::json& resolution, uint64_t data_generation) {
  // Every value's sums (views into `subtotals`): only the candidates for
  // the rows are copied out, below.
  auto current = Groups(p, window, subtotals);
  if (!current.ok()) return Fail(ex, current.status());
  const std::vector<ValueSums> sums = std::move(*current);
  auto totals = Totals(p, window, total);
  if (!totals.ok()) return Fail(ex, totals.status());
  std::vector<RowsLeftOut> left_out(sums.size());
  for (size_t g = 0; g < sums.size(); ++g) {
    int64_t values = 0;
    for (const auto& [key, n] : sums[g]) {
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
  std::vector<ValueSums> earlier_sums;
  if (earlier) {
    auto before = Groups(p, *earlier, subtotals);
    if (!before.ok()) return Fail(ex, before.status());
    earlier_sums = std::move(*before);
    earlier_sums.resize(sums.size());
  }
  std::vector<std::string> hashes;
  std::vector<KeyCounts> groups(sums.size());
  std::vector<KeyCounts> earlier_groups(earlier ? sums.size() : 0);
  for (size_t g = 0; g < sums.size(); ++g) {
    for (std::string& key : TopCandidates(sums[g], static_cast<size_t>(p.limit))) {
      if (key.size() == kHashLength) hashes.push_back(key);  // a 12-byte stored key is always a hash
      if (earlier) {
        auto it = earlier_sums[g].find(key);
        if (it != earlier_sums[g].end()) earlier_groups[g].emplace(key, it->second);
      }
      const int64_t clicks = sums[g].at(key);
      groups[g].emplace(std::move(key), clicks);
    }
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
  }, data_generation);
}

}  // namespace clickatron::api
