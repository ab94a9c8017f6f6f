// RecoveryGate (realtime/recovery_gate.h): after a crash, reads wait for the
// API nodes whose batches the shard had persisted to re-send what it lost;
// a clean stop or a fresh data dir waits for nobody.
#include "recovery_gate.h"

#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "clickatron/file_util.h"
#include "testutil/testutil.h"

namespace clickatron::realtime::recovery_gate_test {
namespace {

using clickatron::testing::TempDir;
using Clock = RecoveryGate::Clock;
using std::chrono::milliseconds;

const std::set<std::string, std::less<>> kApis = {"api-0", "api-1", "api-2"};
const std::map<std::string, uint64_t> kDurable = {{"api-0", 40}, {"api-1", 7}, {"api-2", 0}, {"loader", 9}};

RecoveryGate OpenAt(const TempDir& dir, Clock::time_point now) {
  Result<RecoveryGate> gate = RecoveryGate::Open(dir.path(), kDurable, kApis, milliseconds(10000), now);
  EXPECT_TRUE(gate.ok()) << gate.status().ToString();
  return std::move(gate).value();
}

// The gate holds reads back, naming each of `waited` and none of `not_waited`.
void ExpectWaitingFor(RecoveryGate& gate, Clock::time_point now, const std::vector<std::string>& waited,
                      const std::vector<std::string>& not_waited) {
  const std::optional<std::string> why = gate.HeldBack(now);
  ASSERT_TRUE(why);
  for (const std::string& name : waited) EXPECT_NE(why->find(name), std::string::npos) << name << ": " << *why;
  for (const std::string& name : not_waited) EXPECT_EQ(why->find(name), std::string::npos) << name << ": " << *why;
}

TEST(RecoveryGateTest, AFreshDataDirAndACleanStopHoldNothingBack) {
  TempDir dir;
  const Clock::time_point t0 = Clock::now();
  RecoveryGate first = OpenAt(dir, t0);
  EXPECT_FALSE(first.HeldBack(t0));
  EXPECT_TRUE(FileExists(dir.path() + "/running"));
  ASSERT_TRUE(first.MarkStoppedCleanly().ok());
  EXPECT_FALSE(FileExists(dir.path() + "/running"));
  RecoveryGate second = OpenAt(dir, t0);
  EXPECT_FALSE(second.HeldBack(t0));
  EXPECT_FALSE(second.recovering(t0));
}

TEST(RecoveryGateTest, AfterACrashReadsWaitUntilEachApiNodeWithPersistedBatchesHasReSent) {
  TempDir dir;
  const Clock::time_point t0 = Clock::now();
  OpenAt(dir, t0);  // never stopped cleanly: the marker stays, as after kill -9
  RecoveryGate gate = OpenAt(dir, t0);
  ASSERT_TRUE(gate.recovering(t0));
  // Waits for the API members with a persisted watermark: not api-2 (none),
  // not "loader" (not an API member of the cluster file).
  ExpectWaitingFor(gate, t0, {"api-0", "api-1"}, {"api-2", "loader"});

  // api-0 had heard 55 applied; the shard restarted at 40: still re-sending.
  gate.Heard("api-0", 55, 40);
  gate.Heard("api-0", 55, 54);
  EXPECT_TRUE(gate.HeldBack(t0));
  gate.Heard("api-0", 55, 55);
  // api-1 sends no heard= (an older node, a tool): taken at its word.
  gate.Heard("api-1", std::nullopt, 7);
  EXPECT_FALSE(gate.HeldBack(t0));
  EXPECT_FALSE(gate.recovering(t0));
}

// A node whose batches no checkpoint has persisted yet (api-2: watermark 0)
// is waited for once one of its batches was applied: its first batch is
// noted in the data dir (a re-check found a new shard's day sealed short).
TEST(RecoveryGateTest, ANodeWithNothingPersistedIsWaitedForOnceItSentABatch) {
  TempDir dir;
  const Clock::time_point t0 = Clock::now();
  RecoveryGate first = OpenAt(dir, t0);
  ASSERT_TRUE(first.NoteSender("api-2").ok());
  ASSERT_TRUE(first.NoteSender("api-2").ok());
  ASSERT_TRUE(first.NoteSender("loader").ok());  // noted, but no API member
  RecoveryGate gate = OpenAt(dir, t0);  // after a crash
  ExpectWaitingFor(gate, t0, {"api-2"}, {"loader"});
  gate.Heard("api-0", 40, 40);
  gate.Heard("api-1", 7, 7);
  EXPECT_TRUE(gate.HeldBack(t0));
  gate.Heard("api-2", 3, 2);
  EXPECT_TRUE(gate.HeldBack(t0));
  gate.Heard("api-2", 3, 3);
  EXPECT_FALSE(gate.HeldBack(t0));
}

// A crash may tear the last name noted: it is cut off at the next start, so
// the next name appended is not glued to it (a reviewer: "api-api-2").
TEST(RecoveryGateTest, ATornLastNameIsCutOffBeforeTheNextIsNoted) {
  TempDir dir;
  const Clock::time_point t0 = Clock::now();
  ASSERT_TRUE(WriteFileAtomically(dir.path() + "/sources", "api-1\napi-").ok());
  RecoveryGate first = OpenAt(dir, t0);
  ASSERT_TRUE(first.NoteSender("api-2").ok());
  Result<std::string> noted = ReadFileToString(dir.path() + "/sources");
  ASSERT_TRUE(noted.ok());
  EXPECT_EQ(*noted, "api-1\napi-2\n");
  RecoveryGate gate = OpenAt(dir, t0);  // after a crash
  gate.Heard("api-0", 40, 40);
  gate.Heard("api-1", 7, 7);
  EXPECT_TRUE(gate.HeldBack(t0));  // api-2 noted whole
  gate.Heard("api-2", 1, 1);
  EXPECT_FALSE(gate.HeldBack(t0));
}

TEST(RecoveryGateTest, ANodeThatNeverAnswersHoldsReadsBackForMaxWaitOnly) {
  TempDir dir;
  const Clock::time_point opened = Clock::now();
  OpenAt(dir, opened);
  RecoveryGate gate = OpenAt(dir, opened);
  // The wait counts from when the shard serves (its start may block first).
  const Clock::time_point t0 = opened + milliseconds(7000);
  gate.StartServing(t0);
  gate.Heard("api-0", 40, 40);
  EXPECT_TRUE(gate.HeldBack(t0 + milliseconds(9999)));  // api-1 is down
  EXPECT_TRUE(gate.recovering(t0 + milliseconds(9999)));
  EXPECT_FALSE(gate.recovering(t0 + milliseconds(10000)));
  EXPECT_FALSE(gate.HeldBack(t0 + milliseconds(10000)));
  EXPECT_FALSE(gate.HeldBack(t0 + milliseconds(10001)));
}

// A long re-send (a tail that grew while checkpoints failed) keeps reads
// back while its batches come, and max_wait after the last one at most.
TEST(RecoveryGateTest, AReSendStillUnderWayKeepsReadsBack) {
  TempDir dir;
  const Clock::time_point t0 = Clock::now();
  OpenAt(dir, t0);
  RecoveryGate gate = OpenAt(dir, t0);
  gate.StartServing(t0);
  gate.Heard("api-1", 7, 7);
  for (int s = 1; s <= 30; ++s) gate.Heard("api-0", 5000, 40 + s, t0 + std::chrono::seconds(s));
  // Polls that find no batch applied since are no progress.
  for (int s = 31; s <= 60; ++s) gate.Heard("api-0", 5000, 70, t0 + std::chrono::seconds(s));
  EXPECT_TRUE(gate.HeldBack(t0 + std::chrono::seconds(39)));
  EXPECT_FALSE(gate.HeldBack(t0 + std::chrono::seconds(40)));
}

}  // namespace
}  // namespace clickatron::realtime::recovery_gate_test
