// The body of POST /incr parsed into lines for the in-memory table (docs/protocols.md, "API
// node → realtime shard").
//
// Body: one realtime line per '\n'-terminated line (the last '\n' optional):
//   key,delta          a total or subtotal counter; delta a positive int64
//   ~key,SKETCH        a unique record: visitors to add (a sketch's text)
//   l|HASH,full value  a lookup put
// Every line is validated with the core codecs (ParseRealtimeLineView, then
// the sketch's decoding: what ParseRealtimeLine checks, with its words): a
// bad line rejects the whole batch with its 1-based line number, so nothing
// of a bad batch is ever applied.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "clickatron/status.h"
#include "clickatron/unique_sketch.h"
#include "shard_store.h"

namespace clickatron::realtime {

struct BatchLine {
  std::string_view key;    // a view into the body
  std::string_view value;  // lookups: the full value (a view into the body)
  int64_t delta = 0;       // counters
  int64_t day = 0;         // counters and uniques: the UTC day (days since epoch) of the key's hour
  bool lookup = false;
  bool unique = false;
  size_t sketch = 0;       // uniques: the index in ParsedBatch::sketches
  // Uniques: the line before is the counter whose unique record this is
  // ("key,N" then "~key,SKETCH", as the API sends them). Its key was
  // validated there, so only the sketch was parsed here.
  bool follows_its_counter = false;
};

struct ParsedBatch {
  std::vector<BatchLine> lines;
  std::vector<UniqueSketch> sketches;  // decoded once, here
  size_t counters = 0;
  size_t lookups = 0;
  size_t uniques = 0;
};

// Views in the result point into `body`: keep it alive while using them.
// Errors: 400 BAD_LINE naming the line ("line 3: …").
Result<ParsedBatch> ParseBatch(std::string_view body);

// The days the batch's lines go to: each counter and unique to its hour's day, each
// lookup to `lookup_day` (Today). Ascending, unique.
std::vector<int64_t> TargetDays(const ParsedBatch& batch, int64_t lookup_day);

}  // namespace clickatron::realtime
