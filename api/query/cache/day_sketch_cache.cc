// A key's day unique records kept per archive file; see day_sketch_cache.h.
#include "query/cache/day_sketch_cache.h"

#include <fmt/format.h>

#include <algorithm>
#include <iterator>
#include <utility>

namespace clickatron::api {
namespace {

bool ByDay(const KeptDay& a, const KeptDay& b) { return a.day < b.day; }

}  // namespace

std::string DaySketchCache::KeyOf(const ServedFile& file, int shard_count, std::string_view prefix) {
  return fmt::format("{}\n{}\n{}\n{}", file.generation, file.crc32, shard_count, prefix);
}

std::shared_ptr<const std::vector<KeptDay>> DaySketchCache::Find(const ServedFile& file, int shard_count,
                                                                 std::string_view prefix) {
  if (!enabled()) return nullptr;
  return cache_.Find<std::vector<KeptDay>>(CacheKind::kDaySketches, KeyOf(file, shard_count, prefix));
}

const KeptDay* DaySketchCache::DayIn(const std::vector<KeptDay>& days, int64_t day) {
  auto it = std::lower_bound(days.begin(), days.end(), day,
                             [](const KeptDay& kept, int64_t d) { return kept.day < d; });
  return it != days.end() && it->day == day ? &*it : nullptr;
}

size_t DaySketchCache::Charge(const std::vector<KeptDay>& days) {
  size_t bytes = sizeof(days) + days.capacity() * sizeof(KeptDay);
  for (const KeptDay& d : days) bytes += kDayOverhead + (d.sketch ? d.sketch->MemoryBytes() : 0);
  return bytes;
}

void DaySketchCache::Add(const ServedFile& file, int shard_count, std::string_view prefix, std::vector<KeptDay> read) {
  if (!enabled() || read.empty()) return;
  for (KeptDay& d : read) d.estimate = d.sketch ? d.sketch->Estimate() : 0;
  std::sort(read.begin(), read.end(), ByDay);
  const std::string key = KeyOf(file, shard_count, prefix);
  auto days = std::make_shared<std::vector<KeptDay>>();
  if (const auto kept = cache_.Find<std::vector<KeptDay>>(CacheKind::kDaySketches, key)) {
    // Both sorted: merged, a day kept before winning over the same day read
    // again (a file's day record is the same every time it is read).
    days->reserve(kept->size() + read.size());
    std::set_union(kept->begin(), kept->end(), std::make_move_iterator(read.begin()),
                   std::make_move_iterator(read.end()), std::back_inserter(*days), ByDay);
  } else {
    *days = std::move(read);
  }
  const size_t charge = Charge(*days);
  cache_.Insert<std::vector<KeptDay>>(CacheKind::kDaySketches, key, std::move(days), charge);
}

}  // namespace clickatron::api
