// What a test asks of its cluster, in a few fields: how many members of each
// role, which extra keys each table of the cluster file gets, and per-member
// overrides. testutil/cluster.h turns it into a cluster file with reserved
// loopback ports and starts the members.
#pragma once

#include <map>
#include <string>
#include <utility>
#include <vector>

namespace clickatron::testing {

// The keys of one TOML table, in the order set, each value kept as TOML
// text. Typed setters (not overloads of one Set: a string literal would
// convert to bool before std::string).
class TomlTable {
 public:
  TomlTable& SetString(const std::string& key, const std::string& value);  // quoted and escaped
  TomlTable& SetInt(const std::string& key, long long value);
  TomlTable& SetBool(const std::string& key, bool value);
  TomlTable& SetStrings(const std::string& key, const std::vector<std::string>& values);
  // Written as is: for a value the typed setters cannot express.
  TomlTable& SetRaw(const std::string& key, const std::string& toml_value);

  bool Has(const std::string& key) const;
  bool empty() const { return entries_.empty(); }
  // "key = value\n" lines.
  std::string Lines() const;

 private:
  std::vector<std::pair<std::string, std::string>> entries_;
};

// A TOML basic string: quotes, backslashes and control bytes escaped.
std::string TomlString(const std::string& value);

// Per-member changes to what the harness writes by default.
struct MemberOverride {
  // Default 127.0.0.1. Only a test of the daemons' refusal to listen where
  // other hosts reach them asks for another (such a member never comes up).
  std::string listen_host;
  // Archive members: the file served. Default DIR/archive/shard-S.csv.
  std::string file;
  // More keys of the member's table (an API member's statsd_udp, say).
  TomlTable extra;
};

struct ClusterSpec {
  int realtime_shards = 1;
  int archive_shards = 1;
  int archive_replicas = 1;  // archive members per archive shard
  int api_nodes = 1;
  // API members that are never started: names a test signs its own batches
  // to a realtime shard with (shards take batches from API members only).
  std::vector<std::string> loaders;
  // [cluster] cluster_secret_file names DIR/cluster.secret holding
  // kTestClusterSecret (mode 600). Off only for tests of running without one.
  bool cluster_secret = true;

  // Every member (and the rebuild, as host "rebuild") on a "host" of its own:
  // its data_dir, archive file, work and backup dirs under DIR/hosts/NAME/,
  // and its process started in a mount namespace where every other host's
  // directory is hidden under an empty tmpfs, so a path that one member
  // reads of another fails as it would across machines (Cluster::HostCommand).
  bool private_hosts = false;

  // Extra keys per table. [cluster] always gets the shard counts (and the
  // secret file); [rebuild] gets work_dir DIR/rebuild and backup_dir
  // DIR/backup unless set here; [api] gets read_cache_mb = 0 (the cache
  // off: cluster_toml.cc says why) unless set here.
  TomlTable cluster, http, api, realtime, archive, rebuild;
  std::map<std::string, MemberOverride> members;  // by member name
  // [[retention]] tables, one per namespace policy (ns, hourly_days, ...).
  std::vector<TomlTable> retention;
};

}  // namespace clickatron::testing
