// The write path end to end against real realtime daemons: increments land
// exactly (totals, subtotals, lookups, on the right shard), validation errors
// reach the client, combining happens, back-pressure and catch-up work.
#include <ctime>
#include <map>
#include <string>

#include "clickatron/ymdh.h"
#include "api/ingest/cluster_fixture.h"

namespace clickatron::api::write_testing {
namespace {

nlohmann::json Json(const HttpResponse& r) {
  auto j = nlohmann::json::parse(r.body, nullptr, false);
  EXPECT_FALSE(j.is_discarded()) << r.body;
  return j;
}

std::string HourCode(int64_t ts) { return *YmdhFromUnix(ts); }

TEST(IntegrationWriteBasicTest, IncrementsLandExactlyOnTheirShards) {
  WriteCluster c;
  c.StartAll();
  const int64_t ts = static_cast<int64_t>(std::time(nullptr));
  const std::string ymdh = HourCode(ts);
  std::map<std::string, int64_t> expected;

  // Single increments, GET and POST, with defaults.
  for (int i = 0; i < 3; ++i) {
    auto r = HttpGet(c.Api(), fmt::format("/incr?ns=t&key=alice&ts={}&sub=c:US", ts));
    ASSERT_EQ(r.status_code, 200) << r.body;
    EXPECT_EQ(Json(r)["data"]["increments"], 1);
  }
  expected["t|alice." + ymdh] += 3;
  expected["c.t|alice.US." + ymdh] += 3;
  auto r = HttpPost(c.Api(), fmt::format("/incr?ns=t&key=bob&ts={}&value=7&sub=c:JP&sub=b:firefox", ts), "");
  ASSERT_EQ(r.status_code, 200) << r.body;
  expected["t|bob." + ymdh] += 7;
  expected["c.t|bob.JP." + ymdh] += 7;
  expected["b.t|bob.firefox." + ymdh] += 7;

  // A batch body: many keys, one hashed key and a hashed sub (lookups).
  std::string body;
  for (int i = 0; i < 200; ++i) {
    std::string key = "k" + std::to_string(i % 37);
    int value = 1 + i % 5;
    body += fmt::format("ns=t&key={}&ts={}&value={}&sub=c:{}\n", key, ts, value, i % 2 ? "US" : "DE");
    expected["t|" + key + "." + ymdh] += value;
    expected[fmt::format("c.t|{}.{}.{}", key, i % 2 ? "US" : "DE", ymdh)] += value;
  }
  body += "\n";  // blank lines are ignored
  body += fmt::format("ns=t&key=http%3A%2F%2Fbit.ly%2Fa%20b&ts={}&sub=r:http%3A%2F%2Fwww.facebook.com%2F\n", ts);
  r = HttpPost(c.Api(), "/incr", body);
  ASSERT_EQ(r.status_code, 200) << r.body;
  EXPECT_EQ(Json(r)["data"]["increments"], 201);

  ASSERT_TRUE(WaitFor([&] { return c.Drained(); })) << c.ApiStats().dump();
  // Counters of plain keys: exactly the oracle, each on the shard crc32 picks.
  auto records = c.Records("t|");
  for (const auto& [key, value] : expected) {
    if (!key.starts_with("t|")) continue;
    ASSERT_TRUE(records.count(key)) << key;
    EXPECT_EQ(std::stoll(records[key].first), value) << key;
    std::string tkey = key.substr(2, key.rfind('.') - 2);
    EXPECT_EQ(records[key].second, static_cast<int>(ShardOfKey("t|" + tkey, 2))) << key;
  }
  for (const char* sns_text : {"c", "b"}) {
    const std::string sns = sns_text;
    auto subs = c.Counters(sns + ".t|");
    for (const auto& [key, value] : expected) {
      if (key.starts_with(sns + ".t|")) {
        EXPECT_EQ(subs[key], value) << key;
      }
    }
  }
  // The hashed key and hashed sub: counted under their hashes, full values in lookups.
  auto lookups = c.Records("l|");
  bool saw_url = false, saw_key = false;
  for (const auto& [key, v] : lookups) {
    const std::string hash = key.substr(2);
    EXPECT_EQ(v.second, static_cast<int>(ShardOfKey(hash, 2))) << key;  // lookups route by their hash
    if (v.first == "http://www.facebook.com/") {
      saw_url = true;
      EXPECT_EQ(hash, "h0aMB8AuNw4=");
    }
    if (v.first == "http://bit.ly/a b") {
      saw_key = true;
      EXPECT_EQ(records["t|" + hash + "." + ymdh].first, "1");
      EXPECT_EQ(c.Counters("r.t|" + hash + ".h0aMB8AuNw4=.")["r.t|" + hash + ".h0aMB8AuNw4=." + ymdh], 1);
    }
  }
  EXPECT_TRUE(saw_url);
  EXPECT_TRUE(saw_key);

  // Stats: every increment counted; combining made fewer lines than records.
  nlohmann::json w = c.ApiStats()["write"];
  EXPECT_EQ(w["increments_in"], 3 + 1 + 201);
  EXPECT_LT(w["records_out"].get<uint64_t>(), w["records_in"].get<uint64_t>());
  EXPECT_GT(w["combining_ratio"].get<double>(), 1.0);
  EXPECT_GT(w["oplog"]["fsyncs"].get<uint64_t>(), 0u);
  auto metrics = HttpGet(c.Api(), "/metrics");
  EXPECT_NE(metrics.body.find("clickatron_api_increments_total"), std::string::npos);
  EXPECT_NE(metrics.body.find("clickatron_oplog_fsync_p99_seconds"), std::string::npos);
}

TEST(IntegrationWriteBasicTest, BadInputIsRefusedWholeWithTheFieldAndLine) {
  WriteCluster c;
  c.StartAll();
  const int64_t ts = static_cast<int64_t>(std::time(nullptr));
  struct Case {
    std::string target;
    std::string reason;
  };
  const std::vector<Case> cases = {
      {"/incr?key=a", "MISSING_ARG_NS"},
      {"/incr?ns=t", "MISSING_ARG_KEY"},
      {"/incr?ns=t&key=a&value=0", "INVALID_VALUE"},
      {"/incr?ns=t&key=a&ts=" + std::to_string(ts + 49 * 3600), "TS_TOO_FAR_IN_FUTURE"},
      {"/incr?ns=t&key=a&ts=-100", "TS_OUT_OF_RANGE"},
      {"/incr?ns=t&key=a&sub=c:US&sub=c:JP", "INVALID_SUB"},
      {"/incr?ns=bad%7Cns&key=a", "INVALID_NS"},
      // Misspelt: counted 1, now and without the subtotal when ignored.
      {"/incr?ns=t&key=a&vaule=3", "UNKNOWN_PARAMETER"},
      {"/incr?ns=t&key=a&tss=" + std::to_string(ts), "UNKNOWN_PARAMETER"},
      {"/incr?ns=t&key=a&sbu=c:US", "UNKNOWN_PARAMETER"},
  };
  for (const Case& cs : cases) {
    auto r = HttpGet(c.Api(), cs.target);
    EXPECT_EQ(r.status_code, 400) << cs.target;
    nlohmann::json j = Json(r);
    EXPECT_EQ(j["status_txt"], cs.reason) << cs.target << " " << r.body;
    EXPECT_TRUE(j["data"].is_null());
  }
  // A batch with a bad third line applies nothing, not even its good lines.
  auto r = HttpPost(c.Api(), "/incr",
                    fmt::format("ns=t&key=good1&ts={0}\nns=t&key=good2&ts={0}\nns=t&key=bad&ts={0}&value=x\n", ts));
  EXPECT_EQ(r.status_code, 400);
  nlohmann::json j = Json(r);
  EXPECT_EQ(j["status_txt"], "INVALID_VALUE");
  EXPECT_NE(j["message"].get<std::string>().find("line 3"), std::string::npos) << r.body;
  // Increment fields in the query string beside a body: which one counts
  // would be a guess, so neither does (uniq too, which was once ignored).
  for (const std::string target : {"/incr?ns=t", "/incr?uniq=visitor"}) {
    auto both = HttpPost(c.Api(), target, fmt::format("ns=t&key=good3&ts={}\n", ts));
    EXPECT_EQ(both.status_code, 400) << target;
    EXPECT_EQ(Json(both)["status_txt"], "INVALID_ARGUMENT") << target << " " << both.body;
  }
  // Anything else in the query string beside a body is refused too (a
  // misspelt `vaule=5` there was ignored: each line counted 1).
  auto misspelt = HttpPost(c.Api(), "/incr?vaule=5", fmt::format("ns=t&key=good4&ts={}\n", ts));
  EXPECT_EQ(misspelt.status_code, 400) << misspelt.body;
  EXPECT_EQ(Json(misspelt)["status_txt"], "UNKNOWN_PARAMETER") << misspelt.body;
  // And in a batch's line: the whole batch.
  auto line = HttpPost(c.Api(), "/incr", fmt::format("ns=t&key=good5&ts={0}\nns=t&key=good6&ts={0}&vaule=5\n", ts));
  EXPECT_EQ(line.status_code, 400) << line.body;
  EXPECT_EQ(Json(line)["status_txt"], "UNKNOWN_PARAMETER") << line.body;
  // One good increment afterwards, so we know when the pipeline has drained.
  ASSERT_EQ(HttpGet(c.Api(), fmt::format("/incr?ns=t&key=marker&ts={}", ts)).status_code, 200);
  ASSERT_TRUE(WaitFor([&] { return c.Drained(); }));
  auto totals = c.Counters("t|");
  EXPECT_EQ(totals.size(), 1u) << "only the marker may be stored";
  EXPECT_EQ(totals.begin()->first.substr(0, 9), "t|marker.");
  EXPECT_EQ(c.ApiStats()["write"]["rejected_invalid"], cases.size() + 5);  // + the 5 batches refused
}

// A shard down when the API node starts: its first watermark ask fails (an
// error), a later one is answered and the shard is up, with no error left
// ("empty when the last exchange succeeded", openapi.yaml).
TEST(IntegrationWriteBasicTest, AShardDownAtStartIsUpWithoutAnErrorOnceItAnswers) {
  WriteCluster c(WriteCluster::Spec(2));
  c.Start(WriteCluster::Realtime(0));
  c.Start("api-0");
  auto shard1 = [&] { return c.ApiStats()["write"]["shards"][1]; };
  ASSERT_TRUE(WaitFor([&] { return shard1()["failures"].get<int>() > 0; })) << shard1().dump();
  EXPECT_NE(shard1()["last_error"], "") << shard1().dump();
  c.Start(WriteCluster::Realtime(1));
  ASSERT_TRUE(WaitFor([&] { return shard1()["state"] == "up"; })) << shard1().dump();
  EXPECT_EQ(shard1()["last_error"], "") << shard1().dump();
}

TEST(IntegrationWriteBasicTest, ShardDownKeepsAcceptingThenOverloadsThenCatchesUp) {
  // Room for a handful of lines per shard while it is down.
  ClusterSpec spec = WriteCluster::Spec(2);
  spec.api.SetInt("max_queued_increments", 40);
  WriteCluster c(spec);
  c.StartAll();
  const int64_t ts = static_cast<int64_t>(std::time(nullptr));
  const std::string ymdh = HourCode(ts);
  auto on1 = KeysOnShard("t", "down", 1, 2, 100);
  auto on0 = KeysOnShard("t", "up", 0, 2, 5);
  // Idle, the node learns a shard is down, and up again, from its watermark
  // polls alone: no batch fails or succeeds to say so.
  auto shard1 = [&] { return c.ApiStats()["write"]["shards"][1]; };
  c.Kill(WriteCluster::Realtime(1));
  ASSERT_TRUE(WaitFor([&] { return shard1()["state"] == "down"; })) << shard1().dump();
  EXPECT_NE(shard1()["last_error"], "") << shard1().dump();
  c.Start(WriteCluster::Realtime(1));
  ASSERT_TRUE(WaitFor([&] { return shard1()["state"] == "up"; })) << shard1().dump();
  EXPECT_EQ(shard1()["last_error"], "") << shard1().dump();
  c.Kill(WriteCluster::Realtime(1));

  std::map<std::string, int64_t> expected;
  size_t accepted = 0;
  int overloaded = 0;
  for (const std::string& key : on1) {
    auto r = HttpGet(c.Api(), fmt::format("/incr?ns=t&key={}&ts={}", key, ts));
    if (r.status_code == 200) {
      ++accepted;
      expected["t|" + key + "." + ymdh] += 1;
    } else {
      ASSERT_EQ(r.status_code, 503) << r.body;
      EXPECT_EQ(Json(r)["status_txt"], "OVERLOADED");
      ++overloaded;
    }
  }
  EXPECT_GE(accepted, 40u);   // everything up to the limit was taken while the shard was down
  EXPECT_LT(accepted, 100u);  // and then refused, not queued without bound
  EXPECT_GT(overloaded, 0);
  // The healthy shard still takes increments.
  for (const std::string& key : on0) {
    ASSERT_EQ(HttpGet(c.Api(), fmt::format("/incr?ns=t&key={}&ts={}", key, ts)).status_code, 200);
    expected["t|" + key + "." + ymdh] += 1;
  }
  nlohmann::json stats = shard1();
  EXPECT_NE(stats["state"], "up");
  EXPECT_GT(stats["queued_lines"].get<uint64_t>(), 0u);
  EXPECT_NE(stats["last_error"], "") << stats.dump();

  c.Start(WriteCluster::Realtime(1));
  ASSERT_TRUE(WaitFor([&] { return c.Drained(); })) << c.ApiStats().dump();
  EXPECT_EQ(c.Counters("t|"), expected);
  // Up again: last_error is empty once an exchange succeeded (openapi.yaml).
  stats = shard1();
  EXPECT_EQ(stats["state"], "up") << stats.dump();
  EXPECT_EQ(stats["last_error"], "") << stats.dump();
}

// Two API processes on one data_dir shared one oplog: the second gzipped
// and unlinked the segment the first still wrote into, and increments it
// answered 200 were lost. A daemon holds its data_dir; a second refuses to
// start, before it listens (the same member: the same port too).
TEST(IntegrationWriteBasicTest, ASecondDaemonOnTheSameDataDirRefusesToStart) {
  WriteCluster c(WriteCluster::Spec(1));
  c.StartAll();
  for (const std::string& member : {std::string("api-0"), WriteCluster::Realtime(0)}) {
    const std::string binary = member == "api-0" ? "clickatron-api" : "clickatron-realtime";
    std::string output;
    const int code = clickatron::testing::RunCommand(
        {"timeout", "20", clickatron::testing::BinaryPath(binary), "--config", c.config(), "--member", member},
        &output);
    EXPECT_NE(code, 0) << member;
    EXPECT_NE(code, 124) << member << ": still running after 20 s";
    EXPECT_NE(output.find("another process uses data_dir"), std::string::npos) << member << ": " << output;
  }
  // The first is untouched.
  EXPECT_EQ(HttpGet(c.Api(), "/incr?ns=t&key=held").status_code, 200);
}

TEST(IntegrationWriteBasicTest, AWindowLargerThanOneShardRequestIsSplitIntoSeveralBatches) {
  // 64 KiB bodies everywhere: the API cuts its batches at 32 KiB.
  ClusterSpec spec = WriteCluster::Spec(1);
  spec.http.SetInt("max_body_bytes", 65536);
  WriteCluster c(spec);
  c.StartAll();
  const int64_t ts = static_cast<int64_t>(std::time(nullptr));
  const std::string h = HourCode(ts);
  std::map<std::string, int64_t> expected;
  std::string body;
  for (int i = 0; i < 700; ++i) {
    body += fmt::format("ns=t&key=split{}&ts={}&value={}&sub=c:US&sub=b:x{}\n", i, ts, i % 7 + 1, i % 3);
    expected[fmt::format("t|split{}.{}", i, h)] += i % 7 + 1;
    expected[fmt::format("c.t|split{}.US.{}", i, h)] += i % 7 + 1;
    expected[fmt::format("b.t|split{}.x{}.{}", i, i % 3, h)] += i % 7 + 1;
  }
  ASSERT_LT(body.size(), 65536u);
  auto r = HttpPost(c.Api(), "/incr", body);
  ASSERT_EQ(r.status_code, 200) << r.body;
  ASSERT_TRUE(WaitFor([&] { return c.Drained(); })) << c.ApiStats().dump();
  std::map<std::string, int64_t> got = c.Counters("t|");
  for (const auto& [k, v] : c.Counters("c.t|")) got[k] = v;
  for (const auto& [k, v] : c.Counters("b.t|")) got[k] = v;
  EXPECT_EQ(got, expected);
  nlohmann::json w = c.ApiStats()["write"];
  EXPECT_GE(w["batches_out"].get<uint64_t>(), 2u);
  EXPECT_GE(w["shards"][0]["applied"].get<uint64_t>(), 2u);
}

}  // namespace
}  // namespace clickatron::api::write_testing
