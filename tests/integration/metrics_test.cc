// /metrics of every daemon (api, realtime, archive) after real traffic:
// 1. `promtool check metrics` accepts it with no lint problem (HELP and TYPE
//    on every family, counters ending in _total, base units…);
// 2. it carries every figure of the daemon's /stats: each numeric (or bool)
//    leaf of /stats' data maps, by the table below, to a metric whose sample
//    (with the labels the path names) has the same value. A figure added to
//    /stats without a metric (or without a row here) fails the test.
// promtool comes with the Debian package `prometheus` (scripts/deps).
#include <gtest/gtest.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdlib>
#include <map>
#include <optional>
#include <string>
#include <thread>
#include <vector>

#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include "integration/cluster_fixture.h"

// A namespace of this file's own: its names beside those of the other files
// compiled with it in one unity file (tests/CMakeLists.txt).
namespace clickatron::integration::metrics_test {
namespace {

using clickatron::testing::HttpGet;
using clickatron::testing::RunCommand;

constexpr const char* kPromtool = "/usr/bin/promtool";
const std::string kD1 = "2024-05-06";
const std::string kD2 = "2024-05-07";

// JSON path (in /stats' data) -> metric. Path segments: a key; "{label}" any
// key of an object, which the sample must carry as that label; "[label]" any
// element of an array, the sample labelled with the element's field `label`.
struct Figure {
  const char* path;
  const char* metric;  // "": the figure is a label (of every sample of its array element)
  const char* labels = "";  // constant labels the sample carries: "state=applied"
  double scale = 1;         // sample = figure * scale (ms, us -> seconds)
};

// Figures of every daemon's /stats that are deliberately not compared.
const std::vector<std::string> kExcluded = {
    "/endpoints",  // per endpoint: the HTTP core's clickatron_http_* (and changed by the fetches themselves)
    "/uptime_s",   // time-like: clickatron_uptime_seconds ticks between the fetches
    "/connections",  // the HTTP core's clickatron_http_* (and changed by the fetches' own connections)
    // The kernel's figures move between the fetches (the memory bound test
    // reads them from /metrics).
    "/realtime/memory_parts/rss_bytes",
    "/realtime/memory_parts/peak_rss_bytes",
};

const std::vector<Figure> kApiFigures = {
    {"/write/incr_requests", "clickatron_api_incr_requests_total"},
    {"/write/increments_in", "clickatron_api_increments_total"},
    {"/write/records_in", "clickatron_api_records_in_total"},
    {"/write/records_out", "clickatron_api_records_out_total"},
    {"/write/batches_out", "clickatron_api_batches_out_total"},
    {"/write/combining_ratio", "clickatron_api_combining_ratio"},
    {"/write/rejected_invalid", "clickatron_api_rejected_invalid_total"},
    {"/write/rejected_overloaded", "clickatron_api_rejected_overloaded_total"},
    {"/write/waiting_requests", "clickatron_api_waiting_requests"},
    {"/write/waited_requests", "clickatron_api_waited_requests_total"},
    {"/write/commit_errors", "clickatron_api_commit_errors_total"},
    {"/write/late_lines_written", "clickatron_api_late_lines_total"},
    {"/write/late_frames_written", "clickatron_api_late_frames_total"},
    {"/write/oplog/bytes_written", "clickatron_oplog_bytes_written_total"},
    {"/write/oplog/records_written", "clickatron_oplog_records_written_total"},
    {"/write/oplog/commits", "clickatron_oplog_commits_total"},
    {"/write/oplog/failed", "clickatron_oplog_failed"},
    {"/write/oplog/segments", "clickatron_oplog_segments"},
    {"/write/oplog/segment_bytes_uncompressed", "clickatron_oplog_segment_bytes"},
    {"/write/oplog/fsyncs", "clickatron_oplog_fsyncs_total"},
    {"/write/oplog/fsync_avg_us", "clickatron_oplog_fsync_avg_seconds", "", 1e-6},
    {"/write/oplog/fsync_p99_us", "clickatron_oplog_fsync_p99_seconds", "", 1e-6},
    {"/write/oplog/uncommitted_batches_cut", "clickatron_oplog_uncommitted_batches_cut"},
    {"/write/oplog/damaged_segments_set_aside", "clickatron_oplog_damaged_segments_set_aside"},
    {"/write/idempotency/keys", "clickatron_api_idempotency_keys"},
    {"/write/idempotency/keys_in_flight", "clickatron_api_idempotency_keys_in_flight"},
    {"/write/idempotency/bytes", "clickatron_api_idempotency_bytes"},
    {"/write/idempotency/max_keys", "clickatron_api_idempotency_max_keys"},
    {"/write/idempotency/window_seconds", "clickatron_api_idempotency_window_seconds"},
    {"/write/idempotency/replays", "clickatron_api_idempotency_replays_total"},
    {"/write/idempotency/reused", "clickatron_api_idempotency_reused_total"},
    {"/write/idempotency/in_flight_refusals", "clickatron_api_idempotency_in_flight_total"},
    {"/write/idempotency/expired", "clickatron_api_idempotency_expired_total"},
    {"/write/idempotency/evicted", "clickatron_api_idempotency_evicted_total"},
    {"/write/idempotency/restored", "clickatron_api_idempotency_restored_total"},
    {"/write/idempotency/relayed_to_home", "clickatron_api_idempotency_relayed_total"},
    {"/write/idempotency/home_unavailable", "clickatron_api_idempotency_home_unavailable_total"},
    {"/write/influx_requests", "clickatron_api_influx_requests_total"},
    {"/write/parsed_off_loop", "clickatron_api_parsed_off_loop_total"},
    {"/write/rejected_too_large", "clickatron_api_rejected_too_large_total"},
    {"/write/statsd/datagrams", "clickatron_api_statsd_datagrams_total"},
    {"/write/statsd/tcp_connections", "clickatron_api_statsd_tcp_connections_total"},
    {"/write/statsd/tcp_connections_open", "clickatron_api_statsd_tcp_connections_open"},
    {"/write/statsd/tcp_connections_refused", "clickatron_api_statsd_tcp_connections_refused_total"},
    {"/write/statsd/tcp_lines_too_long", "clickatron_api_statsd_tcp_lines_too_long_total"},
    {"/write/statsd/lines_taken", "clickatron_api_statsd_lines_taken_total"},
    {"/write/statsd/lines_sampled", "clickatron_api_statsd_lines_sampled_total"},
    {"/write/statsd/dropped/{reason}", "clickatron_api_statsd_dropped_lines_total"},
    {"/write/shards/[shard]/shard", ""},  // the label itself
    {"/write/shards/[shard]/queued_lines", "clickatron_api_shard_queued_lines"},
    {"/write/shards/[shard]/queued_batches", "clickatron_api_shard_queued_batches"},
    {"/write/shards/[shard]/replay_pending_seqs", "clickatron_api_shard_replay_pending_seqs"},
    {"/write/shards/[shard]/written_seq", "clickatron_api_shard_written_seq"},
    {"/write/shards/[shard]/acked_seq", "clickatron_api_shard_acked_seq"},
    {"/write/shards/[shard]/shard_applied_seq", "clickatron_api_shard_applied_seq"},
    {"/write/shards/[shard]/shard_durable_seq", "clickatron_api_shard_durable_seq"},
    {"/write/shards/[shard]/lag_seq", "clickatron_api_shard_lag_seq"},
    {"/write/shards/[shard]/rewinds", "clickatron_api_shard_rewinds_total"},
    {"/write/shards/[shard]/requests", "clickatron_api_shard_requests_total"},
    {"/write/shards/[shard]/failures", "clickatron_api_shard_send_failures_total"},
    {"/write/shards/[shard]/applied", "clickatron_api_shard_applied_batches_total"},
    {"/write/shards/[shard]/duplicates", "clickatron_api_shard_duplicate_batches_total"},
    {"/write/shards/[shard]/replayed", "clickatron_api_shard_replayed_batches_total"},
    {"/write/shards/[shard]/late_lines", "clickatron_api_shard_late_lines_total"},
    {"/write/shards/[shard]/durable_confirmed_seq", "clickatron_api_shard_durable_confirmed_seq"},
    {"/write/shards/[shard]/lost_store_dropped_lines", "clickatron_api_shard_lost_store_dropped_lines_total"},
    {"/write/shards/[shard]/store_losses", "clickatron_api_shard_store_losses_total"},
    {"/write/shards/[shard]/releases", "clickatron_api_shard_releases_total"},
    {"/write/shards/[shard]/held_polls", "clickatron_api_shard_held_polls_total"},
    {"/write/shards/[shard]/watermark_ahead", "clickatron_api_shard_watermark_ahead"},
    {"/write/shards/[shard]/held/applied", "clickatron_api_shard_held_applied_seq"},
    {"/write/shards/[shard]/held/shard_watermark", "clickatron_api_shard_held_watermark_seq"},
    {"/write/shards/[shard]/held/highest_written", "clickatron_api_shard_held_highest_written_seq"},
    {"/write/shards/[shard]/held/since_unix", "clickatron_api_shard_held_since_seconds"},
    {"/read/archive_requests", "clickatron_api_read_archive_requests_total"},
    {"/read/archive_failovers", "clickatron_api_read_archive_failovers_total"},
    {"/read/archive_reroutes", "clickatron_api_read_archive_reroutes_total"},
    {"/read/realtime_requests", "clickatron_api_read_realtime_requests_total"},
    {"/read/realtime_retries", "clickatron_api_read_realtime_retries_total"},
    {"/read/archive_coalesced_requests", "clickatron_api_read_archive_coalesced_requests_total"},
    {"/read/archive_coalesced_keys", "clickatron_api_read_archive_coalesced_keys_total"},
    {"/read/realtime_coalesced_requests", "clickatron_api_read_realtime_coalesced_requests_total"},
    {"/read/realtime_coalesced_prefixes", "clickatron_api_read_realtime_coalesced_prefixes_total"},
    {"/read/unavailable", "clickatron_api_read_unavailable_total"},
    {"/read/generation_retries", "clickatron_api_read_generation_retries_total"},
    {"/read/deletion_retries", "clickatron_api_read_deletion_retries_total"},
    {"/read/lookup_cache_hits", "clickatron_api_read_lookup_cache_hits_total"},
    {"/read/lookups_fetched", "clickatron_api_read_lookups_fetched_total"},
    {"/read/lookups_missing", "clickatron_api_read_lookups_missing_total"},
    {"/read/day_subtotals_read", "clickatron_api_read_day_subtotals_read_total"},
    {"/read/spans_read", "clickatron_api_read_spans_read_total"},
    {"/read/early_span_reads", "clickatron_api_read_early_span_reads_total"},
    {"/read/day_uniques_read", "clickatron_api_read_day_uniques_read_total"},
    {"/read/archive_cache_hits", "clickatron_api_read_archive_cache_hits_total"},
    {"/read/archive_cache_misses", "clickatron_api_read_archive_cache_misses_total"},
    {"/read/archive_cache_evictions", "clickatron_api_read_archive_cache_evictions_total"},
    {"/read/archive_cache_probes", "clickatron_api_read_archive_cache_probes_total"},
    {"/read/archive_cache_decoded_hits", "clickatron_api_read_archive_cache_decoded_hits_total"},
    {"/read/handover_rereads", "clickatron_api_read_handover_rereads_total"},
    {"/read_cache/capacity_bytes", "clickatron_api_read_cache_capacity_bytes"},
    {"/read_cache/kinds/{kind}/bytes", "clickatron_api_read_cache_bytes"},
    {"/read_cache/kinds/{kind}/entries", "clickatron_api_read_cache_entries"},
    {"/read_cache/kinds/{kind}/inserts", "clickatron_api_read_cache_inserts_total"},
    {"/read_cache/kinds/{kind}/evictions", "clickatron_api_read_cache_evictions_total"},
    {"/read_cache/kinds/{kind}/not_kept", "clickatron_api_read_cache_not_kept_total"},
    {"/read/realtime_skip_rereads", "clickatron_api_read_realtime_skip_rereads_total"},
    {"/read/realtime_united_reads", "clickatron_api_read_realtime_united_reads_total"},
};

const std::vector<Figure> kRealtimeFigures = {
    {"/realtime/batches_applied", "clickatron_realtime_batches_applied_total"},
    {"/realtime/increments_applied", "clickatron_realtime_increments_applied_total"},
    {"/realtime/lookups_applied", "clickatron_realtime_lookups_applied_total"},
    {"/realtime/uniques_applied", "clickatron_realtime_uniques_applied_total"},
    {"/realtime/duplicate_batches", "clickatron_realtime_duplicate_batches_total"},
    {"/realtime/day_not_open_batches", "clickatron_realtime_day_not_open_total"},
    {"/realtime/bad_batches", "clickatron_realtime_bad_batches_total"},
    {"/realtime/rotations", "clickatron_realtime_rotations_total"},
    {"/realtime/days_cleared", "clickatron_realtime_day_stores_cleared_total"},
    {"/realtime/exports_started", "clickatron_realtime_exports_started_total"},
    {"/realtime/exports_completed", "clickatron_realtime_exports_completed_total"},
    {"/realtime/exports_failed", "clickatron_realtime_exports_failed_total"},
    {"/realtime/export_lines", "clickatron_realtime_export_lines_total"},
    {"/realtime/merge_failures", "clickatron_realtime_merge_failures_total"},
    {"/realtime/watermark_mismatches", "clickatron_realtime_watermark_mismatches_total"},
    {"/realtime/unknown_sources", "clickatron_realtime_unknown_sources_total"},
    {"/realtime/watermark_resets", "clickatron_realtime_watermark_resets_total"},
    {"/realtime/recovering", "clickatron_realtime_recovering"},
    {"/realtime/reads_held_back", "clickatron_realtime_reads_held_back_total"},
    {"/realtime/tombstones", "clickatron_realtime_tombstones"},
    {"/realtime/tombstone_refusals", "clickatron_realtime_tombstone_refusals_total"},
    {"/realtime/tombstone_dropped_lines", "clickatron_realtime_tombstone_dropped_lines_total"},
    {"/realtime/tombstone_deleted_records", "clickatron_realtime_tombstone_deleted_records_total"},
    {"/realtime/watermarks/{source}", "clickatron_realtime_watermark_seq", "state=applied"},
    {"/realtime/durable_watermarks/{source}", "clickatron_realtime_watermark_seq", "state=durable"},
    {"/realtime/memory/watermarks/{source}/applied", "clickatron_realtime_watermark_seq", "state=applied"},
    {"/realtime/memory/watermarks/{source}/durable", "clickatron_realtime_watermark_seq", "state=durable"},
    {"/realtime/memory/watermarks/{source}/lag_seqs", "clickatron_realtime_watermark_lag_seqs"},
    {"/realtime/memory/memory_bytes", "clickatron_realtime_memory_bytes"},
    {"/realtime/memory/memory_keys", "clickatron_realtime_memory_keys"},
    {"/realtime/memory/memory_budget_bytes", "clickatron_realtime_memory_budget_bytes"},
    {"/realtime/memory/active_bytes", "clickatron_realtime_memory_active_bytes"},
    {"/realtime/memory/frozen_bytes", "clickatron_realtime_memory_frozen_bytes"},
    {"/realtime/memory/checkpoint_running", "clickatron_realtime_checkpoint_running"},
    {"/realtime/memory/checkpoints_completed", "clickatron_realtime_checkpoints_total"},
    {"/realtime/memory/checkpoints_failed", "clickatron_realtime_checkpoint_failures_total"},
    {"/realtime/memory/checkpoint_records_written", "clickatron_realtime_checkpoint_records_total"},
    {"/realtime/memory/checkpoint_bytes_written", "clickatron_realtime_checkpoint_bytes_total"},
    {"/realtime/memory/checkpoint_last_seconds", "clickatron_realtime_checkpoint_last_seconds"},
    {"/realtime/memory/checkpoint_max_seconds", "clickatron_realtime_checkpoint_max_seconds"},
    {"/realtime/memory/checkpoint_avg_seconds", "clickatron_realtime_checkpoint_avg_seconds"},
    {"/realtime/memory/refused_batches", "clickatron_realtime_memory_full_batches_total"},
    {"/realtime/scan_cache/hits", "clickatron_realtime_scan_cache_hits_total"},
    {"/realtime/scan_cache/misses", "clickatron_realtime_scan_cache_misses_total"},
    {"/realtime/scan_cache/empty_day_skips", "clickatron_realtime_scan_cache_empty_day_skips_total"},
    {"/realtime/scan_cache/entries", "clickatron_realtime_scan_cache_entries"},
    {"/realtime/scan_cache/bytes", "clickatron_realtime_scan_cache_bytes"},
    {"/realtime/scan_cache/budget_bytes", "clickatron_realtime_scan_cache_budget_bytes"},
    {"/realtime/memory_parts/budget_bytes", "clickatron_realtime_memory_bound_bytes", "part=all"},
    {"/realtime/memory_parts/table_bound_bytes", "clickatron_realtime_memory_bound_bytes", "part=table"},
    {"/realtime/memory_parts/block_cache_bound_bytes", "clickatron_realtime_memory_bound_bytes", "part=block_cache"},
    {"/realtime/memory_parts/write_buffer_bound_bytes", "clickatron_realtime_memory_bound_bytes", "part=write_buffers"},
    {"/realtime/memory_parts/scan_cache_bound_bytes", "clickatron_realtime_memory_bound_bytes", "part=scan_cache"},
    {"/realtime/memory_parts/table_bytes", "clickatron_realtime_memory_part_bytes", "part=table"},
    {"/realtime/memory_parts/block_cache_bytes", "clickatron_realtime_memory_part_bytes", "part=block_cache"},
    {"/realtime/memory_parts/block_cache_pinned_bytes", "clickatron_realtime_memory_part_bytes",
     "part=block_cache_pinned"},
    {"/realtime/memory_parts/write_buffer_bytes", "clickatron_realtime_memory_part_bytes", "part=write_buffers"},
    {"/realtime/memory_parts/scan_cache_bytes", "clickatron_realtime_memory_part_bytes", "part=scan_cache"},

    {"/realtime/stores/[date]/records_estimate", "clickatron_realtime_store_records_estimate"},
    {"/realtime/stores/[date]/records_in_memory", "clickatron_realtime_store_memory_records"},
    {"/realtime/stores/[date]/open", "clickatron_realtime_store_open"},
    {"/realtime/stores/[date]/memtable_bytes", "clickatron_realtime_store_memtable_bytes"},
    {"/realtime/stores/[date]/sst_bytes", "clickatron_realtime_store_sst_bytes"},
    {"/realtime/stores/[date]/pending_compaction_bytes", "clickatron_realtime_store_pending_compaction_bytes"},
    {"/realtime/rocksdb/actual_delayed_write_rate", "clickatron_realtime_delayed_write_rate"},
    {"/realtime/rocksdb/is_write_stopped", "clickatron_realtime_write_stopped"},
    {"/realtime/rocksdb/estimate_pending_compaction_bytes", "clickatron_realtime_pending_compaction_bytes"},
    {"/realtime/rocksdb/num_running_compactions", "clickatron_realtime_rocksdb_running_compactions"},
    {"/realtime/rocksdb/num_running_flushes", "clickatron_realtime_rocksdb_running_flushes"},
    {"/realtime/rocksdb/mem_table_flush_pending", "clickatron_realtime_rocksdb_memtable_flush_pending"},
    {"/realtime/rocksdb/cur_size_all_mem_tables", "clickatron_realtime_rocksdb_memtable_bytes"},
    {"/realtime/rocksdb/live_sst_files_size", "clickatron_realtime_rocksdb_live_sst_bytes"},
    {"/realtime/rocksdb/background_errors", "clickatron_realtime_rocksdb_background_errors_total"},
};

const std::vector<Figure> kArchiveFigures = {
    {"/archive/requests/{endpoint}", "clickatron_archive_requests_total"},
    {"/archive/hits", "clickatron_archive_hits_total"},
    {"/archive/misses", "clickatron_archive_misses_total"},
    {"/archive/fwmatch_streamed", "clickatron_archive_fwmatch_streamed_total"},
    {"/archive/bytes_served", "clickatron_archive_bytes_served_total"},
    {"/archive/files_served", "clickatron_archive_files_served_total"},
    {"/archive/file_bytes_served", "clickatron_archive_file_bytes_served_total"},
    {"/archive/reloads_ok", "clickatron_archive_reloads_ok_total"},
    {"/archive/reloads_failed", "clickatron_archive_reloads_failed_total"},
    {"/archive/reload_running", "clickatron_archive_reload_running"},
    {"/archive/last_load_ms", "clickatron_archive_last_load_duration_seconds", "", 1e-3},
    {"/archive/file/has_file", "clickatron_archive_file_present"},
    {"/archive/file/bytes", "clickatron_archive_file_bytes"},
    {"/archive/file/records", "clickatron_archive_file_records"},
    {"/archive/file/generation", "clickatron_archive_generation"},
    {"/archive/file/mapped_since_unix", "clickatron_archive_mapped_since_seconds"},
    {"/archive/generations_mapped", "clickatron_archive_generations_mapped"},
    {"/archive/damage/serving_damaged", "clickatron_archive_serving_damaged"},
    {"/archive/damage/damaged_generations", "clickatron_archive_damaged_generations_total"},
    {"/archive/damage/refused_reads", "clickatron_archive_damaged_refused_reads_total"},
    {"/archive/damage/scrub_passes", "clickatron_archive_scrub_passes_total"},
    {"/archive/damage/scrub_bytes", "clickatron_archive_scrub_bytes_total"},
    {"/archive/damage/scrub_mismatches", "clickatron_archive_scrub_mismatches_total"},
    {"/archive/damage/mapping_faults", "clickatron_archive_mapping_faults_total"},
};


struct Sample {
  std::string name;
  std::map<std::string, std::string> labels;
  double value = 0;
};

// The samples of a text-format exposition; "" in *error when it parses.
std::vector<Sample> ParseSamples(const std::string& text, std::string* error) {
  std::vector<Sample> out;
  size_t pos = 0;
  while (pos < text.size()) {
    size_t eol = text.find('\n', pos);
    if (eol == std::string::npos) eol = text.size();
    std::string line = text.substr(pos, eol - pos);
    pos = eol + 1;
    if (line.empty() || line[0] == '#') continue;
    Sample s;
    size_t i = line.find_first_of("{ ");
    if (i == std::string::npos) {
      *error = "no value: " + line;
      return out;
    }
    s.name = line.substr(0, i);
    if (line[i] == '{') {
      ++i;
      while (i < line.size() && line[i] != '}') {
        size_t eq = line.find("=\"", i);
        if (eq == std::string::npos) {
          *error = "bad labels: " + line;
          return out;
        }
        std::string label = line.substr(i, eq - i);
        std::string value;
        size_t j = eq + 2;
        for (; j < line.size() && line[j] != '"'; ++j) {
          if (line[j] == '\\' && j + 1 < line.size()) {
            ++j;
            value += line[j] == 'n' ? '\n' : line[j];
          } else {
            value += line[j];
          }
        }
        s.labels[label] = value;
        i = j + 1;
        if (i < line.size() && line[i] == ',') ++i;
      }
      ++i;  // '}'
    }
    std::string value = line.substr(std::min(i, line.size()));
    while (!value.empty() && value[0] == ' ') value.erase(0, 1);
    char* end = nullptr;
    s.value = std::strtod(value.c_str(), &end);
    if (value.empty() || (*end != '\0' && *end != ' ')) {
      *error = "bad value: " + line;
      return out;
    }
    out.push_back(std::move(s));
  }
  return out;
}

std::vector<std::string> SplitPath(const std::string& path) {
  std::vector<std::string> out;
  size_t pos = 0;
  while (pos < path.size()) {
    size_t next = path.find('/', pos);
    if (next == std::string::npos) next = path.size();
    if (next > pos) out.push_back(path.substr(pos, next - pos));
    pos = next + 1;
  }
  return out;
}

// One numeric leaf of /stats: its path, the nodes along it (nodes[i] holds
// segment i), its value.
struct Leaf {
  std::vector<std::string> segments;
  std::vector<const nlohmann::json*> nodes;
  double value = 0;
  std::string Path() const {
    std::string p;
    for (const auto& s : segments) p += "/" + s;
    return p;
  }
};

void CollectLeaves(const nlohmann::json& node, Leaf& at, std::vector<Leaf>* out) {
  if (node.is_number() || node.is_boolean()) {
    Leaf leaf = at;
    leaf.value = node.is_boolean() ? (node.get<bool>() ? 1 : 0) : node.get<double>();
    out->push_back(std::move(leaf));
    return;
  }
  if (node.is_object()) {
    for (const auto& [key, child] : node.items()) {
      at.segments.push_back(key);
      at.nodes.push_back(&node);
      CollectLeaves(child, at, out);
      at.segments.pop_back();
      at.nodes.pop_back();
    }
  } else if (node.is_array()) {
    for (size_t i = 0; i < node.size(); ++i) {
      at.segments.push_back(std::to_string(i));
      at.nodes.push_back(&node);
      CollectLeaves(node[i], at, out);
      at.segments.pop_back();
      at.nodes.pop_back();
    }
  }
}

// The labels the figure's sample must carry when `leaf` matches its path.
std::optional<std::map<std::string, std::string>> Match(const Figure& f, const Leaf& leaf) {
  std::vector<std::string> pattern = SplitPath(f.path);
  if (pattern.size() != leaf.segments.size()) return std::nullopt;
  std::map<std::string, std::string> labels;
  for (size_t i = 0; i < pattern.size(); ++i) {
    const std::string& p = pattern[i];
    if (p.front() == '{' && p.back() == '}') {
      if (!leaf.nodes[i]->is_object()) return std::nullopt;
      labels[p.substr(1, p.size() - 2)] = leaf.segments[i];
    } else if (p.front() == '[' && p.back() == ']') {
      if (!leaf.nodes[i]->is_array()) return std::nullopt;
      const nlohmann::json& element = (*leaf.nodes[i])[std::stoul(leaf.segments[i])];
      const std::string name = p.substr(1, p.size() - 2);
      if (!element.contains(name)) return std::nullopt;
      const nlohmann::json& v = element[name];
      labels[name] = v.is_string() ? v.get<std::string>() : v.dump();
    } else if (p != leaf.segments[i]) {
      return std::nullopt;
    }
  }
  for (const std::string& kv : SplitPath(std::string(f.labels))) {  // one constant label at most here
    size_t eq = kv.find('=');
    labels[kv.substr(0, eq)] = kv.substr(eq + 1);
  }
  return labels;
}

bool Excluded(const std::string& path) {
  for (const std::string& e : kExcluded) {
    if (path == e || path.rfind(e + "/", 0) == 0) return true;
  }
  return false;
}

nlohmann::json StatsData(const HostPort& listen) {
  auto r = HttpGet(listen, "/stats");
  if (r.status_code != 200) return nullptr;
  auto j = nlohmann::json::parse(r.body, nullptr, false);
  if (j.is_discarded() || !j.contains("data")) return nullptr;
  nlohmann::json data = j["data"];
  for (const std::string& e : kExcluded) {  // what moves by itself
    const nlohmann::json::json_pointer at(e);
    if (data.contains(at)) data[at.parent_pointer()].erase(at.back());
  }
  return data;
}

class MetricsTest : public StartedClusterTest {
 protected:
  MetricsTest() : StartedClusterTest(kD1) {}

