// `clickatron delete`: POST /delete to one API node of the cluster file
// (with its admin token and an id of its own, so that rerunning a request
// whose answer was lost names the same deletion), then, unless --wait 0,
// GET /delete/ID until the deletion is effective on every API node
// (docs/protocols.md, "Deletions"). Prints the deletion as the API answers
// it, one JSON line. One node only: another node would not know the id and
// would take it as a second deletion, with a later cut.
#include <chrono>
#include <memory>
#include <random>
#include <thread>

#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include "clickatron/config.h"
#include "clickatron/http_client.h"
#include "clickatron/query_string.h"
#include "commands.h"

namespace clickatron::tool {
namespace {

struct DeleteArgs {
  std::string config = "conf/local.toml";
  std::string ns, key, from, to;
  std::string api;  // "" = the first API member of the cluster file
  std::string id;   // "" = made here
  int wait_s = 60;
};

Result<nlohmann::json> Ask(BlockingHttpClient& client, const MemberConfig& api, const std::string& method,
                           const std::string& target, const std::string& token) {
  HttpRequestSpec spec;
  spec.method = method;
  spec.target = target;
  spec.bearer_token = token;
  spec.timeout_ms = 10000;
  HttpResponse r = client.Fetch(api.listen, spec);
  if (!r.ok()) return Status::Unavailable(fmt::format("{}: {}", api.name, r.transport.message()));
  nlohmann::json j = nlohmann::json::parse(r.body, nullptr, false);
  if (r.status_code != 200 && r.status_code != 202) {
    const std::string reason = j.is_object() ? j.value("status_txt", "") : "";
    const std::string message = j.is_object() ? j.value("message", r.body) : r.body;
    return Status::FailedPrecondition(fmt::format("{} {} on {}: HTTP {} {}: {}", method, target.substr(0, target.find('?')),
                                                  api.name, r.status_code, reason, message),
                                      reason.empty() ? "FAILED_PRECONDITION" : reason);
  }
  if (j.is_discarded() || !j.contains("data")) return Status::Corruption(fmt::format("{}: not the JSON envelope", api.name));
  return j["data"];
}

Status RunDelete(const DeleteArgs& a) {
  auto cluster = ClusterConfig::Load(a.config);
  if (!cluster.ok()) return cluster.status();
  BlockingHttpClient client(*cluster);
  std::string target = "/delete?ns=" + PercentEncode(a.ns);
  if (!a.key.empty()) target += "&key=" + PercentEncode(a.key);
  if (!a.from.empty()) target += "&from=" + PercentEncode(a.from);
  if (!a.to.empty()) target += "&to=" + PercentEncode(a.to);
  const MemberConfig* api = nullptr;
  for (const MemberConfig* m : cluster->MembersWithRole(MemberRole::kApi)) {
    if (a.api.empty() || m->name == a.api) {
      api = m;
      break;
    }
  }
  if (api == nullptr) {
    return Status::InvalidArgument(a.api.empty() ? "the cluster file names no API member"
                                                 : fmt::format("no API member {} in {}", a.api, a.config));
  }
  const auto now = std::chrono::duration_cast<std::chrono::seconds>(
                       std::chrono::system_clock::now().time_since_epoch()).count();
  std::random_device device;
  const std::string id = a.id.empty() ? fmt::format("del-{}-{:08x}", now, device()) : a.id;
  target += "&id=" + PercentEncode(id);
  auto accepted = Ask(client, *api, "POST", target, cluster->admin_token);
  if (!accepted.ok()) {
    return accepted.status().WithContext(fmt::format("deletion {} (rerun with --id {} if it may have been taken)", id, id));
  }
  nlohmann::json state = *accepted;
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(a.wait_s);
  const auto effective = [&] { return state.value("effective", false); };
  while (!effective() && std::chrono::steady_clock::now() < deadline) {
    std::this_thread::sleep_for(std::chrono::milliseconds(200));  // a person waits; nothing to be told by
    auto polled = Ask(client, *api, "GET", "/delete/" + id, cluster->admin_token);
    if (polled.ok()) state = *polled;
  }
  PrintLine(state.dump());
  if (a.wait_s > 0 && !effective()) {
    // The owner says why when it knows ("waiting"): a member down, a node on an older cluster file.
    const std::string why = state.contains("waiting") && state["waiting"].is_string()
                                ? state["waiting"].get<std::string>()
                                : "a member down?";
    return Status::Unavailable(fmt::format("deletion {} is recorded but not yet effective on every node after {} s "
                                           "({}); `GET /delete/{}` follows it",
                                           id, a.wait_s, why, id));
  }
  return Status::Ok();
}

void AddDeleteCommand(Command& app) {
  Command sub = app.AddCommand("delete", "Delete what was counted for a namespace or a key over hours (POST /delete)");
  auto a = std::make_shared<DeleteArgs>();
  sub.Option("-c,--config", a->config, "cluster file").ShowDefault();
  sub.Option("--ns", a->ns, "namespace").Required().NonEmpty();
  // Non-empty: an empty shell variable ($PERSON, $LINK) must not become
  // "every key of the namespace".
  sub.Option("--key", a->key, "one key (as sent); without it, every key of the namespace").NonEmpty();
  sub.Option("--from", a->from, "first hour deleted: unix seconds or RFC 3339 (default: the first there is)");
  sub.Option("--to", a->to,
             "the hour after the last one deleted (default: the hour after now; without --from either, every hour)");
  sub.Option("--api", a->api, "the API member to send it to (default: the first in the cluster file)");
  sub.Option("--id", a->id,
             "the deletion's id (default: a new one); the same id again is the same deletion, and refused for another")
      .NonEmpty();
  sub.Option("--wait", a->wait_s, "seconds to wait until every read is without it (0: do not wait)")
      .ShowDefault()
      .NonNegative();
  SetDetails(sub,
             "Exits 0 once the deletion is recorded (and, with --wait, effective on every API node); 1 when it is refused\n"
             "(the reason is printed) or not done in time.");
  SetAction(sub, [a] { return RunDelete(*a); });
}

const bool kDeleteRegistered = RegisterCommand(75, AddDeleteCommand);

}  // namespace
}  // namespace clickatron::tool
