// The one way tests run daemons: a cluster described by a ClusterSpec, its
// cluster file, secret, data dirs and archive files in one TempDir, members
// on reserved loopback ports (FreePort: members sign requests with the
// receiver's configured address, so every port is known before any start),
// started as real binaries, waited for on /ping and stopped by PID.
//
//   ClusterSpec spec;
//   spec.realtime_shards = 2;
//   spec.cluster.SetString("clock", "manual");
//   Cluster cluster(spec);
//   ASSERT_TRUE(cluster.StartAll(&error)) << error;
//   HttpGet(cluster.Address("realtime-1"), "/ring");
#pragma once

#include <sys/types.h>

#include <chrono>
#include <map>
#include <memory>
#include <string>
#include <vector>

#include "clickatron/config.h"
#include "clickatron/http_client.h"
#include "clickatron/status.h"
#include "testutil/cluster_spec.h"
#include "testutil/cluster_toml.h"
#include "testutil/testutil.h"

namespace clickatron::testing {

class Cluster {
 public:
  // An empty TempDir: a test that needs paths inside it for its spec (files
  // it writes, [rebuild] dirs) calls Write once it has them.
  Cluster();
  // Write(spec); a file the daemons' parser refuses fails the test.
  explicit Cluster(const ClusterSpec& spec);
  // Every member still running is killed (continued first: a SIGSTOPped
  // member must take its SIGKILL).
  ~Cluster();
  Cluster(const Cluster&) = delete;
  Cluster& operator=(const Cluster&) = delete;

  // Writes DIR/cluster.toml (and DIR/cluster.secret) for `spec` and loads it
  // with ClusterConfig::Load. A member keeps its port when the file is
  // rewritten (a test changing its cluster between starts).
  Status Write(const ClusterSpec& spec);

  // Starts the member's binary and waits until it answers GET /ping (over
  // TLS when the cluster has it); false with the log tail in *error.
  bool Start(const std::string& name, std::string* error = nullptr);
  // Every member but the loaders: realtime and archive first, then the API
  // nodes (they ask the shards for watermarks on start).
  bool StartAll(std::string* error = nullptr);
  // SIGTERM and wait; the exit status (-1: not running, killed, or no exit in time).
  int Stop(const std::string& name, std::chrono::milliseconds timeout = std::chrono::seconds(20));
  void Kill(const std::string& name);             // SIGKILL and reap
  void Signal(const std::string& name, int signo);  // e.g. SIGSTOP, SIGCONT, SIGHUP
  bool Running(const std::string& name) const;
  pid_t Pid(const std::string& name) const;        // -1 when not running
  DaemonProcess& Process(const std::string& name);
  // Runs the member in the foreground until it exits, output in *output:
  // for tests of a daemon refusing its configuration.
  int RunToExit(const std::string& name, std::string* output);

  const std::string& dir() const { return dir_.path(); }
  std::string operator/(const std::string& name) const { return dir_ / name; }
  const std::string& config_path() const { return config_path_; }
  const ClusterConfig& config() const { return config_; }
  const ClusterSpec& spec() const { return spec_; }
  const MemberConfig& Member(const std::string& name) const;
  HostPort Address(const std::string& name) const { return Member(name).listen; }
  HostPort Api(int index = 0) const { return Address(ApiMemberName(index)); }
  std::string DataDir(const std::string& name) const { return paths_.DataDir(name); }
  std::string ArchiveFile(int shard) const { return paths_.ArchiveFile(shard); }
  std::string HostDir(const std::string& host) const { return paths_.HostDir(host); }
  // `argv` as run on `host` (a member's name, or "rebuild"): as it is, or
  // with ClusterSpec::private_hosts inside a mount namespace that hides
  // every other host's directory. The first element is the program's path.
  std::vector<std::string> HostCommand(const std::string& host, std::vector<std::string> argv) const;
  std::string ArchiveName(int shard, int replica) const {
    return ArchiveMemberName(shard, replica, spec_.archive_replicas);
  }
  std::string LogPath(const std::string& name) const { return dir_ / (name + ".log"); }
  std::string LogTail(const std::string& name, size_t bytes = 4000) const;

  // Requests with the cluster's own client: signed with its secret, over
  // TLS when it has TLS.
  HttpResponse Get(const std::string& name, const std::string& target, const std::string& bearer = "",
                   int timeout_ms = 10000) const;
  HttpResponse Post(const std::string& name, const std::string& target, const std::string& body = "",
                    const std::string& bearer = "", int timeout_ms = 10000) const;

 private:
  HttpResponse Fetch(const std::string& name, HttpRequestSpec request) const;

  TempDir dir_;
  ClusterPaths paths_;
  ClusterSpec spec_;
  std::string config_path_;
  ClusterConfig config_;
  std::map<std::string, uint16_t> ports_;  // reserved once per member name
  std::map<std::string, std::unique_ptr<DaemonProcess>> processes_;
};

}  // namespace clickatron::testing
