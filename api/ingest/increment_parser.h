// Validation of /incr input: one increment from query parameters, or a batch
// body of one query string per line. Every error names the field in its
// reason (MISSING_ARG_NS, INVALID_TS, …) and, in a batch, the line number of
// the first bad line; a batch is accepted whole or not at all.
//
// Thread-safety: pure functions; an HourCache belongs to one thread.
#pragma once

#include <cstdint>
#include <functional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "clickatron/query_string.h"
#include "clickatron/status.h"

namespace clickatron::api {

// Largest `value` one increment may carry. Big enough for any real counting
// (a billion clicks in one call), small enough that a window of them can never
// overflow an int64 counter.
inline constexpr int64_t kMaxIncrementValue = 1'000'000'000;
// Subtotal namespaces per increment.
inline constexpr size_t kMaxSubsPerIncrement = 64;
// One line of a batch body (a key part may be 4096 bytes, %-encoded x3).
inline constexpr size_t kMaxIncrementLineBytes = 64 * 1024;
// Increments per batch body. A batch is validated and expanded whole before
// any of it is applied (all or nothing), so this bounds that transient memory
// (about 100 bytes per record); app servers send hundreds or thousands.
inline constexpr size_t kMaxBatchIncrements = 100'000;
// Records (a total, each subtotal, each visitor) one request may expand to,
// for the same reason: what one request holds while it is checked whole.
inline constexpr size_t kMaxRecordsPerRequest = 1'000'000;

struct IncrementLimits {
  int64_t now = 0;              // unix seconds: the default ts and the future check
  int future_margin_hours = 48; // ts > now + margin: TS_TOO_FAR_IN_FUTURE
};

// A key part in the form records use, plus the full value when it was hashed.
struct IncrementKeyPart {
  std::string stored;
  std::string full;  // set only when hashed
  bool hashed = false;
};

struct Increment {
  std::string ns;
  IncrementKeyPart tkey;
  std::string ymdh;  // the hour of ts
  int64_t value = 1;
  std::vector<std::pair<std::string, IncrementKeyPart>> subs;  // sns -> skey
  // uniq=TOKEN: the visitor, as the hash every sketch holds (HashVisitor).
  bool has_visitor = false;
  uint64_t visitor = 0;
};

// Remembers the last hour's YMDH: most increments fall in the current hour.
struct HourCache {
  int64_t hour = INT64_MIN;
  std::string ymdh;
};

// Whether `name` is a parameter of an increment: ns, key, ts, value, sub, uniq.
bool IsIncrementParameter(std::string_view name);

// Parses and validates one increment from its parameters (ns, key, ts, value,
// sub, uniq). Any other parameter is UNKNOWN_PARAMETER (ignored, a misspelt
// one would count something else than meant). uniq is any non-empty string of
// at most kMaxKeyPartLength bytes (INVALID_UNIQ otherwise).
Status ParseIncrement(const QueryArgs& args, const IncrementLimits& limits, HourCache* cache, Increment* out);

// Calls fn(line_no, line) for each line of a body ('\n' or "\r\n"; the
// line without its end; line_no counts every physical line from 1), and
// stops at the first error fn returns. Every door's batch is cut this way.
template <typename Fn>
Status ForEachBodyLine(std::string_view body, Fn&& fn) {
  size_t line_no = 0;
  size_t pos = 0;
  while (pos < body.size()) {
    size_t nl = body.find('\n', pos);
    if (nl == std::string_view::npos) nl = body.size();
    std::string_view line = body.substr(pos, nl - pos);
    pos = nl + 1;
    ++line_no;
    if (!line.empty() && line.back() == '\r') line.remove_suffix(1);
    if (Status st = fn(line_no, line); !st.ok()) return st;
  }
  return Status::Ok();
}

// The limits every batch door applies to its `count`-th (0-based) taken
// line: LINE_TOO_LONG past kMaxIncrementLineBytes, BODY_TOO_LARGE past
// kMaxBatchIncrements; the message starts "line N: ".
Status CheckBatchLine(size_t line_no, std::string_view line, size_t count);
// `st` with "line N: " before its message (reason and code kept).
Status AtLine(size_t line_no, const Status& st);

// Parses a batch body: one query string per line ('\n' or "\r\n"), blank lines
// ignored. Calls on_increment for each line in order; the first bad line stops
// and fails the whole batch ("line N: …"), so the caller must not apply what
// it was given before seeing OK.
Status ParseIncrementBatch(std::string_view body, const IncrementLimits& limits, size_t max_query_args,
                           const std::function<void(const Increment&)>& on_increment);
// The same, collecting the increments (cleared on error).
Status ParseIncrementBatch(std::string_view body, const IncrementLimits& limits, size_t max_query_args,
                           std::vector<Increment>* out);

}  // namespace clickatron::api
