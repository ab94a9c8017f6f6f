// Expansion of one increment into the realtime records it updates, each with
// its shard (docs/protocols.md): the total, one subtotal per sub, and a lookup put
// for every hashed key part. With uniq=, the total and each subtotal also
// carry the visitor: its unique record ("~" + the counter's key) is written
// beside the counter by the Combiner, so it costs no record of its own here.
// Totals and subtotals route by "ns|tkey" (stored form), so one increment's
// records always land on one shard together; lookups route by their HASH.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "clickatron/realtime_shard_map.h"
#include "ingest/increment_parser.h"

namespace clickatron::api {

struct RoutedRecord {
  uint32_t shard = 0;
  bool lookup = false;
  std::string key;           // realtime key: "u|jehiah.c41l", "c.u|jehiah.US.c41l", or the HASH of a lookup
  int64_t delta = 0;         // counters
  bool has_visitor = false;  // counters: uniq= was given
  uint64_t visitor = 0;      // its hash (HashVisitor)
  std::string lookup_value;  // lookups: the full value
};

// Appends the records of `inc` to *out (which it does not clear), each for
// the realtime shard of its key under the count of the increment's day.
void ExpandIncrement(const Increment& inc, const RealtimeShardMap& shards, std::vector<RoutedRecord>* out);
// The same with one count for every day.
void ExpandIncrement(const Increment& inc, uint32_t shard_count, std::vector<RoutedRecord>* out);

}  // namespace clickatron::api
