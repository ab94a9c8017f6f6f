// The union of a /uniques unit's run of whole UTC days, kept per archive
// file, so that a dashboard asking the same long window again merges one
// sketch instead of a day unique record per day.
//
// Why: a month's unit is often that union alone, and uniting some 30 day
// sketches (a dense union's estimate is a pass over 16,384 registers) for
// answers that cannot change while the file is served was most of a busy
// key's /uniques. (Breakdowns need no such thing: their runs of whole days
// are read as span records, which the file holds.)
//
// An entry is the file (generation and crc32), the routing count, the run
// prefix ("~ns|tkey." or "~sns.ns|tkey." with the skey), the exact list of
// days it unites, and the union. It answers only a lookup of the same file,
// count, prefix and the same days: a window that starts or ends a day later
// is another entry. Kept only for runs of kMinDays or more (a few days cost
// no more to read than to look up).
//
// Kept in the node's read cache (read_cache.h, kind day_unions), keyed by
// the file too: a run of another file is another entry.
//
// Thread-safety: thread-safe (the read cache is).
#pragma once

#include <cstddef>
#include <cstdint>
#include <memory>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "clickatron/unique_sketch.h"
#include "query/cache/archive_reply_cache.h"
#include "query/cache/read_cache.h"

namespace clickatron::api {

// What runs of days have in common, whatever they keep (DayRunCache).
struct DayRuns {
  static constexpr size_t kMinDays = 8;
  // The file, the count, the prefix, the first and last day and the count
  // of days name a run; the exact days are checked on a lookup, so two runs
  // with the same ends but other days between never mix.
  static std::string KeyOf(const ServedFile& file, int shard_count, std::string_view prefix,
                           const std::vector<int64_t>& days);
  static bool SameDays(const std::vector<int32_t>& kept, const std::vector<int64_t>& days);
};

template <typename Value>
class DayRunCache {
 public:
  static constexpr size_t kMinDays = DayRuns::kMinDays;

  DayRunCache(ReadCache& cache, CacheKind kind) : cache_(cache), kind_(kind) {}
  bool enabled() const { return cache_.enabled(); }

  // The value kept for `days` (sorted, distinct UTC day numbers) of `prefix`
  // in `file`, routed by `shard_count`; null when none.
  std::shared_ptr<const Value> Find(const ServedFile& file, int shard_count, std::string_view prefix,
                                    const std::vector<int64_t>& days) {
    if (!enabled() || days.size() < kMinDays) return nullptr;
    auto entry = cache_.Find<Entry>(kind_, DayRuns::KeyOf(file, shard_count, prefix, days));
    if (entry == nullptr || !DayRuns::SameDays(entry->days, days)) return nullptr;
    return std::shared_ptr<const Value>(entry, &entry->value);
  }
  // Keeps `value` (whose heap holds `value_bytes`) for `days` (at least
  // kMinDays of them; fewer are not kept).
  void Put(const ServedFile& file, int shard_count, std::string_view prefix, const std::vector<int64_t>& days,
           Value value, size_t value_bytes) {
    if (!enabled() || days.size() < kMinDays) return;
    auto entry = std::make_shared<Entry>();
    entry->value = std::move(value);
    entry->days.reserve(days.size());
    for (const int64_t day : days) entry->days.push_back(static_cast<int32_t>(day));
    const size_t charge = sizeof(Entry) + entry->days.capacity() * sizeof(int32_t) + value_bytes;
    cache_.Insert<Entry>(kind_, DayRuns::KeyOf(file, shard_count, prefix, days), std::move(entry), charge);
  }

 private:
  struct Entry {
    std::vector<int32_t> days;  // day numbers fit: years 1..9999 are within ±3M days
    Value value;
  };

  ReadCache& cache_;
  CacheKind kind_;
};

// A /uniques run: the union of the run's day unique records, and its
// estimate, made once (a dense union's is a pass over 16,384 registers, and
// a month's unit is often that union alone).
struct KeptUnion {
  std::shared_ptr<const UniqueSketch> sketch;
  uint64_t estimate = 0;
};
using DayUnionCache = DayRunCache<KeptUnion>;

}  // namespace clickatron::api
