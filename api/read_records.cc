// Read-path record decoding; see read_records.h.
#include "read_records.h"

#include <fmt/format.h>

#include <algorithm>

#include "clickatron/key_codec.h"
#include "clickatron/record.h"
#include "clickatron/ymdh.h"

namespace clickatron::api {
namespace {

Status Bad(std::string_view what, std::string_view text) {
  return Status::Corruption(fmt::format("bad {} from a peer: {}", what, QuoteForMessage(text)));
}

// Calls fn(name, count_text) for each "name:count" column separated by
// spaces; fn parses the count only for columns it keeps (ParseColumnCount).
template <typename Fn>
Status ForEachColumn(std::string_view value, std::string_view what, Fn&& fn) {
  // A /get answer is the value and its line's newline.
  while (!value.empty() && (value.back() == '\n' || value.back() == '\r')) value.remove_suffix(1);
  size_t pos = 0;
  while (pos < value.size()) {
    size_t end = value.find(' ', pos);
    if (end == std::string_view::npos) end = value.size();
    const std::string_view column = value.substr(pos, end - pos);
    const size_t colon = column.rfind(':');
    if (colon == std::string_view::npos || colon == 0 || colon + 1 == column.size()) return Bad(what, value);
    CLICKATRON_RETURN_IF_ERROR(fn(column.substr(0, colon), column.substr(colon + 1)));
    pos = end + 1;
  }
  return Status::Ok();
}

Status AddHour(HourlyCounts* hours, int64_t hour, int64_t count) { return AddCount(&(*hours)[hour], count); }

Result<int64_t> ParseColumnCount(std::string_view text, std::string_view what, std::string_view value) {
  auto count = ParseCount(text);
  if (!count.ok()) return Bad(what, value);
  return count;
}

}  // namespace

bool HourIsArchived(int64_t hour_ts, const ArchiveLastDay& last_day) {
  return last_day.has_value() && FloorDiv(hour_ts, kSecondsPerDay) <= *last_day;
}

Result<std::vector<std::pair<std::string_view, std::string_view>>> SplitKeyValueLines(std::string_view body) {
  std::vector<std::pair<std::string_view, std::string_view>> out;
  size_t pos = 0;
  while (pos < body.size()) {
    size_t end = body.find('\n', pos);
    if (end == std::string_view::npos) end = body.size();
    const std::string_view line = body.substr(pos, end - pos);
    pos = end + 1;
    if (line.empty()) continue;
    const size_t comma = line.find(',');
    if (comma == std::string_view::npos) return Bad("line", line);
    out.emplace_back(line.substr(0, comma), line.substr(comma + 1));
  }
  return out;
}

Status AddArchiveTotalColumns(std::string_view value, HourlyCounts* hours, const HourSpan& span) {
  // YMDH order is time order: compare codes first, decode only what may be in
  // the span. Codes of the span's hours (clamped to the YMDH range).
  static const int64_t kFirst = DaysFromCivil({kMinYmdhYear, 1, 1}) * kSecondsPerDay;
  static const int64_t kEnd = DaysFromCivil({kMaxYmdhYear + 1, 1, 1}) * kSecondsPerDay;
  const std::string low = span.begin_ts <= kFirst ? "" : *YmdhFromUnix(std::min(span.begin_ts, kEnd - 1));
  const std::string high = span.end_ts >= kEnd ? "~" : *YmdhFromUnix(std::max(span.end_ts, kFirst));
  return ForEachColumn(value, "archive total", [&](std::string_view ymdh, std::string_view count_text) -> Status {
    if (!LooksLikeYmdh(ymdh)) return Bad("archive total", value);
    if (ymdh < low || ymdh > high) return Status::Ok();
    auto hour = UnixFromYmdh(ymdh);
    if (!hour.ok()) return Bad("archive total", value);
    if (!span.Contains(*hour)) return Status::Ok();
    auto count = ParseColumnCount(count_text, "archive total", value);
    if (!count.ok()) return count.status();
    return AddHour(hours, *hour, *count);
  });
}

Status AddArchiveSubtotalColumns(std::string_view value, std::map<std::string, int64_t>* counts) {
  return ForEachColumn(value, "archive subtotal", [&](std::string_view skey, std::string_view count_text) -> Status {
    auto count = ParseColumnCount(count_text, "archive subtotal", value);
    if (!count.ok()) return count.status();
    return AddCount(&(*counts)[std::string(skey)], *count);
  });
}

Status AddRealtimeTotalLines(std::string_view body, std::string_view prefix, const ArchiveLastDay& last_day,
                             HourlyCounts* hours, const HourSpan& span) {
  auto lines = SplitKeyValueLines(body);
  if (!lines.ok()) return lines.status();
  for (const auto& [key, value] : *lines) {
    // key = prefix + YMDH
    if (key.size() != prefix.size() + 4 || key.substr(0, prefix.size()) != prefix) return Bad("realtime total", key);
    auto hour = UnixFromYmdh(key.substr(prefix.size()));
    auto count = ParseCount(value);
    if (!hour.ok() || !count.ok()) return Bad("realtime total", key);
    if (HourIsArchived(*hour, last_day) || !span.Contains(*hour)) continue;
    CLICKATRON_RETURN_IF_ERROR(AddHour(hours, *hour, *count));
  }
  return Status::Ok();
}

Status AddRealtimeSubtotalLines(std::string_view body, std::string_view prefix, const ArchiveLastDay& last_day,
                                int64_t begin_ts, int64_t end_ts, HourlyBreakdown* hours) {
  auto lines = SplitKeyValueLines(body);
  if (!lines.ok()) return lines.status();
  for (const auto& [key, value] : *lines) {
    // key = prefix + skey + "." + YMDH; skey never contains '.'.
    if (key.size() < prefix.size() + 6 || key.substr(0, prefix.size()) != prefix ||
        key[key.size() - 5] != '.') {
      return Bad("realtime subtotal", key);
    }
    const std::string_view skey = key.substr(prefix.size(), key.size() - prefix.size() - 5);
    auto hour = UnixFromYmdh(key.substr(key.size() - 4));
    auto count = ParseCount(value);
    if (!hour.ok() || !count.ok() || skey.find('.') != std::string_view::npos) return Bad("realtime subtotal", key);
    if (HourIsArchived(*hour, last_day) || *hour < begin_ts || *hour >= end_ts) continue;
    CLICKATRON_RETURN_IF_ERROR(AddCount(&(*hours)[*hour][std::string(skey)], *count));
  }
  return Status::Ok();
}

}  // namespace clickatron::api
