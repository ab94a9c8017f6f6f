// Issue 53 §2: a damaged oplog segment whose batches every shard had
// confirmed durable is set aside and the API node starts (counts exact, the
// metric shows it, `clickatron oplog list` says what is missing); a damaged
// segment still needed stops the node, naming the file.
#include <ctime>
#include <filesystem>
#include <fstream>
#include <string>
#include <vector>

#include "api/ingest/cluster_fixture.h"
#include "clickatron/gzip_file.h"
#include "clickatron/ymdh.h"
#include "testutil/testutil.h"

namespace clickatron::api::write_testing {
namespace {

ClusterSpec DamagedOplogSpec() {
  ClusterSpec spec = WriteCluster::Spec(2);
  spec.api.SetInt("oplog_segment_bytes", 4096);  // many small segments
  return spec;
}

std::vector<std::string> GzippedSegments(const WriteCluster& c) {
  std::vector<std::string> out;
  for (const auto& e : std::filesystem::directory_iterator(c.DataDir("api-0") + "/oplog")) {
    if (e.path().string().ends_with(".log.gz")) out.push_back(e.path().string());
  }
  std::sort(out.begin(), out.end());
  return out;
}

// True if the whole gzip file still inflates with a matching checksum.
bool StillInflates(const std::string& path) {
  auto reader = GzipReader::Open(path);
  if (!reader.ok()) return false;
  char buf[4096];
  while (true) {
    auto got = reader->Read(buf, sizeof buf);
    if (!got.ok()) return false;
    if (*got == 0) return true;
  }
}

// Flips bytes in the middle of the file (its deflate data) until the segment
// no longer reads back. One flipped byte is not always enough: about one time
// in ten the stream still inflated to the same bytes with the same CRC.
void DamageDeflateData(const std::string& path) {
  std::fstream f(path, std::ios::in | std::ios::out | std::ios::binary);
  ASSERT_TRUE(f.good()) << path;
  f.seekg(0, std::ios::end);
  const std::streamoff size = f.tellg();
  for (std::streamoff at = size / 2; at < size - 8; ++at) {  // the last 8 bytes are the trailer
    f.seekg(at);
    char byte = 0;
    f.get(byte);
    f.seekp(at);
    f.put(static_cast<char>(byte ^ 0x5a));
    f.flush();
    if (!StillInflates(path)) return;
  }
  FAIL() << "no flipped byte damaged " << path;
}

// Sends `batches` batches of 20 increments of keys "dmgN" (each value 1).
std::map<std::string, int64_t> SendDamageBatches(const WriteCluster& c, const std::string& prefix, int batches,
                                                 int64_t ts, const std::vector<std::string>& keys) {
  std::map<std::string, int64_t> want;
  const std::string hour = *YmdhFromUnix(ts);
  for (int b = 0; b < batches; ++b) {
    std::string body;
    for (int i = 0; i < 20; ++i) {
      const std::string& key = keys[static_cast<size_t>(b * 20 + i) % keys.size()];
      body += fmt::format("ns=t&key={}&ts={}&value=1\n", key, ts);
      ++want["t|" + key + "." + hour];
    }
    auto r = HttpPost(c.Api(), "/incr", body, 10000);
    EXPECT_EQ(r.status_code, 200) << prefix << ": " << r.body;
  }
  return want;
}

// Every shard confirmed durable all this node wrote to it.
bool AllDurable(const WriteCluster& c) {
  nlohmann::json s = c.ApiStats();
  if (!s.is_object()) return false;
  for (const auto& shard : s["write"]["shards"]) {
    if (shard["durable_confirmed_seq"] != shard["written_seq"]) return false;
  }
  return true;
}

TEST(IntegrationDamagedOplogTest, AnAcknowledgedDamagedSegmentIsSetAsideAndTheNodeStarts) {
  WriteCluster c(DamagedOplogSpec());
  c.StartAll();
  const int64_t ts = static_cast<int64_t>(std::time(nullptr));
  std::vector<std::string> keys;
  for (int i = 0; i < 50; ++i) keys.push_back(fmt::format("dmg{}", i));
  const auto want = SendDamageBatches(c, "before", 60, ts, keys);
  ASSERT_TRUE(WaitFor([&] { return AllDurable(c); })) << c.ApiStats().dump();
  ASSERT_TRUE(WaitFor([&] { return GzippedSegments(c).size() >= 2; }));
  ASSERT_EQ(c.Stop("api-0"), 0);

  const std::string damaged = GzippedSegments(c).front();
  ASSERT_NO_FATAL_FAILURE(DamageDeflateData(damaged));
  c.Start("api-0");
  nlohmann::json oplog = c.ApiStats()["write"]["oplog"];
  EXPECT_EQ(oplog["damaged_segments_set_aside"], 1) << oplog.dump();
  EXPECT_TRUE(std::filesystem::exists(damaged + ".damaged"));
  EXPECT_NE(c.LogTail("api-0").find(std::filesystem::path(damaged).filename().string()), std::string::npos);
  // The counts stay exact (the set-aside batches are on their shards), and
  // the node takes increments again.
  ASSERT_TRUE(WaitFor([&] { return c.Drained(); })) << c.ApiStats().dump();
  EXPECT_EQ(c.Counters("t|"), want);
  auto more = HttpPost(c.Api(), "/incr", fmt::format("ns=t&key=after&ts={}\n", ts), 10000);
  EXPECT_EQ(more.status_code, 200) << more.body;

  // A reader of the oplog is told what it lacks.
  std::string list;
  EXPECT_EQ(clickatron::testing::RunCommand(
                {std::string(CLICKATRON_BIN_DIR) + "/clickatron", "oplog", "list", c.DataDir("api-0") + "/oplog"},
                &list),
            0)
      << list;
  EXPECT_NE(list.find("set aside as damaged"), std::string::npos) << list;
}

TEST(IntegrationDamagedOplogTest, ADamagedSegmentStillNeededStopsTheNodeNamingIt) {
  WriteCluster c(DamagedOplogSpec());
  c.StartAll();
  const int64_t ts = static_cast<int64_t>(std::time(nullptr));
  // Shard 1 is down: what the API writes for it is acknowledged to clients
  // (durable in the oplog) but not yet durable on the shard.
  c.Kill(WriteCluster::Realtime(1));
  const auto keys = KeysOnShard("t", "needed", 1, 2, 50);
  SendDamageBatches(c, "needed", 60, ts, keys);
  ASSERT_TRUE(WaitFor([&] { return GzippedSegments(c).size() >= 2; }));
  ASSERT_EQ(c.Stop("api-0"), 0);

  const std::string damaged = GzippedSegments(c).front();
  ASSERT_NO_FATAL_FAILURE(DamageDeflateData(damaged));
  std::string error;
  EXPECT_FALSE(c.TryStart("api-0", &error));
  EXPECT_NE(error.find(std::filesystem::path(damaged).filename().string()), std::string::npos) << error;
  EXPECT_NE(error.find("refusing to start"), std::string::npos) << error;
}

}  // namespace
}  // namespace clickatron::api::write_testing
