// The per-shard flush window: increments to the same record inside one window
// become one line (incr(x,1) x3 -> "x,3"), a lookup put appears once, and the
// visitors of one unique record fold into one sketch ("~x,SKETCH"), so a hot
// counter costs one write per window whatever its rate.
//
// Thread-safety: none; the API's event loop owns it.
#pragma once

#include <cstdint>
#include <string>
#include <memory>
#include <unordered_map>
#include <vector>

#include "clickatron/unique_sketch.h"
#include "ingest/increment_records.h"

namespace clickatron::api {

class Combiner {
 public:
  explicit Combiner(uint32_t shard_count) : shards_(shard_count) {}

  void Add(RoutedRecord&& record);

  // Distinct lines waiting for `shard`.
  size_t lines(uint32_t shard) const {
    return shards_[shard].counters.size() + shards_[shard].lookups.size() + shards_[shard].sketches;
  }
  bool empty() const;
  uint32_t shard_count() const { return static_cast<uint32_t>(shards_.size()); }

  struct Lines {
    std::string text;      // "key,delta\n"…, "~key,SKETCH\n"…, then "l|HASH,value\n"…
    size_t count = 0;      // lines in text
    uint64_t records = 0;  // records added before combining
  };
  // The shard's combined lines; the shard's window starts empty again.
  Lines Take(uint32_t shard);

 private:
  struct Window {
    // A window's counters in arrival order, found through `slots`: an
    // open-addressing table of (index + 1, hash tag), at most half full,
    // kept across windows. Under keys that never repeat every record is
    // new, and std::unordered_map's node allocation, bucket walk and
    // node-by-node clear() were 15% of the API's CPU (perf, uniform keys).
    struct Counter {
      std::string key;
      uint64_t hash = 0;
      int64_t delta = 0;
      std::unique_ptr<UniqueSketch> visitors;  // set once an increment named one (uniq=)
    };
    struct Slot {
      uint32_t index_plus_one = 0;  // 0: empty
      uint32_t tag = 0;             // the hash's high half
    };
    // The counter of `key` (`hash` its HashText), made with delta 0 when new.
    Counter& CounterFor(std::string&& key, uint64_t hash);
    void Grow();

    std::vector<Counter> counters;
    std::vector<Slot> slots;  // a power of two long, or empty
    std::unordered_map<std::string, std::string> lookups;  // HASH -> full value
    size_t sketches = 0;  // counters with visitors: each adds a "~key,SKETCH" line
    uint64_t records = 0;
    size_t bytes = 0;  // estimate, to size the output once
  };
  std::vector<Window> shards_;
};

}  // namespace clickatron::api
