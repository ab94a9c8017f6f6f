// What the archive adds to one /uniques window of a busy key on one file,
// kept for the next query of the same window.
//
// Why: a dashboard asks for the last 30 days by day of its busy keys over
// and over, and each query derived the same archive part again from the
// key's 720 archived hours: copied from the archive answer, walked for whole
// days, each day looked up in the day sketch cache (perf: AddArchiveTotal
// Hours, WholeDays, RunsInOneSum, DayIn and their copies were the largest of
// the API's own samples answering hot keys once realtime sent day unions).
// A file never changes while it is served, and a window moves only when its
// units do, so the archive's sketches of a window (by hour, day or kept run,
// with their estimates) are the same for every query of it on that file.
// Realtime's hours are read afresh and added on top, so an answer is as
// current as without it.
//
// An entry is named by the run prefix (a key's unique records, or one
// subtotal value's: as QueryGather names runs), the span, the gap it skips
// and the unit boundaries; it holds the file (generation and crc32) and
// routing count it was made on, and is a miss on any other. Only windows
// with at least kMinArchivedHours archived hours are kept: a sparse key's
// part costs little to make, and its entries would push out the busy keys'.
//
// Kept in the node's read cache (read_cache.h, kind unique_window), keyed
// by the file too.
//
// Thread-safety: thread-safe (the read cache is).
#pragma once

#include <cstddef>
#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "query/cache/archive_reply_cache.h"
#include "query/cache/read_cache.h"
#include "query/merge/read_records.h"
#include "query/merge/unique_records.h"

namespace clickatron::api {

class UniqueWindowCache {
 public:
  // The archive's part of a window's answer.
  struct Part {
    HourlySketches hours;               // by hour, or at a kept day's or run's first hour
    std::optional<int64_t> first_hour;  // the first archived hour with clicks in the span
  };
  static constexpr size_t kMinArchivedHours = 48;

  explicit UniqueWindowCache(ReadCache& cache) : cache_(cache) {}
  bool enabled() const { return cache_.enabled(); }

  // The part kept for the window on `file`, routed by `shard_count`; null
  // when none.
  std::shared_ptr<const Part> Find(const ServedFile& file, int shard_count, std::string_view run_prefix, const HourSpan& span,
                   const HourSpan& skip, const std::vector<int64_t>& splits);
  // Keeps `part` for the window.
  void Put(const ServedFile& file, int shard_count, std::string_view run_prefix, const HourSpan& span,
           const HourSpan& skip, const std::vector<int64_t>& splits, Part part);

  // What an hour is charged beyond its sketch's own memory (a shared
  // sketch's control block).
  static constexpr size_t kHourOverhead = sizeof(HourSketch) + 32;

 private:
  // The entry name of a window of `file`, in name_ (reused: no allocation
  // per lookup).
  std::string_view NameOf(const ServedFile& file, int shard_count, std::string_view run_prefix,
                          const HourSpan& span, const HourSpan& skip, const std::vector<int64_t>& splits);

  ReadCache& cache_;
  std::string name_;
};

}  // namespace clickatron::api
