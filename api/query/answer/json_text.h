// Appending JSON text for the read path's answers without building a DOM
// (series_json.h, breakdown_json.h): the output is byte for byte what
// nlohmann::json would dump for the same answer (keys sorted, the same
// number and string forms), so clients and docs see no difference.
#pragma once

#include <charconv>
#include <concepts>
#include <string>
#include <string_view>

#include <nlohmann/json.hpp>

#include "query/answer/query_params.h"
#include "query/merge/rollup.h"

namespace clickatron::api::json_text {

// Numbers and fixed text without a format string (fmt parsing one per unit
// was 10% of an API node's CPU answering 30-day series, by perf), into a
// std::string: its append is one memcpy, where fmt::memory_buffer's copied
// byte by byte behind a capacity check (a third of a 30-day series' answer
// instructions, by callgrind).
inline void Append(std::string* out, std::string_view text) { out->append(text); }
template <std::integral Number>
void Append(std::string* out, Number n) {
  char digits[24];  // a 64-bit integer and its sign
  const auto end = std::to_chars(digits, digits + sizeof(digits), n).ptr;
  out->append(digits, static_cast<size_t>(end - digits));
}

// A value as a JSON string. Printable ASCII without '"' or '\' (country
// codes, most URLs) is copied as it is; anything else goes through the JSON
// library with the replies' error handler (invalid UTF-8 is replaced), so
// the escaping is exactly the DOM's.
inline void AppendString(std::string* out, std::string_view s) {
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

// `,"complete":false` after a field that sorts before "complete" ("clicks",
// "compare_dt") when unit i of `window` is not over at `now`; nothing
// otherwise (a complete unit carries no marker).
inline void AppendIncomplete(std::string* out, const UnitWindow& window, size_t i, int64_t now) {
  if (!window.Complete(i, now)) out->append(",\"complete\":false");
}

// The echo's "unit", "unit_reference_ts", "units" fields (no braces), in
// the DOM's key order. The reference is echoed as given (a number or a
// string).
inline void AppendUnitFields(const WindowParams& w, std::string* out) {
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
