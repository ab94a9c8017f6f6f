// /clicks answers as JSON text; see series_json.h.
#include "query/series_json.h"

#include <fmt/format.h>

#include <concepts>

namespace clickatron::api {
namespace {

// Numbers and fixed text appended without a format string: fmt parsing
// "{{\"clicks\":{},\"dt\":{}}}" for each of a series' units was 10% of an
// API node's CPU answering 30-day series (perf, bench-query series run).
void Append(fmt::memory_buffer* out, std::string_view text) { out->append(text); }
template <std::integral Number>
void Append(fmt::memory_buffer* out, Number n) {
  const fmt::format_int digits(n);
  out->append(digits.data(), digits.data() + digits.size());
}

// The echo's "unit…" fields, keys in sorted order as the DOM has them.
void AppendUnitFields(const WindowParams& w, fmt::memory_buffer* out) {
  // unit names and numbers need no escaping; the reference is echoed as
  // given (a number or a string), so it goes through the JSON library.
  Append(out, "\"unit\":\"");
  Append(out, UnitName(w.unit));
  Append(out, "\",\"unit_reference_ts\":");
  if (w.reference_echo.is_number_integer()) {
    Append(out, w.reference_echo.get<int64_t>());
  } else {
    Append(out, w.reference_echo.dump(-1, ' ', false, nlohmann::json::error_handler_t::replace));
  }
  Append(out, ",\"units\":");
  Append(out, w.units);
}

// The echo after "clicks" (which sorts before all of it), closing the object.
void AppendEcho(const WindowParams& w, fmt::memory_buffer* out) {
  Append(out, ",\"tz_offset\":");
  Append(out, w.tz_offset);
  out->push_back(',');
  AppendUnitFields(w, out);
  out->push_back('}');
}

}  // namespace

std::string SeriesJson(const WindowParams& w, const UnitWindow& window, const std::vector<int64_t>& sums) {
  fmt::memory_buffer out;
  out.append(std::string_view("{\"clicks\":["));
  for (size_t i = window.size(); i-- > 0;) {
    Append(&out, "{\"clicks\":");
    Append(&out, sums[i]);
    Append(&out, ",\"dt\":");
    Append(&out, window.start(i));
    Append(&out, i > 0 ? "}," : "}");
  }
  out.push_back(']');
  AppendEcho(w, &out);
  return fmt::to_string(out);
}

std::string UniquesSeriesJson(const WindowParams& w, const UnitWindow& window, const std::vector<uint64_t>& uniques) {
  fmt::memory_buffer out;
  // Keys sorted as the DOM dumps them: "tz_offset" < "uniques" < "unit…".
  Append(&out, "{\"tz_offset\":");
  Append(&out, w.tz_offset);
  Append(&out, ",\"uniques\":[");
  for (size_t i = window.size(); i-- > 0;) {
    Append(&out, "{\"dt\":");
    Append(&out, window.start(i));
    Append(&out, ",\"uniques\":");
    Append(&out, uniques[i]);
    Append(&out, i > 0 ? "}," : "}");
  }
  out.append(std::string_view("],"));
  AppendUnitFields(w, &out);
  out.push_back('}');
  return fmt::to_string(out);
}

std::string UniquesRollupJson(const WindowParams& w, uint64_t uniques) {
  fmt::memory_buffer out;
  Append(&out, "{\"tz_offset\":");
  Append(&out, w.tz_offset);
  Append(&out, ",\"uniques\":");
  Append(&out, uniques);
  out.push_back(',');
  AppendUnitFields(w, &out);
  out.push_back('}');
  return fmt::to_string(out);
}

std::string RollupJson(const WindowParams& w, int64_t clicks) {
  fmt::memory_buffer out;
  Append(&out, "{\"clicks\":");
  Append(&out, clicks);
  AppendEcho(w, &out);
  return fmt::to_string(out);
}

}  // namespace clickatron::api
