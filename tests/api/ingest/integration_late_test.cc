// Late data: lines for a day the realtime ring no longer holds go to a late
// file (exactly once, even across restarts), the rest of their batch is
// applied, and POST /late/seal seals the file for the rebuild.
#include <atomic>
#include <ctime>
#include <filesystem>
#include <map>
#include <random>
#include <set>
#include <string>
#include <thread>

#include "clickatron/file_util.h"
#include "clickatron/framed_log.h"
#include "clickatron/http_client.h"
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
  // What the rebuild fetches (no admin token in this cluster: the admin
  // routes are open): every sealed file, byte for byte.
  r = HttpGet(c.Api(), "/late/files");
  ASSERT_EQ(r.status_code, 200) << r.body;
  auto listed = nlohmann::json::parse(r.body)["data"]["files"];
  ASSERT_EQ(listed.size(), 2u) << r.body;  // the one sealed by the restart, and the one sealed just now
  for (const auto& f : listed) {
    const std::string name = f["name"].get<std::string>();
    const std::string bytes = clickatron::testing::ReadAll(late_dir + "/" + name);
    EXPECT_EQ(f["bytes"].get<uint64_t>(), bytes.size());
    auto file = HttpGet(c.Api(), "/late/file?name=" + name);
    EXPECT_EQ(file.status_code, 200);
    EXPECT_TRUE(file.body == bytes) << name;
  }
}

