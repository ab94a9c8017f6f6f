#include "deletions/deletion_log.h"

#include <algorithm>
#include <filesystem>

#include <fmt/format.h>
#include <nlohmann/json.hpp>
#include <spdlog/spdlog.h>

#include "clickatron/file_util.h"

namespace clickatron::api {

Result<std::unique_ptr<DeletionLog>> DeletionLog::Open(std::string dir) {
  CLICKATRON_RETURN_IF_ERROR(MakeDirs(dir));
  std::unique_ptr<DeletionLog> log(new DeletionLog(dir));
  std::error_code ec;
  for (const auto& entry : std::filesystem::directory_iterator(dir, ec)) {
    const std::string name = entry.path().filename().string();
    if (!name.ends_with(".json")) continue;  // temporaries of an interrupted write
    auto text = ReadFileToString(entry.path().string());
    if (!text.ok()) return text.status();
    const nlohmann::json j = nlohmann::json::parse(*text, nullptr, /*allow_exceptions=*/false);
    auto deletion = j.is_discarded() ? Result<Deletion>(Status::Corruption("not JSON")) : Deletion::FromJson(j);
    if (!deletion.ok()) {
      return Status::Corruption(fmt::format("{}: {}; a deletion must not be forgotten: mend or remove it by hand",
                                            entry.path().string(), deletion.status().message()));
    }
    log->by_id_[deletion->id] = std::move(deletion).value();
  }
  if (ec) return Status::IoError(fmt::format("list {}: {}", dir, ec.message()));
  log->empty_ = log->by_id_.empty();
  return log;
}

Status DeletionLog::Put(Deletion deletion) {
  // One writer at a time from reading the earlier copy to replacing it.
  std::lock_guard write(write_mu_);
  if (std::optional<Deletion> known = Get(deletion.id)) {
    deletion.KeepProgressOf(*known);
    // A copy of what is stored (a peer's, or a node's start-up sync) costs
    // no write: two fsyncs per deletion per peer at every start add up.
    if (deletion.ToJson() == known->ToJson()) return Status::Ok();
  }
  CLICKATRON_RETURN_IF_ERROR(
      WriteFileAtomically(fmt::format("{}/{}.json", dir_, deletion.id), deletion.ToJson().dump(2) + "\n"));
  std::lock_guard lock(mu_);
  by_id_[deletion.id] = std::move(deletion);
  empty_ = false;
  return Status::Ok();
}

Status DeletionLog::PutCopy(Deletion copy) {
  if (const std::optional<Deletion> known = Get(copy.id)) {
    if (!known->SameScopeAs(copy)) {
      spdlog::error("deletion {}: {} sent a copy of another deletion under this id (ns {} key {} hours [{}, {})) than "
                    "the one this node has (ns {} key {} hours [{}, {}), owner {}): not taken; the API nodes' "
                    "cluster files must name the same API members in the same order",
                    copy.id, copy.owner, copy.ns, copy.key, copy.from_unix, copy.to_unix, known->ns, known->key,
                    known->from_unix, known->to_unix, known->owner);
      return Status::FailedPrecondition(
          fmt::format("this node has another deletion under id {} (owner {}, ns {} key {})", known->id, known->owner,
                      known->ns, known->key),
          "DELETION_ID_CONFLICT");
    }
    if (copy.owner != known->owner && known->owner < copy.owner) return Status::Ok();  // the first keeps it
  }
  return Put(std::move(copy));
}

Result<size_t> DeletionLog::MarkFolded(const std::vector<std::string>& ids, uint64_t generation, bool deployed) {
  size_t known = 0;
  for (const std::string& id : ids) {
    std::optional<Deletion> d = Get(id);
    if (!d) continue;
    ++known;
    if (d->folded_into >= generation && (d->deployed || !deployed)) continue;
    d->folded_into = std::max(d->folded_into, generation);
    d->deployed = d->deployed || deployed;
    CLICKATRON_RETURN_IF_ERROR(Put(std::move(*d)));
  }
  return known;
}

std::function<bool(const OplogHeader& frame, std::string_view line)> DeletionLog::LateLinesDeleted() const {
  auto scopes = std::make_shared<std::vector<DeletionScope>>();
  {
    std::lock_guard lock(mu_);
    for (const auto& [id, d] : by_id_) {
      if (d.realtime_done) scopes->push_back(d.Scope());
    }
  }
  return [scopes](const OplogHeader& frame, std::string_view line) {
    return std::any_of(scopes->begin(), scopes->end(),
                       [&](const DeletionScope& s) { return s.CoversLateLine(frame, line); });
  };
}

bool DeletionLog::LookupDeleted(std::string_view hash) const {
  if (empty_.load(std::memory_order_relaxed)) return false;
  std::lock_guard lock(mu_);
  return std::any_of(by_id_.begin(), by_id_.end(), [&](const auto& entry) {
    const Deletion& d = entry.second;
    return d.ErasesLookup() && d.tkey == hash;
  });
}

std::vector<Deletion> DeletionLog::AwaitingPhysical(const std::string& owner) const {
  std::lock_guard lock(mu_);
  std::vector<Deletion> out;
  for (const auto& [id, d] : by_id_) {
    if (d.owner == owner && d.realtime_done && d.deployed && !d.physical) out.push_back(d);
  }
  return out;
}

std::optional<Deletion> DeletionLog::Get(const std::string& id) const {
  std::lock_guard lock(mu_);
  auto it = by_id_.find(id);
  if (it == by_id_.end()) return std::nullopt;
  return it->second;
}

std::vector<Deletion> DeletionLog::All() const {
  std::lock_guard lock(mu_);
  std::vector<Deletion> out;
  for (const auto& [id, d] : by_id_) out.push_back(d);
  return out;
}

std::vector<Deletion> DeletionLog::Unfinished(const std::string& owner) const {
  std::lock_guard lock(mu_);
  std::vector<Deletion> out;
  for (const auto& [id, d] : by_id_) {
    if (d.owner == owner && !(d.realtime_done && d.peers_told)) out.push_back(d);
  }
  return out;
}

std::vector<DeletionLog::HourRange> DeletionLog::ArchiveMasks(std::string_view ns, std::string_view tkey,
                                                              uint64_t generation) const {
  std::vector<HourRange> ranges;
  if (empty_.load(std::memory_order_relaxed)) return ranges;
  {
    std::lock_guard lock(mu_);
    for (const auto& [id, d] : by_id_) {
      if (d.Covers(ns, tkey) && d.MasksGeneration(generation)) ranges.push_back(HourRange{d.from_unix, d.to_unix});
    }
  }
  std::sort(ranges.begin(), ranges.end(),
            [](const HourRange& a, const HourRange& b) { return a.from_unix < b.from_unix; });
  std::vector<HourRange> merged;
  for (const HourRange& r : ranges) {
    if (!merged.empty() && r.from_unix <= merged.back().to_unix) {
      merged.back().to_unix = std::max(merged.back().to_unix, r.to_unix);
    } else {
      merged.push_back(r);
    }
  }
  return merged;
}

}  // namespace clickatron::api
