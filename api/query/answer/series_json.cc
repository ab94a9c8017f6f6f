// /clicks answers as JSON text; see series_json.h.
#include "query/answer/series_json.h"

#include "query/answer/json_text.h"

namespace clickatron::api {
namespace {

using json_text::Append;
using json_text::AppendUnitFields;

// The echo after "clicks" (which sorts before all of it), closing the object.
void AppendEcho(const WindowParams& w, std::string* out) {
  Append(out, ",\"tz_offset\":");
  Append(out, w.tz_offset);
  out->push_back(',');
  AppendUnitFields(w, out);
  out->push_back('}');
}

}  // namespace

std::string SeriesJson(const WindowParams& w, const UnitWindow& window, const std::vector<int64_t>& sums,
                       int64_t now) {
  std::string out;
  out.reserve(64 + window.size() * 40);
  out.append("{\"clicks\":[");
  for (size_t i = window.size(); i-- > 0;) {
    Append(&out, "{\"clicks\":");
    Append(&out, sums[i]);
    json_text::AppendIncomplete(&out, window, i, now);
    Append(&out, ",\"dt\":");
    Append(&out, window.start(i));
    Append(&out, i > 0 ? "}," : "}");
  }
  out.push_back(']');
  AppendEcho(w, &out);
  return out;
}

std::string UniquesSeriesJson(const WindowParams& w, const UnitWindow& window, const std::vector<uint64_t>& uniques,
                              int64_t now) {
  std::string out;
  out.reserve(96 + window.size() * 40);
  // Keys sorted as the DOM dumps them: "tz_offset" < "uniques" < "unit…".
  Append(&out, "{\"tz_offset\":");
  Append(&out, w.tz_offset);
  Append(&out, ",\"uniques\":[");
  for (size_t i = window.size(); i-- > 0;) {
    // "complete" sorts before "dt".
    Append(&out, window.Complete(i, now) ? "{\"dt\":" : "{\"complete\":false,\"dt\":");
    Append(&out, window.start(i));
    Append(&out, ",\"uniques\":");
    Append(&out, uniques[i]);
    Append(&out, i > 0 ? "}," : "}");
  }
  out.append("],");
  AppendUnitFields(w, &out);
  out.push_back('}');
  return out;
}

std::string UniquesRollupJson(const WindowParams& w, uint64_t uniques) {
  std::string out;
  Append(&out, "{\"tz_offset\":");
  Append(&out, w.tz_offset);
  Append(&out, ",\"uniques\":");
  Append(&out, uniques);
  out.push_back(',');
  AppendUnitFields(w, &out);
  out.push_back('}');
  return out;
}

std::string RollupJson(const WindowParams& w, int64_t clicks) {
  std::string out;
  Append(&out, "{\"clicks\":");
  Append(&out, clicks);
  AppendEcho(w, &out);
  return out;
}

}  // namespace clickatron::api
