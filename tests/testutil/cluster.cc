#include "testutil/cluster.h"

#include <signal.h>

#include <filesystem>

#include <gtest/gtest.h>

#include "clickatron/file_util.h"

namespace clickatron::testing {
namespace {

std::string MemberBinary(MemberRole role) {
  switch (role) {
    case MemberRole::kApi: return BinaryPath("clickatron-api");
    case MemberRole::kRealtime: return BinaryPath("clickatron-realtime");
    case MemberRole::kArchive: return BinaryPath("clickatron-archive");
    case MemberRole::kRebuild: return BinaryPath("clickatron-rebuild");
  }
  return "";
}

}  // namespace

Cluster::Cluster() { paths_.dir = dir_.path(); }

Cluster::Cluster(const ClusterSpec& spec) : Cluster() {
  const Status written = Write(spec);
  EXPECT_TRUE(written.ok()) << written.ToString();
}

Cluster::~Cluster() {
  for (auto& [name, process] : processes_) {
    if (process->running()) ::kill(process->pid(), SIGCONT);
    process->Kill();
  }
}

Status Cluster::Write(const ClusterSpec& spec) {
  spec_ = spec;
  paths_.private_hosts = spec.private_hosts;
  paths_.secret_file = "";
  if (spec.cluster_secret) {
    // Written once: a test may chmod it between rewrites.
    paths_.secret_file = WriteTestSecret(dir_.path());
  }
  const std::vector<PlannedMember> members = PlanMembers(spec);
  std::map<std::string, HostPort> addresses;
  for (const PlannedMember& m : members) {
    if (m.loader) {
      addresses[m.name] = NeverStartedAddress();
      continue;
    }
    uint16_t& port = ports_[m.name];
    if (port == 0) port = FreePort();
    HostPort listen = Loopback(port);
    if (auto it = spec.members.find(m.name); it != spec.members.end() && !it->second.listen_host.empty()) {
      listen.host = it->second.listen_host;
    }
    addresses[m.name] = listen;
  }
  CLICKATRON_RETURN_IF_ERROR(MakeDirs(dir_ / "archive"));
  if (spec.private_hosts) {
    for (const PlannedMember& m : members) CLICKATRON_RETURN_IF_ERROR(MakeDirs(paths_.HostDir(m.name)));
    CLICKATRON_RETURN_IF_ERROR(MakeDirs(paths_.HostDir("rebuild")));
  }
  config_path_ = dir_ / "cluster.toml";
  CLICKATRON_RETURN_IF_ERROR(WriteFileAtomically(config_path_, ClusterToml(spec, members, addresses, paths_)));
  Result<ClusterConfig> loaded = ClusterConfig::Load(config_path_);
  if (!loaded.ok()) return loaded.status();
  config_ = std::move(loaded).value();
  return Status::Ok();
}

const MemberConfig& Cluster::Member(const std::string& name) const {
  const MemberConfig* m = config_.FindMember(name);
  if (m == nullptr) {
    ADD_FAILURE() << "no member " << name << " in " << config_path_;
    static const MemberConfig kNone;
    return kNone;
  }
  return *m;
}

bool Cluster::Start(const std::string& name, std::string* error) {
  const MemberConfig* m = config_.FindMember(name);
  if (m == nullptr) {
    if (error) *error = "no member " + name;
    return false;
  }
  std::error_code ec;
  std::filesystem::create_directories(m->data_dir, ec);
  auto& process = processes_[name];
  if (!process) process = std::make_unique<DaemonProcess>();
  std::vector<std::string> command =
      HostCommand(name, {MemberBinary(m->role), "--config", config_path_, "--member", name});
  const std::string binary = command.front();
  command.erase(command.begin());
  // The cluster's own client: it speaks TLS when the members do.
  return process->Start(binary, command, LogPath(name),
                        [&] { return Get(name, "/ping", "", 1000).status_code == 200; }, error);
}

std::vector<std::string> Cluster::HostCommand(const std::string& host, std::vector<std::string> argv) const {
  if (!spec_.private_hosts) return argv;
  // unshare execs the shell, and the shell execs the program: one process,
  // whose PID the harness holds. An empty tmpfs over every other host's
  // directory; a mount that fails stops the start (exit 97), so the test
  // never runs with a host it meant to hide visible.
  std::string script = "for d in \"$HOSTS\"/*; do [ \"$d\" = \"$HOSTS/$SELF\" ] || "
                       "mount -t tmpfs -o size=64k,mode=000 tmpfs \"$d\" || exit 97; done; exec \"$@\"";
  std::vector<std::string> command = {"/usr/bin/env", "HOSTS=" + dir_ / "hosts", "SELF=" + host,
                                      "/usr/bin/unshare", "--user", "--map-root-user", "--mount",
                                      "/bin/sh", "-c", script, "sh"};
  command.insert(command.end(), argv.begin(), argv.end());
  return command;
}

bool Cluster::StartAll(std::string* error) {
  for (MemberRole role : {MemberRole::kRealtime, MemberRole::kArchive, MemberRole::kApi}) {
    for (const PlannedMember& m : PlanMembers(spec_)) {
      if (m.role != role || m.loader) continue;
      if (!Start(m.name, error)) {
        if (error) *error = m.name + ": " + *error;
        return false;
      }
    }
  }
  return true;
}

int Cluster::Stop(const std::string& name, std::chrono::milliseconds timeout) {
  auto it = processes_.find(name);
  return it == processes_.end() ? -1 : it->second->Stop(timeout);
}

void Cluster::Kill(const std::string& name) {
  if (auto it = processes_.find(name); it != processes_.end()) it->second->Kill();
}

void Cluster::Signal(const std::string& name, int signo) {
  if (Running(name)) ::kill(Pid(name), signo);
}

bool Cluster::Running(const std::string& name) const {
  auto it = processes_.find(name);
  return it != processes_.end() && it->second->running();
}

pid_t Cluster::Pid(const std::string& name) const {
  auto it = processes_.find(name);
  return it == processes_.end() || !it->second->running() ? -1 : it->second->pid();
}

DaemonProcess& Cluster::Process(const std::string& name) {
  auto& process = processes_[name];
  if (!process) process = std::make_unique<DaemonProcess>();
  return *process;
}

int Cluster::RunToExit(const std::string& name, std::string* output) {
  return RunCommand({MemberBinary(Member(name).role), "--config", config_path_, "--member", name}, output);
}

std::string Cluster::LogTail(const std::string& name, size_t bytes) const {
  auto it = processes_.find(name);
  return it == processes_.end() ? "" : it->second->LogTail(bytes);
}

HttpResponse Cluster::Fetch(const std::string& name, HttpRequestSpec request) const {
  return BlockingHttpClient(config_).Fetch(Address(name), std::move(request));
}

HttpResponse Cluster::Get(const std::string& name, const std::string& target, const std::string& bearer,
                          int timeout_ms) const {
  HttpRequestSpec spec;
  spec.target = target;
  spec.bearer_token = bearer;
  spec.timeout_ms = timeout_ms;
  return Fetch(name, std::move(spec));
}

HttpResponse Cluster::Post(const std::string& name, const std::string& target, const std::string& body,
                           const std::string& bearer, int timeout_ms) const {
  HttpRequestSpec spec;
  spec.method = "POST";
  spec.target = target;
  spec.body = body;
  spec.bearer_token = bearer;
  spec.timeout_ms = timeout_ms;
  return Fetch(name, std::move(spec));
}

}  // namespace clickatron::testing
