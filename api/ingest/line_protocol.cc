#include "ingest/line_protocol.h"

#include <algorithm>
#include <charconv>
#include <cmath>
#include <cstdint>
#include <string>
#include <utility>
#include <vector>

#include <fmt/format.h>

#include "clickatron/key_codec.h"
#include "clickatron/query_string.h"
#include "clickatron/ymdh.h"

namespace clickatron::api {
namespace {

// Helpers carry an Lp prefix: the library is built in unity batches, where
// this anonymous namespace merges with increment_parser.cc's (its Invalid…).

// What a backslash escapes in each element of a line.
constexpr std::string_view kLpMeasurementEscapes = ", ";
constexpr std::string_view kLpKeyEscapes = ",= ";  // tag keys, tag values, field keys
constexpr std::string_view kLpStringEscapes = "\"\\";

Status LpInvalid(std::string_view reason, std::string message) {
  return Status::InvalidArgument(std::move(message), std::string(reason));
}

Status LpSyntaxError(std::string message) { return LpInvalid("INVALID_LINE_PROTOCOL", std::move(message)); }

// One line split into its elements, before any mapping to /incr parameters:
// the whole line's syntax is checked first, so a line with a syntax error
// always reports INVALID_LINE_PROTOCOL whatever else is wrong with it.
struct LpField {
  std::string key;
  std::string_view raw;  // as written; a string value keeps its quotes and escapes
};
struct LpPoint {
  std::string measurement;
  std::vector<std::pair<std::string, std::string>> tags;  // unescaped
  std::vector<LpField> fields;
  std::string_view timestamp;  // empty when absent
};

// The first byte of `stops` at or after pos that no backslash escapes, or
// text.size(). A backslash hides the byte after it whatever that byte is, as
// InfluxDB's scanner does; LpUnescape then agrees on where each escape is.
size_t LpScanTo(std::string_view text, size_t pos, std::string_view stops) {
  while (pos < text.size()) {
    if (text[pos] == '\\') {
      pos += 2;
      continue;
    }
    if (stops.find(text[pos]) != std::string_view::npos) return pos;
    ++pos;
  }
  return text.size();
}

size_t LpSkipSpaces(std::string_view text, size_t pos) {
  while (pos < text.size() && text[pos] == ' ') ++pos;
  return pos;
}

// Drops the backslash of each `\c` with c in `escapable`. Any other backslash
// is a literal one: line protocol does not escape a backslash in names
// (`a\b` is the three bytes a, \, b).
std::string LpUnescape(std::string_view raw, std::string_view escapable) {
  std::string out;
  out.reserve(raw.size());
  for (size_t i = 0; i < raw.size(); ++i) {
    if (raw[i] == '\\' && i + 1 < raw.size() && escapable.find(raw[i + 1]) != std::string_view::npos) ++i;
    out += raw[i];
  }
  return out;
}

// Splits `line` (no line break, not blank, not a comment) into *p.
Status LpSplitLine(std::string_view line, LpPoint* p) {
  p->tags.clear();
  p->fields.clear();
  p->timestamp = {};
  size_t pos = LpScanTo(line, 0, ", ");
  if (pos == 0) return LpSyntaxError("the line does not start with a measurement");
  p->measurement = LpUnescape(line.substr(0, pos), kLpMeasurementEscapes);

  while (pos < line.size() && line[pos] == ',') {
    const size_t key_start = pos + 1;
    const size_t eq = LpScanTo(line, key_start, ",= ");
    const std::string_view key = line.substr(key_start, eq - key_start);
    if (key.empty()) return LpSyntaxError("a tag has no key (a stray comma?)");
    if (eq == line.size() || line[eq] != '=') {
      return LpSyntaxError(fmt::format("tag {} has no '=' and value", QuoteForMessage(key)));
    }
    const size_t end = LpScanTo(line, eq + 1, ",= ");
    if (end < line.size() && line[end] == '=') {
      return LpSyntaxError(fmt::format("the value of tag {} has an unescaped '='", QuoteForMessage(key)));
    }
    if (end == eq + 1) {
      return LpSyntaxError(fmt::format("tag {} has an empty value (omit the tag instead)", QuoteForMessage(key)));
    }
    p->tags.emplace_back(LpUnescape(key, kLpKeyEscapes), LpUnescape(line.substr(eq + 1, end - eq - 1), kLpKeyEscapes));
    pos = end;
  }

  // pos is at the space after the measurement and tags, or at the end.
  pos = LpSkipSpaces(line, pos);
  if (pos == line.size()) return LpSyntaxError("the line has no field set (a point needs a field, e.g. value=1i)");
  while (true) {
    const size_t eq = LpScanTo(line, pos, ",= ");
    const std::string_view key = line.substr(pos, eq - pos);
    if (key.empty()) return LpSyntaxError("a field has no key (a stray comma?)");
    if (eq == line.size() || line[eq] != '=') {
      return LpSyntaxError(fmt::format("field {} has no '=' and value", QuoteForMessage(key)));
    }
    const size_t value_start = eq + 1;
    size_t value_end = 0;
    if (value_start < line.size() && line[value_start] == '"') {
      // A string runs to the first quote no backslash escapes; spaces and
      // commas inside it are part of it.
      size_t close = value_start + 1;
      while (close < line.size() && line[close] != '"') close += line[close] == '\\' ? 2 : 1;
      if (close >= line.size()) {
        return LpSyntaxError(fmt::format("the string value of field {} has no closing quote", QuoteForMessage(key)));
      }
      value_end = close + 1;
      if (value_end < line.size() && line[value_end] != ',' && line[value_end] != ' ') {
        return LpSyntaxError(fmt::format("unexpected text after the string value of field {}", QuoteForMessage(key)));
      }
    } else {
      // Numbers and booleans have no escapes.
      value_end = std::min(line.find_first_of(", ", value_start), line.size());
      if (value_end == value_start) return LpSyntaxError(fmt::format("field {} has no value", QuoteForMessage(key)));
    }
    p->fields.push_back(LpField{LpUnescape(key, kLpKeyEscapes), line.substr(value_start, value_end - value_start)});
    pos = value_end;
    if (pos < line.size() && line[pos] == ',') {
      ++pos;
      continue;
    }
    break;
  }

  pos = LpSkipSpaces(line, pos);
  if (pos < line.size()) {
    const size_t end = std::min(line.find(' ', pos), line.size());
    p->timestamp = line.substr(pos, end - pos);
    if (LpSkipSpaces(line, end) != line.size()) return LpSyntaxError("unexpected text after the timestamp");
  }
  return Status::Ok();
}

bool LpIsDigits(std::string_view s) {
  if (s.empty()) return false;
  for (char c : s) {
    if (c < '0' || c > '9') return false;
  }
  return true;
}

bool LpIsBoolean(std::string_view s) {
  for (std::string_view b : {"t", "T", "true", "True", "TRUE", "f", "F", "false", "False", "FALSE"}) {
    if (s == b) return true;
  }
  return false;
}

// The `value` field as the decimal integer /incr takes; ParseIncrement checks
// its range, so only the line protocol type is checked here.
Status LpAddValue(std::string_view raw, QueryArgs* args) {
  auto refuse = [&](std::string_view why) {
    return LpInvalid("INVALID_VALUE", fmt::format("value {} {}", QuoteForMessage(raw), why));
  };
  if (raw.front() == '"') return refuse("is a string; a count is a number (value=3i)");
  if (LpIsBoolean(raw)) return refuse("is a boolean; a count is a number (value=3i)");
  if (raw.back() == 'i' || raw.back() == 'u') {
    std::string_view digits = raw.substr(0, raw.size() - 1);
    // A signed integer may be negative (and is then refused by ParseIncrement
    // with the usual range message); an unsigned one has no sign.
    const bool negative = raw.back() == 'i' && !digits.empty() && digits.front() == '-';
    if (!LpIsDigits(negative ? digits.substr(1) : digits)) return refuse("is not a number");
    args->Add("value", std::string(digits));
    return Status::Ok();
  }
  // A number without a suffix is a float in line protocol, and most clients
  // write counts that way (`value=5`, or 5.0 from a language with one number
  // type): accept it when it holds a whole number.
  if (raw.find_first_not_of("0123456789.+-eE") != std::string_view::npos) return refuse("is not a number");
  double v = 0;
  const char* end = raw.data() + raw.size();
  auto [ptr, ec] = std::from_chars(raw.data(), end, v);
  if (ec != std::errc() || ptr != end) return refuse("is not a number");
  // The bound keeps the cast defined; anything near it fails the range check anyway.
  if (std::trunc(v) != v || std::fabs(v) > 1e15) {
    return refuse(fmt::format("is not a whole number from 1 to {}", kMaxIncrementValue));
  }
  args->Add("value", std::to_string(static_cast<int64_t>(v)));
  return Status::Ok();
}

int64_t LpUnitsPerSecond(LineProtocolPrecision precision) {
  switch (precision) {
    case LineProtocolPrecision::kNanoseconds: return 1'000'000'000;
    case LineProtocolPrecision::kMicroseconds: return 1'000'000;
    case LineProtocolPrecision::kMilliseconds: return 1'000;
    case LineProtocolPrecision::kSeconds:
    case LineProtocolPrecision::kMinutes:
    case LineProtocolPrecision::kHours: return 1;
  }
  return 1;
}

// Seconds per unit of the coarse precisions Influx 1 takes (m, h); 1 for the rest.
int64_t LpSecondsPerUnit(LineProtocolPrecision precision) {
  if (precision == LineProtocolPrecision::kMinutes) return 60;
  if (precision == LineProtocolPrecision::kHours) return 3600;
  return 1;
}

// The /incr parameters of one point.
Status LpPointToArgs(const LpPoint& p, LineProtocolPrecision precision, QueryArgs* args) {
  args->Clear();
  args->Add("ns", p.measurement);
  for (const auto& [tag, value] : p.tags) {
    if (tag == "key") {
      args->Add("key", value);
      continue;
    }
    // sub=T:V is split at its first ':', so a ':' in T would silently move
    // part of the namespace into the subtotal key.
    if (tag.find(':') != std::string::npos) {
      return LpInvalid("INVALID_SUB", fmt::format("tag {} is not a subtotal namespace (':' is not allowed)",
                                                QuoteForMessage(tag)));
    }
    args->Add("sub", tag + ":" + value);
  }
  for (const LpField& f : p.fields) {
    if (f.key == "value") {
      CLICKATRON_RETURN_IF_ERROR(LpAddValue(f.raw, args));
    } else if (f.key == "uniq") {
      if (f.raw.front() != '"') {
        return LpInvalid("INVALID_UNIQ", fmt::format("uniq {} is not a string; quote it (uniq=\"visitor-123\")",
                                                   QuoteForMessage(f.raw)));
      }
      args->Add("uniq", LpUnescape(f.raw.substr(1, f.raw.size() - 2), kLpStringEscapes));
    } else {
      return LpInvalid("UNKNOWN_FIELD",
                     fmt::format("unknown field {}: a point has only value and uniq", QuoteForMessage(f.key)));
    }
  }
  if (!p.timestamp.empty()) {
    int64_t t = 0;
    const char* end = p.timestamp.data() + p.timestamp.size();
    auto [ptr, ec] = std::from_chars(p.timestamp.data(), end, t);
    if (ec != std::errc() || ptr != end) {
      return LpInvalid("INVALID_TS", fmt::format("timestamp {} is not an integer", QuoteForMessage(p.timestamp)));
    }
    // Floor, not truncate: -1 ns is in the second before the epoch.
    const int64_t scale = LpSecondsPerUnit(precision);
    if (t > INT64_MAX / scale || t < INT64_MIN / scale) {
      return LpInvalid("INVALID_TS", fmt::format("timestamp {} is out of range", QuoteForMessage(p.timestamp)));
    }
    args->Add("ts", std::to_string(FloorDiv(t, LpUnitsPerSecond(precision)) * scale));
  }
  return Status::Ok();
}

}  // namespace

Result<LineProtocolPrecision> ParsePrecision(std::string_view text) {
  if (text.empty() || text == "ns" || text == "n") return LineProtocolPrecision::kNanoseconds;
  if (text == "us" || text == "u") return LineProtocolPrecision::kMicroseconds;
  if (text == "ms") return LineProtocolPrecision::kMilliseconds;
  if (text == "s") return LineProtocolPrecision::kSeconds;
  if (text == "m") return LineProtocolPrecision::kMinutes;
  if (text == "h") return LineProtocolPrecision::kHours;
  return LpInvalid("INVALID_PRECISION", fmt::format("precision {} is not one of ns, us, ms, s, n, u, m, h", QuoteForMessage(text)));
}

Result<LineProtocolPrecision> InfluxWritePrecision(const QueryArgs& args) {
  CLICKATRON_RETURN_IF_ERROR(OnlyKnownArgs(
      args, {"db", "rp", "u", "p", "consistency", "org", "orgID", "bucket", "precision"}, "an Influx write"));
  auto text = args.GetSingle("precision", "INVALID_PRECISION");
  if (!text.ok()) return LpInvalid("INVALID_PRECISION", text.status().message());
  return ParsePrecision(*text ? **text : std::string_view());
}

Status ParseLineProtocol(std::string_view body, LineProtocolPrecision precision, const IncrementLimits& limits,
                         HourCache* cache, const std::function<void(const Increment&)>& on_increment) {
  // Reused for every line so a large body allocates them once.
  LpPoint point;
  QueryArgs args;
  Increment inc;
  size_t count = 0;
  return ForEachBodyLine(body, [&](size_t line_no, std::string_view line) {
    const size_t first = line.find_first_not_of(" \t");
    if (first == std::string_view::npos || line[first] == '#') return Status::Ok();
    line.remove_prefix(first);
    CLICKATRON_RETURN_IF_ERROR(CheckBatchLine(line_no, line, count));
    if (Status st = LpSplitLine(line, &point); !st.ok()) return AtLine(line_no, st);
    if (Status st = LpPointToArgs(point, precision, &args); !st.ok()) return AtLine(line_no, st);
    if (Status st = ParseIncrement(args, limits, cache, &inc); !st.ok()) return AtLine(line_no, st);
    ++count;
    on_increment(inc);
    return Status::Ok();
  });
}

}  // namespace clickatron::api
