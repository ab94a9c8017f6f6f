// Appending JSON text for the read path's answers without building a DOM
// (series_json.h, breakdown_json.h): the output is byte for byte what
// nlohmann::json would dump for the same answer (keys sorted, the same
// number and string forms), so clients and docs see no difference.
#pragma once

#include <fmt/format.h>

#include <concepts>
#include <string_view>

#include <nlohmann/json.hpp>

#include "query/query_params.h"

namespace clickatron::api::json_text {

// Numbers and fixed text without a format string: fmt parsing one per unit
// was 10% of an API node's CPU answering 30-day series (perf, bench-query).
inline void Append(fmt::memory_buffer* out, std::string_view text) { out->append(text); }
template <std::integral Number>
void Append(fmt::memory_buffer* out, Number n) {
  const fmt::format_int digits(n);
  out->append(digits.data(), digits.data() + digits.size());
}

// A value as a JSON string. Printable ASCII without '"' or '\' (country
// codes, most URLs) is copied as it is; anything else goes through the JSON
// library with the replies' error handler (invalid UTF-8 is replaced), so
// the escaping is exactly the DOM's.
inline void AppendString(fmt::memory_buffer* out, std::string_view s) {
  for (const char c : s) {
    if (c < 0x20 || c > 0x7e || c == '"' || c == '\\') {
      Append(out, nlohmann::json(s).dump(-1, ' ', false, nlohmann::json::error_handler_t::replace));
      return;
    }
  }
  out->push_back('"');
  out->append(s);
  out->push_back('"');
}

// The echo's "unit", "unit_reference_ts", "units" fields (no braces), in
// the DOM's key order. The reference is echoed as given (a number or a
// string).
inline void AppendUnitFields(const WindowParams& w, fmt::memory_buffer* out) {
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

}  // namespace clickatron::api::json_text
