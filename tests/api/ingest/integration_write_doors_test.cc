// Issue 47: the doors app servers already write through, each against a real
// client: InfluxDB line protocol (Debian's python3-influxdb, and curl for
// raw /api/v2/write bodies), statsd over UDP and TCP (python3-statsd), and
// an Idempotency-Key retried on the other node of a two-API cluster (curl).
// The oracle for every door is the same increments sent to /incr under
// another namespace: both must leave the same records on the shards.
#include <sys/wait.h>

#include <csignal>
#include <cstdio>
#include <ctime>
#include <filesystem>
#include <fstream>
#include <map>
#include <string>
#include <thread>
#include <vector>

#include <zlib.h>

#include "api/ingest/cluster_fixture.h"
#include "clickatron/ymdh.h"
#include "testutil/cluster_toml.h"

namespace clickatron::api::write_testing {
namespace {

const std::string kDoorPython = "/usr/bin/python3";  // Debian's, with python3-influxdb and python3-statsd

// Runs a Python program with Debian's python3; its exit code, output in *out.
int DoorPython(const std::string& program, std::string* out) {
  return clickatron::testing::RunCommand({kDoorPython, "-c", program}, out);
}

// The shards' records of namespace `ns`: totals, subtotals of the namespaces
// `sns` and the unique records beside them (docs/protocols.md: `ns|…`,
// `SNS.ns|…`, and each behind a `~`), with the namespace cut out: two
// namespaces fed the same increments through different doors compare equal.
std::map<std::string, std::string> DoorRecords(const WriteCluster& c, const std::string& ns,
                                               const std::vector<std::string>& sns = {"c", "r"}) {
  std::vector<std::string> heads = {""};
  for (const std::string& s : sns) heads.push_back(s + ".");
  std::map<std::string, std::string> out;
  for (const std::string& head : heads) {
    for (const char* unique : {"", "~"}) {
      const std::string prefix = std::string(unique) + head + ns + "|";
      for (const auto& [key, value] : c.Records(prefix)) {
        out[std::string(unique) + head + "NS" + key.substr(prefix.size() - 1)] = value.first;
      }
    }
  }
  return out;
}

// One increment, in the /incr form and as the other doors write it.
struct DoorIncrement {
  std::string key;
  int64_t ts;
  int64_t value;
  std::string country;  // a subtotal c:COUNTRY ("" for none)
  std::string visitor;  // uniq ("" for none)
  std::string IncrLine(const std::string& ns) const {
    std::string line = fmt::format("ns={}&key={}&ts={}&value={}", ns, key, ts, value);
    if (!country.empty()) line += "&sub=c%3A" + country;
    if (!visitor.empty()) line += "&uniq=" + visitor;
    return line + "\n";
  }
  // Line protocol at precision "s".
  std::string InfluxLine(const std::string& ns) const {
    std::string line = ns + ",key=" + key;
    if (!country.empty()) line += ",c=" + country;
    line += fmt::format(" value={}i", value);
    if (!visitor.empty()) line += ",uniq=\"" + visitor + "\"";
    return line + fmt::format(" {}\n", ts);
  }
};

std::vector<DoorIncrement> DoorSample(int64_t ts) {
  std::vector<DoorIncrement> out;
  const char* countries[] = {"US", "FR", "", "DE"};
  for (int i = 0; i < 40; ++i) {
    out.push_back({fmt::format("k{}", i % 7), ts - 3600 * (i % 3), 1 + i % 5, countries[i % 4],
                   i % 2 ? fmt::format("v{}", i % 9) : ""});
  }
  return out;
}

void PostIncrLines(const WriteCluster& c, const std::string& body) {
  auto r = HttpPost(c.Api(), "/incr", body, 10000);
  ASSERT_EQ(r.status_code, 200) << r.body;
}

TEST(IntegrationWriteDoorsTest, InfluxClientLibraryCountsLikeIncr) {
  WriteCluster c;
  c.StartAll();
  const int64_t ts = static_cast<int64_t>(std::time(nullptr));
  const std::vector<DoorIncrement> sample = DoorSample(ts);
  std::string incr;
  for (const DoorIncrement& i : sample) incr += i.IncrLine("a");
  PostIncrLines(c, incr);

  // python3-influxdb writes "b" through /write (Influx 1), half of it gzipped.
  std::string points = "[";
  for (const DoorIncrement& i : sample) {
    std::string tags = fmt::format("{{'key': '{}'", i.key);
    if (!i.country.empty()) tags += fmt::format(", 'c': '{}'", i.country);
    tags += "}";
    std::string fields = fmt::format("{{'value': {}", i.value);
    if (!i.visitor.empty()) fields += fmt::format(", 'uniq': '{}'", i.visitor);
    fields += "}";
    points += fmt::format("{{'measurement': 'b', 'tags': {}, 'fields': {}, 'time': {}}},", tags, fields, i.ts);
  }
  points += "]";
  const std::string program = fmt::format(R"(
from influxdb import InfluxDBClient
points = {points}
half = len(points) // 2
plain = InfluxDBClient(host='127.0.0.1', port={port}, database='clicks')
assert plain.write_points(points[:half], time_precision='s')
packed = InfluxDBClient(host='127.0.0.1', port={port}, database='clicks', gzip=True)
assert packed.write_points(points[half:], time_precision='s')
print('ok')
)",
                                          fmt::arg("points", points), fmt::arg("port", c.Api().port));
  std::string out;
  ASSERT_EQ(DoorPython(program, &out), 0) << out;

