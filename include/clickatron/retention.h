// Retention: how long a namespace's data stays at hourly resolution, and how
// long at all (docs/protocols.md, "Retention").
//
// A policy ([[retention]] in the cluster file) says: keep hours for
// hourly_days, then one record per day of `zone` up to daily_days (0:
// forever). The rebuild applies it to every generation it writes. A day past
// hourly_days is rolled up *in place*: the sum (or union) of its hours goes
// to one hour of that day, its anchor (the day's start + 12 h), and its other
// hours go. So the archive's format does not change: day and span records,
// readers and merges see hours as always, and any query whose units are
// whole days of the zone (day, week, mweek, month) sums each rolled day into
// the unit that holds it, exactly. A query by hour, or by the days of another
// zone, would see the whole day in one hour: the API refuses it
// (RESOLUTION_EXPIRED) for the part of the window that is rolled.
//
// The anchor is the middle of the day, not its start, so that a query whose
// day begins an hour earlier or later (a DST zone read with the offset in
// force at its reference time) still puts the day in the unit it belongs to.
//
// What a generation applied is in its manifest (AppliedRetention): boundaries
// only move forward, whatever the policy says later, because rolled hours
// cannot come back.
//
// Thread-safety: RetentionZone is immutable once opened (any thread may use
// it); the functions are pure.
#pragma once

#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include <nlohmann/json_fwd.hpp>

#include "clickatron/status.h"

namespace clickatron {

class TimeZoneDb;
class ZoneInfo;

// [[retention]] of the cluster file.
struct RetentionPolicy {
  std::string ns;
  int hourly_days = 0;   // hour records kept this many days
  int daily_days = 0;    // then day records only, up to this age; 0 = forever
  std::string zone = "UTC";
};

// The days a namespace is rolled up by: a tzdata zone or a fixed offset
// ("+9", "-05:00", "0"), whose offsets are whole hours from 1970 to 2127
// (hours are the archive's unit: a day of a half-hour zone would cut one).
class RetentionZone {
 public:
  // The zone by name; NOT whether its offsets are whole hours (CheckWholeHours).
  static Result<RetentionZone> Open(std::string_view name, TimeZoneDb& zones);
  // INVALID_ARGUMENT naming the first instant from 1970 to 2127 at which the
  // zone is not a whole number of hours off UTC (the cluster file's check).
  Status CheckWholeHours() const;

  const std::string& name() const { return name_; }
  int64_t OffsetAt(int64_t unix_seconds) const;
  // The zone's day (days since 1970-01-01 on its calendar) holding an instant.
  int64_t DayOf(int64_t unix_seconds) const;
  // The first instant of a day of the zone (always a whole UTC hour).
  int64_t DayStart(int64_t day) const;
  // The hour a rolled day's count is kept at: its start + 12 h, or for a
  // day of this zone that reaches past either end of the hour codes
  // (1970-01-01T00:00Z .. 2127-12-31T23:00Z, ymdh.h) the end hour inside it.
  int64_t DayAnchor(int64_t day) const;
  // The offsets (whole hours east of UTC) in force at some instant of
  // [from, to), ascending.
  std::vector<int> OffsetHoursDuring(int64_t from, int64_t to) const;

 private:
  std::string name_;
  int64_t fixed_offset_ = 0;               // when info_ is null
  std::shared_ptr<const ZoneInfo> info_;   // a tzdata zone
};

// What a generation did to one namespace (its manifest's "retention").
struct AppliedRetention {
  std::string ns;
  std::string zone;
  // From here on the archive holds hours; before it, each day of `zone` is
  // one hour (its anchor). A day of the zone's start.
  int64_t hourly_from = 0;
  // Nothing is kept before it (daily_days); nullopt: nothing dropped.
  std::optional<int64_t> kept_from;
  friend bool operator==(const AppliedRetention&, const AppliedRetention&) = default;

  nlohmann::json ToJson() const;
  static Result<AppliedRetention> FromJson(const nlohmann::json& j);
};

// The entry of namespace `ns` in a generation's list (null: none).
const AppliedRetention* RetentionOf(const std::vector<AppliedRetention>& list, std::string_view ns);
// A generation's list as JSON (a manifest's, a task spec's "retention"), and back.
nlohmann::json RetentionListJson(const std::vector<AppliedRetention>& list);
Result<std::vector<AppliedRetention>> RetentionListFromJson(const nlohmann::json& j);

// The boundaries the next generation applies to a namespace, from its
// policy (null: none in the cluster file now), what the previous generation
// applied (null: nothing yet) and the last UTC day the generation holds
// (days since 1970). The hourly days counted back are whole days of the
// zone that the archive holds: the newest is the last one that ends by the
// end of `last_day`. `notes` gets a line for each part of the policy that
// cannot be applied (a longer hourly_days or daily_days cannot bring back
// what was rolled up or dropped; a zone cannot change once days are rolled
// in another).
struct RetentionStep {
  AppliedRetention applied;
  bool moved = false;  // differs from the previous generation's (or it had none)
  std::vector<std::string> notes;
};
Result<RetentionStep> NextRetention(const RetentionPolicy* policy, const AppliedRetention* before, int64_t last_day,
                                    TimeZoneDb& zones);

// "hourly until 2026-09-06T00:00Z; days in UTC before it" (and what was
// dropped): how an error or a note names a namespace's boundaries.
std::string DescribeRetention(const AppliedRetention& applied);

}  // namespace clickatron
