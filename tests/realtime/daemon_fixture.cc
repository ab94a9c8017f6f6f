#include "daemon_fixture.h"

#include <fmt/format.h>

#include <gtest/gtest.h>

#include "clickatron/query_string.h"
#include "clickatron/ymdh.h"

namespace clickatron::realtime::testing {

RealtimeDaemon::RealtimeDaemon(const std::string& clock, const clickatron::testing::TomlTable& realtime,
                               const clickatron::testing::TomlTable& http) {
  clickatron::testing::ClusterSpec spec;
  spec.api_nodes = 0;
  // Batches are posted under these API members' names; the archive member
  // is there only because every cluster file needs one per shard.
  spec.loaders = {"api-0", "api-1"};
  spec.cluster.SetString("clock", clock).SetString("admin_token", kAdminToken).SetString("log_level", "info");
  // Small RocksDB memory so the tests stay light on a shared machine.
  spec.realtime = realtime;
  spec.http = http;
  if (!spec.realtime.Has("write_buffer_mb")) spec.realtime.SetInt("write_buffer_mb", 4);
  if (!spec.realtime.Has("block_cache_mb")) spec.realtime.SetInt("block_cache_mb", 8);
  const Status written = cluster_.Write(spec);
  EXPECT_TRUE(written.ok()) << written.ToString();
}

HttpResponse RealtimeDaemon::Get(const std::string& target) const {
  return clickatron::testing::HttpGet(address(), target, 20000);
}

HttpResponse RealtimeDaemon::Post(const std::string& target, const std::string& body) const {
  return clickatron::testing::HttpPost(address(), target, body, 20000);
}

HttpResponse RealtimeDaemon::AdminGet(const std::string& target) const {
  BlockingHttpClient client(clickatron::testing::kTestClusterSecret);
  HttpRequestSpec spec;
  spec.method = "GET";
  spec.target = target;
  spec.bearer_token = kAdminToken;
  spec.timeout_ms = 20000;
  return client.Fetch(address(), std::move(spec));
}

HttpResponse RealtimeDaemon::AdminPost(const std::string& target) const {
  return clickatron::testing::HttpPost(address(), target, "", 20000, kAdminToken);
}

nlohmann::json RealtimeDaemon::Incr(const std::string& source, uint64_t seq, const std::string& body,
                                    int* status) const {
  HttpResponse r = Post(fmt::format("/incr?source={}&seq={}", source, seq), body);
  if (status) *status = r.status_code;
  if (!r.ok()) return nullptr;
  return nlohmann::json::parse(r.body, nullptr, false);
}

nlohmann::json RealtimeDaemon::Ring() const {
  HttpResponse r = Get("/ring");
  if (!r.ok() || r.status_code != 200) return nullptr;
  nlohmann::json j = nlohmann::json::parse(r.body, nullptr, false);
  return j.is_object() ? j["data"] : nlohmann::json();
}

int64_t RealtimeDaemon::Today() const {
  nlohmann::json ring = Ring();
  if (!ring.is_object()) return -1;
  Result<int64_t> day = ParseDate(ring["today"].get<std::string>());
  return day.ok() ? *day : -1;
}

std::string TotalKey(const std::string& tkey, int64_t day, int hour) {
  return "u|" + tkey + "." + *YmdhFromUnix(day * kSecondsPerDay + hour * kSecondsPerHour);
}

std::string SubtotalKey(const std::string& sns, const std::string& tkey, const std::string& skey, int64_t day,
                        int hour) {
  return sns + ".u|" + tkey + "." + skey + "." + *YmdhFromUnix(day * kSecondsPerDay + hour * kSecondsPerHour);
}

std::string Date(int64_t day) { return FormatDate(day); }

std::vector<std::string> Lines(const std::string& text) {
  std::vector<std::string> out;
  size_t start = 0;
  while (start < text.size()) {
    size_t end = text.find('\n', start);
    if (end == std::string::npos) end = text.size();
    out.push_back(text.substr(start, end - start));
    start = end + 1;
  }
  return out;
}

std::string Q(const std::string& value) { return PercentEncode(value); }

}  // namespace clickatron::realtime::testing
