// The oplog: what is committed is found again after a reopen (seqs and
// lines), across segment rollovers and gzip; damage is refused, a torn tail
// cut; fully acknowledged segments are deleted once retention_hours have
// passed by the oplog's clock (never before, never unacknowledged ones), and
// the checkpoint keeps the seq floor when they are.
#include "ingest/oplog.h"

#include <gtest/gtest.h>

#include <sys/resource.h>

#include <csignal>

#include <filesystem>
#include <fstream>
#include <future>
#include <map>
#include <set>

#include "clickatron/clock.h"
#include "clickatron/file_util.h"
#include "clickatron/framed_log.h"
#include "clickatron/oplog_record.h"
#include "clickatron/ymdh.h"
#include "testutil/testutil.h"

namespace clickatron::api {
namespace {

using testing::TempDir;
using testing::WaitFor;

OplogOptions Options(const std::string& dir, uint32_t shards = 2) {
  OplogOptions o;
  o.dir = dir;
  o.source = "api-0";
  o.shard_count = shards;
  o.sync = SyncPolicy::kAlways;
  o.segment_bytes = 64u << 20;
  o.retention_hours = 0;
  return o;
}

// Callbacks run right on the writer thread; tests wait on futures.
Oplog::Post Inline() {
  return [](std::function<void()> fn) { fn(); };
}

BatchPtr MakeBatch(uint32_t shard, uint64_t seq, const std::string& lines) {
  auto b = std::make_shared<OplogBatch>();
  b->shard = shard;
  b->seq = seq;
  b->lines = lines;
  b->line_count = static_cast<size_t>(std::count(lines.begin(), lines.end(), '\n'));
  return b;
}

Status CommitAndWait(Oplog& log, std::vector<BatchPtr> batches) {
  std::promise<Status> p;
  auto f = p.get_future();
  log.Commit(std::move(batches), [&p](Status st) { p.set_value(st); });
  return f.get();
}

// One garbage collection pass, waited for: how many segments it deleted.
size_t CollectAndWait(Oplog& log) {
  std::promise<size_t> p;
  auto f = p.get_future();
  log.CollectGarbage([&p](size_t deleted) { p.set_value(deleted); });
  return f.get();
}

// Segments the oplog keeps, the current one included.
size_t SegmentCount(const Oplog& log) { return log.StatsJson()["segments"].get<size_t>(); }

std::vector<std::string> Files(const std::string& dir) {
  std::vector<std::string> out;
  for (const auto& e : std::filesystem::directory_iterator(dir)) out.push_back(e.path().filename().string());
  std::sort(out.begin(), out.end());
  return out;
}

std::string Line(uint64_t seq, int i) { return "u|k" + std::to_string(i) + ".c413," + std::to_string(seq * 10 + i) + "\n"; }

TEST(WriteOplogTest, CommittedBatchesComeBackAfterReopen) {
  TempDir dir;
  std::map<std::pair<uint32_t, uint64_t>, std::string> oracle;
  {
    auto log = Oplog::Open(Options(dir.path()), Inline());
    ASSERT_TRUE(log.ok()) << log.status().ToString();
    EXPECT_EQ((*log)->recovered_last_seq(), std::vector<uint64_t>({0, 0}));
    for (uint64_t seq = 1; seq <= 20; ++seq) {
      std::vector<BatchPtr> group;
      for (uint32_t shard = 0; shard < 2; ++shard) {
        if (shard == 1 && seq % 3 == 0) continue;  // shard 1 skips some windows
        std::string lines = Line(seq, static_cast<int>(shard)) + Line(seq, 7);
        oracle[{shard, seq}] = lines;
        group.push_back(MakeBatch(shard, seq, lines));
      }
      ASSERT_TRUE(CommitAndWait(**log, group).ok());
      EXPECT_EQ((*log)->durable_seq(0), seq);
    }
  }
  auto log = Oplog::Open(Options(dir.path()), Inline());
  ASSERT_TRUE(log.ok()) << log.status().ToString();
  EXPECT_EQ((*log)->recovered_last_seq(), std::vector<uint64_t>({20, 20}));
  for (uint32_t shard = 0; shard < 2; ++shard) {
    auto r = (*log)->ReadBatches(shard, 5, 20, 1000000);
    ASSERT_TRUE(r.ok()) << r.status().ToString();
    EXPECT_EQ(r->scanned_to, 20u);
    std::vector<uint64_t> want_seqs;
    for (const auto& [key, lines] : oracle) {
      if (key.first == shard && key.second > 5) want_seqs.push_back(key.second);
    }
    ASSERT_EQ(r->batches.size(), want_seqs.size());
    for (size_t i = 0; i < want_seqs.size(); ++i) {
      EXPECT_EQ(r->batches[i]->seq, want_seqs[i]);
      EXPECT_EQ(r->batches[i]->lines, oracle[std::make_pair(shard, want_seqs[i])]);
      EXPECT_EQ(r->batches[i]->line_count, 2u);
    }
  }
}

// While it lives, writes past `bytes` in any file of this process fail with
// EFBIG, as they would on a full disk (SIGXFSZ ignored, so they fail rather
// than kill the test).
class FileSizeLimit {
 public:
  explicit FileSizeLimit(rlim_t bytes) {
    old_handler_ = std::signal(SIGXFSZ, SIG_IGN);
    getrlimit(RLIMIT_FSIZE, &old_);
    rlimit lower = old_;
    lower.rlim_cur = bytes;
    EXPECT_EQ(setrlimit(RLIMIT_FSIZE, &lower), 0);
  }
  ~FileSizeLimit() {
    setrlimit(RLIMIT_FSIZE, &old_);
    std::signal(SIGXFSZ, old_handler_);
  }

