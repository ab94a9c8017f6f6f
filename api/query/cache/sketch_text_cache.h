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
// Kept in the node's read cache (read_cache.h, kind sketch_text), charged
// the decoded form beside the text (its key).
//
// Thread-safety: thread-safe (the read cache is).
#pragma once

#include <cstddef>
#include <memory>
#include <string_view>

#include "clickatron/status.h"
#include "clickatron/unique_sketch.h"
#include "query/cache/read_cache.h"
#include "query/read_stats.h"

namespace clickatron::api {

class SketchTextCache {
 public:
  // Hits and decodes are counted in `stats` (sketch_cache_hits,
  // sketch_cache_misses), which must outlive the cache.
  SketchTextCache(ReadCache& cache, ReadStats& stats) : cache_(cache), stats_(stats) {}

  // The sketch `text` holds: kept, or decoded now and kept. A text that is
  // not a sketch is CORRUPTION naming `what` (and is not kept).
  Result<std::shared_ptr<const UniqueSketch>> Decode(std::string_view text, std::string_view what);

 private:
  ReadCache& cache_;
  ReadStats& stats_;
};

}  // namespace clickatron::api
