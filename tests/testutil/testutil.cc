#include "testutil/testutil.h"

#include "clickatron/file_util.h"

#include <fcntl.h>
#include <netinet/in.h>
#include <signal.h>
#include <sys/file.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <atomic>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <fstream>

#include <gtest/gtest.h>
#include <memory>
#include <mutex>
#include <random>
#include <sstream>
#include <thread>
#include <vector>

namespace clickatron::testing {

TempDir::TempDir() {
  const char* base = std::getenv("TMPDIR");
  std::string tmpl = std::string(base && *base ? base : "/tmp") + "/clickatron-test-XXXXXX";
  std::vector<char> buf(tmpl.begin(), tmpl.end());
  buf.push_back('\0');
  char* p = ::mkdtemp(buf.data());
  path_ = p ? p : "";
}

TempDir::~TempDir() {
  if (!path_.empty() && std::getenv("CLICKATRON_KEEP_TEST_DIRS") == nullptr) {
    std::error_code ec;
    std::filesystem::remove_all(path_, ec);
  }
}

namespace {

// Whether nothing listens on (or is bound to) 127.0.0.1:port right now.
bool Bindable(uint16_t port) {
  int fd = ::socket(AF_INET, SOCK_STREAM, 0);
  if (fd < 0) return false;
  int one = 1;
  ::setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof(one));  // as evhttp binds
  sockaddr_in addr{};
  addr.sin_family = AF_INET;
  addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  addr.sin_port = htons(port);
  const bool ok = ::bind(fd, reinterpret_cast<sockaddr*>(&addr), sizeof(addr)) == 0;
  ::close(fd);
  return ok;
}

// The lowest port the kernel hands out for outgoing connections and bind(0).
int EphemeralLow() {
  std::ifstream in("/proc/sys/net/ipv4/ip_local_port_range");
  int low = 0, high = 0;
  return (in >> low >> high) ? low : 0;
}

}  // namespace

uint16_t FreePort() {
  // A port handed out and then bound by a daemon started later could be
  // taken in between: by the kernel, for a client's outgoing connection or
  // another bind(0), or by a test in another process (ctest runs several).
  // So ports come from below the kernel's ephemeral range, where it never
  // hands any out, and each is reserved across processes by an flock held
  // until this process exits.
  static std::mutex mu;
  static std::vector<int> held;  // lock fds, open for the life of the process
  std::lock_guard lock(mu);
  const int low = EphemeralLow();
  constexpr int kFirst = 12000;
  if (low > kFirst + 1000) {
    const std::string dir = "/tmp/clickatron-test-ports";
    ::mkdir(dir.c_str(), 01777);
    std::mt19937 rng(static_cast<uint32_t>(::getpid()) * 2654435761u ^
                     static_cast<uint32_t>(std::chrono::steady_clock::now().time_since_epoch().count()));
    const int span = low - kFirst;
    for (int attempt = 0; attempt < 2000; ++attempt) {
      const auto port = static_cast<uint16_t>(kFirst + static_cast<int>(rng() % static_cast<uint32_t>(span)));
      const std::string path = dir + "/" + std::to_string(port);
      int fd = ::open(path.c_str(), O_RDWR | O_CREAT | O_CLOEXEC, 0666);
      if (fd < 0) continue;
      if (::flock(fd, LOCK_EX | LOCK_NB) != 0 || !Bindable(port)) {
        ::close(fd);
        continue;
      }
      held.push_back(fd);
      return port;
    }
  }
  // No room below the ephemeral range (or no lock dir): the kernel's choice.
  int fd = ::socket(AF_INET, SOCK_STREAM, 0);
  sockaddr_in addr{};
  addr.sin_family = AF_INET;
  addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  addr.sin_port = 0;
  ::bind(fd, reinterpret_cast<sockaddr*>(&addr), sizeof(addr));
  socklen_t len = sizeof(addr);
  ::getsockname(fd, reinterpret_cast<sockaddr*>(&addr), &len);
  uint16_t port = ntohs(addr.sin_port);
  ::close(fd);
  return port;
}

