// What one deletion (POST /delete; docs/protocols.md, "Deletions") takes
// out, in the terms every holder of records filters by: namespace `ns` (one
// key or every key) over the hours [from, to), the key's lookup record when
// it goes too, and per realtime shard and API node the last oplog seq
// acknowledged before it (the cut). The rebuild filters late data and loads
// by it; an API node scrubs its own late-data files by it.
//
// Thread-safety: a value.
#pragma once

#include <cstdint>
#include <map>
#include <string>
#include <string_view>

#include "clickatron/oplog_record.h"

namespace clickatron {

struct DeletionScope {
  std::string ns;
  std::string tkey;    // stored form; "" = every key of ns
  std::string lookup;  // "l|HASH" deleted with it; "" none
  int64_t from_unix = 0, to_unix = 0;
  std::map<int, std::map<std::string, uint64_t>> cuts;  // realtime shard -> API node -> last seq before it

  // False while the deletion has no cut yet: every batch there is now came
  // before its cut, so every one may hold its records.
  bool CutsKnown() const { return !cuts.empty(); }
  // Whether a realtime record key (counter, unique or lookup) is one of its records.
  bool CoversRealtimeKey(std::string_view key) const;
  // Whether a late-data line (realtime format) of batch `frame` is one of
  // its records acknowledged before it: the frame at or below the cut of its
  // shard and source (a source the cut does not name had sent nothing then),
  // or any frame while there is no cut yet.
  bool CoversLateLine(const OplogHeader& frame, std::string_view line) const;
};

}  // namespace clickatron
