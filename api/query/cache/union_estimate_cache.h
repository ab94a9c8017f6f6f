// Estimates of unions of sketches, kept by which sketches they were, so that
// a unit made of the same sketches as in the last query is not united again.
//
// Why: a busy key's today is 24 hour sketches from realtime, and uniting
// them (sorting and merging their hashes, or 24 register arrays for a dense
// key) was the largest of the API's own costs left in hot-key /uniques
// (callgrind: some 56k instructions a query in UniquesByUnit). Between two
// checkpoints those sketches are the very same objects: the realtime text
// cache (sketch_text_cache.h) hands out one decoded sketch per text, and a
// kept day record is one object too. So the list of the parts' addresses
// names the union.
//
// An entry holds its parts (shared), so no address in its key can be reused
// by another sketch while it is kept: an equal key is the same sketches, in
// the same order, and its estimate is theirs. A part that changes is a new
// text, a new object, another key; the old entry ages out. Parts are charged
// in full (an entry may be what keeps them alive).
//
// Kept in the node's read cache (read_cache.h, kind union_estimate). An
// address is a fine key across read loops too: the entry holds its parts.
//
// Thread-safety: thread-safe (the read cache is).
#pragma once

#include <cstddef>
#include <cstdint>
#include <memory>
#include <vector>

#include "clickatron/unique_sketch.h"
#include "query/cache/read_cache.h"
#include "query/read_stats.h"

namespace clickatron::api {

class UnionEstimateCache {
 public:
  // Hits and unions made are counted in `stats` (union_cache_hits,
  // union_cache_misses), which must outlive the cache.
  UnionEstimateCache(ReadCache& cache, ReadStats& stats) : cache_(cache), stats_(stats) {}

  // UniqueSketch::EstimateUnion of `parts` (none null): kept, or made now
  // and kept.
  uint64_t Estimate(const std::vector<const std::shared_ptr<const UniqueSketch>*>& parts);

  // Unions of fewer parts are made, not kept: two small sketches cost no
  // more to unite than to look up.
  static constexpr size_t kMinParts = 3;

 private:
  struct Entry {
    std::vector<std::shared_ptr<const UniqueSketch>> parts;  // keep the key's addresses in use
    uint64_t estimate = 0;
  };
  ReadCache& cache_;
  ReadStats& stats_;
};

}  // namespace clickatron::api
