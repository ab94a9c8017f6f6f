#include "query/answer/resolution.h"

#include <algorithm>
#include <string>

#include <fmt/format.h>

#include "clickatron/ymdh.h"

namespace clickatron::api {
namespace {

Status Expired(const AppliedRetention& applied, std::string_view why) {
  return Status::InvalidArgument(
      fmt::format("namespace {}: {}: {}", applied.ns, DescribeRetention(applied), why), "RESOLUTION_EXPIRED");
}

}  // namespace

Result<nlohmann::json> CheckResolution(const AppliedRetention* applied, int64_t begin_ts, int64_t end_ts,
                                       const WindowParams& window, TimeZoneDb& zones) {
  if (applied == nullptr || begin_ts >= applied->hourly_from || begin_ts >= end_ts) return nlohmann::json();
  if (window.unit == Unit::kHour) {
    return Expired(*applied, fmt::format("unit=hour cannot be answered before {} (this query begins at {})",
                                         FormatIsoTime(applied->hourly_from), FormatIsoTime(begin_ts)));
  }
  auto zone = RetentionZone::Open(applied->zone, zones);
  if (!zone.ok()) {
    return Status::Internal(fmt::format("namespace {}: its retention zone \"{}\" is unknown here: {}", applied->ns,
                                        applied->zone, zone.status().message()));
  }
  // The rolled-up part: what is kept before hourly_from. Before kept_from
  // nothing counts, so the zone's offsets there do not matter (a window
  // wholly before it was refused for an offset of days that hold nothing,
  // and one reaching before it taken for an offset the zone had only there).
  const int64_t rolled_from = std::max(begin_ts, applied->kept_from.value_or(begin_ts));
  const int64_t rolled_to = std::min(end_ts, applied->hourly_from);
  const std::vector<int> offsets =
      rolled_from < rolled_to ? zone->OffsetHoursDuring(rolled_from, rolled_to) : std::vector<int>{window.tz_offset};
  if (std::find(offsets.begin(), offsets.end(), window.tz_offset) == offsets.end()) {
    return Expired(*applied, fmt::format("this query's days are those of UTC{:+d}, and the days before {} are {}'s",
                                         window.tz_offset, FormatIsoTime(applied->hourly_from), applied->zone));
  }
  nlohmann::json resolution = {{"hourly_from", applied->hourly_from}, {"zone", applied->zone}};
  if (applied->kept_from) resolution["kept_from"] = *applied->kept_from;
  return resolution;
}

std::string WithResolution(std::string data_json, const nlohmann::json& resolution) {
  if (resolution.is_null() || data_json.size() < 2 || data_json.back() != '}') return data_json;
  data_json.pop_back();
  if (data_json.size() > 1) data_json.push_back(',');
  data_json += "\"resolution\":";
  data_json += resolution.dump();
  data_json.push_back('}');
  return data_json;
}

}  // namespace clickatron::api
