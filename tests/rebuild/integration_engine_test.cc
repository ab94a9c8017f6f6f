// The rebuild's tasks on GNU parallel over ssh (rebuild/engine/), for real:
// an OpenSSH server on loopback is the engine's host, GNU parallel copies
// each task's in/ there and its out/ back. The archive must be exact against
// the oracle, byte-identical to what the local engine builds from the same
// inputs, and a killed or failing task must be retried without redoing the
// tasks that finished.
#include <gtest/gtest.h>

#include <sys/stat.h>

#include <algorithm>
#include <set>

#include "rebuild_cluster_fixture.h"
#include "testutil/sshd.h"

namespace clickatron {
namespace {

bool GnuParallelInstalled() { return ::access("/usr/bin/parallel", X_OK) == 0; }

class RebuildOnGnuParallel : public RebuildIntegration {
 protected:
  void SetUp() override {
    if (!testing::SshdAvailable() || !GnuParallelInstalled()) {
      GTEST_SKIP() << "needs openssh-server and GNU parallel (scripts/deps installs them)";
    }
    RebuildIntegration::SetUp();
    if (HasFatalFailure()) return;
    std::string error;
    ASSERT_TRUE(MakeDirs(cluster_ / "sshd").ok());
    ASSERT_TRUE(sshd_.Start(cluster_ / "sshd", &error)) << error;
    ASSERT_TRUE(MakeDirs(control_dir()).ok());
  }

  std::string control_dir() const { return cluster_ / "engine-control"; }
  std::string engine_config() const { return cluster_ / "cluster-engine.toml"; }
  std::string engine_work() const { return cluster_ / "work-engine"; }

  // The cluster file with the gnu-parallel engine and a work dir (and backup
  // dir) of its own. `command` is what the engine's host runs.
  void WriteEngineConfig(const std::string& command, int retries) {
    std::string toml = testing::ReadAll(cluster_.config_path());
    const auto replace = [&](const std::string& from, const std::string& to) {
      const size_t at = toml.find(from);
      ASSERT_NE(at, std::string::npos) << from << " not in " << cluster_.config_path();
      toml.replace(at, from.size(), to);
    };
    replace("\"" + (cluster_ / "work") + "\"", "\"" + engine_work() + "\"");
    replace("\"" + (cluster_ / "backup") + "\"", "\"" + (cluster_ / "backup-engine") + "\"");
    const nlohmann::json ssh = sshd_.SshCommand();  // a JSON string is a TOML basic string
    replace("[rebuild]\n", fmt::format("[rebuild]\nengine = \"gnu-parallel\"\nengine_hosts = [\"2/127.0.0.1\"]\n"
                                       "engine_ssh = {}\nengine_command = \"{}\"\nengine_retries = {}\n",
                                       ssh.dump(), command, retries));
    testing::WriteAll(engine_config(), toml);
  }

  // A wrapper the engine runs instead of clickatron-rebuild: it logs each
  // task it is given, SIGKILLs itself once for a task with a kill-once-NAME
  // file, fails every time for one with fail-NAME, and otherwise runs the
  // real binary.
  std::string WriteTaskWrapper() {
    const std::string path = control_dir() + "/rebuild-task";
    const std::string c = control_dir();
    testing::WriteAll(path, fmt::format(R"(#!/bin/sh
name="$5"
echo "$name" >> {0}/invocations
if [ -e "{0}/kill-once-$name" ]; then rm -f "{0}/kill-once-$name"; kill -9 $$; fi
if [ -e "{0}/fail-$name" ]; then echo "told to fail" >&2; exit 1; fi
if [ -e "{0}/vanish-$name" ]; then exit 0; fi
exec {1} "$@"
)",
                                        c, BinaryPath("clickatron-rebuild")));
    EXPECT_EQ(::chmod(path.c_str(), 0755), 0);
    return path;
  }
  std::map<std::string, int> Invocations() {
    std::map<std::string, int> count;
    for (const std::string& line : FileLines(control_dir() + "/invocations")) {
      if (!line.empty()) ++count[line];
    }
    return count;
  }

  int RunWith(const std::string& config, int64_t day, std::string* output, bool build_only = false) {
    std::vector<std::string> args = {"run", "--config", config, "--date", FormatDate(day)};
    if (build_only) args.push_back("--build-only");
    return Rebuild(args, output);
  }