  ASSERT_TRUE(WaitFor([&] { return c.Drained(); })) << c.ApiStats().dump();
  const auto want = DoorRecords(c, "a");
  // 7 keys x 3 hours of totals, their unique totals, and the subtotals.
  EXPECT_GT(want.size(), 42u) << "totals, subtotals and uniques";
  EXPECT_EQ(DoorRecords(c, "b"), want);
  EXPECT_EQ(c.ApiStats()["write"]["influx_requests"], 2);
}

// `text` as one gzip member whose header carries `mtime`, as a client
// stamps the time it compressed.
std::string GzipStamped(const std::string& text, unsigned long mtime) {
  z_stream z{};
  if (deflateInit2(&z, Z_DEFAULT_COMPRESSION, Z_DEFLATED, 15 + 16, 8, Z_DEFAULT_STRATEGY) != Z_OK) return {};
  gz_header header{};
  header.time = mtime;
  deflateSetHeader(&z, &header);
  std::string out(deflateBound(&z, text.size()) + 64, '\0');
  z.next_in = reinterpret_cast<Bytef*>(const_cast<char*>(text.data()));
  z.avail_in = static_cast<uInt>(text.size());
  z.next_out = reinterpret_cast<Bytef*>(out.data());
  z.avail_out = static_cast<uInt>(out.size());
  const int st = deflate(&z, Z_FINISH);
  out.resize(z.total_out);
  deflateEnd(&z);
  return st == Z_STREAM_END ? out : std::string();
}

TEST(IntegrationWriteDoorsTest, RawLinesAtEveryPrecisionAllOrNothingAndKeyed) {
  ClusterSpec spec = WriteCluster::Spec(2);
  spec.http.SetInt("max_body_bytes", 1 << 20);
  WriteCluster c(spec);
  c.StartAll();
  const int64_t ts = static_cast<int64_t>(std::time(nullptr));
  const std::string hour = *YmdhFromUnix(ts);
  // The same instant written at each precision Influx 2 takes, each to its own key.
  const std::vector<std::pair<std::string, std::string>> precisions = {
      {"ns", fmt::format("{}123456789", ts)}, {"us", fmt::format("{}123456", ts)},
      {"ms", fmt::format("{}123", ts)},       {"s", fmt::format("{}", ts)}};
  for (const auto& [precision, stamp] : precisions) {
    CurlAnswer a = Curl(c.dir(), c.Api(), "/api/v2/write?org=o&bucket=clicks&precision=" + precision,
                            fmt::format("p,key={} value=3i {}\np,key={} value=1.0 {}\n", precision, stamp, precision, stamp),
                            {"Content-Type: text/plain; charset=utf-8"});
    EXPECT_EQ(a.status, 204) << precision << ": " << a.body;
    EXPECT_TRUE(a.body.empty()) << a.body;
  }

  // A bad line refuses the whole body, naming it, in Influx's error shape.
  CurlAnswer bad = Curl(c.dir(), c.Api(), "/api/v2/write?bucket=clicks",
                            fmt::format("p,key=x value=1i {}000000000\np,key=x value=1.5 {}000000000\n", ts, ts), {});
  EXPECT_EQ(bad.status, 400) << bad.body;
  auto j = nlohmann::json::parse(bad.body, nullptr, false);
  ASSERT_TRUE(j.is_object()) << bad.body;
  EXPECT_EQ(j.value("code", ""), "invalid");
  EXPECT_NE(j.value("message", "").find("line 2"), std::string::npos) << bad.body;
  EXPECT_EQ(Curl(c.dir(), c.Api(), "/api/v2/write?bucket=clicks", "p,key=x size=1i\n", {}).status, 400);
  // The server's own refusals on these paths are Influx's shape too, with
  // Influx's code for the status: a GET is "method not allowed".
  HttpResponse get = HttpGet(c.Api(), "/api/v2/write?bucket=clicks");
  EXPECT_EQ(get.status_code, 405) << get.body;
  const auto get_error = nlohmann::json::parse(get.body, nullptr, false);
  ASSERT_TRUE(get_error.is_object()) << get.body;
  EXPECT_EQ(get_error.value("code", ""), "method not allowed") << get.body;
  EXPECT_EQ(get.Header("Allow"), "POST");
  EXPECT_EQ(Curl(c.dir(), c.Api(), "/api/v2/write?bucket=clicks&precision=fortnight", "p,key=x\n", {}).status,
            400);
  // A misspelt or repeated precision is refused, not taken as nanoseconds
  // (probe 10a: 204, the points counted in 1970).
  for (const char* target : {"/write?db=clicks&precison=s", "/api/v2/write?bucket=clicks&precison=s",
                             "/write?db=clicks&precision=s&precision=ms"}) {
    CurlAnswer a = Curl(c.dir(), c.Api(), target, fmt::format("p,key=typo value=3i {}\n", ts), {});
    EXPECT_EQ(a.status, 400) << target << ": " << a.body;
    EXPECT_NE(a.body.find(std::string(target).find("precison") != std::string::npos ? "precison" : "precision"),
              std::string::npos)
        << target << ": " << a.body;
  }
  // A small gzip body that inflates past max_body_bytes: 413, nothing taken.
  const std::string bomb_path = c.dir() + "/bomb";
  {
    std::string plain = fmt::format("p,key=x value=1i {}\n", ts);
    std::string big;
    while (big.size() < (2u << 20)) big += plain;
    gzFile gz = gzopen(bomb_path.c_str(), "wb9");
    ASSERT_NE(gz, nullptr);
    ASSERT_EQ(gzwrite(gz, big.data(), static_cast<unsigned>(big.size())), static_cast<int>(big.size()));
    gzclose(gz);
  }
  std::ifstream bomb_in(bomb_path, std::ios::binary);
  const std::string bomb((std::istreambuf_iterator<char>(bomb_in)), {});
  ASSERT_LT(bomb.size(), 1u << 20);
  CurlAnswer too_big =
      Curl(c.dir(), c.Api(), "/api/v2/write?bucket=clicks&precision=s", bomb, {"Content-Encoding: gzip"});
  EXPECT_EQ(too_big.status, 413) << too_big.body;

  // An Idempotency-Key: the retry is answered 204 again and counts nothing.
  const std::string keyed = fmt::format("p,key=keyed value=4i {}\n", ts);
  const std::vector<std::string> key = {"Idempotency-Key: influx-1"};
  ASSERT_EQ(Curl(c.dir(), c.Api(), "/write?db=clicks&precision=s", keyed, key).status, 204);
  CurlAnswer again = Curl(c.dir(), c.Api(), "/write?db=clicks&precision=s", keyed, key);
  EXPECT_EQ(again.status, 204);
  EXPECT_TRUE(again.Replayed()) << again.headers;

  // A keyed gzip body compressed again for its retry: other bytes (gzip
  // writes the time into its header), the same content. Replayed, not
  // refused as another request. Coding names are case-insensitive, and
  // x-gzip is gzip.
  const std::string zipped = fmt::format("p,key=zipped value=2i {}\n", ts);
  ASSERT_NE(GzipStamped(zipped, 1000), GzipStamped(zipped, 2000));
  ASSERT_EQ(Curl(c.dir(), c.Api(), "/write?db=clicks&precision=s", GzipStamped(zipped, 1000),
                 {"Idempotency-Key: influx-gz", "Content-Encoding: gzip"})
                .status,
            204);
  CurlAnswer zipped_again = Curl(c.dir(), c.Api(), "/write?db=clicks&precision=s", GzipStamped(zipped, 2000),
                                 {"Idempotency-Key: influx-gz", "Content-Encoding: GZIP"});
  EXPECT_EQ(zipped_again.status, 204) << zipped_again.body;
  EXPECT_TRUE(zipped_again.Replayed()) << zipped_again.headers;
  EXPECT_EQ(Curl(c.dir(), c.Api(), "/api/v2/write?bucket=clicks&precision=s",
                 GzipStamped(fmt::format("p,key=xgzip value=5i {}\n", ts), 0), {"Content-Encoding: x-gzip"})
                .status,
            204);

  ASSERT_TRUE(WaitFor([&] { return c.Drained(); })) << c.ApiStats().dump();
  const std::map<std::string, int64_t> want = {{"p|ns." + hour, 4},     {"p|us." + hour, 4},
                                               {"p|ms." + hour, 4},     {"p|s." + hour, 4},
                                               {"p|keyed." + hour, 4},  {"p|zipped." + hour, 2},
                                               {"p|xgzip." + hour, 5}};
  EXPECT_EQ(c.Counters("p|"), want);
}

TEST(IntegrationWriteDoorsTest, StatsdClientOverUdpAndTcpCountsLikeIncr) {
  ClusterSpec spec = WriteCluster::Spec(2);
  const uint16_t port = clickatron::testing::FreePort();
  spec.members["api-0"].extra.SetString("statsd_udp", fmt::format("127.0.0.1:{}", port));
  spec.members["api-0"].extra.SetString("statsd_tcp", fmt::format("127.0.0.1:{}", port));
  WriteCluster c(spec);
  c.StartAll();
  const int64_t ts = static_cast<int64_t>(std::time(nullptr));

  // The oracle: what statsd is sent below, as /incr lines of ns "a".
  std::string incr;
  for (int i = 0; i < 10; ++i) incr += fmt::format("ns=a&key=udp&ts={}&value=2\n", ts);
  for (int i = 0; i < 4; ++i) incr += fmt::format("ns=a&key=tcp.one&ts={}&value=5\n", ts);
  incr += fmt::format("ns=a&key=tagged&ts={}&value=1&sub=c%3AUS\n", ts);
  incr += fmt::format("ns=a&key=tagged&ts={}&value=6&sub=c%3AFR&sub=r%3Ax\n", ts);
  PostIncrLines(c, incr);

  const std::string program = fmt::format(R"(
import socket, statsd
udp = statsd.StatsClient('127.0.0.1', {port})
for _ in range(10):
    udp.incr('s.udp', 2)
tcp = statsd.TCPStatsClient('127.0.0.1', {port})
for _ in range(4):
    tcp.incr('s.tcp.one', 5)
tcp.close()
# DogStatsD tags and a sample rate (the python client samples on its own
# side, so this packet is sent raw): bad lines are dropped, the rest taken.
raw = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
raw.sendto(b's.tagged:1|c|#c:US\nnot a line\ns.tagged:3|c|@0.5|#c:FR,r:x\ns.gauge:4|g\ns.neg:-1|c', ('127.0.0.1', {port}))
print('ok')
)",
                                          fmt::arg("port", port));
  std::string out;
  ASSERT_EQ(DoorPython(program, &out), 0) << out;

