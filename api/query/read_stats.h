// Figures the read path adds to /stats and /metrics (per-endpoint query counts
// and latencies come from the HTTP core). Atomics: /stats may be served while
// a query callback runs, both on the loop today, but nothing here relies on it.
#pragma once

#include <atomic>
#include <cstdint>
#include <string>
#include <string_view>

#include <nlohmann/json.hpp>

namespace clickatron::api {

class ReadCache;

struct ReadStats {
  std::atomic<uint64_t> archive_requests{0};    // sent to archive replicas
  std::atomic<uint64_t> archive_failovers{0};   // a replica failed; another was tried
  // An archive answer named another shard count than the request was routed
  // by (archive_shards changed): asked again on the shard of that count.
  std::atomic<uint64_t> archive_reroutes{0};
  std::atomic<uint64_t> realtime_requests{0};   // sent to realtime shards
  std::atomic<uint64_t> realtime_retries{0};    // a realtime request was sent again
  // Coalesced requests (several queries' lookups in one mget / mfwmatch) and
  // the lookups they carried: keys / requests is the batching achieved.
  std::atomic<uint64_t> archive_coalesced_requests{0};
  std::atomic<uint64_t> archive_coalesced_keys{0};
  std::atomic<uint64_t> realtime_coalesced_requests{0};
  std::atomic<uint64_t> realtime_coalesced_prefixes{0};
  std::atomic<uint64_t> unavailable{0};         // queries answered 503 SHARD_UNAVAILABLE
  std::atomic<uint64_t> generation_retries{0};  // a breakdown restarted: the archive changed under it
  std::atomic<uint64_t> deletion_retries{0};    // a query restarted: a deletion of its key came in under it
  std::atomic<uint64_t> lookup_cache_hits{0};
  std::atomic<uint64_t> lookups_fetched{0};
  std::atomic<uint64_t> lookups_missing{0};     // a hash with no lookup record anywhere
  // Breakdowns read a UTC day that lies wholly inside one of their sums as
  // its day subtotal record (docs/protocols.md) instead of its hours, and a
  // run of such days as span records (subtotals and unique records alike).
  std::atomic<uint64_t> day_subtotals_read{0};
  std::atomic<uint64_t> spans_read{0};
  // Breakdowns whose day and span records, asked beside the total on the
  // archive's last day as last seen, were the ones the total's file holds.
  std::atomic<uint64_t> early_span_reads{0};
  // /uniques and /breakdown?uniques=true read a UTC day wholly inside one
  // unit as its day unique record.
  std::atomic<uint64_t> day_uniques_read{0};
  // Archive answers kept per key and generation (archive_reply_cache.h):
  // keys answered from the cache, keys asked for while the cache could have
  // answered (not kept yet, or kept from an older generation), entries
  // dropped for room, and GET /manifest requests sent to confirm which
  // generation a replica serves.
  std::atomic<uint64_t> archive_cache_hits{0};
  std::atomic<uint64_t> archive_cache_misses{0};
  std::atomic<uint64_t> archive_cache_probes{0};
  // Kept subtotal and unique records read from their decoded columns
  // (decoded_columns.h) instead of their text.
  std::atomic<uint64_t> archive_cache_decoded_hits{0};
  // Realtime reads skip the days the archive holds (after=D); a query whose
  // archive answer ends before the day skipped reads realtime again.
  std::atomic<uint64_t> realtime_skip_rereads{0};
  // Queries read again because their archive answer lacked a day realtime
  // had handed over to the archive or was of an older generation than the
  // deployed one (a kept answer of an older file, or one sent just before a
  // deploy): ArchiveReader::BehindRealtime.
  std::atomic<uint64_t> handover_rereads{0};
  // /uniques reads of realtime sent with unite=day (docs/protocols.md).
  std::atomic<uint64_t> realtime_united_reads{0};

  // The node's read cache (read_cache.h), whose figures are reported
  // beside these ("read_cache" in /stats); null: none.
  const ReadCache* cache = nullptr;

  nlohmann::json ToJson() const;
  // clickatron_api_read_<figure>_total, each sample with `base_labels`
  // (`daemon="…",member="…"`, metrics_table.h's BaseLabels).
  std::string ToPrometheus(std::string_view base_labels) const;
};

}  // namespace clickatron::api
