// Runs of whole days kept per archive file; see day_run_cache.h.
#include "query/cache/day_run_cache.h"

#include <fmt/format.h>

namespace clickatron::api {

std::string DayRuns::KeyOf(const ServedFile& file, int shard_count, std::string_view prefix,
                           const std::vector<int64_t>& days) {
  return fmt::format("{}\n{}\n{}\n{}\n{}\n{}\n{}", file.generation, file.crc32, shard_count, prefix, days.front(),
                     days.back(), days.size());
}

bool DayRuns::SameDays(const std::vector<int32_t>& kept, const std::vector<int64_t>& days) {
  if (kept.size() != days.size()) return false;
  for (size_t i = 0; i < kept.size(); ++i) {
    if (kept[i] != days[i]) return false;
  }
  return true;
}


}  // namespace clickatron::api