 private:
  rlimit old_{};
  void (*old_handler_)(int) = nullptr;
};

// The path of the segment being written (the one *.log in `dir`).
std::string OpenSegment(const std::string& dir) {
  std::string segment;
  for (const std::string& f : Files(dir)) {
    if (f.ends_with(".log")) segment = dir + "/" + f;
  }
  return segment;
}

// `n` lines of batch `seq`: a batch too large for a little room left.
std::string ManyLines(uint64_t seq, int n) {
  std::string lines;
  for (int i = 0; i < n; ++i) lines += Line(seq, i);
  return lines;
}

TEST(WriteOplogTest, ACommitThatFailsPartWayLeavesNothingOfIt) {
  TempDir dir;
  {
    auto log = Oplog::Open(Options(dir.path()), Inline());
    ASSERT_TRUE(log.ok()) << log.status().ToString();
    ASSERT_TRUE(CommitAndWait(**log, {MakeBatch(0, 1, Line(1, 1)), MakeBatch(1, 1, Line(1, 2))}).ok());
    const std::string segment = OpenSegment(dir.path());
    ASSERT_FALSE(segment.empty());
    const std::string large = ManyLines(2, 200);
    {
      // Room for the commit's first batch, not for its second.
      FileSizeLimit limit(std::filesystem::file_size(segment) + 200);
      Status st = CommitAndWait(**log, {MakeBatch(0, 2, Line(2, 1)), MakeBatch(1, 2, large)});
      EXPECT_FALSE(st.ok());
    }
    EXPECT_EQ((*log)->durable_seq(0), 1u) << "the failed commit's first batch was left in the oplog";
    // Room again: the next commit is taken, and follows the first directly.
    ASSERT_TRUE(CommitAndWait(**log, {MakeBatch(0, 3, Line(3, 1)), MakeBatch(1, 3, Line(3, 2))}).ok());
  }
  auto log = Oplog::Open(Options(dir.path()), Inline());
  ASSERT_TRUE(log.ok()) << log.status().ToString();
  for (uint32_t shard = 0; shard < 2; ++shard) {
    auto r = (*log)->ReadBatches(shard, 0, 10, 1000000);
    ASSERT_TRUE(r.ok()) << r.status().ToString();
    std::vector<uint64_t> seqs;
    for (const BatchPtr& b : r->batches) seqs.push_back(b->seq);
    EXPECT_EQ(seqs, std::vector<uint64_t>({1, 3})) << "shard " << shard;
  }
}

// Two commits written in one group (one fsync for both), the second
// failing: the first is answered taken, and must be sendable. The cut of the
// second was synced with the first, which then counted as not synced: its
// increments, acknowledged, waited for a later commit to succeed before
// being sent (a reviewer: on a full disk, until space was freed).
TEST(WriteOplogTest, ACommitTakenInAGroupWithOneThatFailsIsDurable) {
  TempDir dir;
  OplogOptions o = Options(dir.path());
  o.fault_dir = dir.path() + "/faults";
  ASSERT_TRUE(MakeDirs(o.fault_dir).ok());
  auto log = Oplog::Open(o, Inline());
  ASSERT_TRUE(log.ok()) << log.status().ToString();
  ASSERT_TRUE(CommitAndWait(**log, {MakeBatch(0, 1, Line(1, 1)), MakeBatch(1, 1, Line(1, 2))}).ok());
  const std::string segment = OpenSegment(dir.path());
  ASSERT_FALSE(segment.empty());
  const std::string large = ManyLines(3, 200);
  // The writer holds what it takes while the stall file exists: the commits
  // sent meanwhile are written together once it is gone.
  const std::string stall = o.fault_dir + "/oplog-stall";
  ASSERT_TRUE(WriteFileAtomically(stall, "").ok());
  std::promise<Status> p0, p1, p2;
  (*log)->Commit({MakeBatch(0, 2, Line(2, 1))}, {}, [&p0](Status st) { p0.set_value(st); });
  (*log)->Commit({MakeBatch(0, 3, Line(3, 1))}, {}, [&p1](Status st) { p1.set_value(st); });
  (*log)->Commit({MakeBatch(1, 2, large)}, {}, [&p2](Status st) { p2.set_value(st); });
  {
    // Room for the two small commits, not for the large one.
    FileSizeLimit limit(std::filesystem::file_size(segment) + 600);
    ASSERT_EQ(::unlink(stall.c_str()), 0);
    EXPECT_TRUE(p0.get_future().get().ok());
    EXPECT_TRUE(p1.get_future().get().ok());
    EXPECT_FALSE(p2.get_future().get().ok());
  }
  EXPECT_EQ((*log)->durable_seq(0), 3u) << "a commit answered taken is not sendable";
  EXPECT_EQ((*log)->durable_seq(1), 1u);
}

TEST(WriteOplogTest, ReadBatchesStopsAfterMaxLinesAndResumes) {
  TempDir dir;
  auto log = Oplog::Open(Options(dir.path(), 1), Inline());
  ASSERT_TRUE(log.ok());
  for (uint64_t seq = 1; seq <= 10; ++seq) {
    ASSERT_TRUE(CommitAndWait(**log, {MakeBatch(0, seq, Line(seq, 1) + Line(seq, 2) + Line(seq, 3))}).ok());
  }
  std::vector<uint64_t> seen;
  uint64_t after = 0;
  int rounds = 0;
  while (after < 10 && rounds++ < 20) {
    auto r = (*log)->ReadBatches(0, after, 10, 7);  // 7 lines: three batches at most
    ASSERT_TRUE(r.ok());
    EXPECT_LE(r->batches.size(), 3u);
    for (auto& b : r->batches) seen.push_back(b->seq);
    after = r->scanned_to;
  }
  EXPECT_EQ(seen, (std::vector<uint64_t>{1, 2, 3, 4, 5, 6, 7, 8, 9, 10}));
}

TEST(WriteOplogTest, ClosedSegmentsAreGzippedAndStillRead) {
  TempDir dir;
  OplogOptions o = Options(dir.path(), 1);
  o.segment_bytes = 2000;
  {
    auto log = Oplog::Open(o, Inline());
    ASSERT_TRUE(log.ok());
    for (uint64_t seq = 1; seq <= 60; ++seq) {
      std::string lines;
      for (int i = 0; i < 5; ++i) lines += Line(seq, i);
      ASSERT_TRUE(CommitAndWait(**log, {MakeBatch(0, seq, lines)}).ok());
    }
    ASSERT_TRUE(WaitFor([&] {
      auto files = Files(dir.path());
      size_t gz = std::count_if(files.begin(), files.end(), [](const std::string& f) { return f.ends_with(".log.gz"); });
      size_t plain = std::count_if(files.begin(), files.end(), [](const std::string& f) { return f.ends_with(".log"); });
      return gz >= 3 && plain == 1;  // only the current segment stays plain
    }));
    auto r = (*log)->ReadBatches(0, 0, 60, 1000000);
    ASSERT_TRUE(r.ok()) << r.status().ToString();
    ASSERT_EQ(r->batches.size(), 60u);
    for (uint64_t i = 0; i < 60; ++i) EXPECT_EQ(r->batches[i]->seq, i + 1);
    EXPECT_EQ(r->batches[41]->lines.substr(0, Line(42, 0).size()), Line(42, 0));
  }
  auto log = Oplog::Open(o, Inline());
  ASSERT_TRUE(log.ok()) << log.status().ToString();
  EXPECT_EQ((*log)->recovered_last_seq()[0], 60u);
}

TEST(WriteOplogTest, OnlyFullyAcknowledgedSegmentsAreDeletedAndTheCheckpointKeepsTheSeq) {
  TempDir dir;
  OplogOptions o = Options(dir.path(), 2);
  o.segment_bytes = 1500;
  {
    auto log = Oplog::Open(o, Inline());
    ASSERT_TRUE(log.ok());
    for (uint64_t seq = 1; seq <= 40; ++seq) {
      std::string lines;
      for (int i = 0; i < 5; ++i) lines += Line(seq, i);
      ASSERT_TRUE(CommitAndWait(**log, {MakeBatch(0, seq, lines), MakeBatch(1, seq, lines)}).ok());
    }
    auto segments = [&] {
      std::set<uint64_t> ids;  // distinct: a segment is briefly both .log and .log.gz while gzipped
      for (const auto& f : Files(dir.path())) {
        uint64_t id;
        bool gz;
        if (ParseOplogSegmentName(f, &id, &gz)) ids.insert(id);
      }
      return ids.size();
    };
    const size_t before = segments();
    ASSERT_GE(before, 4u);
    // Shard 1 acknowledges up to 20: only segments whose batches are all <= 20 go.
    (*log)->Acknowledge(0, 40);
    (*log)->Acknowledge(1, 20);
    (*log)->CollectGarbage();
    ASSERT_TRUE(WaitFor([&] { return segments() < before; }));
    auto r = (*log)->ReadBatches(1, 20, 40, 1000000);
    ASSERT_TRUE(r.ok()) << r.status().ToString();
    ASSERT_EQ(r->batches.size(), 20u);  // every unacknowledged batch is still there
    EXPECT_EQ(r->batches.front()->seq, 21u);
    (*log)->Acknowledge(1, 40);
    (*log)->CollectGarbage();
    ASSERT_TRUE(WaitFor([&] { return segments() == 1; }));  // the current segment always stays
  }
  auto log = Oplog::Open(o, Inline());
  ASSERT_TRUE(log.ok()) << log.status().ToString();
  // No batch is left, yet the next seq is known from the checkpoint.
  EXPECT_EQ((*log)->recovered_last_seq(), std::vector<uint64_t>({40, 40}));
}

// retention_hours = 2 on a ManualClock: acknowledged segments stay for two
// hours after they close and go at the second the two hours are up; a
// segment holding a batch a shard has not acknowledged stays however old.
TEST(WriteOplogTest, AcknowledgedSegmentsAreKeptUntilRetentionHoursPassByTheClock) {
  using namespace std::chrono_literals;
  TempDir dir;
  ManualClock clock(DaysFromCivil({2026, 3, 21}) * kSecondsPerDay);
  OplogOptions o = Options(dir.path(), 2);
  o.segment_bytes = 1500;
  o.retention_hours = 2;
  o.clock = &clock;
  auto log = Oplog::Open(o, Inline());
  ASSERT_TRUE(log.ok()) << log.status().ToString();
  for (uint64_t seq = 1; seq <= 40; ++seq) {
    std::string lines;
    for (int i = 0; i < 5; ++i) lines += Line(seq, i);
    ASSERT_TRUE(CommitAndWait(**log, {MakeBatch(0, seq, lines), MakeBatch(1, seq, lines)}).ok());
  }
  const size_t all = SegmentCount(**log);  // every closed one closed at the clock's start
  ASSERT_GE(all, 4u);
  (*log)->Acknowledge(0, 40);
  (*log)->Acknowledge(1, 20);

  clock.Advance(2h - 1s);
  EXPECT_EQ(CollectAndWait(**log), 0u) << "a segment younger than retention_hours was deleted";
  EXPECT_EQ(SegmentCount(**log), all);
  auto early = (*log)->ReadBatches(0, 0, 40, 1000000);
  ASSERT_TRUE(early.ok()) << early.status().ToString();
  EXPECT_EQ(early->batches.size(), 40u);

  clock.Advance(1s);
  const size_t deleted = CollectAndWait(**log);
  EXPECT_GT(deleted, 0u) << "a fully acknowledged segment outlived retention_hours";
  EXPECT_EQ(SegmentCount(**log), all - deleted);
  auto shard0 = (*log)->ReadBatches(0, 0, 40, 1000000);
  ASSERT_TRUE(shard0.ok()) << shard0.status().ToString();
  ASSERT_FALSE(shard0->batches.empty());
  EXPECT_GT(shard0->batches.front()->seq, 1u);  // the oldest batches went
  auto needed = (*log)->ReadBatches(1, 20, 40, 1000000);
  ASSERT_TRUE(needed.ok()) << needed.status().ToString();
  EXPECT_EQ(needed->batches.size(), 20u);  // none that shard 1 has not acknowledged

  clock.Advance(24h * 365 * 10);
  EXPECT_EQ(CollectAndWait(**log), 0u) << "a segment with unacknowledged batches was deleted";
  auto shard1 = (*log)->ReadBatches(1, 20, 40, 1000000);
  ASSERT_TRUE(shard1.ok()) << shard1.status().ToString();
  ASSERT_EQ(shard1->batches.size(), 20u);
  EXPECT_EQ(shard1->batches.front()->seq, 21u);

  (*log)->Acknowledge(1, 40);
  EXPECT_EQ(CollectAndWait(**log), all - deleted - 1);  // every closed one; the current segment stays
  EXPECT_EQ(SegmentCount(**log), 1u);
}

TEST(WriteOplogTest, TornTailIsCutOnOpen) {
  TempDir dir;
  {
    auto log = Oplog::Open(Options(dir.path(), 1), Inline());
    ASSERT_TRUE(log.ok());
    ASSERT_TRUE(CommitAndWait(**log, {MakeBatch(0, 1, Line(1, 1))}).ok());
    ASSERT_TRUE(CommitAndWait(**log, {MakeBatch(0, 2, Line(2, 1))}).ok());
  }
  // A crash, not a stop: no note that the segment ended whole.
  ASSERT_TRUE(std::filesystem::remove(dir / "clean-stop"));
  std::string seg = dir / OplogSegmentName(1, false);
  auto size = std::filesystem::file_size(seg);
  std::filesystem::resize_file(seg, size - 3);  // the last append was torn
  auto log = Oplog::Open(Options(dir.path(), 1), Inline());
  ASSERT_TRUE(log.ok()) << log.status().ToString();
  EXPECT_EQ((*log)->recovered_last_seq()[0], 1u);
  auto r = (*log)->ReadBatches(0, 0, 10, 1000);
  ASSERT_TRUE(r.ok()) << r.status().ToString();
  ASSERT_EQ(r->batches.size(), 1u);
  EXPECT_EQ(r->batches[0]->seq, 1u);
}

// After a clean stop the segment ended whole (DIR/clean-stop says where):
// a last frame that no longer checks, or a file cut short, is damage to
// acknowledged batches, refused; not a crash's torn write, cut.
TEST(WriteOplogTest, ALastFrameDamagedAfterACleanStopIsRefusedNotCut) {
  for (const bool flip : {true, false}) {
    TempDir dir;
    {
      auto log = Oplog::Open(Options(dir.path(), 1), Inline());
      ASSERT_TRUE(log.ok());
      ASSERT_TRUE(CommitAndWait(**log, {MakeBatch(0, 1, Line(1, 1))}).ok());
      ASSERT_TRUE(CommitAndWait(**log, {MakeBatch(0, 2, Line(2, 1))}).ok());
    }
    ASSERT_TRUE(FileExists(dir / "clean-stop"));
    const std::string seg = dir / OplogSegmentName(1, false);
    const auto size = std::filesystem::file_size(seg);
    if (flip) {
      std::string data;
      {
        std::ifstream in(seg, std::ios::binary);
        data.assign(std::istreambuf_iterator<char>(in), {});
      }
      data[data.size() - 5] ^= 0x10;  // inside the last frame: the commit of seq 2
      std::ofstream out(seg, std::ios::binary | std::ios::trunc);
      out << data;
    } else {
      std::filesystem::resize_file(seg, size - 3);
    }
    auto log = Oplog::Open(Options(dir.path(), 1), Inline());
    ASSERT_FALSE(log.ok()) << (flip ? "flipped" : "cut");
    EXPECT_EQ(log.status().code(), StatusCode::kCorruption) << log.status().ToString();
    EXPECT_NE(log.status().message().find("ended whole"), std::string::npos) << log.status().ToString();
    EXPECT_EQ(std::filesystem::file_size(seg), flip ? size : size - 3) << "nothing was cut";
  }
}

// The note is read once: a crash after the next start tears a segment of
// that run, which is cut as before.
TEST(WriteOplogTest, TheCleanStopNoteIsGoneOnceTheNodeRunsAgain) {
  TempDir dir;
  {
    auto log = Oplog::Open(Options(dir.path(), 1), Inline());
    ASSERT_TRUE(log.ok());
    ASSERT_TRUE(CommitAndWait(**log, {MakeBatch(0, 1, Line(1, 1))}).ok());
  }
  ASSERT_TRUE(FileExists(dir / "clean-stop"));
  // A stop killed while it wrote the note leaves its temporary copy.
  ASSERT_TRUE(WriteFileAtomically(dir / "clean-stop.tmp.4242", "{\"bytes\":1,\"segment\":1}\n").ok());
  auto log = Oplog::Open(Options(dir.path(), 1), Inline());
  ASSERT_TRUE(log.ok()) << log.status().ToString();
  EXPECT_FALSE(FileExists(dir / "clean-stop"));
  EXPECT_FALSE(FileExists(dir / "clean-stop.tmp.4242")) << "a dead process's temporary file is removed";
  EXPECT_EQ((*log)->recovered_last_seq()[0], 1u);
}

TEST(WriteOplogTest, CorruptRecordInTheMiddleRefusesToOpen) {
  TempDir dir;
  {
    auto log = Oplog::Open(Options(dir.path(), 1), Inline());
    ASSERT_TRUE(log.ok());
    for (uint64_t seq = 1; seq <= 3; ++seq) ASSERT_TRUE(CommitAndWait(**log, {MakeBatch(0, seq, Line(seq, 1))}).ok());
  }
  std::string seg = dir / OplogSegmentName(1, false);
  std::string data;
  {
    std::ifstream in(seg, std::ios::binary);
    data.assign(std::istreambuf_iterator<char>(in), {});
  }
  size_t pos = data.find("seq=2");
  ASSERT_NE(pos, std::string::npos);
  data[pos + 4] = '7';  // flips a byte inside the middle record
  {
    std::ofstream out(seg, std::ios::binary | std::ios::trunc);
    out << data;
  }
  auto log = Oplog::Open(Options(dir.path(), 1), Inline());
  ASSERT_FALSE(log.ok());
  EXPECT_EQ(log.status().code(), StatusCode::kCorruption) << log.status().ToString();
}

TEST(WriteOplogTest, AnotherMembersOplogIsRefused) {
  TempDir dir;
  {
    auto log = Oplog::Open(Options(dir.path(), 1), Inline());
    ASSERT_TRUE(log.ok());
  }
  OplogOptions o = Options(dir.path(), 1);
  o.source = "api-1";
  EXPECT_FALSE(Oplog::Open(o, Inline()).ok());
}

TEST(WriteOplogTest, PayloadHeadersRoundTrip) {
  auto p = ParseOplogPayload(FormatBatchHeader("api-0", 3, 77) + "u|a.c413,5\n");
  ASSERT_TRUE(p.ok()) << p.status().ToString();
  EXPECT_EQ(p->header.kind, OplogHeader::Kind::kBatch);
  EXPECT_EQ(p->header.source, "api-0");
  EXPECT_EQ(p->header.shard, 3);
  EXPECT_EQ(p->header.seq, 77u);
  EXPECT_EQ(p->lines, "u|a.c413,5\n");
  // The literal form in docs/protocols.md.
  auto doc = ParseOplogPayload("# source=api-0 shard=1 seq=42\nu|a.c413,5\n");
  ASSERT_TRUE(doc.ok());
  EXPECT_EQ(doc->header.seq, 42u);
  auto c = ParseOplogPayload(FormatCheckpointHeader("api-0", {{0, 41}, {1, 42}}));
  ASSERT_TRUE(c.ok());
  EXPECT_EQ(c->header.kind, OplogHeader::Kind::kCheckpoint);
  EXPECT_EQ(c->header.last_seq, (std::vector<std::pair<int, uint64_t>>{{0, 41}, {1, 42}}));
  EXPECT_FALSE(ParseOplogPayload("u|a.c413,5\n").ok());
  EXPECT_FALSE(ParseOplogPayload("# source=api-0 shard=1\n").ok());
  EXPECT_FALSE(ParseOplogPayload("# source=api-0 shard=x seq=1\n").ok());
}

}  // namespace
}  // namespace clickatron::api
