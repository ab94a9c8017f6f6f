#include "testutil/cluster_toml.h"

namespace clickatron::testing {

std::string ApiMemberName(int index) { return "api-" + std::to_string(index); }

std::string RealtimeMemberName(int shard) { return "realtime-" + std::to_string(shard); }

std::string ArchiveMemberName(int shard, int replica, int replicas_per_shard) {
  std::string name = "archive-" + std::to_string(shard);
  if (replicas_per_shard > 1) name += static_cast<char>('a' + replica);
  return name;
}

std::vector<PlannedMember> PlanMembers(const ClusterSpec& spec) {
  std::vector<PlannedMember> out;
  for (int i = 0; i < spec.api_nodes; ++i) out.push_back({ApiMemberName(i), MemberRole::kApi, -1, false});
  for (const std::string& name : spec.loaders) out.push_back({name, MemberRole::kApi, -1, true});
  for (int s = 0; s < spec.realtime_shards; ++s) {
    out.push_back({RealtimeMemberName(s), MemberRole::kRealtime, s, false});
  }
  for (int s = 0; s < spec.archive_shards; ++s) {
    for (int r = 0; r < spec.archive_replicas; ++r) {
      out.push_back({ArchiveMemberName(s, r, spec.archive_replicas), MemberRole::kArchive, s, false});
    }
  }
  return out;
}

namespace {

// "[name]\nlines\n" — a table the spec left empty is still written, so the
// file shows every table the daemons read.
std::string Table(const std::string& name, const std::string& lines) { return "[" + name + "]\n" + lines + "\n"; }

}  // namespace

std::string ClusterToml(const ClusterSpec& spec, const std::vector<PlannedMember>& members,
                        const std::map<std::string, HostPort>& addresses, const ClusterPaths& paths) {
  std::string cluster = "realtime_shards = " + std::to_string(spec.realtime_shards) + "\n" +
                        "archive_shards = " + std::to_string(spec.archive_shards) + "\n";
  if (!paths.secret_file.empty()) cluster += "cluster_secret_file = " + TomlString(paths.secret_file) + "\n";
  cluster += spec.cluster.Lines();

  // Rebuild intermediates inside the cluster's directory, never the
  // default var/ under whatever directory the test runs in.
  TomlTable rebuild = spec.rebuild;
  if (!rebuild.Has("work_dir")) rebuild.SetString("work_dir", paths.RebuildDir("rebuild"));
  if (!rebuild.Has("backup_dir")) rebuild.SetString("backup_dir", paths.RebuildDir("backup"));

  // The API's read cache off unless a test turns it on: a test that swaps
  // archive files under a running API by hand would see the old file's
  // kept answers until the reader asks the replica again
  // (CachedArchiveReader::kReconfirmEvery). Its own tests, and the day-cycle
  // test, turn it on.
  TomlTable api = spec.api;
  if (!api.Has("read_cache_mb")) api.SetInt("read_cache_mb", 0);

  std::string toml = Table("cluster", cluster) + Table("http", spec.http.Lines()) + Table("api", api.Lines()) +
                     Table("realtime", spec.realtime.Lines()) + Table("archive", spec.archive.Lines()) +
                     Table("rebuild", rebuild.Lines());
  for (const PlannedMember& m : members) {
    const MemberOverride* change = nullptr;
    if (auto it = spec.members.find(m.name); it != spec.members.end()) change = &it->second;
    TomlTable t;
    t.SetString("name", m.name);
    t.SetString("role", MemberRoleName(m.role));
    t.SetString("listen", addresses.at(m.name).ToString());
    t.SetString("data_dir", paths.DataDir(m.name));
    if (m.shard >= 0) t.SetInt("shard", m.shard);
    if (m.role == MemberRole::kArchive) {
      t.SetString("file", change && !change->file.empty() ? change->file : paths.ArchiveFile(m.shard, m.name));
    }
    toml += "[[member]]\n" + t.Lines() + (change ? change->extra.Lines() : "") + "\n";
  }
  for (const TomlTable& policy : spec.retention) toml += "[[retention]]\n" + policy.Lines() + "\n";
  return toml;
}

}  // namespace clickatron::testing
