#include "restate.h"

#include <fmt/format.h>
#include <nlohmann/json.hpp>
#include <spdlog/spdlog.h>

#include "archive_state.h"
#include "clickatron/file_util.h"
#include "clickatron/key_codec.h"
#include "clickatron/realtime_shard_map.h"
#include "clickatron/record.h"
#include "clickatron/retention.h"
#include "clickatron/timezone.h"
#include "clickatron/ymdh.h"
#include "late_inputs.h"
#include "ring_days.h"
#include "sortmerge/line_io.h"

namespace clickatron::rebuild {
namespace {

// The manifest of the newest generation any replica of any shard serves
// (nullopt: none serves a file yet): its last_day is the archive's.
Result<std::optional<Manifest>> ServingManifest(const ClusterConfig& cluster, int timeout_ms) {
  std::vector<ReplicaState> states = AskArchiveReplicas(cluster, timeout_ms);
  std::vector<bool> answered(static_cast<size_t>(cluster.archive_shards), false);
  std::optional<Manifest> newest;
  for (const ReplicaState& state : states) {
    if (!state.status.ok()) continue;
    answered[static_cast<size_t>(state.shard)] = true;
    if (state.manifest && (!newest || state.manifest->generation > newest->generation)) newest = *state.manifest;
  }
  for (int shard = 0; shard < cluster.archive_shards; ++shard) {
    if (!answered[static_cast<size_t>(shard)]) {
      return Status::Unavailable(fmt::format(
          "no replica of archive shard {} answered GET /manifest: the days the archive holds are not known", shard));
    }
  }
  return newest;
}

// The guard of every converted line: namespace `ns`, hours in [from, to).
Status CheckRestatedLine(std::string_view line, const DropRule& range, const std::string& range_text) {
  const ArchiveKeyView key = SplitArchiveKey(LineKey(line));
  if (key.type == RecordType::kLookup) return Status::Ok();
  if (key.ns != range.ns) {
    return Status::FailedPrecondition(
        fmt::format("namespace {} is not the one restated ({}); nothing was queued", QuoteForMessage(key.ns), range.ns),
        "RESTATE_OTHER_NAMESPACE");
  }
  auto check_hour = [&](std::string_view code) -> Status {
    Result<int64_t> hour = UnixFromYmdh(code);
    if (!hour.ok()) return Status::Ok();  // the conversion already refused a bad code
    if (*hour >= range.from_unix && *hour < range.to_unix) return Status::Ok();
    return Status::FailedPrecondition(
        fmt::format("hour {} is outside the restated days {}; nothing was queued", FormatIsoTime(*hour), range_text),
        "RESTATE_OUT_OF_RANGE");
  };
  if (IsDayType(key.type)) return Status::Ok();  // made again from the hours beside it
  if (key.type != RecordType::kTotal) return check_hour(key.code);
  return ForEachValueColumn(line.substr(line.find(',') + 1),
                            [&](std::string_view hour, std::string_view) { return check_hour(hour); });
}

// queue/ID/keys.txt: every "ns|tkey" of the sorted lines, sorted, once each.
Status WriteRestatedKeys(const WorkDir& work, const std::string& id) {
  auto reader = LineReader::Open(work.QueueSorted(id));
  if (!reader.ok()) return reader.status();
  std::set<std::string> keys;
  std::string_view line;
  while ((*reader)->Next(&line)) {
    const ArchiveKeyView key = SplitArchiveKey(LineKey(line));
    if (key.type == RecordType::kLookup || key.ns.empty()) continue;
    keys.emplace(key.ns_tkey);
  }
  CLICKATRON_RETURN_IF_ERROR((*reader)->status());
  std::string text;
  for (const std::string& key : keys) text += key + "\n";
  return WriteFileAtomically(work.QueueKeys(id), text);
}

}  // namespace

// A restatement replaces UTC days. In days a retention policy rolled up into
// days of another zone, one such day holds parts of two UTC days: replacing
// a UTC day would take the whole zone day out and put part of it back.
Status CheckNotInOtherZonesDays(const Manifest* serving, const std::string& ns, int64_t from, int64_t to) {
  const AppliedRetention* applied = serving ? serving->RetentionOf(ns) : nullptr;
  if (applied == nullptr || from >= applied->hourly_from) return Status::Ok();
  TimeZoneDb zones;
  auto zone = RetentionZone::Open(applied->zone, zones);
  if (!zone.ok()) return zone.status().WithContext(fmt::format("the retention zone of namespace {}", ns));
  if (zone->OffsetHoursDuring(from, std::min(to, applied->hourly_from)) == std::vector<int>{0}) return Status::Ok();
  return Status::FailedPrecondition(
      fmt::format("namespace {} is {}: its days before {} are days of {}, rolled up by its retention policy, and a "
                  "restatement replaces UTC days, which would cut them in two; restate days from {} on",
                  ns, DescribeRetention(*applied), FormatIsoTime(applied->hourly_from), applied->zone,
                  FormatDate(FloorDiv(applied->hourly_from + kSecondsPerDay - 1, kSecondsPerDay))),
      "RESTATE_ROLLED_UP_DAYS");
}

Result<QueuedLoad> QueueRestatement(const ClusterConfig& cluster, const RestateOptions& options) {
  CLICKATRON_RETURN_IF_ERROR(ValidateNamespace(options.ns, "--ns"));
  Result<int64_t> from = ParseDate(options.from_day);
  if (!from.ok()) return from.status().WithContext("--from");
  Result<int64_t> to = ParseDate(options.to_day);
  if (!to.ok()) return to.status().WithContext("--to");
  if (*to < *from) {
    return Status::InvalidArgument(fmt::format("--to {} is before --from {}", options.to_day, options.from_day));
  }
  const std::string range_text = fmt::format("{}..{}", FormatDate(*from), FormatDate(*to));
  Result<std::optional<Manifest>> serving = ServingManifest(cluster, options.http_timeout_ms);
  if (!serving.ok()) return serving.status();
  const std::string last_day = *serving ? (*serving)->last_day : "";
  const Result<int64_t> last = last_day.empty() ? Result<int64_t>(*from - 1) : ParseDate(last_day);
  if (!last.ok()) return last.status().WithContext("the archive's last_day");
  if (*to > *last) {
    // Past the archive's last day, a day is closed when no realtime shard
    // holds it any more, nor ever will: older than each shard's oldest
    // day (history put in by bulk loads before any nightly run, or days
    // that left the ring unexported). One a shard still holds is folded by
    // the nightly run first.
    const RealtimeShardMap shards(cluster);
    int64_t oldest_held = *to + 1;  // the oldest day any shard holds (none: past the range)
    for (int shard = 0; shard < static_cast<int>(shards.CountForDay(*to)); ++shard) {
      Result<RingDays> ring = ReadRing(cluster, shard, options.http_timeout_ms);
      if (!ring.ok()) return ring.status().WithContext("which days realtime still holds");
      Result<int64_t> oldest = ParseDate(ring->oldest());
      if (!oldest.ok()) return oldest.status().WithContext(fmt::format("realtime shard {}'s oldest day", shard));
      oldest_held = std::min(oldest_held, *oldest);
    }
    if (*to >= oldest_held) {
      return Status::FailedPrecondition(
          fmt::format("{} is still open: realtime holds days from {} and the archive days up to {}; only closed "
                      "days can be restated. Restate it once the nightly rebuild has folded it (clickatron-rebuild "
                      "run --date {})",
                      FormatDate(std::max({*from, *last + 1, oldest_held})), FormatDate(oldest_held),
                      last_day.empty() ? "(none)" : last_day, FormatDate(*to)),
          "DAY_OPEN");
    }
  }
  DropRule range;
  range.ns = options.ns;
  range.from_unix = *from * kSecondsPerDay;
  range.to_unix = (*to + 1) * kSecondsPerDay;
  CLICKATRON_RETURN_IF_ERROR(CheckNotInOtherZonesDays(serving->has_value() ? &**serving : nullptr, options.ns,
                                                      range.from_unix, range.to_unix));
  const WorkDir work(cluster.rebuild.work_dir);
  BulkLoadOptions load;
  load.files = options.files;
  load.format = options.format;
  load.max_bad_line_ratio = options.max_bad_line_ratio;
  load.check_prior = false;  // a replacement twice is the same replacement
  load.accept = [range, range_text](std::string_view line) { return CheckRestatedLine(line, range, range_text); };
  // The seal comes last, just before the marker, under the work dir's lock
  // (held until the marker is written): no generation can fold a late file
  // sealed after it before this restatement is in the queue, where it would
  // be superseded by it although it came after it.
  std::unique_ptr<FileLock> lock;
  load.before_marker = [&](const std::string& id) -> Status {
    auto locked = LockWorkDir(work);
    if (!locked.ok()) return locked.status();
    lock = std::move(locked).value();
    // Sealed now, so what each API node took before this moment is in files
    // listed here, and anything later in files that are not.
    auto late_before = SealAndListLateFiles(cluster, options.http_timeout_ms);
    if (!late_before.ok()) {
      return late_before.status().WithContext("a restatement needs every API node to seal its late data (to tell "
                                              "what came before it from what came after)");
    }
    return WriteRestatementFiles(work, id, options, *late_before);
  };
  auto queued = QueueBulkLoad(cluster, load);
  lock.reset();
  if (!queued.ok()) return queued.status();
  spdlog::info("restatement {} of {} over {} queued{}", queued->id, options.ns, range_text,
               options.keys_in_file ? " (only the keys in its files)" : "");
  return queued;
}

Status WriteRestatementFiles(const WorkDir& work, const std::string& id, const RestateOptions& options,
                             const std::map<std::string, std::set<std::string>>& late_before) {
  Result<int64_t> from = ParseDate(options.from_day);
  if (!from.ok()) return from.status().WithContext("--from");
  Result<int64_t> to = ParseDate(options.to_day);
  if (!to.ok()) return to.status().WithContext("--to");
  if (options.keys_in_file) CLICKATRON_RETURN_IF_ERROR(WriteRestatedKeys(work, id));
  nlohmann::json late = nlohmann::json::object();
  for (const auto& [member, names] : late_before) late[member] = names;
  const nlohmann::json restate = {{"ns", options.ns},
                                  {"from", FormatDate(*from)},
                                  {"to", FormatDate(*to)},
                                  {"from_unix", *from * kSecondsPerDay},
                                  {"to_unix", (*to + 1) * kSecondsPerDay},
                                  {"keys_in_file", options.keys_in_file},
                                  {"late_before", late}};
  return WriteFileAtomically(work.QueueRestate(id), restate.dump(2) + "\n");
}

Result<std::optional<PendingRestatement>> ReadRestatement(const WorkDir& work, const std::string& id) {
  const std::string path = work.QueueRestate(id);
  if (!FileExists(path)) return std::optional<PendingRestatement>();
  auto text = ReadFileToString(path);
  if (!text.ok()) return text.status();
  const nlohmann::json j = nlohmann::json::parse(*text, nullptr, /*allow_exceptions=*/false);
  if (j.is_discarded()) return Status::Corruption(fmt::format("{}: not JSON", path));
  PendingRestatement pending;
  try {
    pending.rule.id = id;
    pending.rule.ns = j.at("ns").get<std::string>();
    pending.rule.from_unix = j.at("from_unix").get<int64_t>();
    pending.rule.to_unix = j.at("to_unix").get<int64_t>();
    if (j.at("keys_in_file").get<bool>()) pending.rule.keys_file = work.QueueKeys(id);
    for (const auto& [member, names] : j.at("late_before").items()) {
      pending.late_before[member] = names.get<std::set<std::string>>();
    }
  } catch (const nlohmann::json::exception& e) {
    return Status::Corruption(fmt::format("{}: {}", path, e.what()));
  }
  return std::optional<PendingRestatement>(std::move(pending));
}

}  // namespace clickatron::rebuild
