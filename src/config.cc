// Cluster file loading. toml++ throws on syntax errors; that is caught here,
// at load time, and turned into a Status naming the line (exceptions never
// reach a daemon's event loop).
#include "clickatron/config.h"
#include "clickatron/ymdh.h"

#include <fmt/format.h>

#include <algorithm>
#include <cctype>
#include <cerrno>
#include <charconv>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <set>
#include <tuple>
#include <sstream>
#include <thread>
#include <toml++/toml.h>

#include "clickatron/cluster_auth.h"
#include "clickatron/key_codec.h"
#include "clickatron/timezone.h"
#include "clickatron/tls.h"

namespace clickatron {
namespace {

// The least a realtime shard's in-memory table may have: below it a
// checkpoint would start every few batches.
constexpr int kLeastTableBudgetMb = 16;

Status FieldError(const toml::node& node, std::string_view table, std::string_view field,
                  std::string_view what) {
  return Status::InvalidArgument(fmt::format("line {}: [{}] {}: {}", node.source().begin.line,
                                             table, field, what),
                                 "BAD_CONFIG");
}

// Reads the optional field `name` of `table` into *out, checking type and bounds.
class TableReader {
 public:
  TableReader(const toml::table* table, std::string table_name)
      : table_(table), name_(std::move(table_name)) {}

  Status Int(std::string_view field, int64_t lo, int64_t hi, auto* out) {
    if (!table_) return Status::Ok();
    const toml::node* node = table_->get(field);
    if (!node) return Status::Ok();
    auto v = node->value<int64_t>();
    if (!node->is_integer() || !v) return FieldError(*node, name_, field, "expected an integer");
    if (*v < lo || *v > hi) {
      return FieldError(*node, name_, field, fmt::format("{} is outside {}..{}", *v, lo, hi));
    }
    *out = static_cast<std::remove_pointer_t<decltype(out)>>(*v);
    return Status::Ok();
  }
  Status Double(std::string_view field, double lo, double hi, double* out) {
    if (!table_) return Status::Ok();
    const toml::node* node = table_->get(field);
    if (!node) return Status::Ok();
    auto v = node->value<double>();
    if (!v) return FieldError(*node, name_, field, "expected a number");
    // Written so that nan, which compares false with everything, is outside.
    if (!(*v >= lo && *v <= hi)) {
      return FieldError(*node, name_, field, fmt::format("{} is outside {}..{}", *v, lo, hi));
    }
    *out = *v;
    return Status::Ok();
  }
  // A string field that, when written, must not be empty.
  Status NotEmptyIfGiven(std::string_view field) {
    const toml::node* node = table_ ? table_->get(field) : nullptr;
    if (node && node->value<std::string>() && node->value<std::string>()->empty()) {
      return FieldError(*node, name_, field, "is empty: leave it out to have none");
    }
    return Status::Ok();
  }
  // A secret written inline: at least kMinSecretBytes, as in a secret file.
  Status SecretIfGiven(std::string_view field) {
    const toml::node* node = table_ ? table_->get(field) : nullptr;
    const std::optional<std::string> v = node ? node->value<std::string>() : std::nullopt;
    if (v && v->size() < kMinSecretBytes) {
      return FieldError(*node, name_, field,
                        fmt::format("{} bytes; a token needs at least {} (leave it out to have none)", v->size(),
                                    kMinSecretBytes));
    }
    return Status::Ok();
  }
  Status Bool(std::string_view field, bool* out) {
    if (!table_) return Status::Ok();
    const toml::node* node = table_->get(field);
    if (!node) return Status::Ok();
    if (!node->is_boolean()) return FieldError(*node, name_, field, "expected true or false");
    *out = *node->value<bool>();
    return Status::Ok();
  }
  Status String(std::string_view field, std::string* out,
                std::initializer_list<std::string_view> allowed = {}) {
    if (!table_) return Status::Ok();
    const toml::node* node = table_->get(field);
    if (!node) return Status::Ok();
    if (!node->is_string()) return FieldError(*node, name_, field, "expected a string");
    std::string v = *node->value<std::string>();
    if (allowed.size() > 0) {
      bool found = false;
      std::string list;
      for (auto a : allowed) {
        found |= (a == v);
        list += (list.empty() ? "" : ", ") + std::string(a);
      }
      if (!found) return FieldError(*node, name_, field, fmt::format("\"{}\" is not one of {}", v, list));
    }
    *out = std::move(v);
    return Status::Ok();
  }
  Status StringList(std::string_view field, std::vector<std::string>* out) {
    if (!table_) return Status::Ok();
    const toml::node* node = table_->get(field);
    if (!node) return Status::Ok();
    const toml::array* arr = node->as_array();
    if (!arr) return FieldError(*node, name_, field, "expected an array of strings");
    out->clear();
    for (const auto& item : *arr) {
      if (!item.is_string()) return FieldError(item, name_, field, "expected an array of strings");
      out->push_back(*item.value<std::string>());
    }
    return Status::Ok();
  }
  // Unknown keys are errors: a misspelt option silently ignored is worse.
  // A field an older release had, now `instead`: refused with what to do.
  Status Replaced(std::string_view field, std::string_view instead) {
    if (!table_) return Status::Ok();
    const toml::node* node = table_->get(field);
    if (!node) return Status::Ok();
    return FieldError(*node, name_, field, instead);
  }

