// The oplog's commit frames (issue 47): the Idempotency-Key values a commit
// answers are durable with its batches and found again at open; batches a
// crash left after a segment's last commit frame are cut, so a client's retry
// of an unanswered request cannot count them a second time; segments from
// before commit frames keep every batch. And (issue 53 §2) a damaged closed
// segment whose batches every shard confirmed durable is set aside instead of
// stopping the node, while one still needed stops it, naming the file.
#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <future>

#include "clickatron/framed_log.h"
#include "clickatron/oplog_record.h"
#include "ingest/oplog.h"
#include "testutil/testutil.h"

namespace clickatron::api {
namespace {

using testing::TempDir;

OplogOptions CommitTestOptions(const std::string& dir) {
  OplogOptions o;
  o.dir = dir;
  o.source = "api-0";
  o.shard_count = 2;
  o.sync = SyncPolicy::kAlways;
  o.retention_hours = 0;
  return o;
}

Result<std::unique_ptr<Oplog>> OpenCommitTestLog(const std::string& dir) {
  return Oplog::Open(CommitTestOptions(dir), [](std::function<void()> fn) { fn(); });
}

BatchPtr CommitTestBatch(uint32_t shard, uint64_t seq, const std::string& lines) {
  auto b = std::make_shared<OplogBatch>();
  b->shard = shard;
  b->seq = seq;
  b->lines = lines;
  b->line_count = 1;
  return b;
}

Status CommitWithKeys(Oplog& log, std::vector<BatchPtr> batches, std::vector<CommittedKey> keys) {
  std::promise<Status> p;
  auto f = p.get_future();
  log.Commit(std::move(batches), std::move(keys), [&p](Status st) { p.set_value(st); });
  return f.get();
}

// The newest segment's path in `dir`.
std::string NewestSegment(const std::string& dir) {
  std::string newest;
  for (const auto& e : std::filesystem::directory_iterator(dir)) {
    const std::string name = e.path().string();
    if (name.ends_with(".log") && name > newest) newest = name;
  }
  return newest;
}

TEST(OplogCommitTest, TheKeysOfACommitAreFoundAgainAtOpen) {
  TempDir tmp;
  {
    auto log = OpenCommitTestLog(tmp.path());
    ASSERT_TRUE(log.ok()) << log.status().ToString();
    ASSERT_TRUE(CommitWithKeys(**log, {CommitTestBatch(0, 1, "u|a.2024010100,1\n")},
                               {{"8e03978e-40d5", std::string(64, 'a'), 3}, {"with space ~\"", "d2", 1}})
                    .ok());
    ASSERT_TRUE(CommitWithKeys(**log, {CommitTestBatch(1, 1, "u|b.2024010100,1\n")}, {}).ok());
    (*log)->Stop();
  }
  auto log = OpenCommitTestLog(tmp.path());
  ASSERT_TRUE(log.ok()) << log.status().ToString();
  auto keys = (*log)->TakeRecoveredKeys();
  ASSERT_EQ(keys.size(), 2u);
  EXPECT_EQ(keys[0].first.key, "8e03978e-40d5");
  EXPECT_EQ(keys[0].first.digest, std::string(64, 'a'));
  EXPECT_EQ(keys[0].first.increments, 3u);
  EXPECT_EQ(keys[1].first.key, "with space ~\"");
  EXPECT_GT(keys[1].second, 1700000000) << "the commit's unix time";
  EXPECT_EQ((*log)->recovered_last_seq(), (std::vector<uint64_t>{1, 1}));
  EXPECT_EQ((*log)->uncommitted_batches_cut(), 0u);
}

TEST(OplogCommitTest, BatchesAfterTheLastCommitFrameAreCutAtOpen) {
  TempDir tmp;
  {
    auto log = OpenCommitTestLog(tmp.path());
    ASSERT_TRUE(log.ok());
    ASSERT_TRUE(CommitWithKeys(**log, {CommitTestBatch(0, 1, "u|a.2024010100,1\n")}, {{"k1", "d", 1}}).ok());
    (*log)->Stop();
  }
  // A crash inside the next commit: its first batch was appended, its
  // second and its commit frame were not (and a crash notes no clean stop).
  ASSERT_TRUE(std::filesystem::remove(tmp.path() + "/clean-stop"));
  {
    auto w = FramedLogWriter::Open(NewestSegment(tmp.path()));
    ASSERT_TRUE(w.ok());
    ASSERT_TRUE((*w)->Append(FormatBatchHeader("api-0", 0, 2) + "u|a.2024010100,5\n").ok());
    ASSERT_TRUE((*w)->Close().ok());
  }
  {
    auto log = OpenCommitTestLog(tmp.path());
    ASSERT_TRUE(log.ok()) << log.status().ToString();
    EXPECT_EQ((*log)->uncommitted_batches_cut(), 1u);
    EXPECT_EQ((*log)->recovered_last_seq(), (std::vector<uint64_t>{1, 0}));
    auto read = (*log)->ReadBatches(0, 0, 10, 1000);
    ASSERT_TRUE(read.ok());
    ASSERT_EQ(read->batches.size(), 1u);
    EXPECT_EQ(read->batches[0]->lines, "u|a.2024010100,1\n");
    EXPECT_EQ((*log)->TakeRecoveredKeys().size(), 1u);
    (*log)->Stop();
  }
  // Cut for good: the next open finds nothing to cut.
  auto again = OpenCommitTestLog(tmp.path());
  ASSERT_TRUE(again.ok());
  EXPECT_EQ((*again)->uncommitted_batches_cut(), 0u);
}

TEST(OplogCommitTest, ASegmentFromBeforeCommitFramesKeepsEveryBatch) {
  TempDir tmp;
  {
    auto w = FramedLogWriter::Open(tmp.path() + "/" + OplogSegmentName(1, false));
    ASSERT_TRUE(w.ok());
    ASSERT_TRUE((*w)->Append(FormatCheckpointHeader("api-0", {{0, 0}, {1, 0}}, /*commits=*/false)).ok());
    ASSERT_TRUE((*w)->Append(FormatBatchHeader("api-0", 0, 1) + "u|a.2024010100,1\n").ok());
    ASSERT_TRUE((*w)->Append(FormatBatchHeader("api-0", 1, 1) + "u|b.2024010100,1\n").ok());
    ASSERT_TRUE((*w)->Close().ok());
  }
  auto log = OpenCommitTestLog(tmp.path());
  ASSERT_TRUE(log.ok()) << log.status().ToString();
  EXPECT_EQ((*log)->uncommitted_batches_cut(), 0u);
  EXPECT_EQ((*log)->recovered_last_seq(), (std::vector<uint64_t>{1, 1}));
}

TEST(OplogCommitTest, CommitFramesRoundTripAndRefuseDamage) {
  const std::string frame = FormatCommitFrame("api-0", 1733390000, {{"a b", "dd", 7}});
  auto parsed = ParseOplogPayload(frame);
  ASSERT_TRUE(parsed.ok());
  EXPECT_EQ(parsed->header.kind, OplogHeader::Kind::kCommit);
  EXPECT_EQ(parsed->header.unix, 1733390000);
  auto keys = ParseCommittedKeys(parsed->lines);
  ASSERT_TRUE(keys.ok());
  ASSERT_EQ(keys->size(), 1u);
  EXPECT_EQ((*keys)[0].key, "a b");
  EXPECT_EQ((*keys)[0].increments, 7u);
  EXPECT_FALSE(ParseCommittedKeys("zz dd 7\n").ok());
  EXPECT_FALSE(ParseCommittedKeys("616 dd 7\n").ok());
  EXPECT_FALSE(ParseCommittedKeys("61 dd\n").ok());
}

// Three closed segments and the current one, each commit one 3 KB batch.
void WriteSegments(const std::string& dir) {
  OplogOptions o = CommitTestOptions(dir);
  o.segment_bytes = 4096;
  auto log = Oplog::Open(o, [](std::function<void()> fn) { fn(); });
  ASSERT_TRUE(log.ok());
  for (uint64_t seq = 1; seq <= 4; ++seq) {
    ASSERT_TRUE(CommitWithKeys(**log, {CommitTestBatch(0, seq, "u|a.2024010100," + std::string(3000, '1') + "\n")}, {})
                    .ok());
  }
  (*log)->Stop();
}

// Flips a byte in the middle of the oldest segment; returns its path.
std::string DamageOldestSegment(const std::string& dir) {
  std::string oldest;
  for (const auto& e : std::filesystem::directory_iterator(dir)) {
    const std::string name = e.path().string();
    if (name.find("/oplog-") != std::string::npos && (oldest.empty() || name < oldest)) oldest = name;
  }
  std::fstream f(oldest, std::ios::in | std::ios::out | std::ios::binary);
  const auto size = std::filesystem::file_size(oldest);
  f.seekg(static_cast<std::streamoff>(size / 2));
  char c = 0;
  f.read(&c, 1);
  f.seekp(static_cast<std::streamoff>(size / 2));
  c = static_cast<char>(c ^ 0x5a);
  f.write(&c, 1);
  return oldest;
}

TEST(OplogCommitTest, ADamagedSegmentEveryShardConfirmedIsSetAsideAndOneStillNeededStopsTheStart) {
  TempDir tmp;
  WriteSegments(tmp.path());
  const std::string damaged = DamageOldestSegment(tmp.path());

  OplogOptions needed = CommitTestOptions(tmp.path());
  needed.acknowledged_seq = {0, 0};  // shard 0 never confirmed seq 1
  auto refused = Oplog::Open(needed, [](std::function<void()> fn) { fn(); });
  ASSERT_FALSE(refused.ok());
  EXPECT_NE(refused.status().message().find(damaged), std::string::npos) << refused.status().ToString();
  EXPECT_TRUE(std::filesystem::exists(damaged));

  OplogOptions acknowledged = CommitTestOptions(tmp.path());
  acknowledged.acknowledged_seq = {4, 0};
  auto log = Oplog::Open(acknowledged, [](std::function<void()> fn) { fn(); });
  ASSERT_TRUE(log.ok()) << log.status().ToString();
  EXPECT_EQ((*log)->damaged_segments_set_aside(), 1u);
  EXPECT_FALSE(std::filesystem::exists(damaged));
  EXPECT_TRUE(std::filesystem::exists(damaged + ".damaged"));
  EXPECT_EQ((*log)->recovered_last_seq(), (std::vector<uint64_t>{4, 0})) << "the later segments still tell it";
}

}  // namespace
}  // namespace clickatron::api
