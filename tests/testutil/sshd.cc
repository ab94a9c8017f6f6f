#include "testutil/sshd.h"

#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>

namespace clickatron::testing {

namespace {

constexpr const char* kSshd = "/usr/sbin/sshd";
constexpr const char* kSshKeygen = "/usr/bin/ssh-keygen";
constexpr const char* kSsh = "/usr/bin/ssh";

// A fresh ed25519 key pair at `path` and `path`.pub. Old files go first:
// ssh-keygen would otherwise ask whether to overwrite and, on our empty
// stdin, refuse.
bool Keygen(const std::string& path, std::string* error) {
  ::unlink(path.c_str());
  ::unlink((path + ".pub").c_str());
  std::string out;
  if (RunCommand({kSshKeygen, "-q", "-t", "ed25519", "-N", "", "-C", "clickatron-test", "-f", path}, &out) != 0) {
    *error = "ssh-keygen " + path + ": " + out;
    return false;
  }
  return true;
}

// Single-quoted for a shell unless plainly safe: parallel hands --ssh to one.
std::string ShellWord(const std::string& s) {
  if (!s.empty() && s.find_first_not_of("ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789_./=:@%+-") ==
                        std::string::npos) {
    return s;
  }
  std::string quoted = "'";
  for (char c : s) quoted += c == '\'' ? std::string("'\\''") : std::string(1, c);
  return quoted + "'";
}

}  // namespace

bool SshdAvailable() {
  return ::access(kSshd, X_OK) == 0 && ::access(kSshKeygen, X_OK) == 0 && ::access(kSsh, X_OK) == 0;
}

bool LoopbackSshd::Start(const std::string& dir, std::string* error, const std::vector<std::string>& wrap) {
  std::string ignored;
  if (error == nullptr) error = &ignored;
  Stop();
  const std::string host_key = dir + "/host_key";
  const std::string authorized = dir + "/authorized_keys";
  key_path_ = dir + "/user_key";
  if (!Keygen(host_key, error) || !Keygen(key_path_, error)) return false;
  if (!WriteWithMode(authorized, ReadAll(key_path_ + ".pub"), 0600)) {
    *error = "cannot write " + authorized;
    return false;
  }
  // As root, sshd insists on its privilege separation directory (a package
  // install makes it at boot; a container may not have it). Not as another
  // user: then sshd runs unprivileged and can log in only that user anyway.
  if (::geteuid() == 0 && ::mkdir("/run/sshd", 0755) != 0 && errno != EEXIST) {
    *error = std::string("mkdir /run/sshd: ") + std::strerror(errno);
    return false;
  }
  port_ = FreePort();
  const std::string config = dir + "/sshd_config";
  // StrictModes no: the test's temp dirs are not owned and moded as sshd
  // wants home directories to be. UsePAM no: PAM needs root. MaxStartups and
  // MaxSessions: parallel may open many connections at once. SetEnv SHLVL=1:
  // bash run by sshd sources the user's ~/.bashrc unless it is a nested
  // shell, and a developer's (version managers' init) cost 0.5 s a login,
  // of which GNU parallel makes dozens; the tests want a plain login.
  // (SetEnv in sshd_config needs OpenSSH 8.7; Debian 12 has 9.2.)
  const std::vector<std::string> lines = {
      "Port " + std::to_string(port_), "ListenAddress 127.0.0.1", "HostKey " + host_key,
      "AuthorizedKeysFile " + authorized, "PidFile " + dir + "/sshd.pid", "PasswordAuthentication no",
      "KbdInteractiveAuthentication no", "PubkeyAuthentication yes", "UsePAM no", "StrictModes no",
      "PermitRootLogin prohibit-password", "MaxStartups 100", "MaxSessions 100", "SetEnv SHLVL=1"};
  std::string text;
  for (const std::string& line : lines) text += line + "\n";
  if (!WriteWithMode(config, text, 0600)) {
    *error = "cannot write " + config;
    return false;
  }
  // -D: stay in the foreground, so the PID we hold is the listener's;
  // -e: log to stderr, i.e. the log file.
  std::vector<std::string> args = wrap;
  for (const char* a : {kSshd, "-D", "-e", "-f"}) args.push_back(a);
  args.push_back(config);
  std::vector<std::string> probe = SshArgv();
  probe.push_back("127.0.0.1");
  probe.push_back("true");
  // Through env: it finds a wrap's command on PATH (DaemonProcess does not
  // search) and execs it, so the PID stays the one Stop signals.
  if (!daemon_.Start("/usr/bin/env", args, dir + "/sshd.log", [&] { return RunCommand(probe, nullptr) == 0; },
                     error)) {
    *error = "sshd on port " + std::to_string(port_) + ": " + *error;
    return false;
  }
  return true;
}

void LoopbackSshd::Stop() {
  if (daemon_.running()) daemon_.Stop();
}

std::vector<std::string> LoopbackSshd::SshArgv() const {
  // -F none: the user's and the system's ssh_config stay out of it.
  // IdentitiesOnly: only our key is offered, not an agent's or ~/.ssh's.
  // ConnectTimeout bounds a probe that reaches a sshd not yet answering.
  return {kSsh, "-F", "none", "-p", std::to_string(port_), "-i", key_path_,
          "-o", "IdentitiesOnly=yes", "-o", "BatchMode=yes", "-o", "StrictHostKeyChecking=no",
          "-o", "UserKnownHostsFile=/dev/null", "-o", "LogLevel=ERROR", "-o", "ConnectTimeout=10"};
}

std::string LoopbackSshd::SshCommand() const {
  std::string command;
  for (const std::string& word : SshArgv()) {
    if (!command.empty()) command += ' ';
    command += ShellWord(word);
  }
  return command;
}

}  // namespace clickatron::testing
