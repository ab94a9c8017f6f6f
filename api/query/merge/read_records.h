// Decoding what the archive and realtime daemons answer on the read path into
// hourly counts. Pure functions, thread-safe.
//
// Which source owns which day (docs/protocols.md): the archive answers with the last
// day its file holds (X-Archive-Last-Day); hours of days up to that day are
// taken from the archive only, later hours from realtime only. So the day
// that is both deployed and still in the realtime ring is counted once.
#pragma once

#include <cstdint>
#include <functional>
#include <limits>
#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "clickatron/status.h"
#include "clickatron/ymdh.h"
#include "query/merge/rollup.h"

namespace clickatron::api {

// Days since the epoch of the last day the archive holds; nullopt = none.
using ArchiveLastDay = std::optional<int64_t>;

bool HourIsArchived(int64_t hour_ts, const ArchiveLastDay& last_day);

// "key,value" lines (sortdb's mget/fwmatch answers): split at each line's
// first comma. A line without a comma is CORRUPTION.
Result<std::vector<std::pair<std::string_view, std::string_view>>> SplitKeyValueLines(std::string_view body);

// CORRUPTION "bad WHAT from a peer: TEXT" (quoted).
Status BadPeerValue(std::string_view what, std::string_view text);

// Calls fn(name, value_text) for each "name:value" column of an archive
// value, columns separated by spaces (a /get answer's trailing newline
// allowed); fn parses the value only for columns it keeps. The name is what
// comes before the last ':' (values never hold one).
template <typename Fn>
Status ForEachColumn(std::string_view value, std::string_view what, Fn&& fn) {
  while (!value.empty() && (value.back() == '\n' || value.back() == '\r')) value.remove_suffix(1);
  size_t pos = 0;
  while (pos < value.size()) {
    size_t end = value.find(' ', pos);
    if (end == std::string_view::npos) end = value.size();
    const std::string_view column = value.substr(pos, end - pos);
    const size_t colon = column.rfind(':');
    if (colon == std::string_view::npos || colon == 0 || colon + 1 == column.size()) return BadPeerValue(what, value);
    CLICKATRON_RETURN_IF_ERROR(fn(column.substr(0, colon), column.substr(colon + 1)));
    pos = end + 1;
  }
  return Status::Ok();
}

// Calls fn(hour, skey, value) for each line "prefix[skey.]YMDH,value" of a
// realtime fwmatch answer: with `keyed` every line names a subtotal key
// after the prefix ("sns.ns|tkey."), without it the prefix runs up to the
// hour ("ns|tkey."; skey ""). Any other line is CORRUPTION naming `what`.
template <typename Fn>
Status ForEachRealtimeHourLine(std::string_view body, std::string_view prefix, bool keyed, std::string_view what,
                               Fn&& fn) {
  auto lines = SplitKeyValueLines(body);
  if (!lines.ok()) return lines.status();
  for (const auto& [key, value] : *lines) {
    const size_t dot = key.rfind('.');  // before the hour: tkeys and skeys never hold a '.'
    if (!key.starts_with(prefix) || dot == std::string_view::npos || dot + 1 < prefix.size()) {
      return BadPeerValue(what, key);
    }
    std::string_view skey;
    if (keyed) {
      if (dot <= prefix.size()) return BadPeerValue(what, key);
      skey = key.substr(prefix.size(), dot - prefix.size());
      if (skey.find('.') != std::string_view::npos) return BadPeerValue(what, key);
    } else if (dot + 1 != prefix.size()) {
      return BadPeerValue(what, key);
    }
    auto hour = UnixFromYmdh(key.substr(dot + 1));
    if (!hour.ok()) return BadPeerValue(what, key);
    CLICKATRON_RETURN_IF_ERROR(fn(*hour, skey, value));
  }
  return Status::Ok();
}

// The hours [begin_ts, end_ts) a query needs; hours outside are skipped
// before they are decoded (a hot key's total holds years of hours).
struct HourSpan {
  int64_t begin_ts = std::numeric_limits<int64_t>::min();
  int64_t end_ts = std::numeric_limits<int64_t>::max();
  bool Contains(int64_t ts) const { return ts >= begin_ts && ts < end_ts; }
};

// An archive total value "YMDH:v YMDH:v …" (a trailing newline, as /get
// answers it, is allowed): adds its hours in `span` to *hours. Every archived
// hour counts, also hours after the archive's last day: those come from bulk
// loads and late data, which never went through the realtime ring (last_day
// only says which realtime days the archive has taken in). Columns before
// the span are found by bisection, trusting their YMDH order (the format's
// promise; a replica checks its file against the manifest's crc32); every
// column from there to the end is checked: syntax, order, counts in the span.
Status AddArchiveTotalColumns(std::string_view value, HourlyCounts* hours, const HourSpan& span = {});

// An archive total record's columns, all decoded (and checked) once: kept
// with a kept answer (archive_reply_cache.h), so that a hot key's query reads
// its window's hours by bisection instead of parsing the text again.
struct ArchiveTotalHours {
  std::vector<std::pair<int64_t, int64_t>> hours;  // (hour start, count), ascending, each hour once
};
Result<ArchiveTotalHours> DecodeArchiveTotal(std::string_view value);
// AddArchiveTotalColumns' result, from the decoded hours.
Status AddArchiveTotalHours(const ArchiveTotalHours& total, HourlyCounts* hours, const HourSpan& span = {});
// The count of an archive column: CORRUPTION "bad WHAT from a peer: VALUE"
// when it is none. Plain digits (what the rebuild writes) are read here;
// anything else (a sign, an overflow, garbage) is left to ParseCount, whose
// answer is the rule: every column of a long window passes through this.
Result<int64_t> ParseColumnCountSlowly(std::string_view text, std::string_view what, std::string_view value);
inline Result<int64_t> ParseColumnCount(std::string_view text, std::string_view what, std::string_view value) {
  if (text.empty() || text.size() > 18) return ParseColumnCountSlowly(text, what, value);  // 18 digits never overflow
  int64_t count = 0;
  for (const char c : text) {
    const unsigned digit = static_cast<unsigned>(static_cast<unsigned char>(c)) - '0';
    if (digit > 9) return ParseColumnCountSlowly(text, what, value);
    count = count * 10 + digit;
  }
  return count;
}
// Calls fn(skey, count) for each column of an archive subtotal value
// "skey:v skey:v …" (a trailing newline allowed); a count that is not one is
// CORRUPTION naming the value. A template, as ForEachColumn: called per
// column of every record a breakdown reads.
template <typename Fn>
Status ForEachSubtotalCount(std::string_view value, Fn&& fn) {
  return ForEachColumn(value, "archive subtotal", [&](std::string_view skey, std::string_view count_text) -> Status {
    auto count = ParseColumnCount(count_text, "archive subtotal", value);
    if (!count.ok()) return count.status();
    return fn(skey, *count);
  });
}
// The same, each column appended at `hour`.
Status AddArchiveSubtotalColumns(std::string_view value, int64_t hour, HourlyBreakdown* out);

// Realtime answers to fwmatch "ns|tkey." ("ns|tkey.YMDH,v" lines): adds the
// hours that are not archived and in `span` to *hours.
Status AddRealtimeTotalLines(std::string_view body, std::string_view prefix, const ArchiveLastDay& last_day,
                             HourlyCounts* hours, const HourSpan& span = {});
// Realtime answers to fwmatch "sns.ns|tkey." ("sns.ns|tkey.skey.YMDH,v"):
// adds hours that are not archived and lie in [begin_ts, end_ts).
Status AddRealtimeSubtotalLines(std::string_view body, std::string_view prefix, const ArchiveLastDay& last_day,
                                int64_t begin_ts, int64_t end_ts, HourlyBreakdown* hours);

}  // namespace clickatron::api