  void SetUp() override {
    StartedClusterTest::SetUp();
    if (HasFatalFailure()) return;
    // Traffic of every kind: increments for two days, a rotation, the
    // nightly rebuild of the first (exports, an archive generation and its
    // reload), then queries over both.
    IncrementThroughApi("metrics", 24, kKeys);
    std::string error;
    ASSERT_TRUE(cluster_.RotateAll(kD2, &error)) << error;
    day_ = kD2;
    IncrementThroughApi("metrics", 12, kKeys);
    std::string output;
    ASSERT_EQ(cluster_.Rebuild(kD1, &output), 0) << output;
    for (int k = 0; k < kKeys; ++k) {
      EXPECT_GE(cluster_.DayTotal(fmt::format("metrics{}", k), kD1), 0);
      EXPECT_GE(cluster_.DayTotal(fmt::format("metrics{}", k), kD2), 0);
    }
  }

  static constexpr int kKeys = 8;  // batches for both realtime shards

  // Both checks on one daemon.
  void Check(const std::string& member, const std::string& daemon, const std::vector<Figure>& figures) {
    SCOPED_TRACE(member);
    const HostPort listen = cluster_.member(member).listen;
    // Quiesce: /stats before and after /metrics must be equal (a checkpoint
    // or a watermark poll may still be moving figures just after traffic).
    nlohmann::json stats;
    std::string text;
    bool still = false;
    for (int attempt = 0; attempt < 100 && !still; ++attempt) {
      if (attempt > 0) std::this_thread::sleep_for(std::chrono::milliseconds(100));
      stats = StatsData(listen);
      auto r = HttpGet(listen, "/metrics");
      ASSERT_EQ(r.status_code, 200) << r.body;
      EXPECT_EQ(r.Header("Content-Type"), "text/plain; version=0.0.4");
      text = r.body;
      still = !stats.is_null() && stats == StatsData(listen);
    }
    ASSERT_TRUE(still) << "/stats kept changing without traffic: " << stats.dump();

    // 1. promtool: exit 0 and nothing printed.
    std::string lint;
    int rc = RunCommand({kPromtool, "check", "metrics"}, &lint, text);
    EXPECT_EQ(rc, 0) << "promtool check metrics:\n" << lint;
    EXPECT_EQ(lint, "") << "promtool check metrics:\n" << lint;

    std::string error;
    std::vector<Sample> samples = ParseSamples(text, &error);
    ASSERT_EQ(error, "") << text;
    // Every daemon figure is labelled with its daemon and member.
    for (const Sample& s : samples) {
      EXPECT_EQ(s.labels.count("daemon") ? s.labels.at("daemon") : "", daemon) << s.name;
      EXPECT_EQ(s.labels.count("member") ? s.labels.at("member") : "", member) << s.name;
    }

    // 2. Parity: every figure of /stats is a sample of /metrics.
    std::vector<Leaf> leaves;
    Leaf root;
    CollectLeaves(stats, root, &leaves);
    ASSERT_GT(leaves.size(), 10u) << stats.dump();
    for (const Leaf& leaf : leaves) {
      const std::string path = leaf.Path();
      if (Excluded(path)) continue;
      const Figure* figure = nullptr;
      std::map<std::string, std::string> labels;
      for (const Figure& f : figures) {
        if (auto l = Match(f, leaf)) {
          figure = &f;
          labels = std::move(*l);
          break;
        }
      }
      if (figure == nullptr) {
        ADD_FAILURE() << member << " /stats has " << path << " = " << leaf.value
                      << " but no metric is known for it: add it to /metrics (and to this test's table)";
        continue;
      }
      if (*figure->metric == '\0') {
        bool labelled = false;
        for (const Sample& s : samples) {
          bool all = true;
          for (const auto& [k, v] : labels) all = all && s.labels.count(k) && s.labels.at(k) == v;
          labelled = labelled || all;
        }
        EXPECT_TRUE(labelled) << member << " /stats " << path << ": no sample labelled "
                              << ::testing::PrintToString(labels);
        continue;
      }
      const double want = leaf.value * figure->scale;
      bool found = false;
      std::vector<std::string> seen;
      for (const Sample& s : samples) {
        if (s.name != figure->metric) continue;
        bool labelled = true;
        for (const auto& [k, v] : labels) labelled = labelled && s.labels.count(k) && s.labels.at(k) == v;
        if (!labelled) continue;
        seen.push_back(fmt::format("{}", s.value));
        if (std::fabs(s.value - want) <= 1e-9 * std::max(1.0, std::fabs(want))) found = true;
      }
      EXPECT_TRUE(found) << member << " /stats " << path << " = " << leaf.value << ": no " << figure->metric
                         << " sample labelled " << ::testing::PrintToString(labels) << " equals " << want
                         << " (samples: " << ::testing::PrintToString(seen) << ")";
    }
  }
};

TEST_F(MetricsTest, EveryDaemonPassesPromtoolAndCarriesItsStats) {
  ASSERT_EQ(::access(kPromtool, X_OK), 0)
      << kPromtool << " is missing: install the Debian package `prometheus` (scripts/deps does)";
  // The traffic reached what is compared: a served archive generation and
  // finished exports, not only zeros.
  auto archive = StatsData(cluster_.member("archive-0").listen);
  ASSERT_EQ(archive["archive"]["file"]["has_file"], true) << archive.dump();
  for (const char* shard : {"realtime-0", "realtime-1"}) {
    auto realtime = StatsData(cluster_.member(shard).listen);
    EXPECT_GT(realtime["realtime"]["exports_completed"].get<uint64_t>(), 0u) << shard << realtime.dump();
    EXPECT_GT(realtime["realtime"]["increments_applied"].get<uint64_t>(), 0u) << shard << realtime.dump();
  }
  Check("api-0", "clickatron-api", kApiFigures);
  Check("realtime-0", "clickatron-realtime", kRealtimeFigures);
  Check("realtime-1", "clickatron-realtime", kRealtimeFigures);
  Check("archive-0", "clickatron-archive", kArchiveFigures);
}

}  // namespace
}  // namespace clickatron::integration::metrics_test
