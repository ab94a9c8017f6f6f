#include "ingest/increment_parser.h"

#include <algorithm>
#include <charconv>
#include <iterator>
#include <unordered_set>

#include <fmt/format.h>

#include "clickatron/key_codec.h"
#include "clickatron/unique_sketch.h"
#include "clickatron/ymdh.h"

namespace clickatron::api {
namespace {

Status Invalid(std::string_view reason, std::string message) {
  return Status::InvalidArgument(std::move(message), std::string(reason));
}

IncrementKeyPart StorePart(std::string_view value) {
  StoredKeyPart stored = StoreKeyPart(value);
  IncrementKeyPart out;
  out.hashed = stored.hashed;
  out.stored = std::move(stored.stored);
  if (out.hashed) out.full = std::string(value);
  return out;
}

Result<int64_t> ParseTs(const std::string* text, const IncrementLimits& limits) {
  if (text == nullptr) return limits.now;
  int64_t ts = 0;
  const char* end = text->data() + text->size();
  auto [ptr, ec] = std::from_chars(text->data(), end, ts);
  if (text->empty() || ec != std::errc() || ptr != end) {
    // Also accept "2012-03-25T01:00:00Z" (what a person types into curl),
    // or with an offset.
    Result<int64_t> iso = ParseTimestamp(*text);
    if (!iso.ok()) {
      return Invalid("INVALID_TS", fmt::format("ts {} is not unix seconds (or an RFC 3339 time: 2012-03-25T01:00:00Z, or an offset for Z)",
                                               QuoteForMessage(*text)));
    }
    ts = *iso;
  }
  return ts;
}

Result<int64_t> ParseValue(const std::string* text) {
  if (text == nullptr) return int64_t{1};
  int64_t v = 0;
  const char* end = text->data() + text->size();
  auto [ptr, ec] = std::from_chars(text->data(), end, v);
  if (text->empty() || ec != std::errc() || ptr != end || (*text)[0] == '-' || v < 1 || v > kMaxIncrementValue) {
    return Invalid("INVALID_VALUE", fmt::format("value {} is not an integer from 1 to {}", QuoteForMessage(*text),
                                                kMaxIncrementValue));
  }
  return v;
}

Status ParseSubs(const QueryArgs& args, Increment* out) {
  for (const auto& [k, v] : args.items()) {
    if (k != "sub") continue;
    if (out->subs.size() == kMaxSubsPerIncrement) {
      return Invalid("INVALID_SUB", fmt::format("more than {} sub= values", kMaxSubsPerIncrement));
    }
    size_t colon = v.find(':');
    if (colon == std::string::npos) {
      return Invalid("INVALID_SUB", fmt::format("sub {} is not SNS:SKEY", QuoteForMessage(v)));
    }
    std::string_view sns = std::string_view(v).substr(0, colon);
    std::string_view skey = std::string_view(v).substr(colon + 1);
    if (Status st = ValidateNamespace(sns, "sub namespace"); !st.ok()) return Invalid("INVALID_SUB", st.message());
    if (Status st = ValidateKeyPart(skey, "sub key"); !st.ok()) {
      return Invalid("INVALID_SUB", fmt::format("sub {}: {}", QuoteForMessage(v), st.message()));
    }
    for (const auto& [seen, unused] : out->subs) {
      if (seen == sns) {
        // Two values for one subtotal namespace would break "subtotals sum to the total".
        return Invalid("INVALID_SUB", fmt::format("subtotal namespace \"{}\" is given more than once", sns));
      }
    }
    out->subs.emplace_back(std::string(sns), StorePart(skey));
  }
  return Status::Ok();
}

// An increment's parameters, taken in one pass over them (the checks below
// asked for each field in turn: seven passes over every increment's
// parameters). A field given twice is reported at its turn, as it was.
struct IncrementArgs {
  enum Field { kNs, kKey, kTs, kValue, kUniq, kFields };
  static constexpr std::string_view kNames[kFields] = {"ns", "key", "ts", "value", "uniq"};
  static constexpr std::string_view kTwiceReasons[kFields] = {"INVALID_NS", "INVALID_KEY", "INVALID_TS",
                                                              "INVALID_VALUE", "INVALID_UNIQ"};
  const std::string* values[kFields] = {};
  bool twice[kFields] = {};
  bool has_sub = false;

