// Realtime sketches decoded once and kept by their text.
//
// A realtime shard answers a key's fwmatch with every hour it holds, as text,
// and the hours of a busy key's day change only while they are the current
// hour (or when late increments arrive). Decoding their base64 and varints
// again for every query was the largest of the API's own costs in /uniques
// of hot keys. The text is the key: a kept sketch is always its text's own
// decoding, and an hour whose visitors changed has another text, decoded anew
// (the old one ages out).
//
// Least recently used out first, within a byte budget (text, decoded form
// and a fixed overhead per entry). A budget of 0 turns the cache off.
//
// Thread-safety: none; one instance belongs to a read loop.
#pragma once

#include <cstddef>
#include <memory>
#include <string_view>

#include "clickatron/status.h"
#include "clickatron/unique_sketch.h"
#include "clickatron/lru_map.h"
#include "query/read_stats.h"

namespace clickatron::api {

class SketchTextCache {
 public:
  // Hits and decodes are counted in `stats` (sketch_cache_hits,
  // sketch_cache_misses), which must outlive the cache.
  SketchTextCache(size_t max_bytes, ReadStats& stats) : max_bytes_(max_bytes), kept_(max_bytes), stats_(stats) {}

  // The sketch `text` holds: kept, or decoded now and kept. A text that is
  // not a sketch is CORRUPTION naming `what` (and is not kept).
  Result<std::shared_ptr<const UniqueSketch>> Decode(std::string_view text, std::string_view what);

  struct Figures {
    size_t bytes = 0;
    size_t entries = 0;
  };
  Figures figures() const { return Figures{kept_.charged(), kept_.size()}; }

  // What an entry is charged beyond its text and decoded hashes or
  // registers (list and map nodes, the shared sketch's control block).
  static constexpr size_t kEntryOverhead = 160;

 private:
  size_t max_bytes_;
  LruMap<std::shared_ptr<const UniqueSketch>> kept_;  // by text, charged in bytes
  ReadStats& stats_;
};

}  // namespace clickatron::api
