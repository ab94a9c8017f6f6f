#include "clickatron/subprocess.h"

#include <fcntl.h>
#include <pthread.h>
#include <sys/prctl.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <csignal>
#include <cstring>
#include <thread>

#include <fmt/format.h>

#include "clickatron/unique_fd.h"

namespace clickatron {

std::string ProcessResult::Describe() const {
  if (signal != 0) return fmt::format("killed by signal {}", signal);
  return fmt::format("exit code {}", exit_code);
}

Result<ProcessResult> RunProcess(const std::vector<std::string>& argv, const std::string& cwd,
                                 const std::string& stdin_data) {
  if (argv.empty()) return Status::InvalidArgument("RunProcess: no program");
  int in_pipe[2];
  // Tells the parent whether exec worked: closed by exec (O_CLOEXEC), or
  // carrying the child's errno when it did not.
  int exec_pipe[2];
  if (::pipe2(in_pipe, O_CLOEXEC) != 0) return Status::IoError(fmt::format("pipe: {}", std::strerror(errno)));
  UniqueFd in_read(in_pipe[0]), in_write(in_pipe[1]);
  if (::pipe2(exec_pipe, O_CLOEXEC) != 0) return Status::IoError(fmt::format("pipe: {}", std::strerror(errno)));
  UniqueFd exec_read(exec_pipe[0]), exec_write(exec_pipe[1]);

  std::vector<char*> args;
  for (const std::string& a : argv) args.push_back(const_cast<char*>(a.c_str()));
  args.push_back(nullptr);
  const pid_t parent = ::getpid();
  const pid_t pid = ::fork();
  if (pid < 0) return Status::IoError(fmt::format("fork: {}", std::strerror(errno)));
  if (pid == 0) {
    // Only async-signal-safe calls from here on. The child starts with the
    // default signal dispositions and mask (our daemons ignore SIGPIPE,
    // which exec would pass on), and is told to stop when we die: a program
    // left running after the rebuild died (GNU parallel) must not go on
    // copying results into a work dir a rerun owns. SIGTERM, not SIGKILL:
    // GNU parallel stops its running jobs on it (its --termseq); killed, it
    // left them running, each task on for as long as it took.
    ::signal(SIGPIPE, SIG_DFL);
    sigset_t none;
    sigemptyset(&none);
    ::sigprocmask(SIG_SETMASK, &none, nullptr);
    ::prctl(PR_SET_PDEATHSIG, SIGTERM);
    if (::getppid() != parent) ::_exit(127);  // we died before prctl
    if (in_read.get() == 0) {
      ::fcntl(0, F_SETFD, 0);  // already stdin: keep it open across exec
    } else {
      ::dup2(in_read.get(), 0);
    }
    int err = 0;
    if (!cwd.empty() && ::chdir(cwd.c_str()) != 0) err = errno;
    if (err == 0) {
      ::execvp(args[0], args.data());
      err = errno;
    }
    (void)!::write(exec_write.get(), &err, sizeof(err));
    ::_exit(127);
  }
  in_read.Reset();
  exec_write.Reset();
  int child_errno = 0;
  ssize_t got;
  while ((got = ::read(exec_read.get(), &child_errno, sizeof(child_errno))) < 0 && errno == EINTR) {
  }
  const bool exec_failed = got == sizeof(child_errno);

  std::thread writer([&] {
    // A child that exits without reading all of stdin must give EPIPE here,
    // not a SIGPIPE that kills the caller: blocked in this thread, the
    // signal a write raises stays with it and goes when it ends.
    sigset_t pipe_only;
    sigemptyset(&pipe_only);
    sigaddset(&pipe_only, SIGPIPE);
    ::pthread_sigmask(SIG_BLOCK, &pipe_only, nullptr);
    size_t done = 0;
    while (!exec_failed && done < stdin_data.size()) {
      const ssize_t n = ::write(in_write.get(), stdin_data.data() + done, stdin_data.size() - done);
      if (n < 0 && errno == EINTR) continue;
      if (n <= 0) break;  // the child closed its stdin: it reads no more
      done += static_cast<size_t>(n);
    }
    in_write.Reset();
  });
  int status = 0;
  pid_t waited;
  while ((waited = ::waitpid(pid, &status, 0)) < 0 && errno == EINTR) {
  }
  const int wait_errno = errno;
  writer.join();
  if (waited < 0) return Status::IoError(fmt::format("waitpid {}: {}", argv[0], std::strerror(wait_errno)));
  if (exec_failed) {
    const std::string what = fmt::format("cannot run {}{}: {}", argv[0], cwd.empty() ? "" : " in " + cwd,
                                         std::strerror(child_errno));
    return child_errno == ENOENT ? Status::NotFound(what) : Status::IoError(what);
  }
  ProcessResult result;
  if (WIFSIGNALED(status)) {
    result.signal = WTERMSIG(status);
  } else {
    result.exit_code = WEXITSTATUS(status);
  }
  return result;
}

}  // namespace clickatron
