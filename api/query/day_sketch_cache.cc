// A key's day unique records kept per archive file; see day_sketch_cache.h.
#include "query/day_sketch_cache.h"

#include <algorithm>
#include <iterator>
#include <utility>

namespace clickatron::api {
namespace {

bool ByDay(const KeptDay& a, const KeptDay& b) { return a.day < b.day; }

}  // namespace

const std::vector<KeptDay>* DaySketchCache::Find(const ServedFile& file, int shard_count, std::string_view prefix) {
  if (!enabled_) return nullptr;
  const Entry* entry = map_.Find(prefix);
  if (entry == nullptr || entry->file != file || entry->shard_count != shard_count) return nullptr;
  return &entry->days;
}

const KeptDay* DaySketchCache::DayIn(const std::vector<KeptDay>& days, int64_t day) {
  auto it = std::lower_bound(days.begin(), days.end(), day,
                             [](const KeptDay& kept, int64_t d) { return kept.day < d; });
  return it != days.end() && it->day == day ? &*it : nullptr;
}

size_t DaySketchCache::Charge(std::string_view prefix, const Entry& entry) {
  size_t bytes = sizeof(Entry) + kEntryOverhead + 2 * prefix.size() + entry.days.capacity() * sizeof(KeptDay);
  for (const KeptDay& d : entry.days) bytes += kDayOverhead + (d.sketch ? d.sketch->MemoryBytes() : 0);
  return bytes;
}

void DaySketchCache::Add(const ServedFile& file, int shard_count, std::string_view prefix, std::vector<KeptDay> read) {
  if (!enabled_ || read.empty()) return;
  for (KeptDay& d : read) d.estimate = d.sketch ? d.sketch->Estimate() : 0;
  std::sort(read.begin(), read.end(), ByDay);
  Entry entry{file, shard_count, {}};
  const Entry* kept = map_.Find(prefix);
  if (kept != nullptr && kept->file == file && kept->shard_count == shard_count) {
    // Both sorted: merged, a day kept before winning over the same day read
    // again (a file's day record is the same every time it is read).
    entry.days.reserve(kept->days.size() + read.size());
    std::set_union(kept->days.begin(), kept->days.end(), std::make_move_iterator(read.begin()),
                   std::make_move_iterator(read.end()), std::back_inserter(entry.days), ByDay);
  } else {
    entry.days = std::move(read);
  }
  const size_t charge = Charge(prefix, entry);
  map_.Put(prefix, std::move(entry), charge);
}

}  // namespace clickatron::api
