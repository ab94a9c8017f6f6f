// Read-path record decoding; see read_records.h.
#include "query/merge/read_records.h"

#include <fmt/format.h>

#include <algorithm>

#include "clickatron/key_codec.h"
#include "clickatron/record.h"
#include "clickatron/ymdh.h"

namespace clickatron::api {
namespace {

// A YMDH code (4 or 5 bytes) as a number in the same order: its bytes,
// big-endian, left-aligned in 5 bytes (a shorter code is padded with 0,
// which sorts first, as bytewise order would).
uint64_t CodeOf(std::string_view ymdh) {
  uint64_t code = 0;
  for (size_t i = 0; i < kMaxYmdhLength; ++i) code = (code << 8) | (i < ymdh.size() ? static_cast<uint8_t>(ymdh[i]) : 0);
  return code;
}

// What comes before the ':' of an archive column "YMDH:count" starting at
// `at`, if it is short enough to be a code (not checked as one).
std::string_view ColumnCodeText(std::string_view value, size_t at) {
  const size_t colon = value.find(':', at);
  if (colon == std::string_view::npos || colon - at > kMaxYmdhLength) return {};
  return value.substr(at, colon - at);
}

// The code of an archive column "YMDH:count" starting at `at` (empty when
// the column does not start with one).
std::string_view ColumnCode(std::string_view value, size_t at) {
  const std::string_view code = ColumnCodeText(value, at);
  return LooksLikeYmdh(code) ? code : std::string_view();
}

// The value of one b32 digit already checked by LooksLikeYmdh.
int B32Digit(char c) { return c <= '9' ? c - '0' : c - 'a' + 10; }
bool IsB32Digit(char c) { return (c >= '0' && c <= '9') || (c >= 'a' && c <= 'v'); }

// The start of the first column at or after pos (value.size() if none).
size_t ColumnStartAtOrAfter(std::string_view value, size_t pos) {
  if (pos == 0 || value[pos - 1] == ' ') return pos;
  const size_t space = value.find(' ', pos);
  return space == std::string_view::npos ? value.size() : space + 1;
}

// A column start from which a walk over an archive total reaches every
// column whose code is >= low: bisection over the text, since columns are
// sorted by YMDH (docs/protocols.md), so a hot key's years of hours cost a few
// probes, not a parse of each. A probe that lands on something that is not a
// YMDH ends the bisection early; the walk validates every column it reads.
size_t WalkStartFor(std::string_view value, uint64_t low) {
  if (low == 0) return 0;
  size_t lo = 0;              // 0, or a column start whose code is < low
  size_t hi = value.size();   // the end, or a column start whose code is >= low
  while (hi - lo > 64) {
    const size_t c = ColumnStartAtOrAfter(value, lo + (hi - lo) / 2);
    if (c >= hi) break;
    const std::string_view code = ColumnCode(value, c);
    if (code.empty()) break;
    if (CodeOf(code) < low) {
      lo = c;
    } else {
      hi = c;
    }
  }
  return lo;
}

}  // namespace

Result<int64_t> ParseColumnCountSlowly(std::string_view text, std::string_view what, std::string_view value) {
  auto count = ParseCount(text);
  if (!count.ok()) return BadPeerValue(what, value);
  return count;
}

Status BadPeerValue(std::string_view what, std::string_view text) {
  return Status::Corruption(fmt::format("bad {} from a peer: {}", what, QuoteForMessage(text)));
}

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
    if (comma == std::string_view::npos) return BadPeerValue("line", line);
    out.emplace_back(line.substr(0, comma), line.substr(comma + 1));
  }
  return out;
}

