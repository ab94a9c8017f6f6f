// Reading records across the ring's day stores: point reads (get, mget) and
// sorted scans (fwmatch, export) that produce "key,value\n" lines.
//
// A counter key lives in exactly one day (its hour's day), but its count may
// be split between the store and the in-memory tables (checkpointer.h); a
// lookup may sit in several days (each day's Today got its own put) with the
// same value. Reads therefore sum counters over every source they look at,
// unite the sketches of a unique record, and take the first hit of a lookup.
#pragma once

#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "checkpointer.h"
#include "clickatron/status.h"
#include "scan_cache.h"
#include "shard_store.h"

namespace clickatron::realtime {

// Produces sorted lines in pieces, so a caller can send them as they come.
class LineSource {
 public:
  virtual ~LineSource() = default;
  // Appends whole lines to *out until it has grown by at least `budget` bytes
  // or the lines run out. Returns false once there is nothing more (check
  // status(): an error also ends the lines).
  virtual bool Fill(std::string* out, size_t budget) = 0;
  virtual Status status() const = 0;
  virtual uint64_t lines() const = 0;  // produced so far
};

// The value text (as after a line's comma) of `key` over `days` of the
// view (store and tables); nullopt when none has it.
Result<std::optional<std::string>> ReadRecord(const ReadView& view, const std::vector<int64_t>& days,
                                              std::string_view key);

// Every record whose key starts with `prefix` over `days` of the view, in
// key order, at most `limit` lines (0: no limit). The scan holds the view's
// snapshot and a copy of the tables' matching records, so batches applied
// while it streams do not change it.
//
// With `unite_days` (a reader that sums visitors over whole UTC days, e.g.
// /uniques by day), each unique record's hours of one UTC day are one line:
// the union of their sketches, keyed by the first of those hours. Why: a
// busy key's day is 24 sketch lines, the largest part of what a read moves,
// and the API's HTTP client reads an answer 4 KiB per event-loop turn
// (libevent 2.1), so a hot key's /uniques spent most of its time reading
// them. Counters and lookups are answered as without it.
Result<std::unique_ptr<LineSource>> ScanPrefix(const ReadView& view, const std::vector<int64_t>& days,
                                               std::string_view prefix, uint64_t limit, bool unite_days = false);

// The scans of several prefixes of one request (GET /mfwmatch), one after
// another: REQUIRES `prefixes` sorted, none extending another
// (DisjointPrefixes). Each prefix's lines are what ScanPrefix answers, but
// one store cursor per day serves every prefix, sought again for each:
// opening and closing a RocksDB iterator cost more than its seek, and a
// coalesced mfwmatch carries many prefixes, most of them keys with nothing in
// realtime. The tables' matching records are copied when the scan is made,
// so every prefix reads the view as it was then (the tables may be gone by
// the time a long answer reaches its last prefix).
//
// With a `cache` (scan_cache.h), a (day, prefix) it keeps for the view's
// store version is read from it instead of the store, and one read from the
// store to its end is kept there. The cache is looked up when the scan is
// made, so it too reads the view as it was then.
// `unite_days` as ScanPrefix's.
Result<std::unique_ptr<LineSource>> ScanPrefixes(const ReadView& view, const std::vector<int64_t>& days,
                                                 std::vector<std::string> prefixes,
                                                 std::shared_ptr<ScanCache> cache = nullptr, bool unite_days = false);

// Every record of one day from a snapshot taken now, for an export: later
// writes are not seen, blocks read are not cached.
Result<std::unique_ptr<LineSource>> ScanDayForExport(const ShardStore& store, int64_t day);

// The smallest string greater than every string starting with `prefix`
// (the exclusive upper bound of a prefix scan); empty when there is none.
std::string PrefixSuccessor(std::string_view prefix);

}  // namespace clickatron::realtime
