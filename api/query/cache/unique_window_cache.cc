// A busy key's archive part of a /uniques window; see unique_window_cache.h.
#include "query/cache/unique_window_cache.h"

#include <cstring>
#include <utility>

namespace clickatron::api {
namespace {

void AppendInt(std::string* out, int64_t v) {
  char bytes[sizeof v];
  std::memcpy(bytes, &v, sizeof v);
  out->append(bytes, sizeof v);
}

}  // namespace

std::string_view UniqueWindowCache::NameOf(const ServedFile& file, int shard_count, std::string_view run_prefix,
                                           const HourSpan& span, const HourSpan& skip,
                                           const std::vector<int64_t>& splits) {
  // Fixed-size fields first, so no two windows share a name.
  name_.clear();
  for (int64_t v : {static_cast<int64_t>(file.generation), static_cast<int64_t>(file.crc32),
                    static_cast<int64_t>(shard_count), span.begin_ts, span.end_ts, skip.begin_ts, skip.end_ts, static_cast<int64_t>(splits.size())}) {
    AppendInt(&name_, v);
  }
  for (int64_t split : splits) AppendInt(&name_, split);
  name_.append(run_prefix);
  return name_;
}

std::shared_ptr<const UniqueWindowCache::Part> UniqueWindowCache::Find(const ServedFile& file, int shard_count,
                                                                       std::string_view run_prefix,
                                                                       const HourSpan& span, const HourSpan& skip,
                                                                       const std::vector<int64_t>& splits) {
  if (!enabled()) return nullptr;
  return cache_.Find<Part>(CacheKind::kUniqueWindow, NameOf(file, shard_count, run_prefix, span, skip, splits));
}

void UniqueWindowCache::Put(const ServedFile& file, int shard_count, std::string_view run_prefix,
                            const HourSpan& span, const HourSpan& skip, const std::vector<int64_t>& splits,
                            Part part) {
  if (!enabled()) return;
  const std::string_view name = NameOf(file, shard_count, run_prefix, span, skip, splits);
  size_t charge = sizeof(Part) + part.hours.capacity() * sizeof(HourSketch);
  for (const HourSketch& h : part.hours) {
    charge += kHourOverhead + h.key.capacity() + (h.sketch ? h.sketch->MemoryBytes() : 0);
  }
  cache_.Insert<Part>(CacheKind::kUniqueWindow, name, std::make_shared<const Part>(std::move(part)), charge);
}

}  // namespace clickatron::api
