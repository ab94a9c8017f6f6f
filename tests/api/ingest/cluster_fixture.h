// A loopback cluster for the write-path integration tests (on
// testutil/cluster.h): one API node and realtime shards, real binaries, a
// manual clock (the ring does not turn during a test) and figures read back
// from the realtime daemons themselves.
//
// Shards of test keys are computed here with zlib's crc32 (docs/protocols.md), not
// with the code under test.
#pragma once

#include <zlib.h>

#include <fstream>
#include <map>
#include <string>
#include <vector>

#include <fmt/format.h>
#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include "clickatron/query_string.h"
#include "testutil/cluster.h"

namespace clickatron::api::write_testing {

using clickatron::testing::ClusterSpec;
using clickatron::testing::HttpGet;
using clickatron::testing::HttpPost;
using clickatron::testing::WaitFor;

inline uint32_t ShardOfKey(const std::string& shard_key, uint32_t shards) {
  return static_cast<uint32_t>(crc32(0, reinterpret_cast<const Bytef*>(shard_key.data()), shard_key.size())) %
         shards;
}

// `count` tkeys "PREFIX<n>" in namespace ns that live on `shard`.
inline std::vector<std::string> KeysOnShard(const std::string& ns, const std::string& prefix, uint32_t shard,
                                            uint32_t shards, size_t count) {
  std::vector<std::string> out;
  for (int n = 0; out.size() < count; ++n) {
    std::string key = prefix + std::to_string(n);
    if (ShardOfKey(ns + "|" + key, shards) == shard) out.push_back(key);
  }
  return out;
}

class WriteCluster {
 public:
  // The write tests' cluster: one API node, `realtime_shards` shards, short
  // API timeouts and backoffs. Tests add keys to it and pass it in.
  static ClusterSpec Spec(int realtime_shards = 2) {
    ClusterSpec spec;
    spec.realtime_shards = realtime_shards;
    // The cluster file wants a replica per archive shard; writes never use it.
    spec.archive_shards = 1;
    spec.cluster.SetString("clock", "manual").SetString("log_level", "info");
    spec.api.SetInt("request_timeout_ms", 2000).SetInt("retry_backoff_min_ms", 20).SetInt("retry_backoff_max_ms", 200);
    return spec;
  }
  explicit WriteCluster(int realtime_shards = 2) : WriteCluster(Spec(realtime_shards)) {}
  explicit WriteCluster(const ClusterSpec& spec) : cluster_(spec) {}

  static std::string Realtime(int shard) { return clickatron::testing::RealtimeMemberName(shard); }
  HostPort Peer(const std::string& name) const { return cluster_.Address(name); }
  HostPort Api() const { return cluster_.Api(); }
  const std::string& dir() const { return cluster_.dir(); }
  std::string DataDir(const std::string& name) const { return cluster_.DataDir(name); }
  std::string ArchiveName() const { return cluster_.ArchiveName(0, 0); }
  std::string ArchiveFile() const { return cluster_.ArchiveFile(0); }
  const std::string& config() const { return cluster_.config_path(); }
  int shards() const { return cluster_.spec().realtime_shards; }

  // Starts a member and waits for /ping; false (and the log tail) if it did not come up.
  bool TryStart(const std::string& name, std::string* error) { return cluster_.Start(name, error); }
  void Start(const std::string& name) {
    std::string error;
    ASSERT_TRUE(TryStart(name, &error)) << name << ": " << error;
  }
  void StartAll() {
    for (int s = 0; s < shards(); ++s) Start(Realtime(s));
    Start("api-0");
  }
  void Kill(const std::string& name) { cluster_.Kill(name); }
  void Signal(const std::string& name, int signo) { cluster_.Signal(name, signo); }  // e.g. SIGSTOP, SIGCONT
  int Stop(const std::string& name) { return cluster_.Stop(name); }
  // Rewrites the cluster file (members keep their ports): each daemon reads
  // it at its next start, so members started before run the old one.
  Status Rewrite(const ClusterSpec& spec) { return cluster_.Write(spec); }
  const ClusterSpec& spec() const { return cluster_.spec(); }
  std::string LogTail(const std::string& name) const { return cluster_.LogTail(name); }

