// The archive replica's own figures for /stats and /metrics (the per-endpoint
// counts and latencies come from the HTTP core).
//
// Thread-safety: loop thread only (handlers and the stats provider both run there).
#pragma once

#include <cstdint>
#include <string>
#include <string_view>

#include <nlohmann/json.hpp>

#include "sorted_file.h"

namespace clickatron::archive {

struct ArchiveCounters {
  uint64_t get_requests = 0;
  uint64_t mget_requests = 0;
  uint64_t fwmatch_requests = 0;
  uint64_t hits = 0;            // keys found by get and mget
  uint64_t misses = 0;          // keys not found by get and mget
  uint64_t fwmatch_streamed = 0;  // fwmatch answers large enough to be chunked
  uint64_t bytes_served = 0;    // answer bodies of get, mget, fwmatch
  uint64_t files_served = 0;    // whole files sent by GET /file (to replicas catching up)
  uint64_t file_bytes_served = 0;
  uint64_t reloads_ok = 0;
  uint64_t reloads_failed = 0;
  int64_t last_load_ms = 0;
  std::string last_reload_error;  // "" after a successful reload
  // Catching up from the other replicas at start: "" (no peers), "running",
  // then what it found ("up to date", "fetched generation G", "failed: …").
  std::string catch_up;
  // Damage (scrubber.h): generations found damaged since start, and reads
  // refused 503 ARCHIVE_DAMAGED because of it.
  uint64_t damaged_generations = 0;
  uint64_t damaged_refusals = 0;
};
struct ScrubCounters;

// `file` is the generation now serving, or null when none could be loaded.
nlohmann::json ArchiveStatsJson(const ArchiveCounters& counters, const ScrubCounters& scrub, const SortedFile* file,
                                bool reload_running);
// /metrics rendered from ArchiveStatsJson's `stats` (metrics_table.h), every
// sample labelled with `daemon` and `member`.
std::string ArchiveStatsPrometheus(const nlohmann::json& stats, std::string_view daemon, std::string_view member);

}  // namespace clickatron::archive
