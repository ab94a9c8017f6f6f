// Parsing and formatting of realtime and archive records (see record.h).
//
// Parsers validate everything, because they are what stands between the
// stores and bad bytes: a realtime shard parses each incoming line, and the
// rebuild parses every line it reads back from a file.
#include "clickatron/record.h"

#include <fmt/format.h>

#include <algorithm>
#include <array>
#include <charconv>

#include "clickatron/key_codec.h"
#include "clickatron/unique_sketch.h"
#include "clickatron/ymdh.h"

namespace clickatron {
namespace {

enum class KeyFormat { kRealtime, kArchive };

const char* FormatName(KeyFormat format) {
  return format == KeyFormat::kRealtime ? "realtime" : "archive";
}

// Splits `text` on '.' into exactly `want` parts; false if the count differs.
bool SplitDots(std::string_view text, size_t want, std::array<std::string_view, 3>* parts) {
  size_t n = 0;
  size_t start = 0;
  while (true) {
    const size_t dot = text.find('.', start);
    if (n == want) return false;
    (*parts)[n++] = text.substr(start, dot == std::string_view::npos ? dot : dot - start);
    if (dot == std::string_view::npos) break;
    start = dot + 1;
  }
  return n == want;
}

Status ValidateLookup(std::string_view hash, std::string_view value) {
  CLICKATRON_RETURN_IF_ERROR(ValidateKeyPart(value, "lookup value"));
  // A lookup under the wrong hash would expand a key into someone else's value
  // at query time; catching it here keeps bad data out of the stores.
  if (const std::string actual = Hash12(value); actual != hash) {
    return Status::InvalidArgument(fmt::format(
        "lookup value {} hashes to {}, not {}", QuoteForMessage(value), actual, hash));
  }
  return Status::Ok();
}

// The one key parser behind ParseRealtimeKey and ParseArchiveKey; the formats
// differ only in how many '.'-separated parts follow the '|'.
Status ParseKeyParts(std::string_view key, KeyFormat format, RealtimeKeyView* out) {
  const bool unique = IsUniqueKey(key);
  if (unique) key.remove_prefix(1);
  const size_t bar = key.find('|');
  if (bar == std::string_view::npos) return Status::InvalidArgument("no '|' after the namespace");
  if (key.find('|', bar + 1) != std::string_view::npos) {
    return Status::InvalidArgument("more than one '|'");
  }
  const std::string_view prefix = key.substr(0, bar);
  const std::string_view suffix = key.substr(bar + 1);
  if (prefix == kLookupNamespace) {
    if (unique) return Status::InvalidArgument("a lookup has no unique record ('~l|')");
    if (!LooksLikeHash(suffix)) {
      return Status::InvalidArgument(fmt::format(
          "lookup hash {} is not 12 base64 characters ending in '='", QuoteForMessage(suffix)));
    }
    out->type = RecordType::kLookup;
    out->tkey = suffix;
    return Status::Ok();
  }
  const bool realtime = format == KeyFormat::kRealtime;
  std::array<std::string_view, 3> parts;
  std::string_view ymdh;
  if (const size_t dot = prefix.find('.'); dot == std::string_view::npos) {
    CLICKATRON_RETURN_IF_ERROR(ValidateNamespace(prefix, "ns"));
    // A unique total keeps its hour in the key in both formats.
    const bool with_hour = realtime || unique;
    if (!SplitDots(suffix, with_hour ? 2 : 1, &parts)) {
      return Status::InvalidArgument(unique     ? "a unique total key is ~ns|tkey.YMDH"
                                     : realtime ? "a total key is ns|tkey.YMDH"
                                                : "an archive total key is ns|tkey");
    }
    CLICKATRON_RETURN_IF_ERROR(ValidateStoredKeyPart(parts[0], "tkey"));
    out->type = unique ? RecordType::kUniqueTotal : RecordType::kTotal;
    out->ns = prefix;
    out->tkey = parts[0];
    if (with_hour) ymdh = parts[1];
    // Only the archive has day and span records.
    if (unique && !realtime && LooksLikeSpanCode(ymdh)) {
      if (Result<DaySpan> span = SpanFromCode(ymdh); !span.ok()) return span.status();
      out->type = RecordType::kDayUniqueTotal;
      out->ymdh = ymdh;
      return Status::Ok();
    }
  } else {
    const std::string_view sns = prefix.substr(0, dot);
    const std::string_view ns = prefix.substr(dot + 1);
    CLICKATRON_RETURN_IF_ERROR(ValidateNamespace(sns, "sns"));
    CLICKATRON_RETURN_IF_ERROR(ValidateNamespace(ns, "ns"));
    if (!SplitDots(suffix, realtime ? 3 : 2, &parts)) {
      return Status::InvalidArgument(realtime ? "a subtotal key is [~]sns.ns|tkey.skey.YMDH"
                                              : "an archive subtotal key is [~]sns.ns|tkey.YMDH");
    }
    CLICKATRON_RETURN_IF_ERROR(ValidateStoredKeyPart(parts[0], "tkey"));
    if (realtime) CLICKATRON_RETURN_IF_ERROR(ValidateStoredKeyPart(parts[1], "skey"));
    out->type = unique ? RecordType::kUniqueSubtotal : RecordType::kSubtotal;
    out->sns = sns;
    out->ns = ns;
    out->tkey = parts[0];
    if (realtime) out->skey = parts[1];
    ymdh = parts[realtime ? 2 : 1];
    // Only the archive has day and span records.
    if (!realtime && LooksLikeSpanCode(ymdh)) {
      if (Result<DaySpan> span = SpanFromCode(ymdh); !span.ok()) return span.status();
      out->type = unique ? RecordType::kDayUniqueSubtotal : RecordType::kDaySubtotal;
      out->ymdh = ymdh;
      return Status::Ok();
    }
  }
  if (out->type != RecordType::kTotal || realtime) {
    Result<int64_t> t = UnixFromYmdh(ymdh);
    if (!t.ok()) return t.status();
    out->ymdh = ymdh;
    out->hour_start = *t;
  }
  return Status::Ok();
}

// The owned copy of a parsed key.
RealtimeKey Owned(const RealtimeKeyView& k) {
  return RealtimeKey{k.type, std::string(k.sns), std::string(k.ns), std::string(k.tkey), std::string(k.skey),
                     std::string(k.ymdh)};
}

Status ParseKeyView(std::string_view key, KeyFormat format, RealtimeKeyView* out) {
  if (Status st = ParseKeyParts(key, format, out); !st.ok()) {
    return st.WithContext(fmt::format("{} key {}", FormatName(format), QuoteForMessage(key)));
  }
  return Status::Ok();
}

Result<RealtimeKey> ParseKey(std::string_view key, KeyFormat format) {
  RealtimeKeyView view;
  CLICKATRON_RETURN_IF_ERROR(ParseKeyView(key, format, &view));
  return Owned(view);
}

// Column k (1-based) of an archive value; name rules depend on the type.
Status ParseColumn(std::string_view text, size_t k, RecordType type, ArchiveColumn* out) {
  if (text.empty()) {
    return Status::InvalidArgument(fmt::format("column {} is empty (doubled or trailing space)", k));
  }
  const size_t colon = text.find(':');
  if (colon == std::string_view::npos) {
    return Status::InvalidArgument(
        fmt::format("column {} {} is not name:{}", k, QuoteForMessage(text), IsUniqueType(type) ? "sketch" : "count"));
  }
  const std::string_view name = text.substr(0, colon);
  if (type == RecordType::kTotal) {
    if (Result<int64_t> t = UnixFromYmdh(name); !t.ok()) {
      return t.status().WithContext(fmt::format("column {}", k));
    }
  } else {
    // The context is formatted only for an error: this runs for every column.
    if (Status st = ValidateStoredKeyPart(name, "skey"); !st.ok()) return st.WithContext(fmt::format("column {}", k));
  }
  out->name = std::string(name);
  if (IsUniqueType(type)) {
    Result<UniqueSketch> sketch = UniqueSketch::FromText(text.substr(colon + 1));
    if (!sketch.ok()) return sketch.status().WithContext(fmt::format("column {}", k));
    out->sketch = std::move(sketch).value();
    return Status::Ok();
  }
  Result<int64_t> count = ParseCount(text.substr(colon + 1));
  if (!count.ok()) return count.status().WithContext(fmt::format("column {}", k));
  out->count = *count;
  return Status::Ok();
}

Status ParseColumns(std::string_view value, RecordType type, std::vector<ArchiveColumn>* out) {
  if (value.empty()) return Status::InvalidArgument("no columns");
  size_t start = 0;
  for (size_t k = 1;; ++k) {
    const size_t space = value.find(' ', start);
    const std::string_view text =
        value.substr(start, space == std::string_view::npos ? space : space - start);
    ArchiveColumn column;
    CLICKATRON_RETURN_IF_ERROR(ParseColumn(text, k, type, &column));
    // Sorted, unique columns are what lets readers and merges work in one pass.
    if (!out->empty() && !(out->back().name < column.name)) {
      return Status::InvalidArgument(
          out->back().name == column.name
              ? fmt::format("column {} repeats the name \"{}\"", k, column.name)
              : fmt::format("column {} \"{}\" is out of order after \"{}\"", k, column.name,
                            out->back().name));
    }
    out->push_back(std::move(column));
    if (space == std::string_view::npos) break;
    start = space + 1;
  }
  return Status::Ok();
}

}  // namespace

std::string FormatRealtimeKey(const RealtimeKey& key) {
  switch (key.type) {
    case RecordType::kTotal:
      return fmt::format("{}|{}.{}", key.ns, key.tkey, key.ymdh);
    case RecordType::kSubtotal:
      return fmt::format("{}.{}|{}.{}.{}", key.sns, key.ns, key.tkey, key.skey, key.ymdh);
    case RecordType::kLookup:
      return LookupKey(key.tkey);
    case RecordType::kUniqueTotal:
      return UniqueTotalKey(key.ns, key.tkey, key.ymdh);
    case RecordType::kUniqueSubtotal:
      return fmt::format("{}{}.{}|{}.{}.{}", kUniqueMark, key.sns, key.ns, key.tkey, key.skey, key.ymdh);
    case RecordType::kDaySubtotal:
    case RecordType::kDayUniqueTotal:
    case RecordType::kDayUniqueSubtotal:
      return {};  // archive only: no realtime key
  }
  return {};
}

Result<RealtimeKey> ParseRealtimeKey(std::string_view key) {
  return ParseKey(key, KeyFormat::kRealtime);
}

Result<RealtimeKey> ParseArchiveKey(std::string_view key) {
  return ParseKey(key, KeyFormat::kArchive);
}

Status ParseRealtimeLineView(std::string_view line, RealtimeLineView* out) {
  const size_t comma = line.find(',');
  if (comma == std::string_view::npos) {
    return Status::InvalidArgument(
        fmt::format("realtime line {} has no ',' before its value", QuoteForMessage(line)));
  }
  out->key = RealtimeKeyView{};
  CLICKATRON_RETURN_IF_ERROR(ParseKeyView(line.substr(0, comma), KeyFormat::kRealtime, &out->key));
  out->value = line.substr(comma + 1);
  out->count = 0;
  if (out->key.type == RecordType::kLookup) {
    if (Status st = ValidateLookup(out->key.tkey, out->value); !st.ok()) {
      return st.WithContext(fmt::format("realtime line {}", QuoteForMessage(line)));
    }
    return Status::Ok();
  }
  if (IsUniqueType(out->key.type)) return Status::Ok();
  Result<int64_t> count = ParseCount(out->value);
  if (!count.ok()) {
    return count.status().WithContext(fmt::format("realtime line {}", QuoteForMessage(line)));
  }
  out->count = *count;
  return Status::Ok();
}

Result<RealtimeLine> ParseRealtimeLine(std::string_view line) {
  RealtimeLineView view;
  CLICKATRON_RETURN_IF_ERROR(ParseRealtimeLineView(line, &view));
  RealtimeLine out;
  const RealtimeKeyView& k = view.key;
  out.key = Owned(k);
  out.count = view.count;
  if (k.type == RecordType::kLookup) out.lookup_value = std::string(view.value);
  if (IsUniqueType(k.type)) {
    Result<UniqueSketch> sketch = UniqueSketch::FromText(view.value);
    if (!sketch.ok()) return sketch.status().WithContext(fmt::format("realtime line {}", QuoteForMessage(line)));
    out.sketch = std::move(sketch).value();
  }
  return out;
}

std::string FormatRealtimeLine(const RealtimeLine& line) {
  if (line.key.type == RecordType::kLookup) {
    return fmt::format("{},{}", FormatRealtimeKey(line.key), line.lookup_value);
  }
  if (IsUniqueType(line.key.type)) return fmt::format("{},{}", FormatRealtimeKey(line.key), line.sketch.ToText());
  return fmt::format("{},{}", FormatRealtimeKey(line.key), line.count);
}

Status CheckLineCount(int64_t count) {
  if (count <= 0) {
    return Status::InvalidArgument(fmt::format("count {} is not positive (clicks are counted up)", count),
                                   "BAD_COUNT");
  }
  if (count > kMaxLineCount) {
    return Status::InvalidArgument(
        fmt::format("count {} is over {}, the most one line may carry", count, kMaxLineCount), "BAD_COUNT");
  }
  return Status::Ok();
}

Status CheckArchiveCounts(const ArchiveRecord& record) {
  if (record.type != RecordType::kTotal && record.type != RecordType::kSubtotal &&
      record.type != RecordType::kDaySubtotal) {
    return Status::Ok();
  }
  for (const ArchiveColumn& column : record.columns) CLICKATRON_RETURN_IF_ERROR(CheckLineCount(column.count));
  return Status::Ok();
}

Result<ArchiveRecord> ParseArchiveLine(std::string_view line) {
  const size_t comma = line.find(',');
  if (comma == std::string_view::npos) {
    return Status::InvalidArgument(
        fmt::format("archive line {} has no ',' before its value", QuoteForMessage(line)));
  }
  const std::string_view key = line.substr(0, comma);
  Result<RealtimeKey> parts = ParseArchiveKey(key);
  if (!parts.ok()) return parts.status();
  ArchiveRecord out;
  out.type = parts->type;
  out.key = std::string(key);
  const std::string_view value = line.substr(comma + 1);
  Status st;
  if (out.type == RecordType::kLookup) {
    st = ValidateLookup(parts->tkey, value);
    out.lookup_value = std::string(value);
  } else if (IsSketchValueType(out.type)) {
    Result<UniqueSketch> sketch = UniqueSketch::FromText(value);
    st = sketch.status();
    if (sketch.ok()) out.sketch = std::move(sketch).value();
  } else {
    st = ParseColumns(value, out.type, &out.columns);
  }
  if (!st.ok()) return st.WithContext(fmt::format("archive line {}", QuoteForMessage(line)));
  return out;
}

std::string FormatArchiveLine(const ArchiveRecord& record) {
  std::string out = record.key;
  out += ',';
  if (record.type == RecordType::kLookup) {
    out += record.lookup_value;
    return out;
  }
  if (IsSketchValueType(record.type)) {
    record.sketch.AppendText(&out);
    return out;
  }
  // Columns are normally sorted already (parsed or combined); sort a copy only
  // when a caller built them by hand, so the written line is always valid.
  const auto by_name = [](const ArchiveColumn& a, const ArchiveColumn& b) { return a.name < b.name; };
  std::vector<ArchiveColumn> sorted;
  const std::vector<ArchiveColumn>* columns = &record.columns;
  if (!std::is_sorted(columns->begin(), columns->end(), by_name)) {
    sorted = record.columns;
    std::stable_sort(sorted.begin(), sorted.end(), by_name);
    columns = &sorted;
  }
  const bool sketches = IsUniqueType(record.type);
  for (size_t i = 0; i < columns->size(); ++i) {
    if (i > 0) out += ' ';
    if (sketches) {
      out.append((*columns)[i].name).append(":");
      (*columns)[i].sketch.AppendText(&out);
    } else {
      fmt::format_to(std::back_inserter(out), "{}:{}", (*columns)[i].name, (*columns)[i].count);
    }
  }
  return out;
}

Result<int64_t> ParseCount(std::string_view text) {
  if (text.empty()) return Status::InvalidArgument("count is empty");
  int64_t value = 0;
  // from_chars takes exactly [-]digits: no '+', no spaces, no hex.
  const auto [ptr, ec] = std::from_chars(text.data(), text.data() + text.size(), value);
  if (ec == std::errc::result_out_of_range) {
    return Status::OutOfRange(fmt::format("count {} overflows int64", QuoteForMessage(text)));
  }
  if (ec != std::errc() || ptr != text.data() + text.size()) {
    return Status::InvalidArgument(
        fmt::format("count {} is not a decimal integer", QuoteForMessage(text)));
  }
  return value;
}

Status AddCount(int64_t* sum, int64_t delta) {
  int64_t result = 0;
  if (__builtin_add_overflow(*sum, delta, &result)) {
    return Status::OutOfRange(fmt::format("{} + {} overflows int64", *sum, delta));
  }
  *sum = result;
  return Status::Ok();
}

RecordType RecordTypeOfKey(std::string_view key) {
  const bool unique = IsUniqueKey(key);
  const std::string_view prefix = key.substr(0, key.find('|'));
  if (prefix == kLookupNamespace) return RecordType::kLookup;
  const bool sub = prefix.find('.') != std::string_view::npos;
  if (!unique && !sub) return RecordType::kTotal;
  const size_t dot = key.rfind('.');
  const bool day = dot != std::string_view::npos && dot > prefix.size() && LooksLikeSpanCode(key.substr(dot + 1));
  if (unique) {
    if (sub) return day ? RecordType::kDayUniqueSubtotal : RecordType::kUniqueSubtotal;
    return day ? RecordType::kDayUniqueTotal : RecordType::kUniqueTotal;
  }
  return day ? RecordType::kDaySubtotal : RecordType::kSubtotal;
}

int CompareArchiveKeys(std::string_view a, std::string_view b) {
  // Compare a+"," with b+"," without building either string.
  const size_t n = std::min(a.size(), b.size());
  if (const int c = a.substr(0, n).compare(b.substr(0, n)); c != 0) return c < 0 ? -1 : 1;
  if (a.size() == b.size()) return 0;
  // One key is a proper prefix of the other: the shorter one continues with ','.
  const bool a_shorter = a.size() < b.size();
  const auto next = static_cast<unsigned char>(a_shorter ? b[n] : a[n]);
  const int shorter_first = static_cast<unsigned char>(',') <= next ? -1 : 1;
  // ',' == next: "k," vs "k,…" — the shorter is a prefix of the longer, so first.
  return a_shorter ? shorter_first : -shorter_first;
}

std::string_view LineKey(std::string_view line) { return line.substr(0, line.find(',')); }

ArchiveKeyView SplitArchiveKey(std::string_view key) {
  ArchiveKeyView view;
  view.type = RecordTypeOfKey(key);
  if (view.type == RecordType::kLookup) return view;
  const std::string_view body = IsUniqueKey(key) ? key.substr(1) : key;
  const size_t bar = body.find('|');
  if (bar == std::string_view::npos) return view;
  const std::string_view prefix = body.substr(0, bar);  // "ns" or "sns.ns"
  const size_t dot = prefix.find('.');
  view.ns = dot == std::string_view::npos ? prefix : prefix.substr(dot + 1);
  const std::string_view rest = body.substr(bar + 1);  // "tkey" or "tkey.CODE"
  if (view.type == RecordType::kTotal) {
    view.tkey = rest;
  } else {
    const size_t last_dot = rest.rfind('.');
    view.tkey = rest.substr(0, last_dot);
    if (last_dot != std::string_view::npos) view.code = rest.substr(last_dot + 1);
  }
  view.ns_tkey = std::string_view(view.ns.data(), static_cast<size_t>(view.tkey.data() + view.tkey.size() - view.ns.data()));
  return view;
}

bool RealtimeKeyCovered(std::string_view key, std::string_view ns, std::string_view tkey, int64_t from_unix,
                        int64_t to_unix) {
  if (IsUniqueKey(key)) key.remove_prefix(1);
  const size_t bar = key.find('|');
  if (bar == std::string_view::npos) return false;
  std::string_view key_ns = key.substr(0, bar);  // "ns" or "sns.ns"; "l" for a lookup
  if (key_ns == "l") return false;
  if (const size_t dot = key_ns.find('.'); dot != std::string_view::npos) key_ns.remove_prefix(dot + 1);
  if (key_ns != ns) return false;
  const std::string_view rest = key.substr(bar + 1);  // "tkey.YMDH" or "tkey.skey.YMDH"
  const size_t first_dot = rest.find('.');
  if (first_dot == std::string_view::npos) return false;
  if (!tkey.empty() && rest.substr(0, first_dot) != tkey) return false;
  Result<int64_t> hour = UnixFromYmdh(rest.substr(rest.rfind('.') + 1));
  return hour.ok() && *hour >= from_unix && *hour < to_unix;
}

std::string_view UniqueKeyOfDay(std::string_view key) {
  if (!IsUniqueKey(key)) return {};
  const size_t dot = key.rfind('.');
  if (dot == std::string_view::npos || !LooksLikeYmdh(key.substr(dot + 1))) return {};
  return key.substr(0, key.size() - 1);
}

std::string TotalArchiveKey(std::string_view ns, std::string_view tkey) {
  return fmt::format("{}|{}", ns, tkey);
}

std::string SubtotalArchiveKey(std::string_view sns, std::string_view ns, std::string_view tkey,
                               std::string_view ymdh) {
  return fmt::format("{}.{}|{}.{}", sns, ns, tkey, ymdh);
}

std::string DaySubtotalArchiveKey(std::string_view sns, std::string_view ns, std::string_view tkey,
                                  std::string_view day_code) {
  return fmt::format("{}.{}|{}.{}", sns, ns, tkey, day_code);
}

std::string LookupKey(std::string_view hash) { return fmt::format("l|{}", hash); }

std::string UniqueTotalKey(std::string_view ns, std::string_view tkey, std::string_view ymdh) {
  return fmt::format("{}{}|{}.{}", kUniqueMark, ns, tkey, ymdh);
}

std::string UniqueSubtotalArchiveKey(std::string_view sns, std::string_view ns, std::string_view tkey,
                                     std::string_view ymdh) {
  return fmt::format("{}{}.{}|{}.{}", kUniqueMark, sns, ns, tkey, ymdh);
}

}  // namespace clickatron
