// Decoded realtime sketches kept by text; see sketch_text_cache.h.
#include "query/cache/sketch_text_cache.h"

#include "query/merge/unique_records.h"

namespace clickatron::api {
namespace {

// The memory a decoded sketch holds: its hashes while explicit (exact: the
// estimate is their count), else its registers.
size_t DecodedBytes(const UniqueSketch& sketch) {
  return sketch.exact() ? static_cast<size_t>(sketch.Estimate()) * sizeof(uint64_t) : kSketchRegisters;
}

}  // namespace

Result<std::shared_ptr<const UniqueSketch>> SketchTextCache::Decode(std::string_view text, std::string_view what) {
  if (!cache_.enabled()) return DecodeSketch(text, what);
  if (auto kept = cache_.Find<UniqueSketch>(CacheKind::kSketchText, text)) {
    ++stats_.sketch_cache_hits;
    return kept;
  }
  ++stats_.sketch_cache_misses;
  auto sketch = DecodeSketch(text, what);
  if (sketch.ok()) cache_.Insert<UniqueSketch>(CacheKind::kSketchText, text, *sketch, DecodedBytes(**sketch));
  return sketch;
}

}  // namespace clickatron::api