  // data of GET /stats on the API.
  nlohmann::json ApiStats() const {
    auto r = HttpGet(Api(), "/stats", 5000);
    if (r.status_code != 200) return nullptr;
    auto j = nlohmann::json::parse(r.body, nullptr, false);
    return j.is_discarded() ? nlohmann::json(nullptr) : j["data"];
  }

  // True once every shard is up with nothing queued or unacknowledged.
  bool Drained() const {
    nlohmann::json s = ApiStats();
    if (!s.is_object() || !s.contains("write")) return false;
    for (const auto& shard : s["write"]["shards"]) {
      if (shard["state"] != "up" || shard["queued_batches"] != 0 || shard["lag_seq"] != 0) return false;
    }
    return true;
  }

  // Every "key,value" record with this prefix on every realtime shard,
  // and which shard it was found on. A shard restarted after a crash reads
  // nothing until the API has re-sent what it lost (503 SHARD_RECOVERING,
  // realtime/recovery_gate.h): waited for.
  std::map<std::string, std::pair<std::string, int>> Records(const std::string& prefix) const {
    std::map<std::string, std::pair<std::string, int>> out;
    for (int s = 0; s < shards(); ++s) {
      HttpResponse r;
      WaitFor([&] {
        r = HttpGet(Peer(Realtime(s)), "/fwmatch?key=" + PercentEncode(prefix), 10000);
        return r.status_code != 503 || r.body.find("SHARD_RECOVERING") == std::string::npos;
      }, std::chrono::seconds(15));
      EXPECT_EQ(r.status_code, 200) << r.body;
      size_t pos = 0;
      while (pos < r.body.size()) {
        size_t nl = r.body.find('\n', pos);
        if (nl == std::string::npos) nl = r.body.size();
        std::string line = r.body.substr(pos, nl - pos);
        pos = nl + 1;
        if (line.empty()) continue;
        size_t comma = line.find(',');
        EXPECT_NE(comma, std::string::npos) << line;
        EXPECT_EQ(out.count(line.substr(0, comma)), 0u) << "on two shards: " << line;
        out[line.substr(0, comma)] = {line.substr(comma + 1), s};
      }
    }
    return out;
  }
  // Counter values of records with this prefix (any shard).
  std::map<std::string, int64_t> Counters(const std::string& prefix) const {
    std::map<std::string, int64_t> out;
    for (const auto& [key, v] : Records(prefix)) out[key] = std::stoll(v.first);
    return out;
  }

 private:
  clickatron::testing::Cluster cluster_;
};

// An answer as curl (a real client) got it: status 0 when curl gave up.
struct CurlAnswer {
  int status = 0;
  std::string body;
  std::string headers;
  bool Replayed() const { return headers.find("Idempotent-Replayed: true") != std::string::npos; }
  std::string Reason() const {
    auto j = nlohmann::json::parse(body, nullptr, false);
    return j.is_discarded() ? "" : j.value("status_txt", "");
  }
};

// One request with curl to `where`: POST `body` (GET when empty) with the
// given header lines, giving up after `max_time_s`. Files go under `dir`.
inline CurlAnswer Curl(const std::string& dir, const HostPort& where, const std::string& target,
                       const std::string& body, const std::vector<std::string>& headers, int max_time_s = 10) {
  static int n = 0;
  const std::string stem = fmt::format("{}/curl-{}-{}", dir, ::getpid(), n++);
  std::vector<std::string> argv = {"curl", "-s", "--max-time", std::to_string(max_time_s), "-o", stem + ".body",
                                   "-D", stem + ".headers", "-w", "%{http_code}"};
  for (const std::string& h : headers) argv.insert(argv.end(), {"-H", h});
  if (!body.empty()) argv.insert(argv.end(), {"--data-binary", "@-"});
  argv.push_back(fmt::format("http://{}{}", where.ToString(), target));
  CurlAnswer a;
  std::string out;
  clickatron::testing::RunCommand(argv, &out, body);  // -s: only the status is printed
  a.status = std::atoi(out.c_str());
  std::ifstream b(stem + ".body", std::ios::binary), h(stem + ".headers");
  a.body.assign(std::istreambuf_iterator<char>(b), {});
  a.headers.assign(std::istreambuf_iterator<char>(h), {});
  return a;
}

}  // namespace clickatron::api::write_testing
