// Decoded realtime sketches kept by text; see sketch_text_cache.h.
#include "query/sketch_text_cache.h"

#include "query/unique_records.h"

namespace clickatron::api {
namespace {

// The memory a decoded sketch holds: its hashes while explicit (exact: the
// estimate is their count), else its registers.
size_t DecodedBytes(const UniqueSketch& sketch) {
  return sketch.exact() ? static_cast<size_t>(sketch.Estimate()) * sizeof(uint64_t) : kSketchRegisters;
}

}  // namespace

Result<std::shared_ptr<const UniqueSketch>> SketchTextCache::Decode(std::string_view text, std::string_view what) {
  if (max_bytes_ == 0) return DecodeSketch(text, what);
  if (const std::shared_ptr<const UniqueSketch>* kept = kept_.Find(text)) {
    ++stats_.sketch_cache_hits;
    return *kept;
  }
  ++stats_.sketch_cache_misses;
  auto sketch = DecodeSketch(text, what);
  if (sketch.ok()) kept_.Put(text, *sketch, text.size() + DecodedBytes(**sketch) + kEntryOverhead);
  return sketch;
}

}  // namespace clickatron::api
