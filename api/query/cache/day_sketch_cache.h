// A key's day unique records read from one archive file, kept together, so
// that /uniques over whole days finds all of them with one lookup.
//
// Why: a busy key's /uniques for 30 days by day asked the archive answer
// cache for 30 day records one by one, and decoded-column lookups in that
// large, cold table were the API's largest cost of its own (perf: 8.7% of
// its samples during hot-key /uniques). The days of one file never change,
// so what a key's day records were on a file is what they are for as long as
// it is served; the runs cache (day_run_cache.h) keeps unions of long runs,
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
// the time, but charged here in full: that entry may be dropped first.
//
// Kept in the node's read cache (read_cache.h, kind day_sketches), keyed by
// the file too.
//
// Thread-safety: thread-safe (the read cache is); two loops adding days of
// one key at once may each keep only their own (the other reads them again).
#pragma once

#include <cstddef>
#include <cstdint>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "clickatron/unique_sketch.h"
#include "query/cache/archive_reply_cache.h"
#include "query/cache/read_cache.h"

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
  explicit DaySketchCache(ReadCache& cache) : cache_(cache) {}
  bool enabled() const { return cache_.enabled(); }

  // The days kept for `prefix` on `file`, routed by `shard_count`, sorted by
  // day; null when none.
  std::shared_ptr<const std::vector<KeptDay>> Find(const ServedFile& file, int shard_count, std::string_view prefix);
  // The kept day `day` of `days` (as Find returns them), or nullptr.
  static const KeptDay* DayIn(const std::vector<KeptDay>& days, int64_t day);
  // Adds `read` (any order, days distinct) to the days kept for `prefix` on
  // `file`. A day already kept keeps its sketch (a file's days never change).
  void Add(const ServedFile& file, int shard_count, std::string_view prefix, std::vector<KeptDay> read);

  // What a day is charged beyond its sketch's own memory (a shared
  // sketch's control block).
  static constexpr size_t kDayOverhead = sizeof(KeptDay) + 32;

 private:
  static std::string KeyOf(const ServedFile& file, int shard_count, std::string_view prefix);
  static size_t Charge(const std::vector<KeptDay>& days);

  ReadCache& cache_;
};

}  // namespace clickatron::api
