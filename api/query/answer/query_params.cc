// Query parameter parsing; see query_params.h.
#include "query/answer/query_params.h"

#include <fmt/format.h>

#include <cctype>
#include <charconv>

#include "clickatron/key_codec.h"
#include "clickatron/ymdh.h"

namespace clickatron::api {
namespace {

Status Invalid(std::string_view reason, std::string message) {
  return Status::InvalidArgument(std::move(message), std::string(reason));
}

// A decimal integer with an optional sign and nothing else around it.
// nullopt when it is not one; *overflow set when it is one but too large.
std::optional<int64_t> ParseInteger(std::string_view text, bool* overflow = nullptr) {
  if (!text.empty() && text.front() == '+') {
    text.remove_prefix(1);
    if (!text.empty() && text.front() == '-') return std::nullopt;  // "+-5"
  }
  if (text.empty()) return std::nullopt;
  int64_t value = 0;
  const auto [end, ec] = std::from_chars(text.data(), text.data() + text.size(), value);
  if (end != text.data() + text.size()) return std::nullopt;
  if (ec == std::errc::result_out_of_range) {
    if (overflow) *overflow = true;
    return std::nullopt;
  }
  if (ec != std::errc()) return std::nullopt;
  return value;
}

}  // namespace

Result<std::string> RequiredArg(const QueryArgs& args, std::string_view name, std::string_view reason) {
  auto single = args.GetSingle(name, reason);
  if (!single.ok()) return single.status();
  const std::string* value = *single;
  if (value == nullptr || value->empty()) {
    std::string upper(name);
    for (char& c : upper) c = static_cast<char>(std::toupper(static_cast<unsigned char>(c)));
    return Invalid("MISSING_ARG_" + upper, fmt::format("parameter {} is required", name));
  }
  return *value;
}

namespace {

// A required parameter that `validate` (ValidateNamespace, ValidateKeyPart)
// accepts; what it finds wrong is `reason`.
Result<std::string> ValidArg(const QueryArgs& args, std::string_view name, std::string_view reason,
                             Status (*validate)(std::string_view value, std::string_view field)) {
  auto value = RequiredArg(args, name, reason);
  if (!value.ok()) return value.status();
  Status st = validate(*value, name);
  if (!st.ok()) return Invalid(reason, st.message());
  return value;
}

// A true/false parameter ("1"/"0" too); `reason` when it is neither.
Result<bool> ParseBoolArg(const QueryArgs& args, std::string_view name, bool default_value, std::string_view reason) {
  auto single = args.GetSingle(name, reason);
  if (!single.ok()) return single.status();
  const std::string* text = *single;
  if (text == nullptr) return default_value;
  if (*text == "true" || *text == "1") return true;
  if (*text == "false" || *text == "0") return false;
  return Invalid(reason, fmt::format("{} {} must be true or false", name, QuoteForMessage(*text)));
}

Result<Compare> ParseCompare(const QueryArgs& args) {
  auto single = args.GetSingle("compare", "INVALID_COMPARE");
  if (!single.ok()) return single.status();
  const std::string* text = *single;
  if (text == nullptr) return Compare::kNone;
  if (*text == "previous") return Compare::kPrevious;
  if (*text == "year") return Compare::kYear;
  return Invalid("INVALID_COMPARE", fmt::format("compare {} must be previous or year", QuoteForMessage(*text)));
}

Result<int64_t> ParseUnits(const QueryArgs& args) {
  auto single = args.GetSingle("units", "INVALID_UNITS");
  if (!single.ok()) return single.status();
  const std::string* text = *single;
  if (text == nullptr) return int64_t{-1};
  bool overflow = false;
  auto units = ParseInteger(*text, &overflow);
  if (overflow) {
    return Invalid("WINDOW_TOO_LARGE", fmt::format("units {} is more than any window may hold", QuoteForMessage(*text)));
  }
  if (!units || (*units < 1 && *units != -1)) {
    return Invalid("INVALID_UNITS",
                   fmt::format("units {} must be a whole number >= 1, or -1 for every unit with data",
                               QuoteForMessage(*text)));
  }
  return *units;
}

Result<int64_t> ParseReference(const QueryArgs& args, int64_t now, nlohmann::json* echo) {
  auto single = args.GetSingle("unit_reference_ts", "INVALID_UNIT_REFERENCE_TS");
  if (!single.ok()) return single.status();
  const std::string* text = *single;
  if (text == nullptr || *text == "now") {
    *echo = "now";
    return now;
  }
  auto ts = ParseInteger(*text);
  if (!ts) {
    return Invalid("INVALID_UNIT_REFERENCE_TS",
                   fmt::format("unit_reference_ts {} must be unix seconds or \"now\"", QuoteForMessage(*text)));
  }
  if (*ts < kMinReferenceTs || *ts > kMaxReferenceTs) {
    return Invalid("INVALID_UNIT_REFERENCE_TS",
                   fmt::format("unit_reference_ts {} is outside the years 1..9999", *ts));
  }
  *echo = *ts;
  return *ts;
}

}  // namespace

Result<int> ResolveTimezone(std::string_view text, int64_t at, TimeZoneDb& zones) {
  const auto out_of_range = [&](int64_t hours) {
    return Invalid("INVALID_TIMEZONE", fmt::format("timezone {} gives offset {:+d} hours, outside {:+d}..{:+d}",
                                                   QuoteForMessage(text), hours, kMinHourOffset, kMaxHourOffset));
  };
  bool overflow = false;
  if (auto hours = ParseInteger(text, &overflow)) {
    if (*hours < kMinHourOffset || *hours > kMaxHourOffset) return out_of_range(*hours);
    return static_cast<int>(*hours);
  }
  if (overflow) return out_of_range(0);
  // "+05:00", "-05:00": ISO 8601's form of a whole-hour offset (what
  // retention's zones and most clients write).
  if (text.size() > 3 && text[text.size() - 3] == ':') {
    if (std::optional<int64_t> fixed = ParseWholeHourOffset(text)) {
      const int64_t hours = *fixed / kSecondsPerHour;
      if (hours < kMinHourOffset || hours > kMaxHourOffset) return out_of_range(hours);
      return static_cast<int>(hours);
    }
  }
  auto seconds = zones.OffsetSecondsAt(text, at);
  if (!seconds.ok()) {
    // "+9" sent unescaped arrives as " 9": a query string's '+' is a space.
    const bool plus_as_space = text.size() > 1 && text[0] == ' ' &&
                               (ParseInteger(text.substr(1)).has_value() || ParseWholeHourOffset(text.substr(1)));
    // "+05:30": an offset, but not of whole hours.
    const bool part_hour = text.size() == 6 && (text[0] == '+' || text[0] == '-' || text[0] == ' ') &&
                           text[3] == ':' && ParseInteger(text.substr(1, 2)).has_value() &&
                           ParseInteger(text.substr(4, 2)).value_or(0) != 0;
    const std::string hint =
        plus_as_space ? fmt::format(" (a '+' in a query string is a space: send +{0} as %2B{0})", text.substr(1))
        : part_hour   ? std::string(" (data is hourly: an offset with minutes cannot be served)")
                      : std::string();
    return Invalid("INVALID_TIMEZONE", fmt::format("timezone {} is neither a whole-hour offset nor a known zone name{}",
                                                   QuoteForMessage(text), hint));
  }
  if (*seconds % kSecondsPerHour != 0) {
    // Data is hourly: a unit boundary at :30 would split hours we cannot split.
    const int64_t abs = *seconds < 0 ? -*seconds : *seconds;
    return Invalid("INVALID_TIMEZONE",
                   fmt::format("timezone {} is at UTC{}{:02d}:{:02d} then; hourly data can only serve whole-hour "
                               "offsets",
                               QuoteForMessage(text), *seconds < 0 ? '-' : '+', abs / 3600, (abs % 3600) / 60));
  }
  const int64_t hours = *seconds / kSecondsPerHour;
  if (hours < kMinHourOffset || hours > kMaxHourOffset) return out_of_range(hours);
  return static_cast<int>(hours);
}

namespace {

Result<WindowParams> ParseWindowParams(const QueryArgs& args, int64_t now, bool default_rollup, TimeZoneDb& zones) {
  WindowParams w;
  auto unit_arg = args.GetSingle("unit", "INVALID_UNIT");
  if (!unit_arg.ok()) return unit_arg.status();
  if (const std::string* unit = *unit_arg) {
    auto u = ParseUnit(*unit);
    if (!u) {
      return Invalid("INVALID_UNIT", fmt::format("unit {} must be one of hour, day, week, mweek, month",
                                                 QuoteForMessage(*unit)));
    }
    w.unit = *u;
  }
  auto units = ParseUnits(args);
  if (!units.ok()) return units.status();
  w.units = *units;
  auto reference = ParseReference(args, now, &w.reference_echo);
  if (!reference.ok()) return reference.status();
  w.reference_ts = *reference;

  // timezone, hour_offset and tz_offset are one parameter under three names.
  // Given twice, they must name the same offset at the reference time
  // ("UTC" and "0" do; compared as offsets, not as text).
  std::string_view tz_name;
  bool have_tz = false;
  for (std::string_view name : {"timezone", "hour_offset", "tz_offset"}) {
    auto single = args.GetSingle(name, "INVALID_TIMEZONE");
    if (!single.ok()) return single.status();
    const std::string* value = *single;
    if (value == nullptr) continue;
    auto offset = ResolveTimezone(*value, w.reference_ts, zones);
    if (!offset.ok()) return offset.status();
    if (have_tz && *offset != w.tz_offset) {
      return Invalid("INVALID_TIMEZONE", fmt::format("{} and {} name different offsets ({} and {} hours); give one "
                                                     "of them",
                                                     tz_name, name, w.tz_offset, *offset));
    }
    w.tz_offset = *offset;
    tz_name = name;
    have_tz = true;
  }
  auto rollup = ParseBoolArg(args, "rollup", default_rollup, "INVALID_ROLLUP");
  if (!rollup.ok()) return rollup.status();
  w.rollup = *rollup;
  auto compare = ParseCompare(args);
  if (!compare.ok()) return compare.status();
  w.compare = *compare;
  return w;
}

// The ns and key every query names, checked in that order.
Status ParseNamespaceAndKey(const QueryArgs& args, std::string* ns, std::string* key) {
  auto parsed_ns = ValidArg(args, "ns", "INVALID_NS", ValidateNamespace);
  if (!parsed_ns.ok()) return parsed_ns.status();
  auto parsed_key = ValidArg(args, "key", "INVALID_KEY", ValidateKeyPart);
  if (!parsed_key.ok()) return parsed_key.status();
  *ns = std::move(*parsed_ns);
  *key = std::move(*parsed_key);
  return Status::Ok();
}

// sns= and skey=: both or neither.
Status ParseSubtotalValue(const QueryArgs& args, std::string* sns, std::string* skey) {
  const bool has_sns = args.Get("sns") != nullptr;
  auto skey_arg = args.GetSingle("skey", "INVALID_SKEY");
  if (!skey_arg.ok()) return skey_arg.status();
  const std::string* given_skey = *skey_arg;
  if (!has_sns && given_skey == nullptr) return Status::Ok();
  if (given_skey == nullptr) {
    return Invalid("MISSING_ARG_SKEY", "sns= names a subtotal namespace: skey= must name its value");
  }
  if (!has_sns) return Invalid("MISSING_ARG_SNS", "skey= names a subtotal value: sns= must name its namespace");
  auto parsed_sns = ValidArg(args, "sns", "INVALID_SNS", ValidateNamespace);
  if (!parsed_sns.ok()) return parsed_sns.status();
  // Given but empty: not a value any increment can have.
  if (Status st = ValidateKeyPart(*given_skey, "skey"); !st.ok()) return Invalid("INVALID_SKEY", st.message());
  *sns = std::move(*parsed_sns);
  *skey = *given_skey;
  return Status::Ok();
}

}  // namespace

Result<SeriesParams> ParseSeriesParams(const QueryArgs& args, int64_t now, TimeZoneDb& zones) {
  SeriesParams p;
  CLICKATRON_RETURN_IF_ERROR(ParseNamespaceAndKey(args, &p.ns, &p.key));
  auto window = ParseWindowParams(args, now, /*default_rollup=*/false, zones);
  if (!window.ok()) return window.status();
  p.window = std::move(*window);
  CLICKATRON_RETURN_IF_ERROR(ParseSubtotalValue(args, &p.sns, &p.skey));
  return p;
}

Result<BreakdownParams> ParseBreakdownParams(const QueryArgs& args, int64_t now, TimeZoneDb& zones) {
  BreakdownParams p;
  auto sns = ValidArg(args, "sns", "INVALID_SNS", ValidateNamespace);
  if (!sns.ok()) return sns.status();
  p.sns = std::move(*sns);
  CLICKATRON_RETURN_IF_ERROR(ParseNamespaceAndKey(args, &p.ns, &p.key));
  auto limit_arg = args.GetSingle("limit", "INVALID_LIMIT");
  if (!limit_arg.ok()) return limit_arg.status();
  if (const std::string* text = *limit_arg) {
    auto limit = ParseInteger(*text);
    if (!limit || *limit < 1 || *limit > kMaxBreakdownLimit) {
      return Invalid("INVALID_LIMIT", fmt::format("limit {} must be a whole number in 1..{}", QuoteForMessage(*text),
                                                  kMaxBreakdownLimit));
    }
    p.limit = static_cast<int>(*limit);
  }
  auto uniques = ParseBoolArg(args, "uniques", false, "INVALID_UNIQUES");
  if (!uniques.ok()) return uniques.status();
  p.uniques = *uniques;
  auto window = ParseWindowParams(args, now, /*default_rollup=*/true, zones);
  if (!window.ok()) return window.status();
  p.window = std::move(*window);
  return p;
}

}  // namespace clickatron::api
