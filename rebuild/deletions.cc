#include "deletions.h"

#include <algorithm>

#include <fmt/format.h>
#include <nlohmann/json.hpp>
#include <spdlog/spdlog.h>

#include "clickatron/http_client.h"

namespace clickatron::rebuild {
namespace {

nlohmann::json ShardMapJson(const auto& by_shard) {
  nlohmann::json j = nlohmann::json::object();
  for (const auto& [shard, value] : by_shard) j[std::to_string(shard)] = value;
  return j;
}

template <typename Value>
std::map<int, Value> ShardMapFrom(const nlohmann::json& j) {
  std::map<int, Value> out;
  if (!j.is_object()) return out;
  for (const auto& [shard, value] : j.items()) out[std::stoi(shard)] = value.template get<Value>();
  return out;
}

}  // namespace

Result<std::optional<FoldedDeletion>> FoldedDeletion::FromApiJson(const nlohmann::json& j) {
  try {
    if (!j.value("realtime_done", false)) return std::optional<FoldedDeletion>();
    FoldedDeletion d;
    d.id = j.at("id").get<std::string>();
    d.ns = j.at("ns").get<std::string>();
    d.tkey = j.value("tkey", "");
    if (j.value("hashed", false) && j.value("all_time", false) && !d.tkey.empty()) d.lookup = "l|" + d.tkey;
    d.from_unix = j.at("from").get<int64_t>();
    d.to_unix = j.at("to").get<int64_t>();
    d.created_unix = j.value("created", int64_t{0});
    d.folded_into = j.value("folded_into", uint64_t{0});
    d.cuts = ShardMapFrom<std::map<std::string, uint64_t>>(j.value("cuts", nlohmann::json::object()));
    d.epochs = ShardMapFrom<uint64_t>(j.value("epochs", nlohmann::json::object()));
    if (d.id.empty() || d.ns.empty() || d.to_unix <= d.from_unix) {
      return Status::Corruption(fmt::format("deletion {}: needs an id, a namespace and from < to", d.id));
    }
    return std::optional<FoldedDeletion>(std::move(d));
  } catch (const std::exception& e) {
    return Status::Corruption(fmt::format("deletion: {}", e.what()));
  }
}

nlohmann::json FoldedDeletion::ToJson() const {
  return {{"id", id},
          {"ns", ns},
          {"tkey", tkey},
          {"lookup", lookup},
          {"from", from_unix},
          {"to", to_unix},
          {"created", created_unix},
          {"folded_into", folded_into},
          {"cuts", ShardMapJson(cuts)},
          {"epochs", ShardMapJson(epochs)}};
}

Result<FoldedDeletion> FoldedDeletion::FromJson(const nlohmann::json& j) {
  try {
    FoldedDeletion d;
    d.id = j.at("id").get<std::string>();
    d.ns = j.at("ns").get<std::string>();
    d.tkey = j.at("tkey").get<std::string>();
    d.lookup = j.at("lookup").get<std::string>();
    d.from_unix = j.at("from").get<int64_t>();
    d.to_unix = j.at("to").get<int64_t>();
    d.created_unix = j.at("created").get<int64_t>();
    d.folded_into = j.at("folded_into").get<uint64_t>();
    d.cuts = ShardMapFrom<std::map<std::string, uint64_t>>(j.at("cuts"));
    d.epochs = ShardMapFrom<uint64_t>(j.at("epochs"));
    return d;
  } catch (const std::exception& e) {
    return Status::Corruption(fmt::format("folded deletion: {}", e.what()));
  }
}

DropRule FoldedDeletion::Rule() const {
  DropRule rule;
  rule.id = id;
  rule.ns = ns;
  rule.from_unix = from_unix;
  rule.to_unix = to_unix;
  rule.tkey = tkey;
  rule.lookup = lookup;
  return rule;
}

bool FoldedDeletion::InExport(int shard, uint64_t export_epoch) const {
  auto it = epochs.find(shard);
  // No epoch for the shard (it was added to the cluster later): its exports
  // are checked like any, against none, so taken out of every export.
  return it == epochs.end() || it->second > export_epoch;
}

Result<std::vector<FoldedDeletion>> FetchDeletionsToFold(const ClusterConfig& cluster, int timeout_ms) {
  BlockingHttpClient client(cluster);
  std::map<std::string, FoldedDeletion> by_id;
  // Per answering node, where its copies say each deletion was folded in.
  std::map<const MemberConfig*, std::map<std::string, uint64_t>> node_folded;
  size_t answered = 0;
  std::string last_error;
  for (const MemberConfig* api : cluster.MembersWithRole(MemberRole::kApi)) {
    HttpRequestSpec spec;
    spec.target = "/deletions";
    spec.timeout_ms = timeout_ms;
    HttpResponse r = client.Fetch(api->listen, spec);
    const nlohmann::json j = r.ok() && r.status_code == 200 ? nlohmann::json::parse(r.body, nullptr, false)
                                                            : nlohmann::json();
    if (!j.is_object() || !j.contains("data") || !j["data"]["deletions"].is_array()) {
      last_error = fmt::format("API member {}: GET /deletions: {}", api->name, DescribeHttpAnswer(r));
      spdlog::warn("{}; its deletions are taken from the other API nodes", last_error);
      continue;
    }
    ++answered;
    std::map<std::string, uint64_t>& folded = node_folded[api];
    for (const nlohmann::json& entry : j["data"]["deletions"]) {
      auto d = FoldedDeletion::FromApiJson(entry);
      if (!d.ok()) return d.status().WithContext(fmt::format("API member {}", api->name));
      if (!d->has_value()) continue;
      folded[(*d)->id] = (*d)->folded_into;
      auto [it, inserted] = by_id.emplace((*d)->id, **d);
      if (!inserted) {
        it->second.folded_into = std::max(it->second.folded_into, (*d)->folded_into);
        if (it->second.epochs.empty()) it->second.epochs = (*d)->epochs;
      }
    }
  }
  if (answered == 0 && !cluster.MembersWithRole(MemberRole::kApi).empty()) {
    return Status::Unavailable(fmt::format("no API node answered GET /deletions (last: {})", last_error));
  }
  // A node that missed an earlier run's word of where a deletion was folded
  // in hears it now (until then its reads hide those hours of that
  // generation too).
  for (const auto& [api, folded] : node_folded) {
    std::map<uint64_t, std::vector<std::string>> tell;
    for (const auto& [id, d] : by_id) {
      auto it = folded.find(id);
      if (d.folded_into != 0 && it != folded.end() && it->second < d.folded_into) tell[d.folded_into].push_back(id);
    }
    for (const auto& [generation, ids] : tell) {
      HttpRequestSpec spec;
      spec.method = "POST";
      spec.target = "/delete/folded";
      spec.body = nlohmann::json{{"ids", ids}, {"generation", generation}}.dump();
      spec.timeout_ms = timeout_ms;
      HttpResponse r = client.Fetch(api->listen, spec);
      if (!r.ok() || r.status_code != 200) {
        spdlog::warn("API member {}: POST /delete/folded: {}", api->name, DescribeHttpAnswer(r));
      }
    }
  }
  std::vector<FoldedDeletion> out;
  for (auto& [id, d] : by_id) out.push_back(std::move(d));
  return out;
}

void TellDeletionsFolded(const ClusterConfig& cluster, const std::vector<std::string>& ids, uint64_t generation,
                         int timeout_ms, bool deployed) {
  if (ids.empty() && !deployed) return;
  BlockingHttpClient client(cluster);
  for (const MemberConfig* api : cluster.MembersWithRole(MemberRole::kApi)) {
    HttpRequestSpec spec;
    spec.method = "POST";
    spec.target = "/delete/folded";
    spec.body = nlohmann::json{{"ids", ids}, {"generation", generation}, {"deployed", deployed}}.dump();
    spec.timeout_ms = timeout_ms;
    HttpResponse r = client.Fetch(api->listen, spec);
    if (!r.ok() || r.status_code != 200) {
      spdlog::warn("API member {} was not told that generation {} folds in {} deletions ({}); the next run tells it",
                   api->name, generation, ids.size(), DescribeHttpAnswer(r));
    }
  }
}

}  // namespace clickatron::rebuild
