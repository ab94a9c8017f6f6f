#include "query/read_stats.h"

#include <fmt/format.h>

#include "query/cache/read_cache.h"

namespace clickatron::api {
namespace {

// The one list of the read path's figures: /stats' "read" object and the
// clickatron_api_read_<name>_total counters are both made from it.
template <typename Fn>
void ForEachFigure(const ReadStats& s, Fn&& fn) {
  fn("archive_requests", "Requests sent to archive replicas.", s.archive_requests.load());
  fn("archive_failovers", "Archive requests that failed on a replica and were tried on another.",
     s.archive_failovers.load());
  fn("archive_reroutes",
     "Archive reads asked again on another shard: the answer named another shard count than they were routed by.",
     s.archive_reroutes.load());
  fn("realtime_requests", "Requests sent to realtime shards.", s.realtime_requests.load());
  fn("realtime_retries", "Realtime requests sent again after a failure.", s.realtime_retries.load());
  fn("archive_coalesced_requests", "Coalesced archive requests (one mget for several queries' lookups).",
     s.archive_coalesced_requests.load());
  fn("archive_coalesced_keys", "Keys carried by coalesced archive requests.", s.archive_coalesced_keys.load());
  fn("realtime_coalesced_requests", "Coalesced realtime requests (one mfwmatch for several queries' lookups).",
     s.realtime_coalesced_requests.load());
  fn("realtime_coalesced_prefixes", "Prefixes carried by coalesced realtime requests.",
     s.realtime_coalesced_prefixes.load());
  fn("unavailable", "Queries answered 503 SHARD_UNAVAILABLE.", s.unavailable.load());
  fn("generation_retries", "Breakdowns restarted because the archive generation changed under them.",
     s.generation_retries.load());
  fn("deletion_retries", "Queries restarted because a deletion of their key came in while they were out.",
     s.deletion_retries.load());
  fn("lookup_cache_hits", "Lookup values found in the API node's cache.", s.lookup_cache_hits.load());
  fn("lookups_fetched", "Lookup values fetched from the archive and realtime shards.", s.lookups_fetched.load());
  fn("lookups_missing", "Hashes with no lookup record anywhere.", s.lookups_missing.load());
  fn("day_subtotals_read", "UTC days a breakdown read as one day subtotal record instead of its hours.",
     s.day_subtotals_read.load());
  fn("spans_read", "Spans of 2 to 128 whole UTC days a breakdown or /uniques read as one span record (subtotal or unique) "
     "instead of their days.",
     s.spans_read.load());
  fn("early_span_reads",
     "Breakdowns whose day and span records were asked beside the total (in its round trip) and were of its file: "
     "only edge hours, if any, took a second round trip.",
     s.early_span_reads.load());
  fn("day_uniques_read",
     "UTC days /uniques and /breakdown?uniques=true read as one day unique record (the union of its hours) instead "
     "of its hours.",
     s.day_uniques_read.load());
  fn("archive_cache_hits", "Archive keys answered from the API node's cache of the served generation.",
     s.archive_cache_hits.load());
  fn("archive_cache_misses", "Archive keys asked of a replica while the cache was on: not kept, or kept from an "
     "older generation.", s.archive_cache_misses.load());
  fn("archive_cache_evictions", "Kept archive answers dropped to stay within read_cache_mb.",
     s.cache ? s.cache->Figures(CacheKind::kArchiveReply).evictions : 0);
  fn("archive_cache_probes",
     "GET /manifest requests sent to learn which file a replica serves (one heard from over a second ago).",
     s.archive_cache_probes.load());
  fn("archive_cache_decoded_hits", "Kept subtotal and unique records read from their decoded columns, not their text.",
     s.archive_cache_decoded_hits.load());
  fn("realtime_skip_rereads", "Queries that read realtime again with every day: their archive answer ended before "
     "the day realtime reads skipped through (a generation older than one seen).", s.realtime_skip_rereads.load());
  fn("handover_rereads",
     "Queries read again because their archive answer lacked a day realtime had handed over to the archive, or was "
     "of an older generation than realtime says is deployed (kept, or sent just before a deploy).",
     s.handover_rereads.load());
  fn("realtime_united_reads",
     "/uniques and /breakdown?uniques=true reads of realtime that asked for each UTC day's hours of a record as one "
     "union (unite=day: the window and its units are whole UTC days).",
     s.realtime_united_reads.load());
}

}  // namespace

nlohmann::json ReadStats::ToJson() const {
  nlohmann::json read = nlohmann::json::object();
  ForEachFigure(*this, [&](const char* name, const char*, uint64_t value) { read[name] = value; });
  nlohmann::json out{{"read", read}};
  if (cache != nullptr) {
    nlohmann::json kinds = nlohmann::json::object();
    for (size_t k = 0; k < kCacheKinds; ++k) {
      const ReadCache::KindFigures f = cache->Figures(static_cast<CacheKind>(k));
      kinds[CacheKindName(static_cast<CacheKind>(k))] = {
          {"bytes", f.bytes}, {"entries", f.entries}, {"inserts", f.inserts}, {"evictions", f.evictions}, {"not_kept", f.not_kept}};
    }
    out["read_cache"] = {{"capacity_bytes", cache->capacity()}, {"kinds", std::move(kinds)}};
  }
  return out;
}

std::string ReadStats::ToPrometheus(std::string_view base_labels) const {
  std::string out;
  ForEachFigure(*this, [&](const char* name, const char* help, uint64_t value) {
    out += fmt::format(
        "# HELP clickatron_api_read_{0}_total {1}\n# TYPE clickatron_api_read_{0}_total counter\n"
        "clickatron_api_read_{0}_total{{{2}}} {3}\n",
        name, help, base_labels, value);
  });
  if (cache == nullptr) return out;
  out += fmt::format(
      "# HELP clickatron_api_read_cache_capacity_bytes The API node's read cache capacity ([api] read_cache_mb).\n"
      "# TYPE clickatron_api_read_cache_capacity_bytes gauge\n"
      "clickatron_api_read_cache_capacity_bytes{{{}}} {}\n",
      base_labels, cache->capacity());
  // One family per figure, a sample per kind: bytes and entries kept now,
  // entries kept, dropped for room and not kept since start.
  struct Family {
    const char* name;
    const char* type;
    const char* help;
    uint64_t (*of)(const ReadCache::KindFigures&);
  };
  static constexpr Family kFamilies[] = {
      {"clickatron_api_read_cache_bytes", "gauge", "Bytes charged to the read cache by its entries of a kind.",
       [](const ReadCache::KindFigures& f) -> uint64_t { return f.bytes; }},
      {"clickatron_api_read_cache_entries", "gauge", "Entries of a kind in the read cache.",
       [](const ReadCache::KindFigures& f) -> uint64_t { return f.entries; }},
      {"clickatron_api_read_cache_inserts_total", "counter", "Entries of a kind kept in the read cache.",
       [](const ReadCache::KindFigures& f) -> uint64_t { return f.inserts; }},
      {"clickatron_api_read_cache_evictions_total", "counter",
       "Entries of a kind dropped from the read cache for room.",
       [](const ReadCache::KindFigures& f) -> uint64_t { return f.evictions; }},
      {"clickatron_api_read_cache_not_kept_total", "counter",
       "Entries of a kind offered to the read cache and not kept: too large, or a key not offered before while its "
       "shard was full.",
       [](const ReadCache::KindFigures& f) -> uint64_t { return f.not_kept; }},
  };
  for (const Family& family : kFamilies) {
    out += fmt::format("# HELP {0} {1}\n# TYPE {0} {2}\n", family.name, family.help, family.type);
    for (size_t k = 0; k < kCacheKinds; ++k) {
      const auto kind = static_cast<CacheKind>(k);
      out += fmt::format("{}{{{},kind=\"{}\"}} {}\n", family.name, base_labels, CacheKindName(kind),
                         family.of(cache->Figures(kind)));
    }
  }
  return out;
}

}  // namespace clickatron::api
