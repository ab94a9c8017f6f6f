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
// sums, most clicks first being the caller's business. It answers only a
// lookup of the same file, count, prefix and the same days: a window that
// starts or ends a day later is another entry. Kept only for files that have
// a day record for every day with hours (an absent one is a day without
// hours), and only for runs of kMinDays or more (a few days cost no more to
// read than to look up).
//
// Least recently used out first, within a byte budget; 0 turns it off.
//
// Thread-safety: none; one instance belongs to the loop thread.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "clickatron/lru_map.h"
#include "query/archive_reply_cache.h"

namespace clickatron::api {

using ValueCounts = std::vector<std::pair<std::string, int64_t>>;

class DaySumCache {
 public:
  static constexpr size_t kMinDays = 8;

  explicit DaySumCache(size_t max_bytes) : map_(max_bytes), enabled_(max_bytes > 0) {}
  bool enabled() const { return enabled_; }

  // The sums kept for `days` (sorted, distinct UTC day numbers) of `prefix`
  // in `file`, routed by `shard_count`; nullptr when none. Valid until the
  // next Put.
  const ValueCounts* Find(const ServedFile& file, int shard_count, std::string_view prefix,
                          const std::vector<int64_t>& days);
  // Keeps `sums` for `days` (at least kMinDays of them; fewer are not kept).
  void Put(const ServedFile& file, int shard_count, std::string_view prefix, const std::vector<int64_t>& days,
           ValueCounts sums);

  size_t entries() const { return map_.size(); }
  size_t bytes() const { return map_.charged(); }

 private:
  struct Entry {
    ServedFile file;
    int shard_count = 0;
    std::vector<int32_t> days;  // day numbers fit: years 1..9999 are within ±3M days
    ValueCounts sums;
  };
  static std::string KeyOf(std::string_view prefix, const std::vector<int64_t>& days);
  static bool SameDays(const std::vector<int32_t>& kept, const std::vector<int64_t>& days);

  LruMap<Entry> map_;
  bool enabled_;
};

}  // namespace clickatron::api
