// Test helpers: temp dirs, free loopback ports, real daemons started as child
// processes and stopped by PID, waiting on conditions (never on sleeps), and
// a blocking HTTP client. Whole clusters of daemons: testutil/cluster.h.
#pragma once

#include <sys/types.h>

#include <chrono>
#include <functional>
#include <map>
#include <string>
#include <string_view>
#include <vector>

#include "clickatron/config.h"
#include "clickatron/http_client.h"
#include "clickatron/http_server.h"
#include "clickatron/proc_status.h"

namespace clickatron::testing {

// A fresh directory under $TMPDIR, removed (recursively) on destruction.
class TempDir {
 public:
  TempDir();
  ~TempDir();
  const std::string& path() const { return path_; }
  std::string operator/(const std::string& name) const { return path_ + "/" + name; }

 private:
  std::string path_;
};

// A loopback port nothing listens on now, reserved for this process: no
// other test process gets it, and the kernel never hands it out (it lies
// below the ephemeral range), so a daemon started later can bind it.
uint16_t FreePort();

// Polls `condition` every few ms until it is true or `timeout` passes.
bool WaitFor(const std::function<bool()>& condition, std::chrono::milliseconds timeout = std::chrono::seconds(20));

// A field of /proc/PID/status in kB ("VmRSS", "VmHWM", "RssFile"; pid 0:
// this process), or -1 when it cannot be read.
using ::clickatron::ProcStatusKb;

// Absolute path of a built binary ("clickatron-realtime").
std::string BinaryPath(const std::string& name);

// A daemon child process: stdout/stderr go to `log_path`.
class DaemonProcess {
 public:
  DaemonProcess() = default;
  ~DaemonProcess();  // SIGKILL if still running
  DaemonProcess(const DaemonProcess&) = delete;
  DaemonProcess& operator=(const DaemonProcess&) = delete;

  // Starts `binary args…` and, given `ready`, waits until it holds (a
  // cluster member: GET /ping answers 200). Returns false (with the log tail
  // in *error) when the process exits first or `ready` never holds.
  bool Start(const std::string& binary, const std::vector<std::string>& args, const std::string& log_path,
             const std::function<bool()>& ready, std::string* error = nullptr);
  // SIGTERM and wait for exit; returns the exit status (or -1).
  int Stop(std::chrono::milliseconds timeout = std::chrono::seconds(20));
  // SIGKILL and reap.
  void Kill();
  bool running() const { return pid_ > 0; }
  pid_t pid() const { return pid_; }
  std::string LogTail(size_t bytes = 4000) const;

 private:
  pid_t pid_ = -1;
  std::string log_path_;
};

// Runs a command to completion; returns its exit code, output captured.
// "key,value\n" lines of every key in `records` (key order) that starts with
// any of `prefixes`, each once: what a realtime (m)fwmatch must answer.
std::string LinesWithAnyPrefix(const std::map<std::string, int64_t>& records, const std::vector<std::string>& prefixes);

int RunCommand(const std::vector<std::string>& argv, std::string* output, const std::string& stdin_data = "");

// The whole file's bytes, and a plain overwrite: tests that corrupt or cut
// files on purpose want no atomic rename. Either fails the test (ADD_FAILURE)
// when the file cannot be read or written; ReadAll then gives "".
std::string ReadAll(const std::string& path);
void WriteAll(const std::string& path, const std::string& data);

// Writes `contents` to `path` and sets exactly `mode` (independent of umask).
bool WriteWithMode(const std::string& path, const std::string& contents, mode_t mode);

// Every test cluster runs with a cluster secret, as users run theirs; the
// helpers below sign with it (a test of unsigned requests uses its own
// BlockingHttpClient).
inline constexpr const char* kTestClusterSecret = "clickatron-test-cluster-secret-0123456789";
// Writes kTestClusterSecret to DIR/cluster.secret (mode 600) unless it is
// there already, and returns its path.
std::string WriteTestSecret(const std::string& dir);
// The address of an API member that no test starts (ClusterSpec::loaders):
// on 127.255.0.1, where no started member listens (FreePort hands out
// 127.0.0.1 ports only).
HostPort NeverStartedAddress();

// Answers `ex` with a 200 text stream of `chunks` pieces, piece(chunks - 1)
// first and piece(0) last, each sent from the previous one's on_sent (as a
// daemon's streams do: one chunk in memory at a time).
void StreamPieces(const HttpExchangePtr& ex, int chunks, std::function<std::string(int)> piece);

// Blocking HTTP against loopback daemons, signed with kTestClusterSecret.
HttpResponse HttpGet(const HostPort& peer, const std::string& target, int timeout_ms = 10000,
                     const std::string& bearer = "");
HttpResponse HttpPost(const HostPort& peer, const std::string& target, const std::string& body,
                      int timeout_ms = 10000, const std::string& bearer = "");

HostPort Loopback(uint16_t port);
// A raw TCP connection to 127.0.0.1:port, for tests that write requests by
// hand (a client that leaves mid-answer); -1 if it cannot connect.
int ConnectLoopback(uint16_t port);

}  // namespace clickatron::testing
