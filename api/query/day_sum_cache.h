// The sums of a breakdown's whole UTC days, kept per archive file, so that a
// dashboard asking the same long window again adds one list of (value, count)
// instead of a day subtotal record per day.
//
// Why: a 365-day breakdown looked up 365 day records in the archive answer
// cache and summed some 3,000 (day, value) counts, query after query, for
// answers that cannot change while the file is served. A run of whole days
// that lies inside one of a query's sums (no split between them) adds up to
// the same counts every time: the sum of their day records.
//
// An entry is the file (generation and crc32), the routing count, the
// subtotal prefix ("sns.ns|tkey."), the exact list of days it sums, and the
// sums (by value; the caller ranks them). It answers only a
// lookup of the same file, count, prefix and the same days: a window that
// starts or ends a day later is another entry. Kept only for files that have
// a day record for every day with hours (an absent one is a day without
// hours), and only for runs of kMinDays or more (a few days cost no more to
// read than to look up).
//
// The same for /uniques: a run of whole days inside one unit is the union of
// their day unique records (DayUnionCache), one sketch instead of a day's
// each.
//
// Kept in the node's read cache (read_cache.h, kinds day_sums and
// day_unions), keyed by the file too: a run of another file is another entry.
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
#include "query/archive_reply_cache.h"
#include "query/read_cache.h"

namespace clickatron::api {

using ValueCounts = std::vector<std::pair<std::string, int64_t>>;

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

  // `kind`: day_sums or day_unions.
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

// A breakdown's run: per value, its clicks over the run's days.
using DaySumCache = DayRunCache<ValueCounts>;
// What ValueCounts' heap holds, for Put.
size_t HeapBytes(const ValueCounts& sums);
// A /uniques run: the union of the run's day unique records, and its
// estimate, made once (a dense union's is a pass over 16,384 registers, and
// a month's unit is often that union alone).
struct KeptUnion {
  std::shared_ptr<const UniqueSketch> sketch;
  uint64_t estimate = 0;
};
using DayUnionCache = DayRunCache<KeptUnion>;

}  // namespace clickatron::api
