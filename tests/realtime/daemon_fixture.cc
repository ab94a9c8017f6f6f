#include "daemon_fixture.h"

#include <fmt/format.h>

#include <fstream>

#include "clickatron/query_string.h"
#include "clickatron/ymdh.h"

namespace clickatron::realtime::testing {

using clickatron::testing::BinaryPath;
using clickatron::testing::FreePort;

RealtimeDaemon::RealtimeDaemon(const std::string& clock, const std::string& realtime_extra) {
  member_.name = "realtime-0";
  member_.role = MemberRole::kRealtime;
  member_.listen = HostPort{"127.0.0.1", FreePort()};
  member_.data_dir = dir_ / "realtime-0";
  member_.shard = 0;
  config_path_ = dir_ / "cluster.toml";
  std::ofstream out(config_path_);
  // Small RocksDB memory so the tests stay light on a shared machine; an
  // archive member only because every cluster file needs one per shard.
  out << fmt::format(R"([cluster]
realtime_shards = 1
archive_shards = 1
clock = "{}"
admin_token = "{}"
log_level = "info"
{}
[realtime]
write_buffer_mb = 4
block_cache_mb = 8
{}

[[member]]
name = "realtime-0"
role = "realtime"
listen = "{}"
data_dir = "{}"
shard = 0

[[member]]
name = "archive-0"
role = "archive"
listen = "127.0.0.1:{}"
data_dir = "{}"
shard = 0
file = "{}"

{})",
                     clock, kAdminToken, clickatron::testing::TestSecretToml(dir_.path()), realtime_extra, member_.listen.ToString(), member_.data_dir, FreePort(), dir_ / "archive-0",
                     dir_ / "archive-0.csv", clickatron::testing::LoaderMemberToml("api-0", dir_.path()) + clickatron::testing::LoaderMemberToml("api-1", dir_.path()));
}

bool RealtimeDaemon::Start(std::string* error) {
  return process_.StartMember(BinaryPath("clickatron-realtime"), config_path_, member_, dir_.path(), error);
}

HttpResponse RealtimeDaemon::Get(const std::string& target) const {
  return clickatron::testing::HttpGet(member_.listen, target, 20000);
}

HttpResponse RealtimeDaemon::Post(const std::string& target, const std::string& body) const {
  return clickatron::testing::HttpPost(member_.listen, target, body, 20000);
}

HttpResponse RealtimeDaemon::AdminGet(const std::string& target) const {
  BlockingHttpClient client(clickatron::testing::kTestClusterSecret);
  HttpRequestSpec spec;
  spec.method = "GET";
  spec.target = target;
  spec.bearer_token = kAdminToken;
  spec.timeout_ms = 20000;
  return client.Fetch(member_.listen, std::move(spec));
}

HttpResponse RealtimeDaemon::AdminPost(const std::string& target) const {
  return clickatron::testing::HttpPost(member_.listen, target, "", 20000, kAdminToken);
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