  testing::LoopbackSshd sshd_;
};

TEST_F(RebuildOnGnuParallel, BuildsByteForByteWhatTheLocalEngineBuilds) {
  WriteEngineConfig(BinaryPath("clickatron-rebuild"), 3);
  StartApi(0);
  Expectation expect;
  RotateAll(day_);
  PutRandomDay(day_, 31, 400, &expect);
  RotateAll(day_ + 1);
  std::string out;
  // Generation 1 on the engine: no previous generation.
  ASSERT_EQ(RunWith(engine_config(), day_, &out), 0) << out;
  EXPECT_NE(out.find("tasks on 1 host(s) with GNU parallel"), std::string::npos) << out;
  ExpectArchiveEquals(expect);

  // Generation 2: the day, late data (one input cut by shard for the engine)
  // and the previous generation, built first by the local engine (in the
  // fixture's work dir, which fetches generation 1 from the replicas) and
  // not deployed, then by the engine, which deploys it.
  PutRandomDay(day_ + 1, 32, 400, &expect);
  WriteLateFile(0, 1700000000, day_, 33, 90, &expect);
  RotateAll(day_ + 2);
  ASSERT_EQ(RunWith(cluster_.config_path(), day_ + 1, &out, /*build_only=*/true), 0) << out;
  EXPECT_EQ(ServedGeneration(0), 1) << "--build-only deploys nothing";
  ASSERT_EQ(RunWith(engine_config(), day_ + 1, &out), 0) << out;
  // Each merge task fetched its shard of generation 1 from a replica itself.
  EXPECT_NE(out.find("shard 0: generation 1 fetched from archive-"), std::string::npos) << out;
  EXPECT_NE(out.find("shard 1: generation 1 fetched from archive-"), std::string::npos) << out;
  ExpectArchiveEquals(expect);
  EXPECT_EQ(ServedGeneration(0), 2);
  for (int s = 0; s < kShards; ++s) {
    const std::string local = testing::ReadAll(cluster_ / fmt::format("work/gen/2/shard-{}.csv", s));
    const std::string engine = testing::ReadAll(engine_work() + fmt::format("/gen/2/shard-{}.csv", s));
    EXPECT_FALSE(local.empty());
    EXPECT_TRUE(local == engine) << "shard " << s << ": " << local.size() << " vs " << engine.size() << " bytes";
    auto local_manifest = ReadManifest(cluster_ / fmt::format("work/gen/2/shard-{}.csv.manifest", s));
    auto engine_manifest = ReadManifest(engine_work() + fmt::format("/gen/2/shard-{}.csv.manifest", s));
    ASSERT_TRUE(local_manifest.ok() && engine_manifest.ok());
    EXPECT_EQ(local_manifest->crc32, engine_manifest->crc32);
    EXPECT_EQ(local_manifest->late_inputs, engine_manifest->late_inputs);
    // The engine's backups came back with its out/ and went to backup_dir.
    EXPECT_TRUE(FileExists(cluster_ / fmt::format("backup-engine/gen-2/shard-{}.csv.gz", s)));
  }
}

// A re-partition on the engine: every previous file is checked and cut by
// the new count on the rebuild host, each task gets its part of each; the
// files are those the local engine builds reading the whole files.
TEST_F(RebuildOnGnuParallel, RepartitionsByteForByteAsTheLocalEngine) {
  Expectation expect;
  ASSERT_NO_FATAL_FAILURE(ArchiveFirstDay(51, 400, &expect));
  ASSERT_NO_FATAL_FAILURE(RewriteArchiveShards(3));
  ASSERT_NO_FATAL_FAILURE(StartArchiveReplica(2, 0));
  WriteEngineConfig(BinaryPath("clickatron-rebuild"), 3);
  PutRandomDay(day_ + 1, 52, 400, &expect);
  RotateAll(day_ + 2);
  std::string out;
  ASSERT_EQ(RunWith(cluster_.config_path(), day_ + 1, &out, /*build_only=*/true), 0) << out;
  ASSERT_EQ(RunWith(engine_config(), day_ + 1, &out), 0) << out;
  EXPECT_NE(out.find("re-partitions the archive from 2 to 3 archive shards"), std::string::npos) << out;
  ExpectArchiveCutInto(expect, 3, 2);
  for (int s = 0; s < 3; ++s) {
    const std::string local = testing::ReadAll(cluster_ / fmt::format("work/gen/2/shard-{}.csv", s));
    const std::string engine = testing::ReadAll(engine_work() + fmt::format("/gen/2/shard-{}.csv", s));
    EXPECT_FALSE(local.empty());
    EXPECT_TRUE(local == engine) << "shard " << s << ": " << local.size() << " vs " << engine.size() << " bytes";
    EXPECT_TRUE(FileExists(engine_work() + fmt::format("/gen/2/parts/previous-{}/split.done", s % 2)));
  }
}

TEST_F(RebuildOnGnuParallel, AKilledTaskIsRetriedAndARerunDoesOnlyWhatFailed) {
  WriteEngineConfig(WriteTaskWrapper(), 2);
  testing::WriteAll(control_dir() + "/kill-once-merge-0", "");
  testing::WriteAll(control_dir() + "/fail-merge-1", "");
  Expectation expect;
  RotateAll(day_);
  PutRandomDay(day_, 41, 400, &expect);
  RotateAll(day_ + 1);
  std::string out;
  EXPECT_NE(RunWith(engine_config(), day_, &out), 0) << out;
  EXPECT_NE(out.find("TASKS_FAILED"), std::string::npos) << out;
  EXPECT_NE(out.find("task merge-1 did not finish"), std::string::npos) << out;
  EXPECT_EQ(ServedGeneration(0), 0) << "nothing is deployed";
  EXPECT_EQ(ServedGeneration(1), 0);
  const std::map<std::string, int> first = Invocations();
  EXPECT_EQ(first, (std::map<std::string, int>{{"sort-0", 1}, {"sort-1", 1}, {"merge-0", 2}, {"merge-1", 2}}))
      << "merge-0 killed once and run again; merge-1 failed on both of its attempts";
  EXPECT_FALSE(FileExists(control_dir() + "/kill-once-merge-0"));

  // The host is mended: the rerun does merge-1 only.
  ASSERT_EQ(::unlink((control_dir() + "/fail-merge-1").c_str()), 0);
  ASSERT_EQ(::unlink((control_dir() + "/invocations").c_str()), 0);
  ASSERT_EQ(RunWith(engine_config(), day_, &out), 0) << out;
  EXPECT_EQ(Invocations(), (std::map<std::string, int>{{"merge-1", 1}}));
  ExpectArchiveEquals(expect);
  EXPECT_EQ(ServedGeneration(0), 1);
  EXPECT_EQ(ServedGeneration(1), 1);
}

// Tasks that end well on the engine but whose results never arrive (what
// a full disk on this host does to rsync's copy back): the message says
// so, rather than sending the operator to a job log of successes (probe
// 10b).
TEST_F(RebuildOnGnuParallel, TasksWhoseResultsDoNotComeBackAreSaidToBeThat) {
  WriteEngineConfig(WriteTaskWrapper(), 1);
  testing::WriteAll(control_dir() + "/vanish-sort-0", "");
  Expectation expect;
  RotateAll(day_);
  PutRandomDay(day_, 43, 100, &expect);
  RotateAll(day_ + 1);
  std::string out;
  EXPECT_NE(RunWith(engine_config(), day_, &out), 0) << out;
  EXPECT_NE(out.find("TASKS_FAILED"), std::string::npos) << out;
  EXPECT_NE(out.find("GNU parallel says the tasks ended well, so their results did not come back"),
            std::string::npos)
      << out;
  EXPECT_EQ(ServedGeneration(0), 0) << "nothing is deployed";
}

// A restatement on the engine: each merge task gets the rule and its keys
// file shipped in its in/, takes the restated hours out of the previous
// generation it fetched itself, and the files equal the oracle.
class RestateOnGnuParallel : public RebuildOnGnuParallel {
 protected:
  RestateOnGnuParallel() { loader_ = "api-1"; }  // every API member runs (the seal asks each)
};

TEST_F(RestateOnGnuParallel, ShipsTheRuleAndItsKeysToEveryTask) {
  WriteEngineConfig(BinaryPath("clickatron-rebuild"), 2);
  ASSERT_NO_FATAL_FAILURE(StartApi(0));
  ASSERT_NO_FATAL_FAILURE(StartApi(1));
  Expectation expect;
  RotateAll(day_);
  PutRandomDay(day_, 61, 400, &expect);
  RotateAll(day_ + 1);
  std::string out;
  ASSERT_EQ(RunWith(engine_config(), day_, &out), 0) << out;
  const std::set<std::string> keys = {"key2", "key7", "key30"};
  expect.Forget("u", day_ * kSecondsPerDay, (day_ + 1) * kSecondsPerDay, &keys);
  std::string data;
  for (const std::string& key : keys) {
    data += fmt::format("u|{}.{},9\nc.u|{}.CA.{},9\n", key, Ymdh(day_, 12), key, Ymdh(day_, 12));
    expect.AddTotal("u", key, Ymdh(day_, 12), 9);
    expect.AddSubtotal("c", "u", key, "CA", Ymdh(day_, 12), 9);
  }
  testing::WriteAll(cluster_ / "restated.csv", data);
  ASSERT_EQ(Rebuild({"restate", "--config", engine_config(), "--ns", "u", "--from", FormatDate(day_), "--to",
                     FormatDate(day_), "--keys-in-file", "--now", cluster_ / "restated.csv"},
                    &out),
            0)
      << out;
  EXPECT_NE(out.find("tasks on 1 host(s) with GNU parallel"), std::string::npos) << out;
  ExpectArchiveEquals(expect);
  EXPECT_EQ(ServedGeneration(0), 2);
}

}  // namespace
}  // namespace clickatron
