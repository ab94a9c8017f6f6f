// The cluster file (docs/operations.md): one TOML file describes every member; a daemon
// is started as `BINARY --config FILE --member NAME` and finds its part here.
//
// Parsed once into typed structs (never looked up by string at run time).
// Every field has a default, documented in conf/local.toml. Load() reports a
// bad file with the line and the field at fault.
//
// Thread-safety: Load and Parse share no state; any thread may call them. A
// ClusterConfig is a plain value: its const methods may run on any number
// of threads at once (daemons load it before starting threads and never
// change it); LoadSecrets() changes it and needs it to itself. The
// client_tls it holds is shared and immutable (tls.h).
#pragma once


#include <chrono>
#include <algorithm>
#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "clickatron/retention.h"
#include "clickatron/status.h"

namespace clickatron {

class TlsContext;
struct TlsFiles;

enum class MemberRole { kApi, kRealtime, kArchive, kRebuild };
const char* MemberRoleName(MemberRole role);

struct HostPort {
  std::string host = "127.0.0.1";
  uint16_t port = 0;
  std::string ToString() const;  // "127.0.0.1:8080"
};
Result<HostPort> ParseHostPort(std::string_view text);

// Limits every HTTP server applies ([http] table).
struct HttpLimits {
  size_t max_body_bytes = 64u << 20;     // larger bodies: 413 BODY_TOO_LARGE
  size_t max_header_bytes = 16u << 10;   // request line + headers
  int timeout_seconds = 30;              // idle / slow client timeout
  int request_deadline_seconds = 60;     // a whole request (line, headers, body) must arrive within this
  size_t max_query_args = 1024;          // query-string parameters per request
  // What clients can make a daemon hold (src/connection_limits.h): open
  // connections (past it, new ones wait in the kernel's backlog), bytes of
  // requests still being received (past it, 503 and close), and answer
  // bytes not yet taken by slow readers (past it, 503 SLOW_READERS for
  // routes whose answers may be large).
  size_t max_connections = 4096;
  size_t max_request_bytes_in_flight = 256u << 20;
  size_t max_answer_bytes_queued = 256u << 20;
};

struct MemberConfig {
  std::string name;
  MemberRole role = MemberRole::kApi;
  HostPort listen;
  std::string data_dir;
  int shard = -1;         // realtime and archive members
  std::string file;       // archive: the sorted file it serves
  // API members: statsd counters taken over UDP and TCP (docs/protocols.md,
  // "statsd"); unset: off.
  std::optional<HostPort> statsd_udp;
  std::optional<HostPort> statsd_tcp;
};

// [api]
struct ApiConfig {
  int flush_window_ms = 2;              // combining window per shard
  std::string oplog_sync = "always";    // always | interval | none
  int oplog_sync_interval_ms = 100;     // for "interval"
  uint64_t oplog_segment_bytes = 64u << 20;
  int oplog_retention_hours = 48;       // keep acknowledged segments this long
  // Idempotency-Key values of /incr are remembered this long (the oplog keeps
  // its segments at least as long: they are the keys' durable copy) ...
  int idempotency_window_hours = 24;
  // ... and at most this many (the oldest are forgotten first).
  uint64_t idempotency_max_keys = 1'000'000;
  // Tests only: while DATA_DIR/fault/oplog-stall exists, the oplog's writer
  // holds its next commit (a request stays in flight; kill -9 then finds it
  // never durable).
  bool fault_injection = false;
  uint64_t max_queued_increments = 2'000'000;  // per shard, beyond it 503 OVERLOADED
  // Flow control for a shard that is up but slower than this node: while
  // it has this many lines waiting, new increments for it wait (up to
  // queue_wait_ms, then 503 OVERLOADED) instead of growing its queue, so
  // what is acknowledged reaches queries within seconds. 0: never wait. A
  // shard that is down is not waited for: the oplog keeps its lines, up to
  // max_queued_increments.
  uint64_t queue_wait_increments = 500'000;
  int queue_wait_ms = 5000;
  int future_margin_hours = 24;         // increments later than now+margin are refused (<= 24: always in the ring)
  int request_timeout_ms = 5000;        // to realtime / archive peers
  int retry_backoff_min_ms = 50;
  int retry_backoff_max_ms = 5000;
  // How long a realtime shard restarted after a crash waits for the API
  // nodes' re-send before it serves reads anyway (realtime/recovery_gate.h):
  // an idle node polls once a second, one with batches to send retries
  // after at most its backoff. The rebuild waits twice this (a minute at
  // least) to export it.
  std::chrono::milliseconds RecoveryWait() const {
    return std::max(std::chrono::milliseconds(10000), 2 * std::chrono::milliseconds(retry_backoff_max_ms));
  }
  int max_query_hours = 24 * 366 * 5;   // widest window a query may span
  // The node's one read cache (api/query/cache/read_cache.h): everything it keeps
  // between queries (archive answers, lookup values, decoded sketches…),
  // charged once, shared by its read loops. 0: nothing kept.
  int read_cache_mb = 64;
  // Event loops serving queries, each on a thread of its own and sharing the
  // port (the first also takes increments and admin requests, which the
  // others hand to it). 0: one per core, at most 8. More than one pays on
  // an API node with cores of its own; where the API shares two cores with
  // the other daemons (a local cluster) one loop answered more queries.
  int read_loops = 1;
  int ReadLoops() const;  // read_loops with 0 resolved
  // /uniques and /breakdown?uniques=true of whole UTC days ask realtime for each day's hours of a
  // record as one union (unite=day, docs/protocols.md). false: as hours,
  // for an A/B run or realtime shards that predate it.
  bool realtime_unite_days = true;
  // Non-empty: /incr, /clicks, /breakdown, /uniques, /lookup and the
  // dashboard need "Authorization: Bearer CLIENT_TOKEN" (401 otherwise).
  std::string client_token;
};

// [realtime]
struct RealtimeConfig {
  // RocksDB's write buffers, charged to the block cache (at most half of it;
  // checkpoints are ingested as files, not through them).
  int write_buffer_mb = 64;
  int block_cache_mb = 128;           // part of memory_budget_mb: data, index and filter blocks, write buffers
  int checkpoint_interval_ms = 2000;  // persist the in-memory table this often
  // The shard's whole bound: the in-memory table (active + being persisted)
  // gets what block_cache_mb and scan_cache_mb leave (TableBudgetMb).
  int memory_budget_mb = 448;
  int scan_cache_mb = 64;             // part of memory_budget_mb: stored records kept between /mfwmatch scans (0: off)
  // Parse refuses less than 16; a config made in code gets at least 1.
  int TableBudgetMb() const {
    const int rest = memory_budget_mb - block_cache_mb - scan_cache_mb;
    return rest > 1 ? rest : 1;
  }
  // Tests only: DATA_DIR/fault/ files make checkpoints fail or stall
  // (docs/operations.md, "Fault injection").
  bool fault_injection = false;
};

// [archive]
struct ArchiveConfig {
  bool mlock = false;
  bool warmup = false;
  bool verify_sorted_on_load = false;
  std::string madvise = "random";  // random | sequential | normal | willneed
  // One byte ending a line's key (sortdb's --field-separator). Archive files
  // written by the rebuild always use ',', so change it only to serve other
  // sorted key/value files.
  std::string field_separator = ",";
  // The background scrub (docs/operations.md, "Damaged archive files"): the
  // served file is read again this often and checked against its manifest's
  // crc32, at most scrub_mb_per_second; 0 for either turns it off.
  int scrub_interval_seconds = 86400;
  int scrub_mb_per_second = 64;
};

// [rebuild]
struct RebuildConfig {
  std::string work_dir = "var/rebuild";
  std::string backup_dir = "var/backup";
  int backup_keep = 14;                // generations kept in backup_dir; 0 = all
  uint64_t memory_mb = 512;            // external sort bound
  int threads = 2;
  double max_bad_line_ratio = 0.001;   // a load with more bad lines fails
  // Where the rebuild serves a generation while it deploys it: the archive
  // replicas fetch their shard's file from here (port 0: any free port).
  HostPort publish_address{"127.0.0.1", 0};
  // Where the rebuild's tasks (docs/rebuild.md "Tasks and engines") run:
  // "local" in this process, or "gnu-parallel": GNU parallel over ssh on
  // engine_hosts, each of which has clickatron-rebuild installed and this
  // cluster file (and the files it names) at the same path.
  std::string engine = "local";
  std::vector<std::string> engine_hosts;  // GNU parallel --sshlogin entries ("4/host", "user@host")
  std::string engine_ssh = "ssh";          // the ssh command parallel uses (--ssh)
  std::string engine_command = "clickatron-rebuild";  // the program on the engine hosts
  int engine_retries = 3;                  // attempts per task, each on another host when it can
};

struct ClusterConfig {
  std::string path;             // the file it came from
  int realtime_shards = 1;
  // A change of realtime_shards takes effect at a day boundary: increments
  // of days before realtime_shards_since (YYYY-MM-DD, UTC) keep routing by
  // previous_realtime_shards (realtime_shard_map.h). Both unset: no change.
  std::string realtime_shards_since;
  int64_t realtime_shards_since_day = 0;  // realtime_shards_since as days since 1970
  int previous_realtime_shards = 0;
  int archive_shards = 1;
  std::string clock = "system"; // system | manual
  std::string admin_token;      // empty: admin endpoints are open (loopback only)
  // A file holding the admin token instead (mode 600; loaded into admin_token).
  std::string admin_token_file;
  // The file holding the secret every member proves to the others
  // (clickatron/cluster_auth.h); loaded into cluster_secret. Empty: members
  // do not authenticate each other (allowed on loopback only).
  std::string cluster_secret_file;
  std::string cluster_secret;
  // Optional TLS between members ([cluster] tls_cert_file, tls_key_file,
  // tls_ca_file; clickatron/tls.h). LoadSecrets builds client_tls from them.
  std::string tls_cert_file, tls_key_file, tls_ca_file;
  std::shared_ptr<const TlsContext> client_tls;
  std::string log_level = "info";
  HttpLimits http;
  ApiConfig api;
  RealtimeConfig realtime;
  ArchiveConfig archive;
  RebuildConfig rebuild;
  std::vector<MemberConfig> members;
  // [[retention]]: a policy per namespace (retention.h); a namespace without
  // one keeps every hour.
  std::vector<RetentionPolicy> retention;
  const RetentionPolicy* RetentionFor(std::string_view ns) const;

  static Result<ClusterConfig> Load(const std::string& path);
  // Parses the text; reads no other file (secrets are read by Load).
  static Result<ClusterConfig> Parse(std::string_view toml_text, const std::string& source_name);
  // Reads cluster_secret_file and admin_token_file (ReadSecretFile's rules).
  Status LoadSecrets();
  TlsFiles tls_files() const;

  const MemberConfig* FindMember(std::string_view name) const;
  std::vector<const MemberConfig*> MembersWithRole(MemberRole role) const;
  // The realtime member serving `shard` (exactly one per shard).
  const MemberConfig* RealtimeMember(int shard) const;
  // Every archive replica serving `shard`, in file order.
  std::vector<const MemberConfig*> ArchiveReplicas(int shard) const;
  bool manual_clock() const { return clock == "manual"; }
};

}  // namespace clickatron
