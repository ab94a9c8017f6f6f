// The statsd / DogStatsD door: counter lines turned into the same Increments
// /incr makes. Every field is validated by ParseIncrement, so both doors accept
// and refuse exactly the same namespaces, keys and subtotals.
//
// statsd has no answer to send back, so there is no all-or-nothing here: each
// line is taken or dropped on its own, and a bad line never drops the good
// lines of its packet. Drops are counted per reason for /metrics.
//
// A line is
//   NAME:COUNT|c[|@RATE][|#TAG:VALUE,TAG:VALUE...]
// with the optional sections in either order, each at most once.
//  - NAME is NS.KEY, split at the FIRST '.': keys may contain dots
//    ("u.example.com" is ns "u", key "example.com"). Bytes are taken raw (no
//    %-decoding). NAME ends at the LAST ':' before the first '|', so a key may
//    hold ':' (a URL); it can never hold '|', statsd's separator.
//  - COUNT is a number (statsd clients may send "1.0"). The increment's value
//    is COUNT / RATE rounded to the nearest integer (halves away from zero),
//    and must come out 1..kMaxIncrementValue. Counters here only grow: a
//    negative count (a statsd decrement) or 0 is dropped as invalid.
//  - @RATE is the client's sample rate, 0 < RATE <= 1; below 1 the count is
//    scaled up as above and the line counted in `sampled`.
//  - Each DogStatsD tag TAG:VALUE becomes the subtotal sub=TAG:VALUE; a tag
//    without ':' (DogStatsD allows bare tags) is dropped as invalid.
//  - There is no timestamp: the hour is that of limits.now.
// Any other section (DogStatsD's |c:container, |T timestamp, …) makes the
// line malformed: silently ignoring a timestamp would file clicks in the
// wrong hour. Other metric types (g, ms, h, s, d…) and DogStatsD events and
// service checks (_e{…}, _sc|…) are dropped as not_counter.
//
// Thread-safety: pure functions; an HourCache belongs to one thread.
#pragma once

#include <array>
#include <cstddef>
#include <functional>
#include <string_view>

#include "ingest/increment_parser.h"

namespace clickatron::api {

// Why a line was dropped; counted per reason on /metrics.
enum class StatsdDrop {
  kMalformed,   // not statsd syntax (no ':' or '|', bad count or rate, unknown section)
  kNotCounter,  // a statsd line of another type, or a DogStatsD event / service check
  kInvalid,     // a well-formed counter ParseIncrement refused (ns, key, tag, value)
  kCount_,      // sentinel: the number of reasons
};
inline constexpr size_t kStatsdDropCount = static_cast<size_t>(StatsdDrop::kCount_);

// "malformed", "not_counter", "invalid": a Prometheus label value.
std::string_view StatsdDropName(StatsdDrop d);

struct StatsdPacketResult {
  size_t taken = 0;    // lines turned into increments
  size_t sampled = 0;  // of them, lines with a sample rate below 1 (scaled and rounded)
  std::array<size_t, kStatsdDropCount> dropped{};  // indexed by StatsdDrop

  size_t Dropped(StatsdDrop d) const { return dropped[static_cast<size_t>(d)]; }
};

// Parses one datagram or a chunk of complete TCP lines: lines separated by
// '\n' (a trailing '\r' tolerated, empty lines ignored). Calls on_increment
// for each good line, in order.
StatsdPacketResult ParseStatsdPacket(std::string_view packet, const IncrementLimits& limits, HourCache* cache,
                                     const std::function<void(const Increment&)>& on_increment);

}  // namespace clickatron::api
