// An OpenSSH server on loopback, for tests of code that reaches "hosts" over
// ssh (the rebuild runs its tasks through GNU parallel --ssh). It accepts one
// key it generates, for the user running the test, and nothing else.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "testutil/testutil.h"

namespace clickatron::testing {

// Whether sshd, ssh-keygen and ssh are installed in /usr (tests skip otherwise).
bool SshdAvailable();

// sshd on 127.0.0.1:<FreePort()>, started as a child process, stopped by PID.
class LoopbackSshd {
 public:
  LoopbackSshd() = default;
  ~LoopbackSshd() { Stop(); }
  LoopbackSshd(const LoopbackSshd&) = delete;
  LoopbackSshd& operator=(const LoopbackSshd&) = delete;

  // `dir`: a private directory for keys, config and log. `wrap`: an optional
  // argv prefix sshd runs under (e.g. {"unshare", "--mount", ...}) so that
  // sessions see that view; it must exec sshd (not fork it off) for Stop's
  // SIGTERM to reach sshd. Returns once `ssh … true` succeeds (at most 20 s);
  // false with the reason (and sshd's log) in *error.
  bool Start(const std::string& dir, std::string* error, const std::vector<std::string>& wrap = {});
  void Stop();
  uint16_t port() const { return port_; }

  // ssh with the options that reach this server, without the host: one
  // string for GNU parallel's --ssh, and as argv for RunCommand.
  std::string SshCommand() const;
  std::vector<std::string> SshArgv() const;
  std::string LogTail() const { return daemon_.LogTail(); }

 private:
  DaemonProcess daemon_;
  uint16_t port_ = 0;
  std::string key_path_;
};

}  // namespace clickatron::testing
