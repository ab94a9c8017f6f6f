// /breakdown answers as JSON text; see breakdown_json.h.
#include "query/answer/breakdown_json.h"

#include "query/answer/json_text.h"
#include "query/answer/query_windows.h"

namespace clickatron::api {
namespace {

using json_text::Append;
using json_text::AppendString;

// One unit's rows; `earlier` and `uniques` as in BreakdownJson (nullptr: not asked).
void AppendRows(std::string* out, const TopValues& top, const KeyCounts* earlier, const KeyUniques* uniques) {
  out->push_back('[');
  bool first = true;
  for (const auto& [value, clicks] : top) {
    if (!first) out->push_back(',');
    first = false;
    Append(out, "{\"clicks\":");
    Append(out, clicks);
    if (earlier != nullptr) {
      auto it = earlier->find(value);
      const int64_t before = it == earlier->end() ? 0 : it->second;
      Append(out, ",\"compare\":{\"change\":");
      Append(out, RelativeChange(clicks, before).dump());
      Append(out, ",\"clicks\":");
      Append(out, before);
      out->push_back('}');
    }
    if (uniques != nullptr) {
      auto it = uniques->find(value);
      Append(out, ",\"uniques\":");
      Append(out, it == uniques->end() ? uint64_t{0} : it->second);
    }
    Append(out, ",\"value\":");
    AppendString(out, value);
    out->push_back('}');
  }
  out->push_back(']');
}

// `,"none":N,"other":N` (both sort after "dt" and "limit").
void AppendLeftOut(std::string* out, const RowsLeftOut& left_out) {
  Append(out, ",\"none\":");
  Append(out, left_out.none);
  Append(out, ",\"other\":");
  Append(out, left_out.other);
}

}  // namespace

std::string BreakdownJson(const BreakdownParams& p, const UnitWindow& window, const std::vector<TopValues>& tops,
                          const std::vector<RowsLeftOut>& left_out, const std::optional<UnitWindow>& earlier,
                          const std::vector<KeyCounts>& before, const std::vector<KeyUniques>& uniques, int64_t now) {
  static const TopValues kNoRows;
  const auto left_out_of = [&](size_t i) { return i < left_out.size() ? left_out[i] : RowsLeftOut{}; };
  static const KeyCounts kNothing;
  static const KeyUniques kNoVisitors;
  const auto top_of = [&](size_t i) -> const TopValues& { return i < tops.size() ? tops[i] : kNoRows; };
  const auto before_of = [&](size_t i) -> const KeyCounts* {
    if (!earlier) return nullptr;
    return i < before.size() ? &before[i] : &kNothing;
  };
  const auto uniques_of = [&](size_t i) -> const KeyUniques* {
    if (!p.uniques) return nullptr;
    return i < uniques.size() ? &uniques[i] : &kNoVisitors;
  };
  std::string out;
  Append(&out, "{\"breakdown\":");
  if (p.window.rollup) {
    AppendRows(&out, top_of(0), before_of(0), uniques_of(0));
  } else {
    out.push_back('[');
    for (size_t i = window.size(); i-- > 0;) {
      Append(&out, "{\"breakdown\":");
      AppendRows(&out, top_of(i), before_of(i), uniques_of(i));
      if (earlier && i < earlier->size()) {
        Append(&out, ",\"compare_dt\":");
        Append(&out, earlier->start(i));
      }
      json_text::AppendIncomplete(&out, window, i, now);
      Append(&out, ",\"dt\":");
      Append(&out, window.start(i));
      AppendLeftOut(&out, left_out_of(i));
      Append(&out, i > 0 ? "}," : "}");
    }
    out.push_back(']');
  }
  if (earlier) {
    Append(&out, ",\"compare\":{\"window\":");
    AppendString(&out, CompareName(p.window.compare));
    out.push_back('}');
  }
  Append(&out, ",\"limit\":");
  Append(&out, p.limit);
  if (p.window.rollup) AppendLeftOut(&out, left_out_of(0));
  Append(&out, ",\"sns\":");
  AppendString(&out, p.sns);
  Append(&out, ",\"tz_offset\":");
  Append(&out, p.window.tz_offset);
  out.push_back(',');
  json_text::AppendUnitFields(p.window, &out);
  out.push_back('}');
  return out;
}

}  // namespace clickatron::api
