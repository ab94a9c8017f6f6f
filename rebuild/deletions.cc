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

// POST /delete/folded to one API node; one that does not answer is told by
// a later run (FetchDeletionsToFold), and meanwhile hides those hours of
// `generation` too.
void TellNodeFolded(BlockingHttpClient& client, const MemberConfig& api, const std::vector<std::string>& ids,
                    uint64_t generation, bool deployed, int timeout_ms) {
  HttpRequestSpec spec;
  spec.method = "POST";
  spec.target = "/delete/folded";
  spec.body = nlohmann::json{{"ids", ids}, {"generation", generation}, {"deployed", deployed}}.dump();
  spec.timeout_ms = timeout_ms;
  HttpResponse r = client.Fetch(api.listen, spec);
  if (!r.ok() || r.status_code != 200) {
    spdlog::warn("API member {} was not told that generation {} folds in {} deletions ({}); a later run tells it",
                 api.name, generation, ids.size(), DescribeHttpAnswer(r));
  }
}

}  // namespace

Result<FoldedDeletion> FoldedDeletion::FromApiJson(const nlohmann::json& j) {
  try {
    FoldedDeletion d;
    d.id = j.at("id").get<std::string>();
    d.ns = j.at("ns").get<std::string>();
    d.tkey = j.value("tkey", "");
    if (j.value("hashed", false) && j.value("all_time", false) && !d.tkey.empty()) d.lookup = "l|" + d.tkey;
    d.from_unix = j.at("from").get<int64_t>();
    d.to_unix = j.at("to").get<int64_t>();
    d.created_unix = j.value("created", int64_t{0});
    d.folded_into = j.value("folded_into", uint64_t{0});
    // Its cut, once taken: every API node has it before any shard does.
    d.cuts = ShardMapFrom<std::map<std::string, uint64_t>>(j.value("cuts", nlohmann::json::object()));
    d.cut_unix = j.value("cut_unix", int64_t{0});
    d.epochs = ShardMapFrom<uint64_t>(j.value("epochs", nlohmann::json::object()));
    if (d.id.empty() || d.ns.empty() || d.to_unix <= d.from_unix) {
      return Status::Corruption(fmt::format("deletion {}: needs an id, a namespace and from < to", d.id));
    }
    return d;
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
          {"cut_unix", cut_unix},
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
    d.cut_unix = j.at("cut_unix").get<int64_t>();
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
  if (!CutsKnown()) return true;
  auto it = epochs.find(shard);
  // A shard without its tombstone was added after it: all of it came after.
  return it != epochs.end() && it->second > export_epoch;
}

bool FoldedDeletion::InLoad(int64_t queued_unix) const {
  if (!CutsKnown()) return true;
  // Both are whole seconds (and two hosts' clocks): a load queued in the
  // cut's own second may have come before it, and an erasure must not leave
  // what was there when it was asked for. So a tie is taken out; a load
  // queued after the deletion in the same second is lost with it (load it
  // again), which is the lesser harm.
  return queued_unix <= (cut_unix != 0 ? cut_unix : created_unix);
}

Result<std::vector<FoldedDeletion>> FetchDeletionsToFold(const ClusterConfig& cluster, uint64_t previous_generation,
                                                         int timeout_ms) {
  BlockingHttpClient client(cluster);
  std::map<std::string, FoldedDeletion> by_id;
  // Per answering node, its copies' folded_into and deployed.
  std::map<const MemberConfig*, std::map<std::string, std::pair<uint64_t, bool>>> node_folded;
  size_t answered = 0;
  std::string last_error;
  for (const MemberConfig* api : cluster.MembersWithRole(MemberRole::kApi)) {
    HttpRequestSpec spec;
    spec.target = "/deletions";
    spec.timeout_ms = timeout_ms;
    HttpResponse r = client.Fetch(api->listen, spec);
    const nlohmann::json j = r.ok() && r.status_code == 200 ? nlohmann::json::parse(r.body, nullptr, false)
                                                            : nlohmann::json();
    if (!j.is_object() || !j.contains("data") || !j["data"].is_object() || !j["data"].contains("deletions") ||
        !j["data"]["deletions"].is_array()) {
      last_error = fmt::format("API member {}: GET /deletions: {}", api->name, DescribeHttpAnswer(r));
      spdlog::warn("{}; its deletions are taken from the other API nodes", last_error);
      continue;
    }
    ++answered;
    auto& folded = node_folded[api];
    for (const nlohmann::json& entry : j["data"]["deletions"]) {
      auto d = FoldedDeletion::FromApiJson(entry);
      if (!d.ok()) return d.status().WithContext(fmt::format("API member {}", api->name));
      folded[d->id] = {d->folded_into, entry.is_object() && entry.value("deployed", false)};
      auto [it, inserted] = by_id.emplace(d->id, *d);
      if (inserted) continue;
      // Copies move forward: the one with a cut has it.
      if (!it->second.CutsKnown() && d->CutsKnown()) {
        const uint64_t folded_into = it->second.folded_into;
        it->second = *d;
        it->second.folded_into = std::max(folded_into, d->folded_into);
      } else {
        it->second.folded_into = std::max(it->second.folded_into, d->folded_into);
      }
    }
  }
  if (answered == 0 && !cluster.MembersWithRole(MemberRole::kApi).empty()) {
    return Status::Unavailable(fmt::format("no API node said which deletions exist (last: {})", last_error));
  }
  // A node that missed an earlier run's word of where a deletion was folded
  // in, or that its generation is deployed, hears it now.
  for (const auto& [api, folded] : node_folded) {
    std::map<std::pair<uint64_t, bool>, std::vector<std::string>> tell;
    for (const auto& [id, d] : by_id) {
      auto it = folded.find(id);
      if (d.folded_into == 0 || it == folded.end()) continue;
      const bool deployed = d.folded_into <= previous_generation;
      if (it->second.first < d.folded_into || (deployed && !it->second.second)) {
        tell[{d.folded_into, deployed}].push_back(id);
      }
    }
    for (const auto& [at, ids] : tell) TellNodeFolded(client, *api, ids, at.first, at.second, timeout_ms);
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
    TellNodeFolded(client, *api, ids, generation, deployed, timeout_ms);
  }
}

}  // namespace clickatron::rebuild
