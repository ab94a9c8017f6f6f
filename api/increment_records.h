// Expansion of one increment into the realtime records it updates, each with
// its shard (DESIGN §1-2): the total, one subtotal per sub, and a lookup put
// for every hashed key part; with uniq=, a unique record beside the total and
// each subtotal ("~" + its key). Totals, subtotals and their uniques route by
// "ns|tkey" (stored form), so one increment's records always land on one
// shard together; lookups route by their HASH.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "increment_parser.h"

namespace clickatron::api {

struct RoutedRecord {
  uint32_t shard = 0;
  bool lookup = false;
  bool unique = false;
  std::string key;           // realtime key: "u|jehiah.c41l", "c.u|jehiah.US.c41l", "~u|jehiah.c41l", or the HASH of a lookup
  int64_t delta = 0;         // counters
  uint64_t visitor = 0;      // uniques: the visitor's hash
  std::string lookup_value;  // lookups: the full value
};

// Appends the records of `inc` to *out (which it does not clear).
void ExpandIncrement(const Increment& inc, uint32_t shard_count, std::vector<RoutedRecord>* out);

}  // namespace clickatron::api
