// The loopback sshd of tests/testutil/sshd.h: it runs commands for its own
// key only, stops by PID, its sessions see the mounts of the command it is
// wrapped in, and GNU parallel can ship files through it (the rebuild runs
// tasks on hosts that way).
#include <gtest/gtest.h>
#include <unistd.h>

#include <algorithm>
#include <filesystem>

#include "testutil/sshd.h"
#include "testutil/testutil.h"

namespace clickatron {
namespace {

using testing::LoopbackSshd;
using testing::RunCommand;
using testing::TempDir;

std::vector<std::string> Remote(std::vector<std::string> ssh, const std::string& command) {
  ssh.push_back("127.0.0.1");
  ssh.push_back(command);
  return ssh;
}

TEST(SshdHarnessTest, RunsCommandsForItsKeyOnlyUntilStopped) {
  if (!testing::SshdAvailable()) GTEST_SKIP() << "no /usr/sbin/sshd or ssh-keygen";
  TempDir dir;
  LoopbackSshd sshd;
  std::string error;
  ASSERT_TRUE(sshd.Start(dir.path(), &error)) << error;

  // The remote shell does the arithmetic: a command really ran there.
  std::string out;
  EXPECT_EQ(RunCommand(Remote(sshd.SshArgv(), "echo hello-$((1+1))"), &out), 0) << out << sshd.LogTail();
  EXPECT_EQ(out, "hello-2\n");

  // Another key, same options otherwise: refused.
  const std::string other = dir / "other_key";
  ASSERT_EQ(RunCommand({"ssh-keygen", "-q", "-t", "ed25519", "-N", "", "-f", other}, &out), 0) << out;
  std::vector<std::string> wrong = sshd.SshArgv();
  auto key = std::find(wrong.begin(), wrong.end(), "-i");
  ASSERT_NE(key, wrong.end());
  *(key + 1) = other;
  EXPECT_NE(RunCommand(Remote(wrong, "true"), &out), 0) << out;

  sshd.Stop();
  EXPECT_NE(RunCommand(Remote(sshd.SshArgv(), "true"), &out), 0) << out;
}

TEST(SshdHarnessTest, SessionsSeeTheMountsOfTheWrap) {
  if (!testing::SshdAvailable()) GTEST_SKIP() << "no /usr/sbin/sshd or ssh-keygen";
  std::string out;
  if (::geteuid() != 0 || RunCommand({"unshare", "--mount", "true"}, &out) != 0) {
    GTEST_SKIP() << "cannot unshare a mount namespace here: " << out;
  }
  TempDir dir, covered;
  // The wrap mounts a tmpfs over `covered` in sshd's own mount namespace and
  // execs sshd (sh's exec keeps the PID Stop signals).
  const std::vector<std::string> wrap = {
      "unshare", "--mount", "--propagation", "private", "sh", "-c",
      "mount -t tmpfs tmpfs \"$0\" && touch \"$0\"/in-view && exec \"$@\"", covered.path()};
  LoopbackSshd sshd;
  std::string error;
  ASSERT_TRUE(sshd.Start(dir.path(), &error, wrap)) << error;
  EXPECT_EQ(RunCommand(Remote(sshd.SshArgv(), "test -e " + covered / "in-view"), &out), 0) << out << sshd.LogTail();
  EXPECT_FALSE(std::filesystem::exists(covered / "in-view"));
  sshd.Stop();
  EXPECT_NE(RunCommand(Remote(sshd.SshArgv(), "true"), &out), 0) << out;
}

TEST(SshdHarnessTest, GnuParallelTransfersRunsAndReturnsThroughIt) {
  if (!testing::SshdAvailable()) GTEST_SKIP() << "no /usr/sbin/sshd or ssh-keygen";
  if (!std::filesystem::exists("/usr/bin/parallel")) GTEST_SKIP() << "no /usr/bin/parallel";
  TempDir sshd_dir, local, remote;
  LoopbackSshd sshd;
  std::string error;
  ASSERT_TRUE(sshd.Start(sshd_dir.path(), &error)) << error;

  std::filesystem::create_directories(local / "t1/in");
  testing::WriteAll(local / "t1/in/x", "payload\n");
  // The job sees only what --transferfile shipped into its workdir (not
  // `local`), and its output comes back by --return alone.
  std::string out;
  const int rc = RunCommand({"env", "-C", local.path(), "parallel", "--will-cite", "--ssh", sshd.SshCommand(),
                             "--sshlogin", "1/127.0.0.1", "--workdir", remote / "work", "--transferfile", "{}/in",
                             "--return", "{}/out", "--cleanup", "mkdir -p {}/out && cat {}/in/x > {}/out/y", ":::",
                             "t1"},
                            &out);
  ASSERT_EQ(rc, 0) << out << sshd.LogTail();
  EXPECT_EQ(testing::ReadAll(local / "t1/out/y"), "payload\n");
}

}  // namespace
}  // namespace clickatron
