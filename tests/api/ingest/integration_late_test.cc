// Late data: lines for a day the realtime ring no longer holds go to a late
// file (exactly once, even across restarts), the rest of their batch is
// applied, and POST /late/seal seals the file for the rebuild.
#include <ctime>
#include <filesystem>
#include <map>
#include <set>
#include <string>

#include "clickatron/framed_log.h"
#include "clickatron/oplog_record.h"
#include "clickatron/ymdh.h"
#include "api/ingest/cluster_fixture.h"

namespace clickatron::api::write_testing {
namespace {

struct LateFrame {
  std::string file;
  OplogHeader header;
  std::map<std::string, int64_t> lines;
};

std::vector<LateFrame> ReadLateFrames(const std::string& dir) {
  std::vector<LateFrame> out;
  if (!std::filesystem::exists(dir)) return out;
  std::vector<std::string> files;
  for (const auto& e : std::filesystem::directory_iterator(dir)) files.push_back(e.path().string());
  std::sort(files.begin(), files.end());
  for (const std::string& f : files) {
    auto reader = FramedLogReader::Open(f);
    EXPECT_TRUE(reader.ok()) << f;
    if (!reader.ok()) continue;
    while (true) {
      auto next = (*reader)->Next();
      EXPECT_TRUE(next.ok()) << next.status().ToString();
      if (!next.ok() || !next->has_value()) break;
      auto payload = ParseOplogPayload(**next);
      EXPECT_TRUE(payload.ok()) << payload.status().ToString();
      LateFrame frame;
      frame.file = std::filesystem::path(f).filename().string();
      frame.header = payload->header;
      ForEachPayloadLine(payload->lines, [&](std::string_view line) {
        size_t comma = line.find(',');
        frame.lines[std::string(line.substr(0, comma))] += std::stoll(std::string(line.substr(comma + 1)));
      });
      out.push_back(std::move(frame));
    }
  }
  return out;
}

std::map<std::string, int64_t> SumLines(const std::vector<LateFrame>& frames) {
  std::map<std::string, int64_t> out;
  for (const auto& f : frames) {
    for (const auto& [k, v] : f.lines) out[k] += v;
  }
  return out;
}

TEST(IntegrationWriteLateTest, LinesForClosedDaysGoToLateDataOnceAndTheRestIsApplied) {
  WriteCluster c;
  c.StartAll();
  const int64_t now = static_cast<int64_t>(std::time(nullptr));
  const int64_t old = now - 5 * kSecondsPerDay;  // long gone from the ring
  const std::string today_h = *YmdhFromUnix(now), old_h = *YmdhFromUnix(old);
  // Keys on both shards; each batch mixes open and closed days.
  std::map<std::string, int64_t> want_realtime, want_late;
  std::string body;
  for (int i = 0; i < 20; ++i) {
    std::string key = "late" + std::to_string(i % 6);
    body += fmt::format("ns=t&key={}&ts={}&value={}&sub=c:US\n", key, now, i + 1);
    body += fmt::format("ns=t&key={}&ts={}&value={}&sub=c:US\n", key, old, 2 * i + 1);
    want_realtime[fmt::format("t|{}.{}", key, today_h)] += i + 1;
    want_realtime[fmt::format("c.t|{}.US.{}", key, today_h)] += i + 1;
    want_late[fmt::format("t|{}.{}", key, old_h)] += 2 * i + 1;
    want_late[fmt::format("c.t|{}.US.{}", key, old_h)] += 2 * i + 1;
  }
  auto r = HttpPost(c.Api(), "/incr", body);
  ASSERT_EQ(r.status_code, 200) << r.body;  // late data is kept, not refused
  ASSERT_TRUE(WaitFor([&] { return c.Drained(); })) << c.ApiStats().dump();

  std::map<std::string, int64_t> got_realtime = c.Counters("t|");
  for (const auto& [k, v] : c.Counters("c.t|")) got_realtime[k] = v;
  EXPECT_EQ(got_realtime, want_realtime);

  const std::string late_dir = c.DataDir("api-0") + "/late";
  std::vector<LateFrame> frames = ReadLateFrames(late_dir);
  ASSERT_FALSE(frames.empty());
  EXPECT_EQ(SumLines(frames), want_late);
  std::set<std::pair<int, uint64_t>> batches;
  for (const LateFrame& f : frames) {
    EXPECT_EQ(f.header.source, "api-0");
    EXPECT_TRUE(f.file.ends_with(".open")) << f.file;
    EXPECT_TRUE(batches.insert({f.header.shard, f.header.seq}).second) << "one frame per batch";
    for (const auto& [key, v] : f.lines) {
      std::string tkey = key.substr(key.find('|') + 1);
      tkey = tkey.substr(0, tkey.find('.'));
      EXPECT_EQ(f.header.shard, static_cast<int>(ShardOfKey("t|" + tkey, 2))) << key;
    }
  }
  EXPECT_EQ(c.ApiStats()["write"]["late_lines_written"], want_late.size());

  // A clean restart neither re-sends nor re-moves anything.
  EXPECT_EQ(c.Stop("api-0"), 0);
  c.Start("api-0");
  ASSERT_TRUE(WaitFor([&] { return c.Drained(); }));
  EXPECT_EQ(SumLines(ReadLateFrames(late_dir)), want_late);
  EXPECT_EQ(c.Counters("t|").size(), 6u);

  // Sealing: the open file (sealed by the restart) and a new one.
  ASSERT_EQ(HttpGet(c.Api(), fmt::format("/incr?ns=t&key=late0&ts={}", old)).status_code, 200);
  want_late[fmt::format("t|late0.{}", old_h)] += 1;
  ASSERT_TRUE(WaitFor([&] { return SumLines(ReadLateFrames(late_dir)) == want_late; }));
  r = HttpPost(c.Api(), "/late/seal", "");
  ASSERT_EQ(r.status_code, 200) << r.body;
  auto sealed = nlohmann::json::parse(r.body)["data"]["sealed"];
  ASSERT_EQ(sealed.size(), 1u);
  EXPECT_TRUE(std::filesystem::exists(sealed[0].get<std::string>()));
  for (const LateFrame& f : ReadLateFrames(late_dir)) EXPECT_TRUE(f.file.ends_with(".sealed")) << f.file;
  EXPECT_EQ(SumLines(ReadLateFrames(late_dir)), want_late);
}

// The crash window of a DAY_NOT_OPEN batch: its late lines are fsynced, then
// the API dies before the rest is re-sent. The restarted API must re-send the
// rest from the oplog but not write the late lines a second time.
TEST(IntegrationWriteLateTest, RestartAfterTheLateWriteDoesNotMoveLinesTwice) {
  WriteCluster c(1);
  const int64_t now = static_cast<int64_t>(std::time(nullptr));
  const std::string today_h = *YmdhFromUnix(now), old_h = *YmdhFromUnix(now - 5 * kSecondsPerDay);
  const std::string open_line = fmt::format("t|fresh.{},5\n", today_h);
  const std::string late_line = fmt::format("t|stale.{},3\n", old_h);
  {
    // What the dead API left: the batch in its oplog, its late part in a late file.
    std::filesystem::create_directories(c.DataDir("api-0") + "/oplog");
    std::filesystem::create_directories(c.DataDir("api-0") + "/late");
    auto oplog = FramedLogWriter::Open(c.DataDir("api-0") + "/oplog/" + OplogSegmentName(1, false));
    ASSERT_TRUE(oplog.ok());
    ASSERT_TRUE((*oplog)->Append(FormatCheckpointHeader("api-0", {{0, 0}})).ok());
    ASSERT_TRUE((*oplog)->Append(FormatBatchHeader("api-0", 0, 1) + open_line + late_line).ok());
    auto late = FramedLogWriter::Open(c.DataDir("api-0") + "/late/" + LateFileName(now - 10, false));
    ASSERT_TRUE(late.ok());
    ASSERT_TRUE((*late)->Append(FormatBatchHeader("api-0", 0, 1) + late_line).ok());
  }
  c.StartAll();
  ASSERT_TRUE(WaitFor([&] { return c.Drained(); })) << c.ApiStats().dump();
  EXPECT_EQ(c.Counters("t|"), (std::map<std::string, int64_t>{{"t|fresh." + today_h, 5}}));
  auto frames = ReadLateFrames(c.DataDir("api-0") + "/late");
  ASSERT_EQ(frames.size(), 1u);
  EXPECT_EQ(frames[0].lines, (std::map<std::string, int64_t>{{"t|stale." + old_h, 3}}));
  EXPECT_TRUE(frames[0].file.ends_with(".sealed"));  // left open by the dead run: sealed at start
  nlohmann::json shard = c.ApiStats()["write"]["shards"][0];
  EXPECT_EQ(shard["acked_seq"], 1);
  // New increments get seqs above the recovered one.
  ASSERT_EQ(HttpGet(c.Api(), fmt::format("/incr?ns=t&key=fresh&ts={}", now)).status_code, 200);
  ASSERT_TRUE(WaitFor([&] { return c.Drained(); }));
  EXPECT_EQ(c.Counters("t|")["t|fresh." + today_h], 6);
  EXPECT_EQ(c.ApiStats()["write"]["shards"][0]["acked_seq"], 2);
}

}  // namespace
}  // namespace clickatron::api::write_testing