  // UDP on loopback arrives; wait for every line to be taken or dropped.
  ASSERT_TRUE(WaitFor([&] {
    const nlohmann::json s = c.ApiStats()["write"]["statsd"];
    return s["lines_taken"] == 16 && s["dropped"]["malformed"] == 1 && s["dropped"]["not_counter"] == 1 &&
           s["dropped"]["invalid"] == 1;
  })) << c.ApiStats()["write"]["statsd"].dump();
  const nlohmann::json s = c.ApiStats()["write"]["statsd"];
  EXPECT_EQ(s["lines_sampled"], 1);
  EXPECT_EQ(s["datagrams"], 11);
  EXPECT_EQ(s["tcp_connections"], 1);
  ASSERT_TRUE(WaitFor([&] { return c.Drained(); })) << c.ApiStats().dump();
  // statsd lines carry no time: they count in the API's current hour, which
  // the oracle's ts names unless the hour turned meanwhile.
  if (*YmdhFromUnix(ts) != *YmdhFromUnix(static_cast<int64_t>(std::time(nullptr)))) {
    GTEST_SKIP() << "the hour turned during the test; the oracle's hour may differ";
  }
  const auto want = DoorRecords(c, "a");
  EXPECT_EQ(DoorRecords(c, "s"), want);
}

