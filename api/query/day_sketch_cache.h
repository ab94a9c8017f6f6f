// A key's day unique records read from one archive file, kept together, so
// that /uniques over whole days finds all of them with one lookup.
//
// Why: a busy key's /uniques for 30 days by day asked the archive answer
// cache for 30 day records one by one, and decoded-column lookups in that
// large, cold table were the API's largest cost of its own (perf: 8.7% of
// its samples during hot-key /uniques). The days of one file never change,
// so what a key's day records were on a file is what they are for as long as
// it is served; the runs cache (day_sum_cache.h) keeps unions of long runs,
// this one the days themselves, for units of a day or a few (by day, by
// week, a window's edges).
//
// An entry is the file (generation and crc32), the routing count, the
// prefix of a key's records and the subtotal value asked ("~ns|tkey." or
// "~sns.ns|tkey." with the skey, as QueryGather names runs), and, sorted by
// day, every day read so far with its sketch, or none where the file has no
// record of the day (a day with clicks and no visitors, or none of that
// subtotal value). Kept only for files that have a day record for every day
// with unique hours, where "not there" is an answer too. Each day also keeps
// the sketch's estimate, made once: a dense sketch's is a pass over 16,384
// registers.
//
// The sketches are shared with the answer cache's decoded columns most of
// the time, but charged here in full: that cache may drop its copy first.
//
// Least recently used out first, within a byte budget; 0 turns it off.
//
// Thread-safety: none; one instance belongs to a read loop.
#pragma once

#include <cstddef>
#include <cstdint>
#include <memory>
#include <string_view>
#include <vector>

#include "clickatron/lru_map.h"
#include "clickatron/unique_sketch.h"
#include "query/archive_reply_cache.h"

namespace clickatron::api {

// One day of a key on a file: its day record's sketch, or nullptr when the
// file has none (no visitors that day).
struct KeptDay {
  int32_t day = 0;  // UTC day number (years 1..9999 fit)
  std::shared_ptr<const UniqueSketch> sketch;
  uint64_t estimate = 0;  // sketch->Estimate(), 0 without one
};

class DaySketchCache {
 public:
  explicit DaySketchCache(size_t max_bytes) : map_(max_bytes), enabled_(max_bytes > 0) {}
  bool enabled() const { return enabled_; }

  // The days kept for `prefix` on `file`, routed by `shard_count`, sorted by
  // day; nullptr when none. Valid until the next Add.
  const std::vector<KeptDay>* Find(const ServedFile& file, int shard_count, std::string_view prefix);
  // The kept day `day` of `days` (as Find returns them), or nullptr.
  static const KeptDay* DayIn(const std::vector<KeptDay>& days, int64_t day);
  // Adds `read` (any order, days distinct) to the days kept for `prefix` on
  // `file`; what was kept for another file or count is replaced. A day
  // already kept keeps its sketch (a file's days never change).
  void Add(const ServedFile& file, int shard_count, std::string_view prefix, std::vector<KeptDay> read);

  size_t entries() const { return map_.size(); }
  size_t bytes() const { return map_.charged(); }

  // What an entry and a day are charged beyond the sketches' own memory
  // (list and map nodes, the prefix twice; a shared sketch's control block).
  static constexpr size_t kEntryOverhead = 96;
  static constexpr size_t kDayOverhead = sizeof(KeptDay) + 32;

 private:
  struct Entry {
    ServedFile file;
    int shard_count = 0;
    std::vector<KeptDay> days;  // sorted by day
  };
  static size_t Charge(std::string_view prefix, const Entry& entry);

  LruMap<Entry> map_;
  bool enabled_;
};

}  // namespace clickatron::api
