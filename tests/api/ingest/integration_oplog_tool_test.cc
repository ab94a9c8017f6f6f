// `clickatron oplog list|dump|verify|replay` on a real API node's oplog.
#include <ctime>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <map>
#include <string>

#include "clickatron/ymdh.h"
#include "api/ingest/cluster_fixture.h"

namespace clickatron::api::write_testing {
namespace {

using clickatron::testing::BinaryPath;
using clickatron::testing::RunCommand;

TEST(IntegrationWriteOplogToolTest, ListDumpVerifyAndReplay) {
  WriteCluster c(1);
  c.StartAll();
  const int64_t ts = static_cast<int64_t>(std::time(nullptr));
  const std::string h = *YmdhFromUnix(ts);
  std::map<std::string, int64_t> expected;
  for (int round = 0; round < 5; ++round) {
    std::string body;
    for (int i = 0; i < 10; ++i) {
      body += fmt::format("ns=t&key=tool{}&ts={}&value={}\n", i, ts, round + i + 1);
      expected[fmt::format("t|tool{}.{}", i, h)] += round + i + 1;
    }
    ASSERT_EQ(HttpPost(c.Api(), "/incr", body).status_code, 200);
  }
  ASSERT_TRUE(WaitFor([&] { return c.Drained(); }));
  EXPECT_EQ(c.Stop("api-0"), 0);
  const std::string oplog = c.DataDir("api-0") + "/oplog";
  const std::string tool = BinaryPath("clickatron");

  std::string out;
  EXPECT_EQ(RunCommand({tool, "oplog", "verify", oplog}, &out), 0) << out;
  EXPECT_NE(out.find("ok "), std::string::npos) << out;

  EXPECT_EQ(RunCommand({tool, "oplog", "list", oplog}, &out), 0) << out;
  EXPECT_NE(out.find("oplog-0000000000000001.log"), std::string::npos) << out;
  EXPECT_NE(out.find("0:1-"), std::string::npos) << out;

  // dump: the logged lines add up to exactly what was sent.
  EXPECT_EQ(RunCommand({tool, "oplog", "dump", "--shard", "0", oplog}, &out), 0) << out;
  std::map<std::string, int64_t> dumped;
  int headers = 0;
  std::istringstream lines(out);
  for (std::string line; std::getline(lines, line);) {
    if (line.rfind("# source=api-0 shard=0 seq=", 0) == 0) {
      ++headers;
      continue;
    }
    size_t comma = line.find(',');
    ASSERT_NE(comma, std::string::npos) << line;
    dumped[line.substr(0, comma)] += std::stoll(line.substr(comma + 1));
  }
  EXPECT_GE(headers, 1);
  EXPECT_EQ(dumped, expected);

  // replay into a fresh shard: the same values; a second replay adds nothing.
  WriteCluster fresh(1);
  fresh.Start(WriteCluster::Realtime(0));
  const std::string to = fresh.Peer(WriteCluster::Realtime(0)).ToString();
  // Another shard's batches to this shard's member: refused, nothing sent.
  EXPECT_EQ(RunCommand({tool, "oplog", "replay", oplog, "--to", to, "--shard", "1", "--config", fresh.config()}, &out), 1)
      << out;
  EXPECT_NE(out.find("these are shard 1's batches"), std::string::npos) << out;
  EXPECT_TRUE(fresh.Counters("t|").empty());
  EXPECT_EQ(RunCommand({tool, "oplog", "replay", oplog, "--to", to, "--shard", "0", "--config", fresh.config()}, &out), 0) << out;
  EXPECT_EQ(fresh.Counters("t|"), expected);
  EXPECT_EQ(RunCommand({tool, "oplog", "replay", oplog, "--to", to, "--shard", "0", "--config", fresh.config()}, &out), 0) << out;
  EXPECT_NE(out.find("sent 0 batches"), std::string::npos) << out;
  EXPECT_EQ(fresh.Counters("t|"), expected);

  // A replay into a shard restarted after a crash says how far the oplog
  // goes (heard=): once the shard has all of it again, its reads are
  // answered at once, not held back for the wait of an API node that may
  // never come (realtime/recovery_gate.h).
  const HostPort shard = fresh.Peer(WriteCluster::Realtime(0));
  ASSERT_TRUE(WaitFor([&] {
    nlohmann::json wm = nlohmann::json::parse(HttpGet(shard, "/watermark?source=api-0").body, nullptr, false);
    return wm.is_object() && wm["data"].is_object() && wm["data"].value("durable_seq", uint64_t{0}) > 0 &&
           wm["data"]["durable_seq"] == wm["data"]["seq"];
  }));
  fresh.Kill(WriteCluster::Realtime(0));
  fresh.Start(WriteCluster::Realtime(0));
  HttpResponse held = HttpGet(shard, "/fwmatch?key=t%7C");
  EXPECT_EQ(held.status_code, 503) << "a restart after a crash waits for api-0: " << held.body;
  EXPECT_EQ(RunCommand({tool, "oplog", "replay", oplog, "--to", to, "--shard", "0", "--config", fresh.config()}, &out), 0) << out;
  HttpResponse read = HttpGet(shard, "/fwmatch?key=t%7C");
  EXPECT_EQ(read.status_code, 200) << read.body;
  EXPECT_EQ(fresh.Counters("t|"), expected);

  // verify: the node stopped cleanly, so a segment cut short since is
  // damage, not a crash's torn tail: exit 1.
  const std::string segment = oplog + "/oplog-0000000000000001.log";
  ASSERT_TRUE(std::filesystem::exists(oplog + "/clean-stop"));
  const auto whole = std::filesystem::file_size(segment);
  const std::string kept = c.dir() + "/whole.log";
  std::filesystem::copy_file(segment, kept);
  std::filesystem::resize_file(segment, whole - 3);
  EXPECT_EQ(RunCommand({tool, "oplog", "verify", oplog}, &out), 1) << out;
  EXPECT_NE(out.find("ended whole"), std::string::npos) << out;
  std::filesystem::copy_file(kept, segment, std::filesystem::copy_options::overwrite_existing);
  EXPECT_EQ(RunCommand({tool, "oplog", "verify", oplog}, &out), 0) << out;

  // verify: a flipped byte in the middle of a segment is reported, exit 1.
  const std::string copy = c.dir() + "/damaged.log";
  std::filesystem::copy_file(oplog + "/oplog-0000000000000001.log", copy);
  std::string data;
  {
    std::ifstream in(copy, std::ios::binary);
    data.assign(std::istreambuf_iterator<char>(in), {});
  }
  size_t pos = data.find("tool3");
  ASSERT_NE(pos, std::string::npos);
  data[pos] = 'T';
  {
    std::ofstream o(copy, std::ios::binary | std::ios::trunc);
    o << data;
  }
  EXPECT_EQ(RunCommand({tool, "oplog", "verify", copy}, &out), 1) << out;
  EXPECT_NE(out.find("CORRUPT"), std::string::npos) << out;

  // The API itself refuses to start on that oplog rather than skip the record.
  std::filesystem::copy_file(copy, oplog + "/oplog-0000000000000001.log",
                             std::filesystem::copy_options::overwrite_existing);
  std::string error;
  EXPECT_FALSE(c.TryStart("api-0", &error));
  EXPECT_NE(error.find("damaged"), std::string::npos) << error;
}

// `clickatron status` with another cluster secret than the members': each
// signed read is refused 401, and the line says why in the member's words
// (operations.md's troubleshooting table promises it), not just "HTTP 401".
TEST(IntegrationStatusToolTest, ARefusedSignatureSaysWhy) {
  WriteCluster c(1);
  c.StartAll();
  std::string out;
  const std::string tool = BinaryPath("clickatron");
  RunCommand({tool, "status", "--config", c.config()}, &out);  // (no archive replica runs here)
  const auto realtime_line = [&] {
    const size_t at = out.find("realtime-0 ");
    return at == std::string::npos ? std::string() : out.substr(at, out.find('\n', at) - at);
  };
  ASSERT_NE(realtime_line().find(" up "), std::string::npos) << out;
  // The same cluster file, another secret.
  const std::string other_secret = c.dir() + "/other.secret";
  ASSERT_EQ(RunCommand({tool, "secret", other_secret}, &out), 0) << out;
  std::string toml = clickatron::testing::ReadAll(c.config());
  const size_t at = toml.find("cluster_secret_file = ");
  ASSERT_NE(at, std::string::npos) << toml;
  toml.replace(at, toml.find('\n', at) - at, "cluster_secret_file = \"" + other_secret + "\"");
  const std::string other_config = c.dir() + "/other.toml";
  clickatron::testing::WriteAll(other_config, toml);
  EXPECT_EQ(RunCommand({tool, "status", "--config", other_config}, &out), 3) << out;
  EXPECT_NE(realtime_line().find(" DOWN "), std::string::npos) << out;
  EXPECT_NE(realtime_line().find("HTTP 401 "), std::string::npos) << out;  // with its reason
  EXPECT_NE(realtime_line().find("wrong signature"), std::string::npos) << out;
}

}  // namespace
}  // namespace clickatron::api::write_testing