bool WaitFor(const std::function<bool()>& condition, std::chrono::milliseconds timeout) {
  auto deadline = std::chrono::steady_clock::now() + timeout;
  while (true) {
    if (condition()) return true;
    if (std::chrono::steady_clock::now() > deadline) return false;
    std::this_thread::sleep_for(std::chrono::milliseconds(10));  // poll interval, not synchronisation
  }
}

std::string BinaryPath(const std::string& name) { return std::string(CLICKATRON_BIN_DIR) + "/" + name; }

HostPort Loopback(uint16_t port) { return HostPort{"127.0.0.1", port}; }

int ConnectLoopback(uint16_t port) {
  const int fd = ::socket(AF_INET, SOCK_STREAM, 0);
  if (fd < 0) return -1;
  sockaddr_in addr{};
  addr.sin_family = AF_INET;
  addr.sin_port = htons(port);
  addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  if (::connect(fd, reinterpret_cast<sockaddr*>(&addr), sizeof addr) != 0) {
    ::close(fd);
    return -1;
  }
  return fd;
}

void StreamPieces(const HttpExchangePtr& ex, int chunks, std::function<std::string(int)> piece) {
  ex->StartStream(200, "text/plain");
  auto remaining = std::make_shared<int>(chunks);
  auto next = std::make_shared<std::function<void()>>();
  *next = [ex, remaining, next, piece = std::move(piece)] {
    if ((*remaining)-- == 0) {
      ex->EndStream();
      *next = nullptr;  // break the cycle
      return;
    }
    ex->SendChunk(piece(*remaining), *next);
  };
  (*next)();
}

DaemonProcess::~DaemonProcess() { Kill(); }

bool DaemonProcess::Start(const std::string& binary, const std::vector<std::string>& args, const std::string& log_path,
                          const std::function<bool()>& ready, std::string* error) {
  log_path_ = log_path;
  pid_t pid = ::fork();
  if (pid == 0) {
    int fd = ::open(log_path.c_str(), O_WRONLY | O_CREAT | O_APPEND, 0644);
    if (fd >= 0) {
      ::dup2(fd, 1);
      ::dup2(fd, 2);
      ::close(fd);
    }
    int devnull = ::open("/dev/null", O_RDONLY);
    if (devnull >= 0) ::dup2(devnull, 0);
    std::vector<char*> argv;
    argv.push_back(const_cast<char*>(binary.c_str()));
    for (const auto& a : args) argv.push_back(const_cast<char*>(a.c_str()));
    argv.push_back(nullptr);
    ::execv(binary.c_str(), argv.data());
    std::fprintf(stderr, "exec %s: %s\n", binary.c_str(), std::strerror(errno));
    ::_exit(127);
  }
  pid_ = pid;
  if (!ready) return true;
  bool up = WaitFor([&] {
    int status;
    if (::waitpid(pid_, &status, WNOHANG) == pid_) {
      pid_ = -1;
      return true;  // exited: stop waiting
    }
    return ready();
  });
  if (!up || pid_ < 0) {
    if (error) *error = "daemon did not come up: " + LogTail();
    Kill();
    return false;
  }
  return true;
}

int DaemonProcess::Stop(std::chrono::milliseconds timeout) {
  if (pid_ <= 0) return -1;
  ::kill(pid_, SIGTERM);
  int status = 0;
  bool exited = WaitFor([&] { return ::waitpid(pid_, &status, WNOHANG) == pid_; }, timeout);
  if (!exited) {
    Kill();
    return -1;
  }
  pid_ = -1;
  return WIFEXITED(status) ? WEXITSTATUS(status) : -1;
}

void DaemonProcess::Kill() {
  if (pid_ <= 0) return;
  ::kill(pid_, SIGKILL);
  int status;
  ::waitpid(pid_, &status, 0);
  pid_ = -1;
}

std::string DaemonProcess::LogTail(size_t bytes) const {
  std::ifstream in(log_path_, std::ios::binary);
  std::stringstream ss;
  ss << in.rdbuf();
  std::string s = ss.str();
  return s.size() > bytes ? s.substr(s.size() - bytes) : s;
}

