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
  if (auto it = index_.find(text); it != index_.end()) {
    ++stats_.sketch_cache_hits;
    order_.splice(order_.begin(), order_, it->second);
    return it->second->sketch;
  }
  ++stats_.sketch_cache_misses;
  auto sketch = DecodeSketch(text, what);
  if (!sketch.ok()) return sketch;
  const size_t bytes = text.size() + DecodedBytes(**sketch) + kEntryOverhead;
  if (bytes > max_bytes_) return sketch;  // larger than the whole budget: not kept
  while (bytes_ + bytes > max_bytes_ && !order_.empty()) {
    const Entry& oldest = order_.back();
    bytes_ -= oldest.bytes;
    index_.erase(oldest.text);
    order_.pop_back();
  }
  order_.push_front(Entry{std::string(text), *sketch, bytes});
  index_.emplace(order_.front().text, order_.begin());
  bytes_ += bytes;
  return sketch;
}

}  // namespace clickatron::api