// A key whose crc32 % 2 is `home`: its home is api-`home`.
std::string DoorKeyHomedOn(uint32_t home, const std::string& prefix) {
  for (int n = 0;; ++n) {
    const std::string key = fmt::format("{}-{}", prefix, n);
    if (crc32(0, reinterpret_cast<const Bytef*>(key.data()), static_cast<uInt>(key.size())) % 2 == home) return key;
  }
}

TEST(IntegrationWriteDoorsTest, ARetryOnTheOtherApiNodeCountsOnce) {
  ClusterSpec spec = WriteCluster::Spec(2);
  spec.api_nodes = 2;
  spec.api.SetBool("fault_injection", true);
  WriteCluster c(spec);
  c.StartAll();
  const std::string api0 = clickatron::testing::ApiMemberName(0), api1 = clickatron::testing::ApiMemberName(1);
  c.Start(api1);
  const HostPort at[2] = {c.Peer(api0), c.Peer(api1)};
  const int64_t ts = static_cast<int64_t>(std::time(nullptr));
  const std::string hour = *YmdhFromUnix(ts);
  const auto body = [&](const std::string& key, int value) {
    return fmt::format("ns=t&key={}&ts={}&value={}\n", key, ts, value);
  };
  std::map<std::string, int64_t> want;

  // Each node's keys, first sent to the other node, then retried on both.
  for (uint32_t home = 0; home < 2; ++home) {
    const std::string k = DoorKeyHomedOn(home, "retry");
    const std::vector<std::string> h = {"Idempotency-Key: " + k};
    CurlAnswer first = Curl(c.dir(), at[1 - home], "/incr", body(k, 7), h);
    ASSERT_EQ(first.status, 200) << first.body;
    EXPECT_FALSE(first.Replayed());
    for (int node = 0; node < 2; ++node) {
      CurlAnswer again = Curl(c.dir(), at[node], "/incr", body(k, 7), h);
      EXPECT_EQ(again.status, 200) << again.body;
      EXPECT_TRUE(again.Replayed()) << "node " << node << ": " << again.headers;
    }
    CurlAnswer reused = Curl(c.dir(), at[1 - home], "/incr", body(k, 8), h);
    EXPECT_EQ(reused.status, 422) << reused.body;
    want["t|" + k + "." + hour] = 7;
  }

  // A client that sets the relay header itself on the node that is not the
  // key's home is refused, not taken there: else the key would be
  // remembered on both nodes, and the retry at its home counted again.
  {
    const std::string k = DoorKeyHomedOn(1, "spoof");
    std::vector<std::string> h = {"Idempotency-Key: " + k, "Clickatron-Relayed-From: x"};
    CurlAnswer spoofed = Curl(c.dir(), at[0], "/incr", body(k, 5), h);
    EXPECT_EQ(spoofed.status, 421) << spoofed.body;
    EXPECT_EQ(spoofed.Reason(), "NOT_THE_KEYS_HOME");
    h.pop_back();
    CurlAnswer first = Curl(c.dir(), at[1], "/incr", body(k, 5), h);
    ASSERT_EQ(first.status, 200) << first.body;
    EXPECT_FALSE(first.Replayed());
    EXPECT_TRUE(Curl(c.dir(), at[0], "/incr", body(k, 5), h).Replayed());
    want["t|" + k + "." + hour] = 5;
  }

  // The home is down: the other node refuses (nothing counted anywhere);
  // after the home is back, the retry counts once.
  const std::string k = DoorKeyHomedOn(0, "down");
  const std::vector<std::string> h = {"Idempotency-Key: " + k};
  c.Kill(api0);
  CurlAnswer down = Curl(c.dir(), at[1], "/incr", body(k, 3), h);
  EXPECT_EQ(down.status, 503) << down.body;
  EXPECT_EQ(down.Reason(), "IDEMPOTENCY_HOME_DOWN");
  EXPECT_NE(down.headers.find("Retry-After"), std::string::npos);
  // Through an Influx door, in Influx's error shape.
  CurlAnswer influx_down = Curl(c.dir(), at[1], "/api/v2/write?bucket=b&precision=s",
                                fmt::format("t,key={} value=3i {}\n", k, ts), h);
  EXPECT_EQ(influx_down.status, 503) << influx_down.body;
  const auto influx_error = nlohmann::json::parse(influx_down.body, nullptr, false);
  ASSERT_TRUE(influx_error.is_object()) << influx_down.body;
  EXPECT_EQ(influx_error.value("code", ""), "unavailable") << influx_down.body;
  EXPECT_EQ(influx_error.value("message", "").rfind("IDEMPOTENCY_HOME_DOWN", 0), 0u) << influx_down.body;
  c.Start(api0);
  ASSERT_EQ(Curl(c.dir(), at[1], "/incr", body(k, 3), h).status, 200);
  EXPECT_TRUE(Curl(c.dir(), at[0], "/incr", body(k, 3), h).Replayed());
  want["t|" + k + "." + hour] = 3;

  // The client gives up while the home's commit is held; the home is
  // killed before it was ever durable: the retry through the other node,
  // after the restart, counts once.
  const std::string lost = DoorKeyHomedOn(0, "lost");
  const std::vector<std::string> lh = {"Idempotency-Key: " + lost};
  const std::string stall = c.DataDir(api0) + "/fault/oplog-stall";
  std::filesystem::create_directories(c.DataDir(api0) + "/fault");
  std::ofstream(stall).put('1');
  CurlAnswer gave_up = Curl(c.dir(), at[1], "/incr", body(lost, 9), lh, /*max_time_s=*/1);
  EXPECT_EQ(gave_up.status, 0) << "curl gave up: " << gave_up.body;
  c.Kill(api0);
  std::filesystem::remove(stall);
  c.Start(api0);
  ASSERT_EQ(Curl(c.dir(), at[1], "/incr", body(lost, 9), lh).status, 200);
  want["t|" + lost + "." + hour] = 9;

  for (const HostPort& node : at) {
    ASSERT_TRUE(WaitFor([&] {
      auto r = HttpGet(node, "/stats", 5000);
      auto j = nlohmann::json::parse(r.body, nullptr, false);
      if (j.is_discarded()) return false;
      for (const auto& shard : j["data"]["write"]["shards"]) {
        if (shard["state"] != "up" || shard["lag_seq"] != 0) return false;
      }
      return true;
    }));
  }
  EXPECT_EQ(c.Counters("t|"), want);
  auto r = HttpGet(at[1], "/stats", 5000);
  const auto idem = nlohmann::json::parse(r.body)["data"]["write"]["idempotency"];
  EXPECT_GE(idem["relayed_to_home"].get<int>(), 5) << idem.dump();
  // The refused requests (/incr, Influx), and the relay of the request whose
  // client gave up.
  EXPECT_EQ(idem["home_unavailable"], 3) << idem.dump();

  // A node stopped with SIGTERM while a request it relayed waits at the
  // key's home (its commit held) answers that request before it exits.
  const std::string held = DoorKeyHomedOn(0, "held");
  const std::vector<std::string> hh = {"Idempotency-Key: " + held};
  const int relayed_before = idem["relayed_to_home"].get<int>();
  std::ofstream(stall).put('1');
  CurlAnswer held_answer;
  std::thread client([&] { held_answer = Curl(c.dir(), at[1], "/incr", body(held, 4), hh); });
  EXPECT_TRUE(WaitFor([&] {
    auto j = nlohmann::json::parse(HttpGet(at[1], "/stats", 5000).body, nullptr, false);
    return !j.is_discarded() && j["data"]["write"]["idempotency"]["relayed_to_home"].get<int>() > relayed_before;
  }));
  c.Signal(api1, SIGTERM);
  // Its stop has begun (it refuses new requests) before the home lets go.
  EXPECT_TRUE(WaitFor([&] { return HttpGet(at[1], "/ping", 1000).status_code != 200; }));
  std::filesystem::remove(stall);
  client.join();
  EXPECT_EQ(held_answer.status, 200) << "no answer to a relayed request across a SIGTERM: " << held_answer.body;
  EXPECT_EQ(c.Stop(api1), 0);
  want["t|" + held + "." + hour] = 4;
  c.Start(api1);
  EXPECT_TRUE(Curl(c.dir(), at[1], "/incr", body(held, 4), hh).Replayed());
  ASSERT_TRUE(WaitFor([&] { return c.Counters("t|") == want; })) << "counted once";
}

}  // namespace
}  // namespace clickatron::api::write_testing