  Status NoUnknownKeys(std::initializer_list<std::string_view> known) {
    if (!table_) return Status::Ok();
    for (const auto& [key, node] : *table_) {
      bool ok = false;
      for (auto k : known) ok |= (k == key.str());
      if (!ok) return FieldError(node, name_, key.str(), "unknown field");
    }
    return Status::Ok();
  }

 private:
  const toml::table* table_;
  std::string name_;
};

const toml::table* SubTable(const toml::table& root, std::string_view name) {
  const toml::node* n = root.get(name);
  return n ? n->as_table() : nullptr;
}

Status ParseSections(const toml::table& root, ClusterConfig* c) {
  // [[cluster]] is an array of tables, which SubTable would pass over: its
  // settings (the secret and the admin token among them) left at defaults
  // without a word.
  for (const std::string_view name : {"cluster", "http", "api", "realtime", "archive", "rebuild"}) {
    if (const toml::node* n = root.get(name); n != nullptr && !n->is_table()) {
      return FieldError(*n, std::string(name), "", fmt::format("write [{}], a table (not [[{}]] or a value)", name, name));
    }
  }
  {
    TableReader r(SubTable(root, "cluster"), "cluster");
    CLICKATRON_RETURN_IF_ERROR(r.NoUnknownKeys({"realtime_shards", "realtime_shards_since", "previous_realtime_shards",
                                                "archive_shards", "clock", "admin_token", "admin_token_file",
                                                "cluster_secret_file", "tls_cert_file", "tls_key_file", "tls_ca_file",
                                                "log_level"}));
    CLICKATRON_RETURN_IF_ERROR(r.Int("realtime_shards", 1, 4096, &c->realtime_shards));
    CLICKATRON_RETURN_IF_ERROR(r.String("realtime_shards_since", &c->realtime_shards_since));
    CLICKATRON_RETURN_IF_ERROR(r.Int("previous_realtime_shards", 1, 4096, &c->previous_realtime_shards));
    if (c->realtime_shards_since.empty() != (c->previous_realtime_shards == 0)) {
      return Status::InvalidArgument(
          "[cluster] realtime_shards_since and previous_realtime_shards go together: the day the new "
          "realtime_shards takes effect, and the count of the days before it",
          "BAD_CONFIG");
    }
    if (!c->realtime_shards_since.empty()) {
      auto since = ParseDate(c->realtime_shards_since);
      if (!since.ok()) {
        return Status::InvalidArgument(
            fmt::format("[cluster] realtime_shards_since: {}", since.status().message()), "BAD_CONFIG");
      }
      c->realtime_shards_since_day = *since;
      // Its first hour must have an hour code (1970-2127): routing compares codes.
      if (!YmdhFromUnix(*since * kSecondsPerDay).ok()) {
        return Status::InvalidArgument("[cluster] realtime_shards_since: outside the years hour codes cover (1970-2127)",
                                       "BAD_CONFIG");
      }
      if (c->previous_realtime_shards >= c->realtime_shards) {
        return Status::InvalidArgument(
            fmt::format("[cluster] previous_realtime_shards = {} must be below realtime_shards = {}: the count only "
                        "grows (docs/operations.md, \"Adding a realtime shard\")",
                        c->previous_realtime_shards, c->realtime_shards),
            "BAD_CONFIG");
      }
    }
    CLICKATRON_RETURN_IF_ERROR(r.Int("archive_shards", 1, 4096, &c->archive_shards));
    CLICKATRON_RETURN_IF_ERROR(r.String("clock", &c->clock, {"system", "manual"}));
    CLICKATRON_RETURN_IF_ERROR(r.String("admin_token", &c->admin_token));
    CLICKATRON_RETURN_IF_ERROR(r.String("admin_token_file", &c->admin_token_file));
    CLICKATRON_RETURN_IF_ERROR(r.String("cluster_secret_file", &c->cluster_secret_file));
    CLICKATRON_RETURN_IF_ERROR(r.String("tls_cert_file", &c->tls_cert_file));
    CLICKATRON_RETURN_IF_ERROR(r.String("tls_key_file", &c->tls_key_file));
    CLICKATRON_RETURN_IF_ERROR(r.String("tls_ca_file", &c->tls_ca_file));
    const int tls_fields = !c->tls_cert_file.empty() + !c->tls_key_file.empty() + !c->tls_ca_file.empty();
    if (tls_fields != 0 && tls_fields != 3) {
      return Status::InvalidArgument("[cluster] tls_cert_file, tls_key_file and tls_ca_file: set all three or none",
                                     "BAD_CONFIG");
    }
    if (!c->admin_token.empty() && !c->admin_token_file.empty()) {
      return Status::InvalidArgument("[cluster] admin_token and admin_token_file: set one, not both", "BAD_CONFIG");
    }
    // Written but empty would leave the routes open without a word; an inline
    // token is held to the length its file would be.
    for (const char* field : {"admin_token_file", "cluster_secret_file"}) {
      CLICKATRON_RETURN_IF_ERROR(r.NotEmptyIfGiven(field));
    }
    CLICKATRON_RETURN_IF_ERROR(r.SecretIfGiven("admin_token"));
    CLICKATRON_RETURN_IF_ERROR(r.String("log_level", &c->log_level, {"trace", "debug", "info", "warn", "error"}));
  }
  {
    TableReader r(SubTable(root, "http"), "http");
    HttpLimits& h = c->http;
    CLICKATRON_RETURN_IF_ERROR(r.NoUnknownKeys({"max_body_bytes", "max_header_bytes", "timeout_seconds", "request_deadline_seconds",
                                                "max_query_args", "max_connections", "max_request_bytes_in_flight",
                                                "max_answer_bytes_queued"}));
    CLICKATRON_RETURN_IF_ERROR(r.Int("max_body_bytes", 1024, int64_t{1} << 32, &h.max_body_bytes));
    CLICKATRON_RETURN_IF_ERROR(r.Int("max_header_bytes", 1024, 1 << 20, &h.max_header_bytes));
    CLICKATRON_RETURN_IF_ERROR(r.Int("timeout_seconds", 1, 3600, &h.timeout_seconds));
    CLICKATRON_RETURN_IF_ERROR(r.Int("request_deadline_seconds", 1, 3600, &h.request_deadline_seconds));
    CLICKATRON_RETURN_IF_ERROR(r.Int("max_query_args", 1, 1 << 20, &h.max_query_args));
    CLICKATRON_RETURN_IF_ERROR(r.Int("max_connections", 16, 1 << 24, &h.max_connections));
    CLICKATRON_RETURN_IF_ERROR(r.Int("max_request_bytes_in_flight", 1 << 20, int64_t{1} << 40, &h.max_request_bytes_in_flight));
    CLICKATRON_RETURN_IF_ERROR(r.Int("max_answer_bytes_queued", 1 << 20, int64_t{1} << 40, &h.max_answer_bytes_queued));
    if (h.max_request_bytes_in_flight < h.max_body_bytes) {
      return Status::InvalidArgument("[http] max_request_bytes_in_flight must be at least max_body_bytes (one whole body)",
                                     "BAD_CONFIG");
    }
  }
  {
    TableReader r(SubTable(root, "api"), "api");
    ApiConfig& a = c->api;
    CLICKATRON_RETURN_IF_ERROR(r.Replaced(
        "archive_cache_mb", "replaced by read_cache_mb, one bound for everything the node keeps between queries "
                            "(archive answers among them; docs/scaling.md)"));
    CLICKATRON_RETURN_IF_ERROR(r.Replaced(
        "archive_cache_confirm_ms", "no longer used: kept archive answers need no timing (realtime's answers say "
                                    "when a newer generation is deployed); remove it"));
    CLICKATRON_RETURN_IF_ERROR(r.NoUnknownKeys({"flush_window_ms", "oplog_sync", "oplog_sync_interval_ms",
        "oplog_segment_bytes", "oplog_retention_hours", "max_queued_increments", "queue_wait_increments",
        "queue_wait_ms", "future_margin_hours",
        "request_timeout_ms", "retry_backoff_min_ms", "retry_backoff_max_ms", "max_query_hours", "client_token",
        "read_cache_mb", "read_loops", "realtime_unite_days",
        "idempotency_window_hours", "idempotency_max_keys", "fault_injection"}));
    CLICKATRON_RETURN_IF_ERROR(r.Int("flush_window_ms", 0, 10000, &a.flush_window_ms));
    CLICKATRON_RETURN_IF_ERROR(r.String("oplog_sync", &a.oplog_sync, {"always", "interval", "none"}));
    CLICKATRON_RETURN_IF_ERROR(r.Int("oplog_sync_interval_ms", 1, 60000, &a.oplog_sync_interval_ms));
    CLICKATRON_RETURN_IF_ERROR(r.Int("oplog_segment_bytes", 4096, int64_t{1} << 40, &a.oplog_segment_bytes));
    CLICKATRON_RETURN_IF_ERROR(r.Int("oplog_retention_hours", 0, 24 * 365, &a.oplog_retention_hours));
    CLICKATRON_RETURN_IF_ERROR(r.Int("max_queued_increments", 1, int64_t{1} << 40, &a.max_queued_increments));
    CLICKATRON_RETURN_IF_ERROR(r.Int("queue_wait_increments", 0, int64_t{1} << 40, &a.queue_wait_increments));
    CLICKATRON_RETURN_IF_ERROR(r.Int("queue_wait_ms", 1, 600000, &a.queue_wait_ms));
    // Past 24 hours an increment could be for a day beyond the ring's
    // Tomorrow: taken with a 200, it would go to late data and read as 0
    // until a rebuild folded it.
    CLICKATRON_RETURN_IF_ERROR(r.Int("future_margin_hours", 0, 24, &a.future_margin_hours));
    CLICKATRON_RETURN_IF_ERROR(r.Int("request_timeout_ms", 1, 600000, &a.request_timeout_ms));
    CLICKATRON_RETURN_IF_ERROR(r.Int("retry_backoff_min_ms", 1, 600000, &a.retry_backoff_min_ms));
    CLICKATRON_RETURN_IF_ERROR(r.Int("retry_backoff_max_ms", 1, 600000, &a.retry_backoff_max_ms));
    if (a.retry_backoff_min_ms > a.retry_backoff_max_ms) {
      return Status::InvalidArgument(fmt::format("[api] retry_backoff_min_ms {} is over retry_backoff_max_ms {}",
                                                 a.retry_backoff_min_ms, a.retry_backoff_max_ms),
                                     "BAD_CONFIG");
    }
    CLICKATRON_RETURN_IF_ERROR(r.Int("max_query_hours", 1, 24 * 366 * 100, &a.max_query_hours));
    CLICKATRON_RETURN_IF_ERROR(r.String("client_token", &a.client_token));
    CLICKATRON_RETURN_IF_ERROR(r.SecretIfGiven("client_token"));
    CLICKATRON_RETURN_IF_ERROR(r.Int("read_cache_mb", 0, 1 << 20, &a.read_cache_mb));
    CLICKATRON_RETURN_IF_ERROR(r.Int("read_loops", 0, 64, &a.read_loops));
    CLICKATRON_RETURN_IF_ERROR(r.Bool("realtime_unite_days", &a.realtime_unite_days));
    CLICKATRON_RETURN_IF_ERROR(r.Int("idempotency_window_hours", 1, 24 * 30, &a.idempotency_window_hours));
    CLICKATRON_RETURN_IF_ERROR(r.Int("idempotency_max_keys", 1, int64_t{1} << 32, &a.idempotency_max_keys));
    CLICKATRON_RETURN_IF_ERROR(r.Bool("fault_injection", &a.fault_injection));
  }
  {
    TableReader r(SubTable(root, "realtime"), "realtime");
    RealtimeConfig& rt = c->realtime;
    CLICKATRON_RETURN_IF_ERROR(r.NoUnknownKeys({"write_buffer_mb", "block_cache_mb", "checkpoint_interval_ms",
                                                "memory_budget_mb", "scan_cache_mb", "fault_injection"}));
    CLICKATRON_RETURN_IF_ERROR(r.Int("write_buffer_mb", 1, 65536, &rt.write_buffer_mb));
    CLICKATRON_RETURN_IF_ERROR(r.Int("block_cache_mb", 1, 1 << 20, &rt.block_cache_mb));
    CLICKATRON_RETURN_IF_ERROR(r.Int("checkpoint_interval_ms", 10, 3600000, &rt.checkpoint_interval_ms));
    CLICKATRON_RETURN_IF_ERROR(r.Int("memory_budget_mb", 1, 1 << 20, &rt.memory_budget_mb));
    CLICKATRON_RETURN_IF_ERROR(r.Int("scan_cache_mb", 0, 1 << 20, &rt.scan_cache_mb));
    CLICKATRON_RETURN_IF_ERROR(r.Bool("fault_injection", &rt.fault_injection));
    if (rt.TableBudgetMb() < kLeastTableBudgetMb) {
      return Status::InvalidArgument(
          fmt::format("[realtime] memory_budget_mb = {} bounds the whole shard: it must be at least block_cache_mb ({}) + "
                      "scan_cache_mb ({}) + {} for the in-memory table",
                      rt.memory_budget_mb, rt.block_cache_mb, rt.scan_cache_mb, kLeastTableBudgetMb),
          "BAD_CONFIG");
    }
    if (rt.write_buffer_mb * 2 > rt.block_cache_mb) {
      return Status::InvalidArgument(
          fmt::format("[realtime] write_buffer_mb = {} must be at most half of block_cache_mb ({}): RocksDB's write "
                      "buffers are charged to the block cache",
                      rt.write_buffer_mb, rt.block_cache_mb),
          "BAD_CONFIG");
    }
  }
  {
    TableReader r(SubTable(root, "archive"), "archive");
    ArchiveConfig& ar = c->archive;
    CLICKATRON_RETURN_IF_ERROR(r.NoUnknownKeys({"mlock", "warmup", "verify_sorted_on_load", "madvise", "field_separator",
                                                "scrub_interval_seconds", "scrub_mb_per_second"}));
    CLICKATRON_RETURN_IF_ERROR(r.Int("scrub_interval_seconds", 0, 365 * 86400, &ar.scrub_interval_seconds));
    CLICKATRON_RETURN_IF_ERROR(r.Int("scrub_mb_per_second", 0, 1 << 20, &ar.scrub_mb_per_second));
    CLICKATRON_RETURN_IF_ERROR(r.Bool("mlock", &ar.mlock));
    CLICKATRON_RETURN_IF_ERROR(r.Bool("warmup", &ar.warmup));
    CLICKATRON_RETURN_IF_ERROR(r.Bool("verify_sorted_on_load", &ar.verify_sorted_on_load));
    CLICKATRON_RETURN_IF_ERROR(r.String("madvise", &ar.madvise, {"random", "sequential", "normal", "willneed"}));
    CLICKATRON_RETURN_IF_ERROR(r.String("field_separator", &ar.field_separator));
    if (ar.field_separator.size() != 1 || ar.field_separator[0] == '\n') {
      return Status::InvalidArgument("[archive] field_separator: must be exactly one byte, not a newline", "BAD_CONFIG");
    }
  }
  {
    TableReader r(SubTable(root, "rebuild"), "rebuild");
    RebuildConfig& rb = c->rebuild;
    if (const toml::table* t = SubTable(root, "rebuild"); t != nullptr && t->get("oplog_dirs") != nullptr) {
      return FieldError(*t->get("oplog_dirs"), "rebuild", "oplog_dirs",
                        "removed: the rebuild fetches late data from every API member over HTTP "
                        "(GET /late/files, GET /late/file), so it reads no API node's data_dir; delete this line");
    }
    CLICKATRON_RETURN_IF_ERROR(r.NoUnknownKeys({"work_dir", "backup_dir", "backup_keep", "memory_mb", "threads", "max_bad_line_ratio", "publish_address",
                                                 "engine", "engine_hosts", "engine_ssh", "engine_command",
                                                 "engine_retries"}));
    CLICKATRON_RETURN_IF_ERROR(r.String("work_dir", &rb.work_dir));
    CLICKATRON_RETURN_IF_ERROR(r.String("backup_dir", &rb.backup_dir));
    CLICKATRON_RETURN_IF_ERROR(r.Int("backup_keep", 0, 1 << 20, &rb.backup_keep));
    CLICKATRON_RETURN_IF_ERROR(r.Int("memory_mb", 1, 1 << 20, &rb.memory_mb));
    CLICKATRON_RETURN_IF_ERROR(r.Int("threads", 1, 256, &rb.threads));
    CLICKATRON_RETURN_IF_ERROR(r.Double("max_bad_line_ratio", 0.0, 1.0, &rb.max_bad_line_ratio));
    std::string publish = rb.publish_address.ToString();
    CLICKATRON_RETURN_IF_ERROR(r.String("publish_address", &publish));
    // Port 0 (any free port) is allowed here, unlike in a member's listen.
    const bool any_port = publish.size() > 2 && publish.compare(publish.size() - 2, 2, ":0") == 0;
    auto publish_address = ParseHostPort(any_port ? publish.substr(0, publish.size() - 1) + "1" : publish);
    if (publish_address.ok() && any_port) publish_address->port = 0;
    if (!publish_address.ok()) {
      return Status::InvalidArgument(fmt::format("[rebuild] publish_address: {}", publish_address.status().message()),
                                     "BAD_CONFIG");
    }
    if (publish_address->host == "0.0.0.0" || publish_address->host == "::" || publish_address->host == "[::]") {
      return Status::InvalidArgument(
          "[rebuild] publish_address: replicas are told this address, so it must name this host (not a wildcard)",
          "BAD_CONFIG");
    }
    rb.publish_address = *publish_address;
    CLICKATRON_RETURN_IF_ERROR(r.String("engine", &rb.engine, {"local", "gnu-parallel"}));
    CLICKATRON_RETURN_IF_ERROR(r.StringList("engine_hosts", &rb.engine_hosts));
    CLICKATRON_RETURN_IF_ERROR(r.String("engine_ssh", &rb.engine_ssh));
    CLICKATRON_RETURN_IF_ERROR(r.String("engine_command", &rb.engine_command));
    CLICKATRON_RETURN_IF_ERROR(r.Int("engine_retries", 1, 100, &rb.engine_retries));
    if (rb.engine == "gnu-parallel" && rb.engine_hosts.empty()) {
      return Status::InvalidArgument(
          "[rebuild] engine = \"gnu-parallel\" needs engine_hosts, the hosts its tasks run on", "BAD_CONFIG");
    }
    if (rb.engine_ssh.empty() || rb.engine_command.empty()) {
      return Status::InvalidArgument("[rebuild] engine_ssh and engine_command must not be empty", "BAD_CONFIG");
    }
  }
  for (const auto& [key, node] : root) {
    static const std::set<std::string_view> known = {"cluster", "http",   "api",    "realtime",
                                                     "archive", "rebuild", "member", "retention"};
    if (!known.count(key.str())) return FieldError(node, "", key.str(), "unknown table");
  }
  return Status::Ok();
}

// [[retention]] tables: one policy per namespace, its zone checked now (a
// zone the rebuild could not cut days by would fail every night).
Status ParseRetention(const toml::table& root, ClusterConfig* c) {
  const toml::node* node = root.get("retention");
  if (!node) return Status::Ok();
  const toml::array* arr = node->as_array();
  if (!arr) return FieldError(*node, "retention", "", "use [[retention]] (an array of tables)");
  TimeZoneDb zones;
  for (const auto& item : *arr) {
    const toml::table* t = item.as_table();
    if (!t) return FieldError(item, "retention", "", "expected a table");
    TableReader r(t, "retention");
    CLICKATRON_RETURN_IF_ERROR(r.NoUnknownKeys({"ns", "hourly_days", "daily_days", "zone"}));
    RetentionPolicy p;
    p.hourly_days = -1;  // unset: as long as the data is kept (daily_days)
    CLICKATRON_RETURN_IF_ERROR(r.String("ns", &p.ns));
    CLICKATRON_RETURN_IF_ERROR(r.Int("hourly_days", 0, 100000, &p.hourly_days));
    CLICKATRON_RETURN_IF_ERROR(r.Int("daily_days", 0, 100000, &p.daily_days));
    CLICKATRON_RETURN_IF_ERROR(r.String("zone", &p.zone));
    if (Status st = ValidateNamespace(p.ns, "ns"); !st.ok()) return FieldError(item, "retention", "ns", st.message());
    if (c->RetentionFor(p.ns) != nullptr) {
      return FieldError(item, "retention", "ns", fmt::format("a second policy for namespace \"{}\"", p.ns));
    }
    // `daily_days = N` alone drops data after N days and keeps its hours until then.
    if (p.hourly_days < 0) p.hourly_days = p.daily_days;
    if (p.hourly_days == 0 && p.daily_days == 0) {
      return FieldError(item, "retention", "hourly_days",
                        fmt::format("namespace {}: hourly_days = 0 with daily_days = 0 would keep nothing", p.ns));
    }
    if (p.daily_days > 0 && p.daily_days < p.hourly_days) {
      return FieldError(item, "retention", "daily_days",
                        fmt::format("namespace {}: daily_days ({}) is the age data is kept to, and must be at least "
                                    "hourly_days ({}), or 0 (forever)",
                                    p.ns, p.daily_days, p.hourly_days));
    }
    auto zone = RetentionZone::Open(p.zone, zones);
    const Status whole = zone.ok() ? zone->CheckWholeHours() : zone.status();
    if (!whole.ok()) return FieldError(item, "retention", "zone", whole.message());
    c->retention.push_back(std::move(p));
  }
  return Status::Ok();
}

Status ParseMembers(const toml::table& root, ClusterConfig* c) {
  const toml::node* node = root.get("member");
  if (!node) return Status::InvalidArgument("no [[member]] tables: a cluster needs members", "BAD_CONFIG");
  const toml::array* arr = node->as_array();
  if (!arr) return FieldError(*node, "member", "", "use [[member]] (an array of tables)");
  std::set<std::string> names;
  std::set<std::string> addresses;
  for (const auto& item : *arr) {
    const toml::table* t = item.as_table();
    if (!t) return FieldError(item, "member", "", "expected a table");
    TableReader r(t, "member");
    CLICKATRON_RETURN_IF_ERROR(r.NoUnknownKeys({"name", "role", "listen", "data_dir", "shard", "file", "statsd_udp", "statsd_tcp"}));
    MemberConfig m;
    std::string role, listen, statsd_udp, statsd_tcp;
    CLICKATRON_RETURN_IF_ERROR(r.String("name", &m.name));
    CLICKATRON_RETURN_IF_ERROR(r.String("role", &role, {"api", "realtime", "archive", "rebuild"}));
    CLICKATRON_RETURN_IF_ERROR(r.String("listen", &listen));
    CLICKATRON_RETURN_IF_ERROR(r.String("data_dir", &m.data_dir));
    CLICKATRON_RETURN_IF_ERROR(r.Int("shard", 0, 4095, &m.shard));
    CLICKATRON_RETURN_IF_ERROR(r.String("file", &m.file));
    CLICKATRON_RETURN_IF_ERROR(r.String("statsd_udp", &statsd_udp));
    CLICKATRON_RETURN_IF_ERROR(r.String("statsd_tcp", &statsd_tcp));
    if (m.name.empty()) return FieldError(item, "member", "name", "missing");
    if (!names.insert(m.name).second) return FieldError(item, "member", "name", fmt::format("duplicate member \"{}\"", m.name));
    if (role.empty()) return FieldError(item, "member", "role", fmt::format("member \"{}\" has no role", m.name));
    m.role = role == "api" ? MemberRole::kApi
           : role == "realtime" ? MemberRole::kRealtime
           : role == "archive" ? MemberRole::kArchive : MemberRole::kRebuild;
    if (m.role != MemberRole::kRebuild) {
      if (listen.empty()) return FieldError(item, "member", "listen", fmt::format("member \"{}\" has no listen address", m.name));
      auto hp = ParseHostPort(listen);
      if (!hp.ok()) return FieldError(item, "member", "listen", hp.status().message());
      m.listen = *hp;
      if (!addresses.insert(m.listen.ToString()).second) {
        return FieldError(item, "member", "listen", fmt::format("address {} used twice", listen));
      }
    }
    for (auto [key, text, out] : {std::tuple{"statsd_udp", &statsd_udp, &m.statsd_udp},
                                  std::tuple{"statsd_tcp", &statsd_tcp, &m.statsd_tcp}}) {
      if (text->empty()) continue;
      if (m.role != MemberRole::kApi) {
        return FieldError(item, "member", key, fmt::format("member \"{}\" is not an API node", m.name));
      }
      auto hp = ParseHostPort(*text);
      if (!hp.ok()) return FieldError(item, "member", key, hp.status().message());
      *out = *hp;
      // statsd over TCP takes a TCP port, as every listen address does.
      if (out == &m.statsd_tcp && !addresses.insert(hp->ToString()).second) {
        return FieldError(item, "member", key, fmt::format("address {} used twice", *text));
      }
    }
    if (m.data_dir.empty()) m.data_dir = "var/" + m.name;
    if (m.role == MemberRole::kRealtime || m.role == MemberRole::kArchive) {
      int count = m.role == MemberRole::kRealtime ? c->realtime_shards : c->archive_shards;
      if (m.shard < 0) return FieldError(item, "member", "shard", fmt::format("member \"{}\" needs a shard", m.name));
      if (m.shard >= count) {
        return FieldError(item, "member", "shard", fmt::format("shard {} but the cluster has {} {} shards", m.shard, count, role));
      }
    }
    if (m.role == MemberRole::kArchive && m.file.empty()) {
      m.file = fmt::format("var/archive/shard-{}.csv", m.shard);
    }
    c->members.push_back(std::move(m));
  }
  for (int s = 0; s < c->realtime_shards; ++s) {
    int n = 0;
    for (const auto& m : c->members) n += (m.role == MemberRole::kRealtime && m.shard == s);
    if (n != 1) {
      return Status::InvalidArgument(fmt::format("realtime shard {} has {} members; it needs exactly one", s, n), "BAD_CONFIG");
    }
  }
  for (int s = 0; s < c->archive_shards; ++s) {
    if (c->ArchiveReplicas(s).empty()) {
      return Status::InvalidArgument(fmt::format("archive shard {} has no replica", s), "BAD_CONFIG");
    }
  }
  return Status::Ok();
}

}  // namespace

const char* MemberRoleName(MemberRole role) {
  switch (role) {
    case MemberRole::kApi: return "api";
    case MemberRole::kRealtime: return "realtime";
    case MemberRole::kArchive: return "archive";
    case MemberRole::kRebuild: return "rebuild";
  }
  return "?";
}

int ApiConfig::ReadLoops() const {
  if (read_loops > 0) return read_loops;
  return static_cast<int>(std::clamp(std::thread::hardware_concurrency(), 1u, 8u));
}

std::string HostPort::ToString() const { return fmt::format("{}:{}", host, port); }

Result<HostPort> ParseHostPort(std::string_view text) {
  size_t colon = text.rfind(':');
  if (colon == std::string_view::npos || colon == 0) {
    return Status::InvalidArgument(fmt::format("\"{}\" is not HOST:PORT", text));
  }
  HostPort hp;
  hp.host = std::string(text.substr(0, colon));
  // " 127.0.0.1" (a stray space in a URL or a file) names no host: refused
  // here, not tried as a name that fails later as a dead peer.
  if (std::any_of(hp.host.begin(), hp.host.end(), [](char c) { return std::isspace(static_cast<unsigned char>(c)); })) {
    return Status::InvalidArgument(fmt::format("\"{}\" has a space in its host", text));
  }
  std::string_view port = text.substr(colon + 1);
  unsigned value = 0;
  auto [ptr, ec] = std::from_chars(port.data(), port.data() + port.size(), value);
  if (ec != std::errc() || ptr != port.data() + port.size() || value == 0 || value > 65535) {
    return Status::InvalidArgument(fmt::format("\"{}\" has no valid port (1-65535)", text));
  }
  hp.port = static_cast<uint16_t>(value);
  return hp;
}

Result<ClusterConfig> ClusterConfig::Parse(std::string_view toml_text, const std::string& source_name) {
  ClusterConfig c;
  c.path = source_name;
  toml::table root;
  try {
    root = toml::parse(toml_text, source_name);
  } catch (const toml::parse_error& e) {
    return Status::InvalidArgument(fmt::format("{}: line {}: {}", source_name, e.source().begin.line, e.description()),
                                   "BAD_CONFIG");
  }
  Status st = ParseSections(root, &c);
  if (st.ok()) st = ParseMembers(root, &c);
  if (st.ok()) st = ParseRetention(root, &c);
  if (!st.ok()) return st.WithContext(source_name);
  return c;
}

Result<ClusterConfig> ClusterConfig::Load(const std::string& path) {
  // A directory opens as a stream that reads nothing ("no [[member]]
  // tables"), and a file without read permission is no missing file.
  std::error_code ec;
  if (std::filesystem::is_directory(path, ec)) {
    return Status::InvalidArgument(fmt::format("cluster file {} is a directory", path), "BAD_CONFIG");
  }
  std::ifstream in(path, std::ios::binary);
  if (!in) {
    const int err = errno;
    if (err == ENOENT) return Status::NotFound(fmt::format("cannot open cluster file {}: no such file", path));
    return Status::IoError(fmt::format("cannot open cluster file {}: {}", path, std::strerror(err)));
  }
  std::stringstream buf;
  buf << in.rdbuf();
  Result<ClusterConfig> config = Parse(buf.str(), path);
  if (!config.ok()) return config.status();
  CLICKATRON_RETURN_IF_ERROR(config->LoadSecrets().WithContext(path));
  return config;
}

TlsFiles ClusterConfig::tls_files() const { return {tls_cert_file, tls_key_file, tls_ca_file}; }

Status ClusterConfig::LoadSecrets() {
  if (!cluster_secret_file.empty()) {
    Result<std::string> secret = ReadSecretFile(cluster_secret_file, "[cluster] cluster_secret_file");
    if (!secret.ok()) return secret.status();
    cluster_secret = std::move(secret).value();
  }
  if (!admin_token_file.empty()) {
    Result<std::string> token = ReadSecretFile(admin_token_file, "[cluster] admin_token_file");
    if (!token.ok()) return token.status();
    admin_token = std::move(token).value();
  }
  if (!tls_ca_file.empty()) {
    // Clients verify servers; they present no certificate (tls.h).
    Result<std::shared_ptr<TlsContext>> tls = TlsContext::ForClient({"", "", tls_ca_file});
    if (!tls.ok()) return tls.status();
    client_tls = std::move(tls).value();
  }
  return Status::Ok();
}

const RetentionPolicy* ClusterConfig::RetentionFor(std::string_view ns) const {
  for (const RetentionPolicy& p : retention) {
    if (p.ns == ns) return &p;
  }
  return nullptr;
}

const MemberConfig* ClusterConfig::FindMember(std::string_view name) const {
  for (const auto& m : members) if (m.name == name) return &m;
  return nullptr;
}

std::vector<const MemberConfig*> ClusterConfig::MembersWithRole(MemberRole role) const {
  std::vector<const MemberConfig*> out;
  for (const auto& m : members) if (m.role == role) out.push_back(&m);
  return out;
}

const MemberConfig* ClusterConfig::RealtimeMember(int shard) const {
  for (const auto& m : members) if (m.role == MemberRole::kRealtime && m.shard == shard) return &m;
  return nullptr;
}

std::vector<const MemberConfig*> ClusterConfig::ArchiveReplicas(int shard) const {
  std::vector<const MemberConfig*> out;
  for (const auto& m : members) if (m.role == MemberRole::kArchive && m.shard == shard) out.push_back(&m);
  return out;
}

}  // namespace clickatron
