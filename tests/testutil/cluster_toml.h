// The cluster file a ClusterSpec describes: which members it has (names,
// roles, shards), and the TOML text with their addresses and paths.
#pragma once

#include <map>
#include <string>
#include <vector>

#include "clickatron/config.h"
#include "testutil/cluster_spec.h"

namespace clickatron::testing {

// Member names, one scheme for every test: api-N, realtime-S, and archive-S
// (archive-Sa, archive-Sb, … when a shard has several replicas).
std::string ApiMemberName(int index);
std::string RealtimeMemberName(int shard);
std::string ArchiveMemberName(int shard, int replica, int replicas_per_shard);

struct PlannedMember {
  std::string name;
  MemberRole role = MemberRole::kApi;
  int shard = -1;
  bool loader = false;  // never started (ClusterSpec::loaders)
};

// The spec's members in file order: API nodes, loaders, realtime shards,
// archive replicas (a shard's replicas in order, as ArchiveReplicas lists them).
std::vector<PlannedMember> PlanMembers(const ClusterSpec& spec);

// Where the harness puts things inside the cluster's directory.
struct ClusterPaths {
  std::string dir;
  std::string secret_file;  // "" when the spec has no secret
  bool private_hosts = false;  // ClusterSpec::private_hosts
  // A member's (or "rebuild"'s) own directory when hosts are private.
  std::string HostDir(const std::string& host) const { return dir + "/hosts/" + host; }
  std::string DataDir(const std::string& member) const {
    return private_hosts ? HostDir(member) + "/data" : dir + "/" + member;
  }
  // The file of the shard's replicas: shared by them on one host, or each
  // replica's own when hosts are private.
  std::string ArchiveFile(int shard, const std::string& member = "") const {
    const std::string name = "/archive/shard-" + std::to_string(shard) + ".csv";
    return private_hosts && !member.empty() ? HostDir(member) + name : dir + name;
  }
  std::string RebuildDir(const std::string& what) const {
    return private_hosts ? HostDir("rebuild") + "/" + what : dir + "/" + what;
  }
};

// The cluster file: [cluster] with the shard counts and the secret file, the
// spec's tables, then one [[member]] per planned member listening on
// `addresses[name]`.
std::string ClusterToml(const ClusterSpec& spec, const std::vector<PlannedMember>& members,
                        const std::map<std::string, HostPort>& addresses, const ClusterPaths& paths);

}  // namespace clickatron::testing