// A new late file never takes the name of one marked done: the rebuild
// knows a folded file by its name, so a file sealed under a done one's name
// (late data again within the second of a /late/done) was taken for the
// folded one, marked done and never folded: its acknowledged clicks lost.
TEST(IntegrationWriteLateTest, ANewLateFileNeverTakesADoneFilesName) {
  WriteCluster c;
  c.StartAll();
  const int64_t now = static_cast<int64_t>(std::time(nullptr));
  const std::string late_dir = c.DataDir("api-0") + "/late";
  // Files marked done under this second's name and the next few.
  std::set<std::string> done_names;
  for (int64_t t = now; t < now + 5; ++t) {
    const std::string name = fmt::format("late-{}", t);
    clickatron::testing::WriteAll(late_dir + "/" + name + ".done", "");
    done_names.insert(name);
  }
  const int64_t old = now - 5 * kSecondsPerDay;
  ASSERT_EQ(HttpGet(c.Api(), fmt::format("/incr?ns=t&key=again&ts={}", old)).status_code, 200);
  ASSERT_TRUE(WaitFor([&] { return c.Drained(); }));
  HttpResponse r = HttpPost(c.Api(), "/late/seal", "");
  ASSERT_EQ(r.status_code, 200) << r.body;
  r = HttpGet(c.Api(), "/late/files");
  ASSERT_EQ(r.status_code, 200) << r.body;
  const auto listed = nlohmann::json::parse(r.body)["data"]["files"];
  ASSERT_EQ(listed.size(), 1u) << r.body;
  const std::string sealed = listed[0]["name"].get<std::string>();
  EXPECT_FALSE(done_names.contains(sealed.substr(0, sealed.size() - std::string_view(".sealed").size())))
      << sealed << " has a done file's name";
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

constexpr const char* kAdminToken = "late-admin-token";

// A late-data file as the API writes it: frames of batches of `source`.
// Returns its bytes.
std::string WriteSealedFile(const std::string& path, const std::string& source, int frames, size_t line_bytes,
                            uint32_t seed) {
  std::mt19937 rng(seed);
  auto writer = FramedLogWriter::Open(path);
  EXPECT_TRUE(writer.ok()) << writer.status().ToString();
  for (int i = 0; i < frames; ++i) {
    std::string payload = FormatBatchHeader(source, i % 2, static_cast<uint64_t>(1000 + i));
    while (payload.size() < line_bytes) {
      payload += fmt::format("t|k{}.c41l,{}\n", rng() % 100000, 1 + rng() % 9);
    }
    EXPECT_TRUE((*writer)->Append(payload).ok());
  }
  EXPECT_TRUE((*writer)->Close().ok());
  return clickatron::testing::ReadAll(path);
}

class LateFilesTest : public ::testing::Test {
 protected:
  static ClusterSpec Spec() {
    ClusterSpec spec = WriteCluster::Spec(1);
    spec.cluster.SetString("admin_token", kAdminToken);
    return spec;
  }
  LateFilesTest() : c_(Spec()) {}

  void SetUp() override {
    late_dir_ = c_.DataDir("api-0") + "/late";
    ASSERT_TRUE(MakeDirs(late_dir_).ok());
    // Left by earlier runs: a big sealed file (many 256 KiB chunks, an odd
    // size), a small one, and one the rebuild already marked done.
    big_ = WriteSealedFile(late_dir_ + "/late-1700000100.sealed", "api-0", 48, 100 * 1024 + 17, 1);
    small_ = WriteSealedFile(late_dir_ + "/late-1700000000.sealed", "api-0", 2, 100, 2);
    (void)WriteSealedFile(late_dir_ + "/late-1600000000.done", "api-0", 1, 100, 3);
    ASSERT_NO_FATAL_FAILURE(c_.StartAll());
  }

  HttpResponse Ask(const std::string& method, const std::string& target, const std::string& token = kAdminToken) {
    HttpRequestSpec spec;
    spec.method = method;
    spec.target = target;
    spec.bearer_token = token;
    spec.timeout_ms = 20000;
    // A client per request: one kept across a restart of the node would
    // first try its dead keep-alive connection.
    BlockingHttpClient client(clickatron::testing::kTestClusterSecret);
    return client.Fetch(c_.Api(), spec);
  }
  // data.files of GET /late/files as name -> bytes.
  std::map<std::string, uint64_t> Listed() {
    HttpResponse r = Ask("GET", "/late/files");
    EXPECT_EQ(r.status_code, 200) << r.body;
    std::map<std::string, uint64_t> out;
    auto j = nlohmann::json::parse(r.body, nullptr, false);
    if (j.is_discarded()) return out;
    for (const auto& f : j["data"]["files"]) out[f["name"].get<std::string>()] = f["bytes"].get<uint64_t>();
    return out;
  }
  static std::string Reason(const HttpResponse& r) {
    auto j = nlohmann::json::parse(r.body, nullptr, false);
    return j.is_object() ? j.value("status_txt", "") : "";
  }

  WriteCluster c_;
  std::string late_dir_, big_, small_;
};

// A sealed file was closed whole: one cut short since is damage to
// acknowledged late lines, not a crash's torn write. The node refuses to
// start, naming it, as for damage inside a file.
TEST(IntegrationWriteLateDamageTest, ASealedFileCutShortStopsTheNodeNamingIt) {
  WriteCluster c(WriteCluster::Spec(1));
  const std::string late_dir = c.DataDir("api-0") + "/late";
  ASSERT_TRUE(MakeDirs(late_dir).ok());
  const std::string path = late_dir + "/late-1700000000.sealed";
  const std::string bytes = WriteSealedFile(path, "api-0", 3, 200, 4);
  std::filesystem::resize_file(path, bytes.size() - 7);
  c.Start(WriteCluster::Realtime(0));
  std::string error;
  EXPECT_FALSE(c.TryStart("api-0", &error));
  EXPECT_NE(error.find("late-1700000000.sealed is sealed"), std::string::npos) << error;
  // `clickatron oplog verify` says the same of it.
  std::string out;
  EXPECT_EQ(clickatron::testing::RunCommand({clickatron::testing::BinaryPath("clickatron"), "oplog", "verify", path},
                                            &out),
            1)
      << out;
  EXPECT_NE(out.find("a sealed late-data file"), std::string::npos) << out;
  // Put back whole, it starts.
  clickatron::testing::WriteAll(path, bytes);
  EXPECT_TRUE(c.TryStart("api-0", &error)) << error;
}

TEST_F(LateFilesTest, ListsSealedFilesOldestFirstWithTheirSizes) {
  HttpResponse r = Ask("GET", "/late/files");
  ASSERT_EQ(r.status_code, 200) << r.body;
  auto j = nlohmann::json::parse(r.body);
  EXPECT_EQ(j["status_code"], 200);
  ASSERT_EQ(j["data"]["files"].size(), 2u) << r.body;  // not the .done one
  EXPECT_EQ(j["data"]["files"][0]["name"], "late-1700000000.sealed");
  EXPECT_EQ(j["data"]["files"][0]["bytes"], small_.size());
  EXPECT_EQ(j["data"]["files"][1]["name"], "late-1700000100.sealed");
  EXPECT_EQ(j["data"]["files"][1]["bytes"], big_.size());
}

TEST_F(LateFilesTest, StreamsABigFileIntact) {
  ASSERT_GT(big_.size(), 4u << 20);
  HttpResponse r = Ask("GET", "/late/file?name=late-1700000100.sealed");
  ASSERT_EQ(r.status_code, 200) << r.body.substr(0, 300);
  EXPECT_EQ(r.Header("Content-Type"), "application/octet-stream");
  EXPECT_EQ(r.Header("Transfer-Encoding"), "chunked");  // streamed, not built whole
  EXPECT_EQ(r.body.size(), big_.size());
  EXPECT_TRUE(r.body == big_) << "the bytes differ";
  r = Ask("GET", "/late/file?name=late-1700000000.sealed");
  ASSERT_EQ(r.status_code, 200);
  EXPECT_TRUE(r.body == small_);
  // Many at once (the daemon reads each a chunk at a time between the others).
  std::vector<std::thread> readers;
  std::atomic<int> intact{0};
  for (int i = 0; i < 4; ++i) {
    readers.emplace_back([&] {
      BlockingHttpClient client(clickatron::testing::kTestClusterSecret);
      HttpRequestSpec spec;
      spec.target = "/late/file?name=late-1700000100.sealed";
      spec.bearer_token = kAdminToken;
      spec.timeout_ms = 20000;
      HttpResponse got = client.Fetch(c_.Api(), spec);
      if (got.status_code == 200 && got.body == big_) ++intact;
    });
  }
  for (auto& t : readers) t.join();
  EXPECT_EQ(intact.load(), 4);
}

TEST_F(LateFilesTest, RefusesBadNamesAndUnknownFiles) {
  for (const char* bad : {"late-1700000000.open", "..%2Flate-1700000000.sealed", "late-1700000000.sealed%2Fx",
                          "%2Ftmp%2Flate-1700000000.sealed", "late-abc.sealed", "late-.sealed",
                          "late-1600000000.done", "late-1700000000.sealed.done", "late--1.sealed",
                          "late-%2B1700000000.sealed", "late-1700000000.sealed%20", "x"}) {
    for (const char* method : {"GET", "POST"}) {
      const std::string target = std::string(method) == "GET" ? "/late/file?name=" : "/late/done?name=";
      HttpResponse r = Ask(method, target + bad);
      EXPECT_EQ(r.status_code, 400) << method << " " << bad << ": " << r.body;
      EXPECT_EQ(Reason(r), "INVALID_NAME") << r.body;
    }
  }
  // A name given twice is neither file: refused, not the first taken.
  for (const char* method : {"GET", "POST"}) {
    const std::string target = std::string(method) == "GET" ? "/late/file" : "/late/done";
    HttpResponse twice = Ask(method, target + "?name=late-1700000000.sealed&name=late-1800000000.sealed");
    EXPECT_EQ(twice.status_code, 400) << method << ": " << twice.body;
    EXPECT_EQ(Reason(twice), "INVALID_NAME") << twice.body;
  }
  EXPECT_EQ(Reason(Ask("GET", "/late/file")), "MISSING_ARG_NAME");
  EXPECT_EQ(Reason(Ask("POST", "/late/done?name=")), "MISSING_ARG_NAME");
  // A parameter these routes that change files do not take is refused,
  // before anything is done (probe 10a: /late/seal?foo=bar sealed).
  EXPECT_EQ(Reason(Ask("POST", "/late/done?name=late-1800000000.sealed&force=1")), "UNKNOWN_PARAMETER");
  EXPECT_EQ(Reason(Ask("POST", "/late/seal?foo=bar")), "UNKNOWN_PARAMETER");
  HttpResponse r = Ask("GET", "/late/file?name=late-1800000000.sealed");
  EXPECT_EQ(r.status_code, 404) << r.body;
  EXPECT_EQ(Reason(r), "NOT_FOUND");
  r = Ask("POST", "/late/done?name=late-1800000000.sealed");
  EXPECT_EQ(r.status_code, 404) << r.body;
  // A file already done is not served any more.
  EXPECT_EQ(Ask("GET", "/late/file?name=late-1600000000.sealed").status_code, 404);
  EXPECT_EQ(Listed().size(), 2u);  // nothing changed
}

TEST_F(LateFilesTest, NeedTheAdminToken) {
  for (const std::string& token : {std::string(), std::string("wrong-token")}) {
    EXPECT_EQ(Ask("GET", "/late/files", token).status_code, 401);
    HttpResponse r = Ask("GET", "/late/file?name=late-1700000000.sealed", token);
    EXPECT_EQ(r.status_code, 401);
    EXPECT_EQ(r.body.find(small_.substr(kFrameHeaderBytes, 20)), std::string::npos);
    EXPECT_EQ(Ask("POST", "/late/done?name=late-1700000000.sealed", token).status_code, 401);
  }
  EXPECT_TRUE(std::filesystem::exists(late_dir_ + "/late-1700000000.sealed"));
  // Methods: listing and fetching are GETs, done is a POST.
  EXPECT_EQ(Ask("POST", "/late/files").status_code, 405);
  EXPECT_EQ(Ask("GET", "/late/done?name=late-1700000000.sealed").status_code, 405);
}

TEST_F(LateFilesTest, DoneRenamesOnceAndARerunIsSuccess) {
  HttpResponse r = Ask("POST", "/late/done?name=late-1700000000.sealed");
  ASSERT_EQ(r.status_code, 200) << r.body;
  auto j = nlohmann::json::parse(r.body);
  EXPECT_EQ(j["data"]["name"], "late-1700000000.sealed");
  EXPECT_EQ(j["data"]["already_done"], false);
  EXPECT_FALSE(std::filesystem::exists(late_dir_ + "/late-1700000000.sealed"));
  EXPECT_EQ(clickatron::testing::ReadAll(late_dir_ + "/late-1700000000.done"), small_);
  EXPECT_EQ(Listed(), (std::map<std::string, uint64_t>{{"late-1700000100.sealed", big_.size()}}));
  EXPECT_EQ(Ask("GET", "/late/file?name=late-1700000000.sealed").status_code, 404);
  // Again (a rebuild rerun after a crash): success, nothing changes.
  r = Ask("POST", "/late/done?name=late-1700000000.sealed");
  ASSERT_EQ(r.status_code, 200) << r.body;
  EXPECT_EQ(nlohmann::json::parse(r.body)["data"]["already_done"], true);
  EXPECT_EQ(clickatron::testing::ReadAll(late_dir_ + "/late-1700000000.done"), small_);
  // A restart reads the .done file back (its records keep late lines from
  // being moved twice) and lists the same.
  EXPECT_EQ(c_.Stop("api-0"), 0);
  ASSERT_NO_FATAL_FAILURE(c_.Start("api-0"));
  EXPECT_EQ(Listed(), (std::map<std::string, uint64_t>{{"late-1700000100.sealed", big_.size()}}));
}

}  // namespace
}  // namespace clickatron::api::write_testing
