#include "ring_days.h"

#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include "clickatron/http_client.h"

namespace clickatron::rebuild {

Result<RingDays> ReadRing(const ClusterConfig& cluster, int shard, int timeout_ms) {
  const MemberConfig* member = cluster.RealtimeMember(shard);
  BlockingHttpClient client(cluster);
  HttpRequestSpec spec;
  spec.target = "/ring";
  spec.timeout_ms = timeout_ms;
  HttpResponse r = client.Fetch(member->listen, spec);
  if (!r.ok() || r.status_code != 200) {
    return Status::Unavailable(fmt::format("realtime shard {} ({}) did not answer /ring: {}", shard, member->name,
                                           r.ok() ? std::to_string(r.status_code) : r.transport.message()),
                               "EXPORT_FAILED");
  }
  auto j = nlohmann::json::parse(r.body, nullptr, false);
  if (j.is_discarded() || !j["data"]["stores"].is_array()) {
    return Status::Corruption(fmt::format("realtime shard {}: /ring is not the expected JSON", shard));
  }
  RingDays ring;
  ring.today = j["data"].value("today", "");
  for (const auto& store : j["data"]["stores"]) {
    const std::string day = store.value("date", "");
    if (!day.empty()) ring.states[day] = store.value("state", "");
  }
  return ring;
}


}  // namespace clickatron::rebuild