  // The field's value (null: not given), or its error if given twice.
  Result<const std::string*> Single(Field f) const {
    if (twice[f]) {
      return Invalid(kTwiceReasons[f], fmt::format("{} is given more than once", kNames[f]));
    }
    return values[f];
  }
};

// A parameter an increment does not take is refused, never ignored: a
// misspelt `vaule=3` counted 1, `tss=` counted now, `sbu=` no subtotal
// (probe 10a), each answered 200. `_`, a cache-buster browsers' and
// jQuery's GETs add, means nothing and is no one's typo: taken and ignored.
Status TakeIncrementArgs(const QueryArgs& args, IncrementArgs* out) {
  for (const auto& [name, value] : args.items()) {
    if (name == "sub") {
      out->has_sub = true;
      continue;
    }
    if (name == "_") continue;
    size_t f = 0;
    while (f < IncrementArgs::kFields && IncrementArgs::kNames[f] != name) ++f;
    if (f == IncrementArgs::kFields) {
      // The first unknown one, named as every route names it.
      return OnlyKnownArgs(args, {"ns", "key", "ts", "value", "sub", "uniq", "_"}, "an increment");
    }
    if (out->values[f] == nullptr) {
      out->values[f] = &value;
    } else {
      out->twice[f] = true;
    }
  }
  return Status::Ok();
}

}  // namespace

bool IsIncrementParameter(std::string_view name) {
  const auto& names = IncrementArgs::kNames;
  return name == "sub" || std::find(std::begin(names), std::end(names), name) != std::end(names);
}

Status ParseIncrement(const QueryArgs& args, const IncrementLimits& limits, HourCache* cache, Increment* out) {
  *out = Increment();
  IncrementArgs taken;
  CLICKATRON_RETURN_IF_ERROR(TakeIncrementArgs(args, &taken));
  auto ns = taken.Single(IncrementArgs::kNs);
  if (!ns.ok()) return ns.status();
  if (*ns == nullptr) return Invalid("MISSING_ARG_NS", "ns is required");
  if (Status st = ValidateNamespace(**ns, "ns"); !st.ok()) return Invalid("INVALID_NS", st.message());
  out->ns = **ns;

  auto key = taken.Single(IncrementArgs::kKey);
  if (!key.ok()) return key.status();
  if (*key == nullptr) return Invalid("MISSING_ARG_KEY", "key is required");
  if (Status st = ValidateKeyPart(**key, "key"); !st.ok()) return Invalid("INVALID_KEY", st.message());
  out->tkey = StorePart(**key);

  auto ts_text = taken.Single(IncrementArgs::kTs);
  if (!ts_text.ok()) return ts_text.status();
  Result<int64_t> ts = ParseTs(*ts_text, limits);
  if (!ts.ok()) return ts.status();
  const int64_t hour = FloorDiv(*ts, kSecondsPerHour);
  if (hour != cache->hour) {
    Result<std::string> ymdh = YmdhFromUnix(*ts);
    if (!ymdh.ok()) {
      return Invalid("TS_OUT_OF_RANGE", fmt::format("ts {} is outside the years {}..{} the hour code can hold",
                                                    *ts, kMinYmdhYear, kMaxYmdhYear));
    }
    cache->hour = hour;
    cache->ymdh = std::move(ymdh).value();
  }
  if (*ts > limits.now + int64_t{limits.future_margin_hours} * kSecondsPerHour) {
    return Invalid("TS_TOO_FAR_IN_FUTURE",
                   fmt::format("ts {} ({}) is more than {} hours in the future", *ts, FormatIsoTime(*ts),
                               limits.future_margin_hours));
  }
  out->ymdh = cache->ymdh;

  auto value_text = taken.Single(IncrementArgs::kValue);
  if (!value_text.ok()) return value_text.status();
  Result<int64_t> value = ParseValue(*value_text);
  if (!value.ok()) return value.status();
  out->value = *value;

  auto uniq = taken.Single(IncrementArgs::kUniq);
  if (!uniq.ok()) return uniq.status();
  if (*uniq != nullptr) {
    // Any bytes: a token is hashed, never stored or echoed.
    if ((*uniq)->empty() || (*uniq)->size() > kMaxKeyPartLength) {
      return Invalid("INVALID_UNIQ",
                     fmt::format("uniq is {} bytes; a visitor token is 1 to {} bytes", (*uniq)->size(),
                                 kMaxKeyPartLength));
    }
    out->has_visitor = true;
    out->visitor = HashVisitor(**uniq);
  }

  return taken.has_sub ? ParseSubs(args, out) : Status::Ok();
}

Status CheckBatchLine(size_t line_no, std::string_view line, size_t count) {
  if (line.size() > kMaxIncrementLineBytes) {
    return Invalid("LINE_TOO_LONG", fmt::format("line {}: {} bytes is over the {} byte limit", line_no, line.size(),
                                                kMaxIncrementLineBytes));
  }
  if (count == kMaxBatchIncrements) {
    return Invalid("BODY_TOO_LARGE",
                   fmt::format("line {}: a batch holds at most {} increments; split it", line_no, kMaxBatchIncrements));
  }
  return Status::Ok();
}

Status AtLine(size_t line_no, const Status& st) {
  return Status(st.code(), fmt::format("line {}: {}", line_no, st.message()), st.reason());
}

Status ParseIncrementBatch(std::string_view body, const IncrementLimits& limits, size_t max_query_args,
                           const std::function<void(const Increment&)>& on_increment) {
  HourCache cache;
  QueryArgs args;
  Increment inc;
  size_t count = 0;
  return ForEachBodyLine(body, [&](size_t line_no, std::string_view line) {
    if (line.empty()) return Status::Ok();
    CLICKATRON_RETURN_IF_ERROR(CheckBatchLine(line_no, line, count));
    args.Clear();
    if (Status st = ParseQueryString(line, &args, max_query_args); !st.ok()) return AtLine(line_no, st);
    if (Status st = ParseIncrement(args, limits, &cache, &inc); !st.ok()) return AtLine(line_no, st);
    ++count;
    on_increment(inc);
    return Status::Ok();
  });
}

Status ParseIncrementBatch(std::string_view body, const IncrementLimits& limits, size_t max_query_args,
                           std::vector<Increment>* out) {
  out->clear();
  Status st = ParseIncrementBatch(body, limits, max_query_args, [&](const Increment& inc) { out->push_back(inc); });
  if (!st.ok()) out->clear();
  return st;
}

}  // namespace clickatron::api
