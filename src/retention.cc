#include "clickatron/retention.h"

#include <algorithm>
#include <charconv>
#include <set>

#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include "clickatron/timezone.h"
#include "clickatron/ymdh.h"

namespace clickatron {
namespace {

constexpr int64_t kFirstChecked = 0;  // 1970-01-01: hour codes start there (and end before kEndOfHourCodes)

}  // namespace

Result<RetentionZone> RetentionZone::Open(std::string_view name, TimeZoneDb& zones) {
  RetentionZone zone;
  zone.name_ = std::string(name);
  if (std::optional<int64_t> fixed = ParseWholeHourOffset(name)) {
    zone.fixed_offset_ = *fixed;
    return zone;
  }
  auto info = zones.Find(name);
  if (!info.ok()) {
    return Status::InvalidArgument(
        fmt::format("zone \"{}\" is neither a whole-hour offset (\"+9\", \"-05:00\") nor a tzdata zone name", name));
  }
  zone.info_ = *info;
  return zone;
}

Status RetentionZone::CheckWholeHours() const {
  if (!info_) return Status::Ok();
  for (int64_t t = kFirstChecked; t < kEndOfHourCodes;) {
    const int64_t offset = info_->OffsetAt(t);
    if (offset % kSecondsPerHour != 0) {
      return Status::InvalidArgument(fmt::format(
          "zone \"{}\" is {} hours east of UTC from {}: days of a zone that is not a whole number of hours off "
          "UTC would cut the archive's hours in two",
          name_, static_cast<double>(offset) / kSecondsPerHour, FormatIsoTime(t)));
    }
    const std::optional<int64_t> next = info_->NextChangeAfter(t);
    if (!next) break;
    t = *next;
  }
  return Status::Ok();
}

int64_t RetentionZone::OffsetAt(int64_t unix_seconds) const {
  return info_ ? info_->OffsetAt(unix_seconds) : fixed_offset_;
}

int64_t RetentionZone::DayOf(int64_t unix_seconds) const {
  return FloorDiv(unix_seconds + OffsetAt(unix_seconds), kSecondsPerDay);
}

int64_t RetentionZone::DayStart(int64_t day) const {
  // Local midnight is between 14 h before and 12 h after UTC midnight
  // (offsets -12 .. +14); the first whole UTC hour there on the day is its
  // start (also on a day whose midnight a DST change skips).
  const int64_t utc_midnight = day * kSecondsPerDay;
  for (int64_t t = utc_midnight - 15 * kSecondsPerHour; t <= utc_midnight + 13 * kSecondsPerHour;
       t += kSecondsPerHour) {
    if (DayOf(t) == day) return t;
  }
  return utc_midnight - OffsetAt(utc_midnight);  // unreachable for offsets in range
}

int64_t RetentionZone::DayAnchor(int64_t day) const {
  return std::clamp(DayStart(day) + 12 * kSecondsPerHour, kFirstChecked, kEndOfHourCodes - kSecondsPerHour);
}

std::vector<int> RetentionZone::OffsetHoursDuring(int64_t from, int64_t to) const {
  std::set<int> hours;
  for (int64_t t = from; t < to;) {
    hours.insert(static_cast<int>(FloorDiv(OffsetAt(t), kSecondsPerHour)));
    if (!info_) break;
    const std::optional<int64_t> next = info_->NextChangeAfter(t);
    if (!next) break;
    t = *next;
  }
  return {hours.begin(), hours.end()};
}

nlohmann::json AppliedRetention::ToJson() const {
  nlohmann::json j = {{"ns", ns}, {"zone", zone}, {"hourly_from", hourly_from}};
  if (kept_from) j["kept_from"] = *kept_from;
  return j;
}

Result<AppliedRetention> AppliedRetention::FromJson(const nlohmann::json& j) {
  if (!j.is_object() || !j.contains("ns") || !j["ns"].is_string() || !j.contains("zone") || !j["zone"].is_string() ||
      !j.contains("hourly_from") || !j["hourly_from"].is_number_integer() ||
      (j.contains("kept_from") && !j["kept_from"].is_number_integer())) {
    return Status::Corruption(fmt::format("retention: expected {{\"ns\", \"zone\", \"hourly_from\"[, \"kept_from\"]}}, "
                                          "got {}",
                                          j.dump()));
  }
  AppliedRetention r;
  r.ns = j["ns"].get<std::string>();
  r.zone = j["zone"].get<std::string>();
  r.hourly_from = j["hourly_from"].get<int64_t>();
  if (j.contains("kept_from")) r.kept_from = j["kept_from"].get<int64_t>();
  if (r.kept_from && *r.kept_from > r.hourly_from) {
    return Status::Corruption(fmt::format("retention of {}: kept_from after hourly_from", r.ns));
  }
  return r;
}

const AppliedRetention* RetentionOf(const std::vector<AppliedRetention>& list, std::string_view ns) {
  for (const AppliedRetention& r : list) {
    if (r.ns == ns) return &r;
  }
  return nullptr;
}

nlohmann::json RetentionListJson(const std::vector<AppliedRetention>& list) {
  nlohmann::json j = nlohmann::json::array();
  for (const AppliedRetention& r : list) j.push_back(r.ToJson());
  return j;
}

Result<std::vector<AppliedRetention>> RetentionListFromJson(const nlohmann::json& j) {
  if (!j.is_array()) return Status::Corruption("retention: not a list");
  std::vector<AppliedRetention> list;
  for (const nlohmann::json& r : j) {
    auto applied = AppliedRetention::FromJson(r);
    if (!applied.ok()) return applied.status();
    list.push_back(std::move(applied).value());
  }
  return list;
}

Result<RetentionStep> NextRetention(const RetentionPolicy* policy, const AppliedRetention* before, int64_t last_day,
                                    TimeZoneDb& zones) {
  RetentionStep step;
  if (policy == nullptr && before == nullptr) {
    return Status::InvalidArgument("NextRetention: neither a policy nor an earlier generation's boundaries");
  }
  AppliedRetention& applied = step.applied;
  if (policy == nullptr) {
    // The policy is gone: what is rolled up stays so, nothing more is.
    applied = *before;
    return step;
  }
  applied.ns = policy->ns;
  applied.zone = before ? before->zone : policy->zone;
  if (before && policy->zone != before->zone) {
    step.notes.push_back(fmt::format(
        "namespace {}: zone stays \"{}\", not \"{}\": its days before {} are rolled up in it, and a day of one zone "
        "cannot be cut into the days of another",
        applied.ns, before->zone, policy->zone, FormatIsoTime(before->hourly_from)));
  }
  auto zone = RetentionZone::Open(applied.zone, zones);
  if (!zone.ok()) return zone.status().WithContext(fmt::format("retention of namespace {}", applied.ns));
  // The newest day of the zone the archive holds whole.
  const int64_t archive_end = (last_day + 1) * kSecondsPerDay;
  int64_t newest = zone->DayOf(archive_end - 1);
  if (zone->DayStart(newest + 1) > archive_end) --newest;
  applied.hourly_from = zone->DayStart(newest + 1 - policy->hourly_days);
  if (policy->daily_days > 0) applied.kept_from = zone->DayStart(newest + 1 - policy->daily_days);
  if (before) {
    if (applied.hourly_from < before->hourly_from) {
      step.notes.push_back(fmt::format(
          "namespace {}: hourly_days = {} would keep hours from {}, but an earlier generation rolled up the days "
          "before {}: they stay days (hours cannot come back)",
          applied.ns, policy->hourly_days, FormatIsoTime(applied.hourly_from), FormatIsoTime(before->hourly_from)));
      applied.hourly_from = before->hourly_from;
    }
    if (before->kept_from && (!applied.kept_from || *applied.kept_from < *before->kept_from)) {
      step.notes.push_back(fmt::format(
          "namespace {}: nothing before {} is kept (an earlier generation dropped it under daily_days); a longer "
          "daily_days keeps more from now on",
          applied.ns, FormatIsoTime(*before->kept_from)));
      applied.kept_from = before->kept_from;
    }
  }
  if (applied.kept_from && *applied.kept_from > applied.hourly_from) applied.hourly_from = *applied.kept_from;
  step.moved = before == nullptr || applied != *before;
  return step;
}

std::string DescribeRetention(const AppliedRetention& applied) {
  std::string text = fmt::format("hourly until {}; days in {} before it", FormatIsoTime(applied.hourly_from),
                                 applied.zone);
  if (applied.kept_from) text += fmt::format("; nothing kept before {}", FormatIsoTime(*applied.kept_from));
  return text;
}

}  // namespace clickatron
