// /clicks answers as JSON text; see series_json.h.
#include "query/series_json.h"

#include <fmt/format.h>

#include <iterator>

namespace clickatron::api {
namespace {

// The echo's "unit…" fields, keys in sorted order as the DOM has them.
void AppendUnitFields(const WindowParams& w, fmt::memory_buffer* out) {
  // unit names and numbers need no escaping; the reference is echoed as
  // given (a number or a string), so it goes through the JSON library.
  fmt::format_to(std::back_inserter(*out), "\"unit\":\"{}\",\"unit_reference_ts\":{},\"units\":{}", UnitName(w.unit),
                 w.reference_echo.dump(-1, ' ', false, nlohmann::json::error_handler_t::replace), w.units);
}

// The echo after "clicks" (which sorts before all of it), closing the object.
void AppendEcho(const WindowParams& w, fmt::memory_buffer* out) {
  fmt::format_to(std::back_inserter(*out), ",\"tz_offset\":{},", w.tz_offset);
  AppendUnitFields(w, out);
  out->push_back('}');
}

}  // namespace

std::string SeriesJson(const WindowParams& w, const UnitWindow& window, const std::vector<int64_t>& sums) {
  fmt::memory_buffer out;
  out.append(std::string_view("{\"clicks\":["));
  for (size_t i = window.size(); i-- > 0;) {
    fmt::format_to(std::back_inserter(out), "{{\"clicks\":{},\"dt\":{}}}{}", sums[i], window.start(i), i > 0 ? "," : "");
  }
  out.push_back(']');
  AppendEcho(w, &out);
  return fmt::to_string(out);
}

std::string UniquesSeriesJson(const WindowParams& w, const UnitWindow& window, const std::vector<uint64_t>& uniques) {
  fmt::memory_buffer out;
  // Keys sorted as the DOM dumps them: "tz_offset" < "uniques" < "unit…".
  fmt::format_to(std::back_inserter(out), "{{\"tz_offset\":{},\"uniques\":[", w.tz_offset);
  for (size_t i = window.size(); i-- > 0;) {
    fmt::format_to(std::back_inserter(out), "{{\"dt\":{},\"uniques\":{}}}{}", window.start(i), uniques[i],
                   i > 0 ? "," : "");
  }
  out.append(std::string_view("],"));
  AppendUnitFields(w, &out);
  out.push_back('}');
  return fmt::to_string(out);
}

std::string UniquesRollupJson(const WindowParams& w, uint64_t uniques) {
  fmt::memory_buffer out;
  fmt::format_to(std::back_inserter(out), "{{\"tz_offset\":{},\"uniques\":{},", w.tz_offset, uniques);
  AppendUnitFields(w, &out);
  out.push_back('}');
  return fmt::to_string(out);
}

std::string RollupJson(const WindowParams& w, int64_t clicks) {
  fmt::memory_buffer out;
  fmt::format_to(std::back_inserter(out), "{{\"clicks\":{}", clicks);
  AppendEcho(w, &out);
  return fmt::to_string(out);
}

}  // namespace clickatron::api
