// A loopback cluster for the write-path integration tests: one API node and
// realtime shards, real binaries, a manual clock (the ring does not turn
// during a test) and figures read back from the realtime daemons themselves.
//
// Shards of test keys are computed here with zlib's crc32 (docs/protocols.md), not
// with the code under test.
#pragma once

#include <zlib.h>

#include <filesystem>
#include <map>
#include <memory>
#include <string>
#include <vector>

#include <fmt/format.h>
#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include "clickatron/file_util.h"
#include "clickatron/query_string.h"
#include "testutil/testutil.h"

namespace clickatron::api::write_testing {

using clickatron::testing::DaemonProcess;
using clickatron::testing::HttpGet;
using clickatron::testing::HttpPost;
using clickatron::testing::Loopback;
using clickatron::testing::TempDir;
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
  // `api_settings`: extra lines for the [api] table.
  explicit WriteCluster(int realtime_shards = 2, const std::string& api_settings = "")
      : shards_(realtime_shards) {
    std::string toml = fmt::format(R"([cluster]
realtime_shards = {}
archive_shards = 1
clock = "manual"
log_level = "info"
{}
[api]
request_timeout_ms = 2000
retry_backoff_min_ms = 20
retry_backoff_max_ms = 200
{}

)",
                                   realtime_shards, clickatron::testing::TestSecretToml(dir_.path()), api_settings);
    auto member = [&](const std::string& name, const std::string& role, int shard) {
      ports_[name] = clickatron::testing::FreePort();
      toml += fmt::format("[[member]]\nname = \"{}\"\nrole = \"{}\"\nlisten = \"127.0.0.1:{}\"\ndata_dir = \"{}\"\n",
                          name, role, ports_[name], dir_ / name);
      if (shard >= 0) toml += fmt::format("shard = {}\n", shard);
      toml += "\n";
    };
    member("api-0", "api", -1);
    for (int s = 0; s < realtime_shards; ++s) member(Realtime(s), "realtime", s);
    // The cluster file wants a replica per archive shard; writes never use it.
    member("archive-0", "archive", 0);
    toml += fmt::format("file = \"{}\"\n", dir_ / "archive-0.csv");
    config_ = dir_ / "cluster.toml";
    EXPECT_TRUE(WriteFileAtomically(config_, toml).ok());
  }

  static std::string Realtime(int shard) { return fmt::format("realtime-{}", shard); }
  HostPort Peer(const std::string& name) const { return Loopback(ports_.at(name)); }
  HostPort Api() const { return Peer("api-0"); }
  const std::string& dir() const { return dir_.path(); }
  std::string DataDir(const std::string& name) const { return dir_ / name; }
  const std::string& config() const { return config_; }
  int shards() const { return shards_; }

  // Starts a member and waits for /ping; false (and the log tail) if it did not come up.
  bool TryStart(const std::string& name, std::string* error) {
    auto& d = daemons_[name];
    if (!d) d = std::make_unique<DaemonProcess>();
    std::filesystem::create_directories(dir_ / name);
    const std::string binary = name.starts_with("api") ? "clickatron-api" : "clickatron-realtime";
    return d->Start(clickatron::testing::BinaryPath(binary), {"--config", config_, "--member", name},
                    dir_ / (name + ".log"), Peer(name), error);
  }
  void Start(const std::string& name) {
    std::string error;
    ASSERT_TRUE(TryStart(name, &error)) << name << ": " << error;
  }
  void StartAll() {
    for (int s = 0; s < shards_; ++s) Start(Realtime(s));
    Start("api-0");
  }
  void Kill(const std::string& name) { daemons_.at(name)->Kill(); }
  int Stop(const std::string& name) { return daemons_.at(name)->Stop(); }
  std::string LogTail(const std::string& name) const { return daemons_.at(name)->LogTail(); }

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
  // and which shard it was found on.
  std::map<std::string, std::pair<std::string, int>> Records(const std::string& prefix) const {
    std::map<std::string, std::pair<std::string, int>> out;
    for (int s = 0; s < shards_; ++s) {
      auto r = HttpGet(Peer(Realtime(s)), "/fwmatch?key=" + PercentEncode(prefix), 10000);
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
  int shards_;
  TempDir dir_;
  std::string config_;
  std::map<std::string, uint16_t> ports_;
  std::map<std::string, std::unique_ptr<DaemonProcess>> daemons_;
};

}  // namespace clickatron::api::write_testing
