#include "ring.h"

#include <fmt/format.h>
#include <fmt/ranges.h>
#include <spdlog/spdlog.h>

#include <nlohmann/json.hpp>

#include "clickatron/ymdh.h"

namespace clickatron::realtime {
namespace {

constexpr std::string_view kRingKey = "ring";
constexpr int kRingStateVersion = 1;

std::vector<std::string> Dates(const std::vector<int64_t>& days) {
  std::vector<std::string> out;
  for (int64_t d : days) out.push_back(FormatDate(d));
  return out;
}

Status NotInRing(int64_t day) {
  return Status(StatusCode::kNotFound, fmt::format("{} has no store in this shard's ring", FormatDate(day)),
                "DAY_NOT_IN_RING");
}

}  // namespace

const char* PositionName(Position position) {
  switch (position) {
    case Position::kYesterday: return "yesterday";
    case Position::kToday: return "today";
    case Position::kTomorrow: return "tomorrow";
    case Position::kRetained: return "retained";
  }
  return "retained";
}

const char* Ring::StateName(const DayState& state) {
  if (state.exported) return "exported";
  if (state.sealed) return "sealed";
  return "open";
}

Result<std::unique_ptr<Ring>> Ring::Open(ShardStore* store, int64_t clock_today, CheckpointOptions checkpoints,
                                         ScanCacheOptions scan_cache) {
  std::unique_ptr<Ring> ring(new Ring(store, scan_cache));
  CLICKATRON_RETURN_IF_ERROR(ring->Load(clock_today, std::move(checkpoints)));
  return ring;
}

Status Ring::Load(int64_t clock_today, CheckpointOptions checkpoints) {
  Result<std::optional<std::string>> saved = store_->GetMeta(kRingKey);
  if (!saved.ok()) return saved.status();
  if (!saved->has_value()) {
    today_ = clock_today;
    spdlog::info("new ring: today is {}", FormatDate(today_));
  } else {
    nlohmann::json j = nlohmann::json::parse(**saved, nullptr, /*allow_exceptions=*/false);
    if (j.is_discarded() || !j.is_object() || j.value("version", 0) != kRingStateVersion || !j.contains("today") ||
        !j["today"].is_string() || !j.contains("days") || !j["days"].is_array()) {
      return Status::Corruption("the persisted ring state is not valid: " + **saved);
    }
    Result<int64_t> today = ParseDate(j["today"].get<std::string>());
    if (!today.ok()) return today.status().WithContext("persisted ring state");
    today_ = *today;
    if (j.contains("archived_through") && j["archived_through"].is_string()) {
      Result<int64_t> through = ParseDate(j["archived_through"].get<std::string>());
      if (!through.ok()) return through.status().WithContext("persisted ring state");
      archived_through_ = *through;
    }
    if (j.contains("archive_generation")) {
      if (!j["archive_generation"].is_number_unsigned()) {
        return Status::Corruption("persisted ring state: archive_generation is not a generation number");
      }
      archive_generation_ = j["archive_generation"].get<uint64_t>();
    }
    if (j.contains("exported_through") && j["exported_through"].is_string()) {
      Result<int64_t> through = ParseDate(j["exported_through"].get<std::string>());
      if (!through.ok()) return through.status().WithContext("persisted ring state");
      exported_max_ = *through;
    }
    for (const nlohmann::json& d : j["days"]) {
      if (!d.is_object() || !d.contains("date") || !d["date"].is_string()) {
        return Status::Corruption("persisted ring state: a day without a date");
      }
      Result<int64_t> day = ParseDate(d["date"].get<std::string>());
      if (!day.ok()) return day.status().WithContext("persisted ring state");
      DayState state;
      state.sealed = d.value("sealed", false);
      state.exported = d.value("exported", false);
      state.clearing = d.value("clearing", false);
      state.cleared = d.value("cleared", false);
      days_[*day] = state;
    }
  }
  // A store found without an entry (never expected): keep it, readable and
  // sealed, rather than guess it may go.
  for (int64_t day : store_->Days()) {
    if (days_.count(day) == 0) {
      spdlog::warn("store for {} is not in the ring state: kept as retained (sealed)", FormatDate(day));
      days_[day].sealed = true;
    }
  }
  for (int64_t day = today_ - 1; day <= today_ + 1; ++day) days_.try_emplace(day);
  Result<std::map<std::string, uint64_t>> wm = store_->LoadWatermarks();
  if (!wm.ok()) return wm.status();
  checkpointer_ = std::make_unique<Checkpointer>(store_, std::move(wm).value(), std::move(checkpoints));
  // A clear that waited for a day's records to reach the store.
  checkpointer_->SetPersistedListener([this] {
    for (const auto& [day, s] : days_) {
      if (s.clearing) {
        if (Status st = Reconcile(); !st.ok()) spdlog::error("finishing a clear: {}", st.ToString());
        return;
      }
    }
  });
  CLICKATRON_RETURN_IF_ERROR(Persist());
  return Reconcile();
}

Status Ring::Persist() {
  nlohmann::json days = nlohmann::json::array();
  for (const auto& [day, s] : days_) {
    days.push_back({{"date", FormatDate(day)},
                    {"sealed", s.sealed},
                    {"exported", s.exported},
                    {"clearing", s.clearing},
                    {"cleared", s.cleared}});
  }
  nlohmann::json j = {{"version", kRingStateVersion}, {"today", FormatDate(today_)}, {"days", std::move(days)}};
  if (archived_through_) j["archived_through"] = FormatDate(*archived_through_);
  // Kept too: a marked day leaves days_ once cleared and out of the
  // positions, and X-Realtime-Archived-Through must not go back after a
  // restart (an API node would read realtime for a day it cleared).
  if (exported_max_) j["exported_through"] = FormatDate(*exported_max_);
  if (archive_generation_ > 0) j["archive_generation"] = archive_generation_;
  // Synced: the ring state is what lets a restart tell a retained day from
  // one that may be dropped.
  return store_->PutMeta(kRingKey, j.dump(), /*sync=*/true);
}

Status Ring::Reconcile() {
  bool changed = false;
  bool waiting = false;
  for (auto it = days_.begin(); it != days_.end();) {
    const int64_t day = it->first;
    DayState& s = it->second;
    if (s.clearing && checkpointer_->HoldsDay(day)) {
      // Its records in memory must not go to a dropped family: the next
      // checkpoint persists them, then this runs again.
      // Debug: Tick() asks again every turn until the checkpoint lands.
      spdlog::debug("clearing {} waits for the next checkpoint (records still in memory)", FormatDate(day));
      waiting = true;
      ++it;
      continue;
    }
    if (s.clearing) {
      CLICKATRON_RETURN_IF_ERROR(store_->DropDay(day));
      spdlog::info("cleared the store for {} (exported)", FormatDate(day));
      ++counters_.days_cleared;
      s.clearing = false;
      s.cleared = true;
      changed = true;
    }
    if (s.cleared) {
      // A tombstone keeps a cleared day from being re-created while it
      // still holds a position; once out of the positions it is forgotten.
      if (!InPositions(day)) {
        it = days_.erase(it);
        changed = true;
        continue;
      }
    } else if (!store_->HasDay(day)) {
      if (InPositions(day)) {
        CLICKATRON_RETURN_IF_ERROR(store_->CreateDay(day));
        } else {
        spdlog::error("ring state lists {} but its store is missing: forgotten", FormatDate(day));
        it = days_.erase(it);
        changed = true;
        continue;
      }
    }
    ++it;
  }
  if (changed) CLICKATRON_RETURN_IF_ERROR(Persist());
  // After the loop: an inline checkpoint comes back here through the
  // persisted listener.
  if (waiting) checkpointer_->Start();
  return Status::Ok();
}

Position Ring::PositionOf(int64_t day) const {
  if (day == today_ - 1) return Position::kYesterday;
  if (day == today_) return Position::kToday;
  if (day == today_ + 1) return Position::kTomorrow;
  return Position::kRetained;
}

bool Ring::IsOpen(int64_t day) const {
  if (archived_through_ && day <= *archived_through_) return false;
  auto it = days_.find(day);
  return it != days_.end() && InPositions(day) && !it->second.sealed && !it->second.cleared &&
         !it->second.clearing;
}

std::vector<int64_t> Ring::OpenDays() const {
  std::vector<int64_t> out;
  for (int64_t day = today_ - 1; day <= today_ + 1; ++day) {
    if (IsOpen(day)) out.push_back(day);
  }
  return out;
}

std::vector<int64_t> Ring::ReadableDays() const {
  std::vector<int64_t> out;
  for (const auto& [day, s] : days_) {
    if (!s.cleared && !s.clearing && store_->HasDay(day)) out.push_back(day);
  }
  return out;
}

Result<ApplyOutcome> Ring::Apply(const std::string& source, uint64_t seq, const ParsedBatch& batch) {
  if (const uint64_t w = Watermark(source); seq <= w) {
    ++counters_.duplicate_batches;
    return ApplyOutcome{0, true, w};
  }
  const std::vector<int64_t> target_days = TargetDays(batch, today_);
  std::vector<int64_t> refused;
  for (int64_t day : target_days) {
    if (!IsOpen(day)) refused.push_back(day);
  }
  if (!refused.empty()) {
    ++counters_.day_not_open_batches;
    return Status::FailedPrecondition(
        fmt::format("lines for {} whose day is not open (open: {}); nothing applied", fmt::join(Dates(refused), ", "),
                    fmt::join(Dates(OpenDays()), ", ")),
        "DAY_NOT_OPEN");
  }
  // Each open day needs its store before anything of it is acknowledged: a
  // checkpoint could not write it otherwise (a rotation that failed half way
  // on a full disk). Tick() retries creating it.
  for (int64_t day : target_days) {
    if (!store_->HasDay(day) && (!Reconcile().ok() || !store_->HasDay(day))) {
      return Status(StatusCode::kUnavailable,
                    fmt::format("the store for {} does not exist yet (creating it failed); nothing applied, retry",
                                FormatDate(day)),
                    "STORE_MISSING");
    }
  }
  if (!checkpointer_->Admit()) {
    return Status(StatusCode::kUnavailable,
                  "the in-memory table is at its memory budget while a checkpoint runs; nothing applied, retry",
                  "MEMORY_FULL");
  }
  CLICKATRON_RETURN_IF_ERROR(checkpointer_->Apply(source, seq, batch, today_));
  ++counters_.batches_applied;
  counters_.increments_applied += batch.counters;
  counters_.lookups_applied += batch.lookups;
  counters_.uniques_applied += batch.uniques;
  return ApplyOutcome{batch.lines.size(), false, seq};
}

Status Ring::Tick() {
  for (const auto& [day, s] : days_) {
    const bool missing = !s.cleared && !s.clearing && InPositions(day) && !store_->HasDay(day);
    if (missing || s.clearing) return Reconcile();
  }
  return Status::Ok();
}

Result<RotateReport> Ring::RotateTo(int64_t new_today) {
  RotateReport report;
  report.from = today_;
  report.to = new_today;
  // A shard that has never applied a batch holds nothing, so its first day
  // may be set to the past (a manual clock replaying history, tests); once it
  // has data the ring only turns forward.
  const bool backwards = new_today < today_;
  const bool never_written = watermarks().empty();
  if (backwards && !never_written) {
    return Status::FailedPrecondition(fmt::format("the ring turns forward only: today is {}, asked for {}",
                                                  FormatDate(today_), FormatDate(new_today)),
                                      "ROTATE_BACKWARDS");
  }
  if (new_today == today_) return report;
  today_ = new_today;
  for (auto& [day, s] : days_) {
    if (InPositions(day) || s.cleared) continue;
    // backwards: the shard holds nothing (above); at or before the archive's
    // last day: the archive holds it (NoteArchivedThrough).
    if (s.exported || backwards || (archived_through_ && day <= *archived_through_)) {
      s.clearing = true;
      report.cleared.push_back(day);
    } else {
      if (!s.sealed) s.sealed = true;
      report.retained.push_back(day);
    }
  }
  for (int64_t day = today_ - 1; day <= today_ + 1; ++day) {
    if (days_.try_emplace(day).second) report.created.push_back(day);
  }
  // Decide and persist first, then act: a crash in between is finished by
  // the next Open().
  CLICKATRON_RETURN_IF_ERROR(Persist());
  CLICKATRON_RETURN_IF_ERROR(Reconcile());
  ++counters_.rotations;
  spdlog::info("rotated: today {} -> {}; created [{}], cleared [{}]", FormatDate(report.from), FormatDate(report.to),
               fmt::join(Dates(report.created), ", "), fmt::join(Dates(report.cleared), ", "));
  for (int64_t day : report.retained) {
    spdlog::warn("{} left the ring without an export mark: retained (readable, not open) until POST /exported?date={}",
                 FormatDate(day), FormatDate(day));
  }
  return report;
}

Status Ring::Seal(int64_t day) {
  auto it = days_.find(day);
  if (it == days_.end() || it->second.cleared || it->second.clearing) return NotInRing(day);
  if (day == today_ || day == today_ + 1) {
    return Status::FailedPrecondition(
        fmt::format("{} is {}: still being counted; export Yesterday or a retained day", FormatDate(day),
                    PositionName(PositionOf(day))),
        "DAY_STILL_CURRENT");
  }
  if (it->second.sealed) return Status::Ok();
  it->second.sealed = true;
  spdlog::info("sealed {} for export", FormatDate(day));
  return Persist();
}

Result<std::string> Ring::MarkExported(int64_t day) {
  auto it = days_.find(day);
  if (it == days_.end()) return std::string("absent");
  DayState& s = it->second;
  if (s.cleared || s.clearing) return std::string("cleared");
  if (!s.sealed) {
    return Status::FailedPrecondition(
        fmt::format("{} was never exported (it is not sealed): export it before marking it", FormatDate(day)),
        "NOT_SEALED");
  }
  s.exported = true;
  if (!exported_max_ || day > *exported_max_) exported_max_ = day;
  spdlog::info("{} marked exported", FormatDate(day));
  if (!InPositions(day)) {
    s.clearing = true;
    CLICKATRON_RETURN_IF_ERROR(Persist());
    CLICKATRON_RETURN_IF_ERROR(Reconcile());
    return std::string("cleared");
  }
  CLICKATRON_RETURN_IF_ERROR(Persist());
  return std::string("exported");
}

Status Ring::Clear(int64_t day) {
  auto it = days_.find(day);
  if (it == days_.end()) return NotInRing(day);
  DayState& s = it->second;
  if (s.cleared) return Status::Ok();
  if (!s.exported) {
    return Status::FailedPrecondition(
        fmt::format("{} is not marked exported: POST /exported?date={} once a deployed archive holds it",
                    FormatDate(day), FormatDate(day)),
        "NOT_EXPORTED");
  }
  s.clearing = true;
  CLICKATRON_RETURN_IF_ERROR(Persist());
  return Reconcile();
}

Status Ring::NoteArchivedThrough(int64_t through) {
  if (archived_through_ && through <= *archived_through_) return Status::Ok();
  archived_through_ = through;
  for (auto& [day, s] : days_) {
    if (day > through || s.exported || s.cleared || s.clearing) continue;
    // What this store holds of such a day is either in the archive already
    // or re-sent after the store was lost: neither may be folded again.
    s.sealed = true;
    s.exported = true;
    if (!InPositions(day)) s.clearing = true;
    spdlog::info("{} is at or before the archive's last day {}: marked exported", FormatDate(day),
                 FormatDate(through));
  }
  spdlog::info("the deployed archive holds every day through {}: those days are not open", FormatDate(through));
  CLICKATRON_RETURN_IF_ERROR(Persist());
  return Reconcile();
}

Status Ring::NoteArchiveGeneration(uint64_t generation) {
  if (generation <= archive_generation_) return Status::Ok();
  archive_generation_ = generation;
  return Persist();
}

std::optional<int64_t> Ring::HandedOverThrough() const {
  std::optional<int64_t> through = archived_through_;
  const auto raise = [&](int64_t day) {
    if (!through || day > *through) through = day;
  };
  if (exported_max_) raise(*exported_max_);
  for (const auto& [day, s] : days_) {
    if (s.exported || s.cleared || s.clearing) raise(day);
  }
  return through;
}

std::vector<int64_t> Ring::ReadDays(std::optional<int64_t> only_day, std::optional<int64_t> after) const {
  std::vector<int64_t> days = ReadableDays();
  if (after) std::erase_if(days, [&](int64_t d) { return d <= *after; });
  if (!only_day) return days;
  for (int64_t d : days) {
    if (d == *only_day) return {d};
  }
  return {};
}

Result<std::optional<std::string>> Ring::Get(std::string_view key, std::optional<int64_t> only_day) const {
  return ReadRecord(checkpointer_->View(), ReadDays(only_day), key);
}

Result<std::unique_ptr<LineSource>> Ring::Scan(std::string_view prefix, std::optional<int64_t> only_day,
                                               uint64_t limit, std::optional<int64_t> after, bool unite_days) const {
  // Unlimited, a lone prefix reads through the scan cache as a coalesced
  // one does (a dashboard's hot key is asked alone when reads are few).
  if (limit == 0) {
    return ScanPrefixes(checkpointer_->View(), ReadDays(only_day, after), {std::string(prefix)}, scan_cache_,
                        unite_days);
  }
  return ScanPrefix(checkpointer_->View(), ReadDays(only_day, after), prefix, limit, unite_days);
}

Result<std::unique_ptr<LineSource>> Ring::ScanMany(std::vector<std::string> prefixes,
                                                   std::optional<int64_t> only_day, std::optional<int64_t> after,
                                                   bool unite_days) const {
  return ScanPrefixes(checkpointer_->View(), ReadDays(only_day, after), std::move(prefixes), scan_cache_,
                      unite_days);
}

Result<std::unique_ptr<LineSource>> Ring::Export(int64_t day) const {
  auto it = days_.find(day);
  if (it == days_.end() || it->second.cleared || it->second.clearing) return NotInRing(day);
  if (checkpointer_->HoldsDay(day)) {
    return Status(StatusCode::kUnavailable,
                  fmt::format("{} still has records in memory: export once they are persisted", FormatDate(day)),
                  "NOT_PERSISTED");
  }
  return ScanDayForExport(*store_, day);
}

}  // namespace clickatron::realtime
