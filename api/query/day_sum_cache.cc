// Sums of whole days kept per archive file; see day_sum_cache.h.
#include "query/day_sum_cache.h"

#include <fmt/format.h>

namespace clickatron::api {

// The first and last day and the count name the run; SameDays checks the
// rest, so two runs with the same ends but other days between never mix.
std::string DaySumCache::KeyOf(std::string_view prefix, const std::vector<int64_t>& days) {
  return fmt::format("{}\n{}\n{}\n{}", prefix, days.front(), days.back(), days.size());
}

bool DaySumCache::SameDays(const std::vector<int32_t>& kept, const std::vector<int64_t>& days) {
  if (kept.size() != days.size()) return false;
  for (size_t i = 0; i < kept.size(); ++i) {
    if (kept[i] != days[i]) return false;
  }
  return true;
}

const ValueCounts* DaySumCache::Find(const ServedFile& file, int shard_count, std::string_view prefix,
                                     const std::vector<int64_t>& days) {
  if (!enabled_ || days.size() < kMinDays) return nullptr;
  Entry* entry = map_.Find(KeyOf(prefix, days));
  if (entry == nullptr || entry->file != file || entry->shard_count != shard_count || !SameDays(entry->days, days)) {
    return nullptr;
  }
  return &entry->sums;
}

void DaySumCache::Put(const ServedFile& file, int shard_count, std::string_view prefix,
                      const std::vector<int64_t>& days, ValueCounts sums) {
  if (!enabled_ || days.size() < kMinDays) return;
  Entry entry{file, shard_count, {}, std::move(sums)};
  entry.days.reserve(days.size());
  for (const int64_t day : days) entry.days.push_back(static_cast<int32_t>(day));
  size_t charge = sizeof(Entry) + prefix.size() + 64 + entry.days.size() * sizeof(int32_t);
  for (const auto& [value, count] : entry.sums) charge += sizeof(entry.sums[0]) + value.capacity();
  const std::string key = KeyOf(prefix, days);
  charge += key.size();
  map_.Put(key, std::move(entry), charge);
}

}  // namespace clickatron::api
