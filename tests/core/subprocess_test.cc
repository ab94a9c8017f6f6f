// RunProcess: exit codes, signals, stdin, a program that is not there, and
// the child's SIGPIPE back at its default.
#include <gtest/gtest.h>

#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <csignal>
#include <cstdlib>
#include <string>
#include <vector>

#include "clickatron/file_util.h"
#include "clickatron/subprocess.h"
#include "testutil/testutil.h"

namespace clickatron {
namespace {

TEST(RunProcessTest, ReportsExitCodesAndSignals) {
  auto ok = RunProcess({"sh", "-c", "exit 0"}, "", "");
  ASSERT_TRUE(ok.ok()) << ok.status().ToString();
  EXPECT_TRUE(ok->ok());
  auto three = RunProcess({"sh", "-c", "exit 3"}, "", "");
  ASSERT_TRUE(three.ok());
  EXPECT_EQ(three->exit_code, 3);
  EXPECT_FALSE(three->ok());
  EXPECT_EQ(three->Describe(), "exit code 3");
  auto killed = RunProcess({"sh", "-c", "kill -9 $$"}, "", "");
  ASSERT_TRUE(killed.ok());
  EXPECT_EQ(killed->signal, 9);
  EXPECT_EQ(killed->Describe(), "killed by signal 9");
}

TEST(RunProcessTest, FeedsStdinAndRunsInTheGivenDirectory) {
  testing::TempDir dir;
  auto ran = RunProcess({"sh", "-c", "cat > got.txt"}, dir.path(), "line one\nline two\n");
  ASSERT_TRUE(ran.ok()) << ran.status().ToString();
  EXPECT_TRUE(ran->ok()) << ran->Describe();
  EXPECT_EQ(testing::ReadAll(dir / "got.txt"), "line one\nline two\n");
  // A child that reads none of a large stdin still ends, and so do we.
  auto ignored = RunProcess({"true"}, "", std::string(4 << 20, 'x'));
  ASSERT_TRUE(ignored.ok());
  EXPECT_TRUE(ignored->ok());
}

TEST(RunProcessTest, AMissingProgramOrDirectoryIsAnError) {
  auto missing = RunProcess({"clickatron-no-such-program"}, "", "");
  ASSERT_FALSE(missing.ok());
  EXPECT_EQ(missing.status().code(), StatusCode::kNotFound);
  auto no_dir = RunProcess({"true"}, "/nonexistent/clickatron", "");
  ASSERT_FALSE(no_dir.ok());
  EXPECT_NE(no_dir.status().message().find("/nonexistent/clickatron"), std::string::npos);
}

// Our daemons ignore SIGPIPE; a child must not inherit that (a `yes | head`
// in it would spin on EPIPE instead of ending). The disposition the child's
// own child sees: /proc/self/status SigIgn, bit SIGPIPE-1.
TEST(RunProcessTest, TheChildHasSigpipeAtItsDefaultEvenWhenWeIgnoreIt) {
  testing::TempDir dir;
  const auto before = std::signal(SIGPIPE, SIG_IGN);
  auto status = RunProcess({"sh", "-c", "grep SigIgn /proc/self/status > sigign.txt"}, dir.path(), "");
  std::signal(SIGPIPE, before);
  ASSERT_TRUE(status.ok() && status->ok());
  const std::string line = testing::ReadAll(dir / "sigign.txt");
  ASSERT_NE(line.find(':'), std::string::npos) << line;
  const unsigned long long mask = std::stoull(line.substr(line.find(':') + 1), nullptr, 16);
  EXPECT_EQ(mask & (1ull << (SIGPIPE - 1)), 0u) << line;
}

// A caller killed (kill -9 of the rebuild) while GNU parallel runs its
// jobs: parallel is told to stop and stops its jobs too, instead of leaving
// them running on their own (each task would run on, unseen).
TEST(RunProcessTest, GnuParallelsJobsStopWhenTheCallerIsKilled) {
  if (std::system("parallel --will-cite --version > /dev/null 2>&1") != 0) GTEST_SKIP() << "no GNU parallel here";
  testing::TempDir dir;
  const std::string job = "echo $$ > " + (dir / "pid-{}") + "; exec sleep 120";
  const pid_t caller = ::fork();
  ASSERT_GE(caller, 0);
  if (caller == 0) {
    auto ran = RunProcess({"parallel", "--will-cite", job, ":::", "a", "b"}, "", "");
    ::_exit(ran.ok() ? 0 : 1);
  }
  std::vector<pid_t> jobs;
  ASSERT_TRUE(testing::WaitFor([&] {
    jobs.clear();
    for (const char* name : {"pid-a", "pid-b"}) {
      const std::string text = FileExists(dir / name) ? testing::ReadAll(dir / name) : "";
      if (text.empty() || text.back() != '\n') return false;
      jobs.push_back(static_cast<pid_t>(std::stol(text)));
    }
    return true;
  })) << "parallel's jobs did not start";
  ASSERT_EQ(::kill(caller, SIGKILL), 0);
  int status = 0;
  ASSERT_EQ(::waitpid(caller, &status, 0), caller);
  // Gone, or a zombie waiting for whoever adopted it.
  auto running = [](pid_t pid) {
    const std::string stat = FileExists("/proc/" + std::to_string(pid) + "/stat")
                                 ? testing::ReadAll("/proc/" + std::to_string(pid) + "/stat")
                                 : "";
    const size_t close = stat.rfind(')');
    return close != std::string::npos && close + 2 < stat.size() && stat[close + 2] != 'Z';
  };
  EXPECT_TRUE(testing::WaitFor([&] { return !running(jobs[0]) && !running(jobs[1]); }, std::chrono::seconds(20)))
      << "a job of the killed caller's GNU parallel still runs";
}

}  // namespace
}  // namespace clickatron
