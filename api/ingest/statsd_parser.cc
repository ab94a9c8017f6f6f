#include "ingest/statsd_parser.h"

#include <charconv>
#include <cmath>
#include <optional>
#include <string>
#include <system_error>

#include "clickatron/query_string.h"

namespace clickatron::api {
namespace {

// The whole of `text` as a finite number. from_chars refuses a leading '+'
// and hex; "inf" and "nan" parse but are no count or rate.
bool ParseStatsdNumber(std::string_view text, double* out) {
  if (text.empty()) return false;
  const char* end = text.data() + text.size();
  auto [ptr, ec] = std::from_chars(text.data(), end, *out, std::chars_format::general);
  return ec == std::errc() && ptr == end && std::isfinite(*out);
}

// A metric type is a short lowercase word (c, g, ms, h, s, d…). Anything else
// in its place is garbage, not a type we merely do not count.
bool LooksLikeStatsdType(std::string_view type) {
  if (type.empty()) return false;
  for (char ch : type) {
    if (ch < 'a' || ch > 'z') return false;
  }
  return true;
}

// Cuts `rest` at the next '|': returns the part before, leaves the part after.
std::string_view NextStatsdSection(std::string_view* rest, bool* more) {
  size_t bar = rest->find('|');
  std::string_view section = rest->substr(0, bar);
  *more = bar != std::string_view::npos;
  *rest = *more ? rest->substr(bar + 1) : std::string_view();
  return section;
}

// One non-empty line: nullopt when *inc holds its increment, else why it was
// dropped. args and inc are the caller's, reused across lines.
std::optional<StatsdDrop> ParseStatsdLine(std::string_view line, const IncrementLimits& limits, HourCache* cache,
                                          QueryArgs* args, Increment* inc, bool* sampled) {
  // DogStatsD sends events and service checks on the same socket: they are
  // well-formed, just not counters, and should not look like client bugs.
  if (line.starts_with("_e{") || line.starts_with("_sc|")) return StatsdDrop::kNotCounter;

  bool more = false;
  std::string_view rest = line;
  const std::string_view head = NextStatsdSection(&rest, &more);
  if (!more) return StatsdDrop::kMalformed;  // no type at all
  // The count never holds ':', so the last one ends the name and a key may
  // hold ':' (a URL).
  const size_t colon = head.rfind(':');
  if (colon == std::string_view::npos) return StatsdDrop::kMalformed;
  const std::string_view name = head.substr(0, colon);
  const std::string_view count_text = head.substr(colon + 1);

  const std::string_view type = NextStatsdSection(&rest, &more);
  if (type != "c") return LooksLikeStatsdType(type) ? StatsdDrop::kNotCounter : StatsdDrop::kMalformed;

  double rate = 1;
  bool has_rate = false;
  std::optional<std::string_view> tags;
  while (more) {
    const std::string_view section = NextStatsdSection(&rest, &more);
    if (section.empty()) return StatsdDrop::kMalformed;
    if (section[0] == '@' && !has_rate) {
      if (!ParseStatsdNumber(section.substr(1), &rate) || !(rate > 0 && rate <= 1)) return StatsdDrop::kMalformed;
      has_rate = true;
    } else if (section[0] == '#' && !tags) {
      tags = section.substr(1);
    } else {
      // Unknown, or given twice: refused rather than ignored, since ignoring
      // a timestamp or a second rate would count the clicks wrong.
      return StatsdDrop::kMalformed;
    }
  }

  double count = 0;
  if (!ParseStatsdNumber(count_text, &count)) return StatsdDrop::kMalformed;
  const double scaled = count / rate;
  // Past ±1e18 llround is undefined; ParseIncrement would refuse it anyway.
  if (!std::isfinite(scaled) || std::fabs(scaled) >= 1e18) return StatsdDrop::kInvalid;

  // Map the line onto /incr's parameters and let ParseIncrement judge them,
  // so this door and /incr refuse exactly the same things.
  args->Clear();
  const size_t dot = name.find('.');
  if (dot == std::string_view::npos) {
    args->Add("ns", std::string(name));  // no key: MISSING_ARG_KEY
  } else {
    args->Add("ns", std::string(name.substr(0, dot)));
    args->Add("key", std::string(name.substr(dot + 1)));
  }
  args->Add("value", std::to_string(std::llround(scaled)));
  if (tags) {
    std::string_view t = *tags;
    bool more_tags = true;
    while (more_tags) {
      const size_t comma = t.find(',');
      args->Add("sub", std::string(t.substr(0, comma)));  // "T:V" is already SNS:SKEY
      more_tags = comma != std::string_view::npos;
      if (more_tags) t = t.substr(comma + 1);
    }
  }
  if (!ParseIncrement(*args, limits, cache, inc).ok()) return StatsdDrop::kInvalid;
  *sampled = rate < 1;
  return std::nullopt;
}

}  // namespace

std::string_view StatsdDropName(StatsdDrop d) {
  switch (d) {
    case StatsdDrop::kMalformed: return "malformed";
    case StatsdDrop::kNotCounter: return "not_counter";
    case StatsdDrop::kInvalid: return "invalid";
    case StatsdDrop::kCount_: break;
  }
  return "unknown";
}

StatsdPacketResult ParseStatsdPacket(std::string_view packet, const IncrementLimits& limits, HourCache* cache,
                                     const std::function<void(const Increment&)>& on_increment) {
  StatsdPacketResult result;
  QueryArgs args;
  Increment inc;
  // Lines are dropped, never the packet: the walk never stops early.
  (void)ForEachBodyLine(packet, [&](size_t /*line_no*/, std::string_view line) {
    if (line.empty()) return Status::Ok();
    bool sampled = false;
    if (std::optional<StatsdDrop> drop = ParseStatsdLine(line, limits, cache, &args, &inc, &sampled)) {
      ++result.dropped[static_cast<size_t>(*drop)];
      return Status::Ok();
    }
    ++result.taken;
    if (sampled) ++result.sampled;
    on_increment(inc);
    return Status::Ok();
  });
  return result;
}

}  // namespace clickatron::api