int RunCommand(const std::vector<std::string>& argv, std::string* output, const std::string& stdin_data) {
  int in_pipe[2], out_pipe[2];
  if (::pipe(in_pipe) != 0 || ::pipe(out_pipe) != 0) return -1;
  pid_t pid = ::fork();
  if (pid == 0) {
    ::dup2(in_pipe[0], 0);
    ::dup2(out_pipe[1], 1);
    ::dup2(out_pipe[1], 2);
    ::close(in_pipe[1]);
    ::close(out_pipe[0]);
    std::vector<char*> args;
    for (const auto& a : argv) args.push_back(const_cast<char*>(a.c_str()));
    args.push_back(nullptr);
    ::execvp(args[0], args.data());
    ::_exit(127);
  }
  ::close(in_pipe[0]);
  ::close(out_pipe[1]);
  std::thread writer([&] {
    size_t done = 0;
    while (done < stdin_data.size()) {
      ssize_t n = ::write(in_pipe[1], stdin_data.data() + done, stdin_data.size() - done);
      if (n <= 0) break;
      done += static_cast<size_t>(n);
    }
    ::close(in_pipe[1]);
  });
  std::string out;
  char buf[65536];
  ssize_t n;
  while ((n = ::read(out_pipe[0], buf, sizeof(buf))) > 0) out.append(buf, static_cast<size_t>(n));
  ::close(out_pipe[0]);
  writer.join();
  int status = 0;
  ::waitpid(pid, &status, 0);
  if (output) *output = std::move(out);
  return WIFEXITED(status) ? WEXITSTATUS(status) : -1;
}

std::string ReadAll(const std::string& path) {
  auto bytes = ReadFileToString(path);
  if (!bytes.ok()) {
    ADD_FAILURE() << "ReadAll: " << bytes.status().ToString();
    return "";
  }
  return std::move(bytes).value();
}

void WriteAll(const std::string& path, const std::string& data) {
  std::ofstream out(path, std::ios::binary | std::ios::trunc);
  out << data;
  out.close();
  if (!out) ADD_FAILURE() << "WriteAll: cannot write " << path;
}

bool WriteWithMode(const std::string& path, const std::string& contents, mode_t mode) {
  int fd = ::open(path.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0600);
  if (fd < 0) return false;
  bool ok = ::write(fd, contents.data(), contents.size()) == static_cast<ssize_t>(contents.size());
  ok = ::fchmod(fd, mode) == 0 && ok;
  return ::close(fd) == 0 && ok;
}

std::string WriteTestSecret(const std::string& dir) {
  const std::string path = dir + "/cluster.secret";
  if (!FileExists(path) && !WriteWithMode(path, std::string(kTestClusterSecret) + "\n", 0600)) {
    std::fprintf(stderr, "WriteTestSecret: cannot write %s\n", path.c_str());
  }
  return path;
}

HostPort NeverStartedAddress() {
  // Not a FreePort(): one here once collided with a started member. Every
  // test process hands out the same ones, so such a member must never start.
  static std::atomic<int> next{1};
  return HostPort{"127.255.0.1", static_cast<uint16_t>(next.fetch_add(1) % 65535 + 1)};
}

HttpResponse HttpGet(const HostPort& peer, const std::string& target, int timeout_ms, const std::string& bearer) {
  BlockingHttpClient client(kTestClusterSecret);
  HttpRequestSpec spec;
  spec.method = "GET";
  spec.target = target;
  spec.timeout_ms = timeout_ms;
  spec.bearer_token = bearer;
  return client.Fetch(peer, std::move(spec));
}

HttpResponse HttpPost(const HostPort& peer, const std::string& target, const std::string& body, int timeout_ms,
                      const std::string& bearer) {
  BlockingHttpClient client(kTestClusterSecret);
  HttpRequestSpec spec;
  spec.method = "POST";
  spec.target = target;
  spec.body = body;
  spec.timeout_ms = timeout_ms;
  spec.bearer_token = bearer;
  return client.Fetch(peer, std::move(spec));
}

std::string LinesWithAnyPrefix(const std::map<std::string, int64_t>& records, const std::vector<std::string>& prefixes) {
  std::string out;
  for (const auto& [key, value] : records) {
    for (const std::string& p : prefixes) {
      if (key.starts_with(p)) {
        out += key + "," + std::to_string(value) + "\n";
        break;
      }
    }
  }
  return out;
}

}  // namespace clickatron::testing
