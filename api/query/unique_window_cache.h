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
// And only a part made once the file's day record rules were known
// (QueryGather reads a window by its hours until then): kept, an hours-made
// part would be ~720 sketches to copy and unite at every query of it for
// the life of the file, where the rules give ~30 day records.
//
// Least recently used out first, within a byte budget; 0 turns it off.
//
// Thread-safety: none; one instance belongs to a read loop.
#pragma once

#include <cstddef>
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "clickatron/lru_map.h"
#include "query/archive_reply_cache.h"
#include "query/read_records.h"
#include "query/unique_records.h"

namespace clickatron::api {

class UniqueWindowCache {
 public:
  // The archive's part of a window's answer.
  struct Part {
    HourlySketches hours;               // by hour, or at a kept day's or run's first hour
    std::optional<int64_t> first_hour;  // the first archived hour with clicks in the span
  };
  static constexpr size_t kMinArchivedHours = 48;

  explicit UniqueWindowCache(size_t max_bytes) : map_(max_bytes), enabled_(max_bytes > 0) {}
  bool enabled() const { return enabled_; }

  // The part kept for the window on `file`, routed by `shard_count`;
  // nullptr when none. Valid until the next Put.
  const Part* Find(const ServedFile& file, int shard_count, std::string_view run_prefix, const HourSpan& span,
                   const HourSpan& skip, const std::vector<int64_t>& splits);
  // Keeps `part` for the window (replacing what was kept for another file).
  void Put(const ServedFile& file, int shard_count, std::string_view run_prefix, const HourSpan& span,
           const HourSpan& skip, const std::vector<int64_t>& splits, Part part);

  size_t entries() const { return map_.size(); }
  size_t bytes() const { return map_.charged(); }

  // What an entry and an hour are charged beyond the sketches' own memory
  // (list and map nodes, the name twice; a shared sketch's control block).
  static constexpr size_t kEntryOverhead = 96;
  static constexpr size_t kHourOverhead = sizeof(HourSketch) + 32;

 private:
  struct Entry {
    ServedFile file;
    int shard_count = 0;
    Part part;
  };
  // The entry name of a window, in name_ (reused: no allocation per lookup).
  std::string_view NameOf(std::string_view run_prefix, const HourSpan& span, const HourSpan& skip,
                          const std::vector<int64_t>& splits);

  LruMap<Entry> map_;
  bool enabled_;
  std::string name_;
};

}  // namespace clickatron::api