Status AddArchiveTotalColumns(std::string_view value, HourlyCounts* hours, const HourSpan& span) {
  while (!value.empty() && (value.back() == '\n' || value.back() == '\r')) value.remove_suffix(1);
  // Codes of the span's first and last hours (clamped to the YMDH range):
  // columns are compared as codes, and only those in between are decoded.
  static const int64_t kFirst = DaysFromCivil({kMinYmdhYear, 1, 1}) * kSecondsPerDay;
  const uint64_t low = span.begin_ts <= kFirst ? 0 : CodeOf(*YmdhFromUnix(std::min(span.begin_ts, kEndOfHourCodes - 1)));
  const uint64_t high = span.end_ts >= kEndOfHourCodes ? UINT64_MAX : CodeOf(*YmdhFromUnix(std::max(span.end_ts, kFirst)));
  uint64_t previous = 0;
  // The Y-M-D part of the last decoded code and the code's length: a column
  // of the same day and length has the same checked bytes but its hour's.
  uint64_t day_code = UINT64_MAX;
  size_t day_length = 0;
  int64_t day_start = 0;
  for (size_t pos = WalkStartFor(value, low); pos < value.size();) {
    size_t end = value.find(' ', pos);
    if (end == std::string_view::npos) end = value.size();
    const std::string_view column = value.substr(pos, end - pos);
    pos = end + 1;
    const std::string_view ymdh = ColumnCodeText(column, 0);
    if (ymdh.size() < 4 || column.size() < ymdh.size() + 2) return BadPeerValue("archive total", value);
    const uint64_t code = CodeOf(ymdh);
    const uint64_t this_day = code & ~(uint64_t{0xff} << (8 * (kMaxYmdhLength - ymdh.size())));  // hour byte off
    // Consecutive columns mostly share their day: the whole code is checked
    // (and its date decoded) once a day, the hour's character each time.
    const bool same_day = this_day == day_code && ymdh.size() == day_length;
    if (same_day ? !IsB32Digit(ymdh.back()) : !LooksLikeYmdh(ymdh)) return BadPeerValue("archive total", value);
    const int hour_of_day = B32Digit(ymdh.back());
    if (hour_of_day > 23) return BadPeerValue("archive total", value);
    if (code < previous) return BadPeerValue("archive total (columns out of order)", value);
    previous = code;
    // Columns after the span are still read (cheaply: no decoding) so that
    // damage there is reported rather than skipped.
    if (code < low || code > high) continue;
    if (!same_day) {
      auto hour = UnixFromYmdh(ymdh);
      if (!hour.ok()) return BadPeerValue("archive total", value);
      day_code = this_day;
      day_length = ymdh.size();
      day_start = *hour - B32Digit(ymdh.back()) * kSecondsPerHour;
    }
    const int64_t hour = day_start + hour_of_day * kSecondsPerHour;
    if (!span.Contains(hour)) continue;
    auto count = ParseColumnCount(column.substr(ymdh.size() + 1), "archive total", value);
    if (!count.ok()) return count.status();
    CLICKATRON_RETURN_IF_ERROR(hours->Add(hour, *count));
  }
  return Status::Ok();
}

Result<ArchiveTotalHours> DecodeArchiveTotal(std::string_view value) {
  HourlyCounts counts;
  CLICKATRON_RETURN_IF_ERROR(AddArchiveTotalColumns(value, &counts));
  ArchiveTotalHours total;
  total.hours.assign(counts.begin(), counts.end());
  return total;
}

Status AddArchiveTotalHours(const ArchiveTotalHours& total, HourlyCounts* hours, const HourSpan& span) {
  const auto before = [](const std::pair<int64_t, int64_t>& h, int64_t ts) { return h.first < ts; };
  const auto first = std::lower_bound(total.hours.begin(), total.hours.end(), span.begin_ts, before);
  const auto last = std::lower_bound(first, total.hours.end(), span.end_ts, before);
  return hours->AddAscending(first, last);
}

Status AddArchiveSubtotalColumns(std::string_view value, int64_t hour, HourlyBreakdown* out) {
  return ForEachSubtotalCount(value, [&](std::string_view skey, int64_t count) {
    out->push_back(SubtotalCount{hour, std::string(skey), count});
    return Status::Ok();
  });
}

Status AddRealtimeTotalLines(std::string_view body, std::string_view prefix, const ArchiveLastDay& last_day,
                             HourlyCounts* hours, const HourSpan& span) {
  return ForEachRealtimeHourLine(
      body, prefix, /*keyed=*/false, "realtime total",
      [&](int64_t hour, std::string_view, std::string_view value) -> Status {
        auto count = ParseCount(value);
        if (!count.ok()) return BadPeerValue("realtime total", value);
        if (HourIsArchived(hour, last_day) || !span.Contains(hour)) return Status::Ok();
        return hours->Add(hour, *count);
      });
}

Status AddRealtimeSubtotalLines(std::string_view body, std::string_view prefix, const ArchiveLastDay& last_day,
                                int64_t begin_ts, int64_t end_ts, HourlyBreakdown* hours) {
  return ForEachRealtimeHourLine(
      body, prefix, /*keyed=*/true, "realtime subtotal",
      [&](int64_t hour, std::string_view skey, std::string_view value) -> Status {
        auto count = ParseCount(value);
        if (!count.ok()) return BadPeerValue("realtime subtotal", value);
        if (HourIsArchived(hour, last_day) || hour < begin_ts || hour >= end_ts) return Status::Ok();
        hours->push_back(SubtotalCount{hour, std::string(skey), *count});
        return Status::Ok();
      });
}

}  // namespace clickatron::api
