#include "tombstones.h"

#include <algorithm>

#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include "clickatron/record.h"
#include "clickatron/ymdh.h"

namespace clickatron::realtime {
namespace {

constexpr std::string_view kMetaKey = "tombstones";

}  // namespace

bool Tombstone::Matches(std::string_view key) const {
  if (IsLookupKey(key)) return !lookup.empty() && key == lookup;
  return RealtimeKeyCovered(key, ns, tkey, from_unix, to_unix);
}

uint64_t Tombstones::DeletedThrough() const {
  uint64_t through = epoch_;
  for (const Tombstone& t : all_) {
    if (!t.deleted) through = std::min(through, t.epoch - 1);
  }
  return through;
}

nlohmann::json Tombstone::ToJson() const {
  nlohmann::json j = {{"id", id},
                      {"ns", ns},
                      {"tkey", tkey},
                      {"lookup", lookup},
                      {"from", from_unix},
                      {"to", to_unix},
                      {"epoch", epoch},
                      {"deleted", deleted}};
  j["cut"] = cut ? nlohmann::json(*cut) : nlohmann::json(nullptr);
  return j;
}

Result<Tombstone> Tombstone::FromJson(const nlohmann::json& j) {
  Tombstone t;
  try {
    t.id = j.at("id").get<std::string>();
    t.ns = j.at("ns").get<std::string>();
    t.tkey = j.value("tkey", "");
    t.lookup = j.value("lookup", "");
    t.from_unix = j.at("from").get<int64_t>();
    t.to_unix = j.at("to").get<int64_t>();
    t.epoch = j.value("epoch", uint64_t{0});
    t.deleted = j.value("deleted", false);
    if (j.contains("cut") && !j["cut"].is_null()) t.cut = j["cut"].get<std::map<std::string, uint64_t>>();
  } catch (const nlohmann::json::exception& e) {
    return Status::InvalidArgument(fmt::format("tombstone: {}", e.what()));
  }
  if (t.id.empty() || t.ns.empty() || t.to_unix <= t.from_unix) {
    return Status::InvalidArgument("tombstone: needs an id, a namespace and from < to");
  }
  return t;
}

Result<Tombstones> Tombstones::Load(ShardStore* store) {
  Tombstones set(store);
  auto text = store->GetMeta(kMetaKey);
  if (!text.ok()) return text.status();
  if (!text->has_value()) return set;
  const nlohmann::json j = nlohmann::json::parse(**text, nullptr, /*allow_exceptions=*/false);
  if (j.is_discarded() || !j.is_object() || !j.contains("all") || !j["all"].is_array()) {
    return Status::Corruption("the store's tombstones are not the JSON they were written as");
  }
  set.epoch_ = j.value("epoch", uint64_t{0});
  if (j.contains("retired") && j["retired"].is_array()) {
    for (const nlohmann::json& r : j["retired"]) {
      if (!r.is_object() || !r.contains("id") || !r.contains("cut")) continue;
      set.retired_.emplace_back(r["id"].get<std::string>(), r["cut"].get<std::map<std::string, uint64_t>>());
    }
  }
  for (const nlohmann::json& t : j["all"]) {
    auto tombstone = Tombstone::FromJson(t);
    if (!tombstone.ok()) return Status::Corruption(tombstone.status().message());
    set.all_.push_back(std::move(tombstone).value());
  }
  return set;
}

Status Tombstones::Persist() const {
  nlohmann::json all = nlohmann::json::array();
  for (const Tombstone& t : all_) all.push_back(t.ToJson());
  nlohmann::json retired = nlohmann::json::array();
  for (const auto& [id, cut] : retired_) retired.push_back({{"id", id}, {"cut", cut}});
  const nlohmann::json doc = {{"epoch", epoch_}, {"all", std::move(all)}, {"retired", std::move(retired)}};
  return store_->PutMeta(kMetaKey, doc.dump(), /*sync=*/true);
}

const Tombstone* Tombstones::Find(const std::string& id) const {
  auto it = std::find_if(all_.begin(), all_.end(), [&](const Tombstone& t) { return t.id == id; });
  return it == all_.end() ? nullptr : &*it;
}

const std::map<std::string, uint64_t>* Tombstones::RetiredCut(const std::string& id) const {
  for (const auto& [retired_id, cut] : retired_) {
    if (retired_id == id) return &cut;
  }
  return nullptr;
}

Result<Tombstone> Tombstones::Install(Tombstone t) {
  if (const Tombstone* known = Find(t.id)) return *known;
  if (const auto* cut = RetiredCut(t.id)) {  // done and retired: a late retry
    t.deleted = true;
    t.cut = *cut;
    return t;
  }
  t.epoch = epoch_ + 1;
  t.deleted = false;
  t.cut.reset();
  all_.push_back(t);
  ++epoch_;
  if (Status st = Persist(); !st.ok()) {
    all_.pop_back();
    --epoch_;
    return st;
  }
  return t;
}

Status Tombstones::MarkDeleted(const std::string& id) {
  Tombstone* it = Mutable(id);
  if (it == nullptr) return Status::NotFound(fmt::format("no tombstone {}", id));
  if (it->deleted) return Status::Ok();
  it->deleted = true;
  // Not written, not done: a retry must not find it done in memory only
  // (the next start would load it pending again).
  if (Status st = Persist(); !st.ok()) {
    it->deleted = false;
    return st;
  }
  return Status::Ok();
}

Status Tombstones::SetCut(const std::string& id, std::map<std::string, uint64_t> cut) {
  Tombstone* it = Mutable(id);
  if (it == nullptr) {
    if (const auto* retired = RetiredCut(id)) {
      return *retired == cut ? Status::Ok()
                             : Status::FailedPrecondition(fmt::format("tombstone {} was retired with another cut", id),
                                                          "CUT_CHANGED");
    }
    return Status::NotFound(fmt::format("no tombstone {} here: install it first", id));
  }
  if (it->cut) {
    if (*it->cut == cut) return Status::Ok();
    return Status::FailedPrecondition(fmt::format("tombstone {} already has another cut", id), "CUT_CHANGED");
  }
  it->cut = std::move(cut);
  // Not written, not set: a retry of the same cut would find it in memory
  // and answer 200 with nothing on disk, and a restart would load the
  // tombstone pending with no cut, refusing its key's batches for good.
  if (Status st = Persist(); !st.ok()) {
    it->cut.reset();
    return st;
  }
  return Status::Ok();
}

Status Tombstones::Retire(const std::map<std::string, uint64_t>& durable) {
  const size_t before = all_.size();
  std::erase_if(all_, [&](const Tombstone& t) {
    if (!t.cut || !t.deleted) return false;
    for (const auto& [source, seq] : *t.cut) {
      auto it = durable.find(source);
      if ((it == durable.end() ? 0 : it->second) < seq) return false;
    }
    retired_.emplace_back(t.id, *t.cut);
    return true;
  });
  if (all_.size() == before) return Status::Ok();
  if (retired_.size() > kRememberedRetired) {
    retired_.erase(retired_.begin(), retired_.begin() + static_cast<std::ptrdiff_t>(retired_.size() - kRememberedRetired));
  }
  return Persist();
}

TombstoneVerdict FilterBatch(const std::vector<Tombstone>& all, const std::string& source, uint64_t seq,
                             ParsedBatch* batch, uint64_t* dropped) {
  using Verdict = TombstoneVerdict;
  *dropped = 0;
  if (all.empty()) return Verdict::kApply;
  // The tombstones that take this batch's matching lines out (its seq at or
  // below the cut), and whether a pending one matches anything.
  std::vector<const Tombstone*> cutting;
  std::vector<const Tombstone*> pending;
  for (const Tombstone& t : all) {
    if (!t.cut) {
      pending.push_back(&t);
      continue;
    }
    auto it = t.cut->find(source);
    if (it != t.cut->end() && seq <= it->second) cutting.push_back(&t);
  }
  if (pending.empty() && cutting.empty()) return Verdict::kApply;
  auto any = [](const std::vector<const Tombstone*>& set, std::string_view key) {
    return std::any_of(set.begin(), set.end(), [&](const Tombstone* t) { return t->Matches(key); });
  };
  for (const BatchLine& line : batch->lines) {
    if (!line.lookup && any(pending, line.key)) return Verdict::kRefuse;
  }
  // In place: a batch with nothing to take out is left as it is.
  std::erase_if(batch->lines, [&](const BatchLine& line) {
    const bool drop = any(cutting, line.key) || (line.lookup && any(pending, line.key));
    if (!drop) return false;
    ++*dropped;
    --(line.lookup ? batch->lookups : line.unique ? batch->uniques : batch->counters);
    return true;
  });
  return Verdict::kApply;
}

}  // namespace clickatron::realtime
