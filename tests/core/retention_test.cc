// Retention (clickatron/retention.h): the zones days are rolled up by
// (fixed offsets and tzdata zones, DST days of 23 and 25 hours), the
// boundaries each generation applies (NextRetention: counted back from the
// newest whole day of the zone, only ever moving forward), their manifest
// JSON, and the [[retention]] tables of the cluster file.
//
// Expected instants are written out by hand: days since 1970 of a date
// (checked with `date -u -d DATE +%s` / 86400) times 86400, plus or minus
// the zone's offset that day (US DST 2026: second Sunday of March, 03-08, to
// first Sunday of November, 11-01).
#include "clickatron/retention.h"

#include <gtest/gtest.h>

#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "clickatron/config.h"
#include "clickatron/timezone.h"

namespace clickatron::retention_test {
namespace {

constexpr int64_t kHour = 3600;
constexpr int64_t kDay = 86400;

// Days since 1970-01-01 (2026-01-01 is 56 * 365 + 14 leap days = 20454).
constexpr int64_t kJan10 = 20463;   // 2026-01-10
constexpr int64_t kMar01 = 20513;   // 2026-03-01
constexpr int64_t kMar08 = 20520;   // 2026-03-08, a Sunday: US DST begins
constexpr int64_t kMar09 = 20521;
constexpr int64_t kSep06 = 20702;   // 2026-09-06
constexpr int64_t kSep07 = 20703;   // 2026-09-07
constexpr int64_t kNov01 = 20758;   // 2026-11-01, a Sunday: US DST ends
constexpr int64_t kNov02 = 20759;
constexpr int64_t kNov06 = 20763;   // 2026-11-06
constexpr int64_t kDec05 = 20792;   // 2026-12-05
constexpr int64_t kDec06_2025 = 20428;  // 2025-12-06

RetentionZone OpenZone(std::string_view name, TimeZoneDb& zones) {
  auto zone = RetentionZone::Open(name, zones);
  EXPECT_TRUE(zone.ok()) << name << ": " << zone.status().ToString();
  return zone.ok() ? *zone : RetentionZone();
}

bool Contains(const std::string& text, std::string_view part) { return text.find(part) != std::string::npos; }

// ---------------------------------------------------------------- RetentionZone

TEST(RetentionZoneTest, UtcDaysAreUtcDays) {
  TimeZoneDb zones;
  const RetentionZone utc = OpenZone("UTC", zones);
  EXPECT_EQ(utc.name(), "UTC");
  EXPECT_EQ(utc.OffsetAt(kMar08 * kDay), 0);
  EXPECT_EQ(utc.DayStart(kMar08), kMar08 * kDay);
  EXPECT_EQ(utc.DayOf(kMar08 * kDay), kMar08);
  EXPECT_EQ(utc.DayOf(kMar08 * kDay + kDay - 1), kMar08);
  EXPECT_EQ(utc.DayOf(kMar08 * kDay - 1), kMar08 - 1);
  EXPECT_EQ(utc.DayAnchor(kMar08), kMar08 * kDay + 12 * kHour);
  EXPECT_EQ(utc.DayStart(0), 0);
  EXPECT_EQ(utc.OffsetHoursDuring(kMar01 * kDay, kNov02 * kDay), (std::vector<int>{0}));
  EXPECT_TRUE(utc.CheckWholeHours().ok());
}

TEST(RetentionZoneTest, FixedOffsetsEastAndWest) {
  TimeZoneDb zones;
  const RetentionZone plus9 = OpenZone("+9", zones);
  EXPECT_EQ(plus9.name(), "+9");
  EXPECT_EQ(plus9.OffsetAt(kJan10 * kDay), 9 * kHour);
  // 2026-01-10 in UTC+9 starts at 2026-01-09T15:00Z.
  EXPECT_EQ(plus9.DayStart(kJan10), (kJan10 - 1) * kDay + 15 * kHour);
  EXPECT_EQ(plus9.DayAnchor(kJan10), (kJan10 - 1) * kDay + 27 * kHour);  // 2026-01-10T03:00Z
  EXPECT_EQ(plus9.DayOf((kJan10 - 1) * kDay + 15 * kHour), kJan10);
  EXPECT_EQ(plus9.DayOf((kJan10 - 1) * kDay + 15 * kHour - 1), kJan10 - 1);
  EXPECT_EQ(plus9.DayOf(kJan10 * kDay + 14 * kHour), kJan10);
  EXPECT_EQ(plus9.DayOf(kJan10 * kDay + 15 * kHour), kJan10 + 1);
  EXPECT_EQ(plus9.OffsetHoursDuring(kMar01 * kDay, kNov02 * kDay), (std::vector<int>{9}));
  EXPECT_TRUE(plus9.CheckWholeHours().ok());

  const RetentionZone minus5 = OpenZone("-05:00", zones);
  EXPECT_EQ(minus5.OffsetAt(kMar08 * kDay), -5 * kHour);
  // 2026-03-08 in UTC-5 starts at 2026-03-08T05:00Z, whatever New York does.
  EXPECT_EQ(minus5.DayStart(kMar08), kMar08 * kDay + 5 * kHour);
  EXPECT_EQ(minus5.DayStart(kMar09), kMar09 * kDay + 5 * kHour);
  EXPECT_EQ(minus5.DayOf(kMar08 * kDay + 4 * kHour), kMar08 - 1);
  EXPECT_EQ(minus5.DayOf(kMar08 * kDay + 5 * kHour), kMar08);
  EXPECT_EQ(minus5.OffsetHoursDuring(kMar01 * kDay, kNov02 * kDay), (std::vector<int>{-5}));

  // Other spellings of whole-hour offsets.
  EXPECT_EQ(OpenZone("+09:00", zones).OffsetAt(0), 9 * kHour);
  EXPECT_EQ(OpenZone("-5", zones).OffsetAt(0), -5 * kHour);
  EXPECT_EQ(OpenZone("0", zones).OffsetAt(0), 0);
  EXPECT_EQ(OpenZone("+14", zones).OffsetAt(0), 14 * kHour);
}

// A day reaching past either end of the hour codes keeps its count at the
// end hour inside it (its middle has no code): 1970-01-01 03:00Z is of the
// UTC-5 day 1969-12-31, whose middle is 1969-12-31T17:00Z.
TEST(RetentionZoneTest, AnchorsOfDaysAtTheEndsOfTheHourCodes) {
  TimeZoneDb zones;
  const RetentionZone minus5 = OpenZone("-5", zones);
  EXPECT_EQ(minus5.DayOf(3 * kHour), -1);
  EXPECT_EQ(minus5.DayAnchor(-1), 0);
  EXPECT_EQ(minus5.DayAnchor(0), 17 * kHour);
  const RetentionZone minus12 = OpenZone("-12", zones);
  const int64_t last_day = DaysFromCivil({2127, 12, 31});
  EXPECT_EQ(minus12.DayStart(last_day), last_day * kDay + 12 * kHour);
  EXPECT_EQ(minus12.DayAnchor(last_day), last_day * kDay + 23 * kHour);  // not 2128-01-01T00:00Z
  const RetentionZone plus14 = OpenZone("+14", zones);
  // 1970-01-01 in UTC+14 starts 1969-12-31T10:00Z; its middle (22:00Z) has no code.
  EXPECT_EQ(plus14.DayAnchor(0), 0);
  EXPECT_EQ(plus14.DayAnchor(1), 22 * kHour);
}

TEST(RetentionZoneTest, NewYorkDaysOfTwentyThreeAndTwentyFiveHours) {
  TimeZoneDb zones;
  const RetentionZone ny = OpenZone("America/New_York", zones);
  EXPECT_EQ(ny.OffsetAt(kMar01 * kDay), -5 * kHour);
  EXPECT_EQ(ny.OffsetAt(kSep07 * kDay), -4 * kHour);
  // Spring: 2026-03-08 begins at midnight EST (05:00Z), 03-09 at midnight EDT (04:00Z): 23 hours.
  const int64_t mar08 = kMar08 * kDay + 5 * kHour;
  const int64_t mar09 = kMar09 * kDay + 4 * kHour;
  EXPECT_EQ(ny.DayStart(kMar08), mar08);
  EXPECT_EQ(ny.DayStart(kMar09), mar09);
  EXPECT_EQ(mar09 - mar08, 23 * kHour);
  EXPECT_EQ(ny.DayStart(kMar08 - 1), (kMar08 - 1) * kDay + 5 * kHour);
  EXPECT_EQ(ny.DayAnchor(kMar08), mar08 + 12 * kHour);
  EXPECT_EQ(ny.DayAnchor(kMar09), mar09 + 12 * kHour);
  EXPECT_EQ(ny.DayOf(mar08), kMar08);
  EXPECT_EQ(ny.DayOf(mar08 - 1), kMar08 - 1);
  EXPECT_EQ(ny.DayOf(mar09 - 1), kMar08);
  EXPECT_EQ(ny.DayOf(mar09), kMar09);
  EXPECT_EQ(ny.DayOf(kMar08 * kDay + 7 * kHour), kMar08);  // 02:00 EST = 03:00 EDT, the change
  // Autumn: 2026-11-01 begins at midnight EDT (04:00Z), 11-02 at midnight EST (05:00Z): 25 hours.
  const int64_t nov01 = kNov01 * kDay + 4 * kHour;
  const int64_t nov02 = kNov02 * kDay + 5 * kHour;
  EXPECT_EQ(ny.DayStart(kNov01), nov01);
  EXPECT_EQ(ny.DayStart(kNov02), nov02);
  EXPECT_EQ(nov02 - nov01, 25 * kHour);
  EXPECT_EQ(ny.DayAnchor(kNov01), nov01 + 12 * kHour);
  EXPECT_EQ(ny.DayOf(nov02 - 1), kNov01);
  EXPECT_EQ(ny.DayOf(nov02), kNov02);
  EXPECT_EQ(ny.DayOf(nov01 - 1), kNov01 - 1);
  // Every day start is a whole UTC hour.
  for (int64_t day = kMar01; day < kNov02 + 7; ++day) {
    ASSERT_EQ(ny.DayStart(day) % kHour, 0) << day;
    ASSERT_EQ(ny.DayOf(ny.DayStart(day)), day) << day;
    ASSERT_EQ(ny.DayOf(ny.DayStart(day) - 1), day - 1) << day;
  }
}

TEST(RetentionZoneTest, OffsetsDuringASpan) {
  TimeZoneDb zones;
  const RetentionZone ny = OpenZone("America/New_York", zones);
  // Across the spring change.
  EXPECT_EQ(ny.OffsetHoursDuring(kMar01 * kDay, (kMar09 + 5) * kDay), (std::vector<int>{-5, -4}));
  // Only before it, only after it.
  EXPECT_EQ(ny.OffsetHoursDuring(kMar01 * kDay, kMar08 * kDay), (std::vector<int>{-5}));
  EXPECT_EQ(ny.OffsetHoursDuring(kMar09 * kDay, kSep07 * kDay), (std::vector<int>{-4}));
  // The change is at 2026-03-08T07:00Z: a span ending right then is all EST,
  // one beginning right then all EDT.
  EXPECT_EQ(ny.OffsetHoursDuring(kMar08 * kDay, kMar08 * kDay + 7 * kHour), (std::vector<int>{-5}));
  EXPECT_EQ(ny.OffsetHoursDuring(kMar08 * kDay + 7 * kHour, kMar09 * kDay), (std::vector<int>{-4}));
  EXPECT_EQ(ny.OffsetHoursDuring(kMar08 * kDay + 6 * kHour, kMar08 * kDay + 8 * kHour), (std::vector<int>{-5, -4}));
  // Across the autumn one.
  EXPECT_EQ(ny.OffsetHoursDuring(kSep07 * kDay, kNov06 * kDay), (std::vector<int>{-5, -4}));
  // An empty span has none.
  EXPECT_TRUE(ny.OffsetHoursDuring(kMar01 * kDay, kMar01 * kDay).empty());
}

TEST(RetentionZoneTest, WholeHoursAndUnknownNames) {
  TimeZoneDb zones;
  auto kolkata = RetentionZone::Open("Asia/Kolkata", zones);
  ASSERT_TRUE(kolkata.ok()) << kolkata.status().ToString();  // a zone, just not a usable one
  const Status half = kolkata->CheckWholeHours();
  EXPECT_FALSE(half.ok());
  EXPECT_EQ(half.code(), StatusCode::kInvalidArgument);
  EXPECT_TRUE(Contains(half.message(), "Asia/Kolkata")) << half.message();
  EXPECT_TRUE(OpenZone("Europe/Berlin", zones).CheckWholeHours().ok());
  EXPECT_TRUE(OpenZone("America/New_York", zones).CheckWholeHours().ok());

  for (const char* bad : {"Mars/Olympus_Mons", "", "+15", "+5:30", "+09:30", "EST5", "../../etc/passwd"}) {
    auto zone = RetentionZone::Open(bad, zones);
    EXPECT_FALSE(zone.ok()) << '"' << bad << '"';
    if (!zone.ok()) {
      EXPECT_EQ(zone.status().code(), StatusCode::kInvalidArgument) << bad;
    }
  }
}

// ---------------------------------------------------------------- NextRetention

RetentionPolicy Policy(int hourly_days, int daily_days, std::string zone = "UTC") {
  return RetentionPolicy{"u", hourly_days, daily_days, std::move(zone)};
}

RetentionStep Next(const RetentionPolicy* policy, const AppliedRetention* before, int64_t last_day,
                   TimeZoneDb& zones) {
  auto step = NextRetention(policy, before, last_day, zones);
  EXPECT_TRUE(step.ok()) << step.status().ToString();
  return step.ok() ? *step : RetentionStep{};
}

TEST(NextRetentionTest, ANewPolicyKeepsTheLastHourlyDaysWhole) {
  TimeZoneDb zones;
  const RetentionPolicy policy = Policy(90, 0);
  const RetentionStep first = Next(&policy, nullptr, kDec05, zones);
  // 90 whole days 2026-09-07 .. 2026-12-05 stay hourly.
  EXPECT_EQ(kDec05 - kSep07 + 1, 90);
  EXPECT_EQ(first.applied.ns, "u");
  EXPECT_EQ(first.applied.zone, "UTC");
  EXPECT_EQ(first.applied.hourly_from, kSep07 * kDay);
  EXPECT_EQ(first.applied.hourly_from, 1788739200);  // date -u -d 2026-09-07 +%s
  EXPECT_FALSE(first.applied.kept_from.has_value());
  EXPECT_TRUE(first.moved);
  EXPECT_TRUE(first.notes.empty());

  // A day later: one day later.
  const RetentionStep second = Next(&policy, &first.applied, kDec05 + 1, zones);
  EXPECT_EQ(second.applied.hourly_from, first.applied.hourly_from + kDay);
  EXPECT_TRUE(second.moved);
  EXPECT_TRUE(second.notes.empty());

  // The same day again: nothing moves.
  const RetentionStep again = Next(&policy, &first.applied, kDec05, zones);
  EXPECT_EQ(again.applied, first.applied);
  EXPECT_FALSE(again.moved);
  EXPECT_TRUE(again.notes.empty());
}

TEST(NextRetentionTest, LongerHourlyDaysCannotBringHoursBackShorterOnesMoveOn) {
  TimeZoneDb zones;
  const RetentionPolicy p90 = Policy(90, 0);
  const RetentionStep first = Next(&p90, nullptr, kDec05, zones);
  ASSERT_EQ(first.applied.hourly_from, kSep07 * kDay);

  const RetentionPolicy p120 = Policy(120, 0);
  const RetentionStep longer = Next(&p120, &first.applied, kDec05, zones);
  EXPECT_EQ(longer.applied.hourly_from, kSep07 * kDay);  // the earlier generation's, kept
  EXPECT_FALSE(longer.moved);
  ASSERT_EQ(longer.notes.size(), 1u);
  EXPECT_TRUE(Contains(longer.notes[0], "hourly_days")) << longer.notes[0];
  EXPECT_TRUE(Contains(longer.notes[0], "u")) << longer.notes[0];
  // A day later, still the same boundary: 120 days back is before it.
  const RetentionStep longer_next = Next(&p120, &longer.applied, kDec05 + 1, zones);
  EXPECT_EQ(longer_next.applied.hourly_from, kSep07 * kDay);
  EXPECT_FALSE(longer_next.moved);

  const RetentionPolicy p30 = Policy(30, 0);
  const RetentionStep shorter = Next(&p30, &first.applied, kDec05, zones);
  // 30 whole days 2026-11-06 .. 2026-12-05.
  EXPECT_EQ(kDec05 - kNov06 + 1, 30);
  EXPECT_EQ(shorter.applied.hourly_from, kNov06 * kDay);
  EXPECT_TRUE(shorter.moved);
  EXPECT_TRUE(shorter.notes.empty());
}

TEST(NextRetentionTest, DailyDaysSetsWhatIsKeptAtAll) {
  TimeZoneDb zones;
  const RetentionPolicy policy = Policy(90, 365);
  const RetentionStep step = Next(&policy, nullptr, kDec05, zones);
  EXPECT_EQ(step.applied.hourly_from, kSep07 * kDay);
  // 365 whole days 2025-12-06 .. 2026-12-05 (2026 is no leap year).
  ASSERT_TRUE(step.applied.kept_from.has_value());
  EXPECT_EQ(*step.applied.kept_from, kDec06_2025 * kDay);
  EXPECT_EQ(*step.applied.kept_from, 1764979200);  // date -u -d 2025-12-06 +%s
  EXPECT_TRUE(step.notes.empty());

  // daily_days = hourly_days: everything kept is hourly.
  const RetentionPolicy same = Policy(90, 90);
  const RetentionStep same_step = Next(&same, nullptr, kDec05, zones);
  EXPECT_EQ(same_step.applied.hourly_from, kSep07 * kDay);
  ASSERT_TRUE(same_step.applied.kept_from.has_value());
  EXPECT_EQ(*same_step.applied.kept_from, kSep07 * kDay);

  // hourly_days = 0: every whole day is rolled up.
  const RetentionPolicy none = Policy(0, 10);
  const RetentionStep none_step = Next(&none, nullptr, kDec05, zones);
  EXPECT_EQ(none_step.applied.hourly_from, (kDec05 + 1) * kDay);
  ASSERT_TRUE(none_step.applied.kept_from.has_value());
  EXPECT_EQ(*none_step.applied.kept_from, (kDec05 - 9) * kDay);

  // A longer daily_days, or none, cannot bring back what was dropped.
  const RetentionPolicy longer = Policy(90, 730);
  const RetentionStep longer_step = Next(&longer, &step.applied, kDec05 + 1, zones);
  EXPECT_EQ(longer_step.applied.kept_from, step.applied.kept_from);
  EXPECT_EQ(longer_step.applied.hourly_from, (kSep07 + 1) * kDay);
  EXPECT_EQ(longer_step.notes.size(), 1u);
  const RetentionPolicy forever = Policy(90, 0);
  const RetentionStep forever_step = Next(&forever, &step.applied, kDec05, zones);
  EXPECT_EQ(forever_step.applied.kept_from, step.applied.kept_from);
  EXPECT_EQ(forever_step.notes.size(), 1u);
  EXPECT_FALSE(forever_step.moved);
}

TEST(NextRetentionTest, AZoneChangeKeepsTheOldZone) {
  TimeZoneDb zones;
  const RetentionPolicy utc = Policy(90, 0);
  const RetentionStep first = Next(&utc, nullptr, kDec05, zones);
  const RetentionPolicy ny = Policy(90, 0, "America/New_York");
  const RetentionStep changed = Next(&ny, &first.applied, kDec05 + 1, zones);
  EXPECT_EQ(changed.applied.zone, "UTC");
  EXPECT_EQ(changed.applied.hourly_from, (kSep07 + 1) * kDay);  // counted in UTC days still
  ASSERT_EQ(changed.notes.size(), 1u);
  EXPECT_TRUE(Contains(changed.notes[0], "UTC")) << changed.notes[0];
  EXPECT_TRUE(Contains(changed.notes[0], "America/New_York")) << changed.notes[0];
}

TEST(NextRetentionTest, NoPolicyKeepsWhatWasAppliedAndNeitherIsAnError) {
  TimeZoneDb zones;
  AppliedRetention before{"u", "UTC", kSep07 * kDay, kDec06_2025 * kDay};
  const RetentionStep step = Next(nullptr, &before, kDec05 + 30, zones);
  EXPECT_EQ(step.applied, before);
  EXPECT_FALSE(step.moved);
  EXPECT_TRUE(step.notes.empty());
  EXPECT_FALSE(NextRetention(nullptr, nullptr, kDec05, zones).ok());
  const RetentionPolicy bad = Policy(90, 0, "Nowhere/Land");
  EXPECT_FALSE(NextRetention(&bad, nullptr, kDec05, zones).ok());
}

TEST(NextRetentionTest, ZonesOffUtcCountOnlyTheirWholeDays) {
  TimeZoneDb zones;
  const int64_t archive_end = (kDec05 + 1) * kDay;  // 2026-12-06T00:00Z
  // UTC-5: 2026-12-05 there ends at 2026-12-06T05:00Z, after the archive's
  // end, so the newest whole day is 12-04 and 90 days back from it is 09-06.
  const RetentionPolicy west = Policy(90, 0, "-5");
  const RetentionStep w = Next(&west, nullptr, kDec05, zones);
  EXPECT_EQ(w.applied.zone, "-5");
  EXPECT_EQ(w.applied.hourly_from, kSep06 * kDay + 5 * kHour);
  EXPECT_EQ((w.applied.hourly_from - 5 * kHour) % kDay, 0);  // a day start of the zone
  EXPECT_LE(w.applied.hourly_from, archive_end);
  EXPECT_LE(w.applied.hourly_from + 90 * kDay, archive_end);  // the 90 days are all in the archive

  // UTC+9: 2026-12-06 there begins 2026-12-05T15:00Z and is not whole; the
  // newest whole day is 12-05 (ends 2026-12-05T15:00Z), 90 back is 09-07.
  const RetentionPolicy east = Policy(90, 0, "+9");
  const RetentionStep e = Next(&east, nullptr, kDec05, zones);
  EXPECT_EQ(e.applied.hourly_from, kSep07 * kDay - 9 * kHour);
  EXPECT_LE(e.applied.hourly_from + 90 * kDay, archive_end);

  // New York: 2026-12-05 ends 2026-12-06T05:00Z (EST), so 12-04 is the
  // newest whole day; 90 days back is 2026-09-06, in EDT: 04:00Z.
  const RetentionPolicy ny = Policy(90, 0, "America/New_York");
  const RetentionStep n = Next(&ny, nullptr, kDec05, zones);
  EXPECT_EQ(n.applied.hourly_from, kSep06 * kDay + 4 * kHour);
  EXPECT_LE(n.applied.hourly_from, archive_end);

  // Checked day by day over a year of last days, each zone: the boundary
  // is a day start of the zone, never after the archive's end, and the
  // hourly days it leaves are whole days of the zone that the archive holds.
  for (const char* name : {"-5", "+9", "America/New_York", "-12", "+14", "Europe/Berlin"}) {
    const RetentionZone zone = OpenZone(name, zones);
    const RetentionPolicy policy = Policy(7, 0, name);
    for (int64_t last_day = kDec05 - 365; last_day <= kDec05; ++last_day) {
      const RetentionStep s = Next(&policy, nullptr, last_day, zones);
      const int64_t from = s.applied.hourly_from;
      const int64_t end = (last_day + 1) * kDay;
      const int64_t day = zone.DayOf(from);
      ASSERT_EQ(zone.DayStart(day), from) << name << " " << last_day;
      // Seven whole days of the zone from `from`: the last of them ends by the archive's end …
      const int64_t seventh_end = zone.DayStart(day + 7);
      ASSERT_LE(seventh_end, end) << name << " " << last_day;
      // … and an eighth would not (the newest whole day is counted).
      ASSERT_GT(zone.DayStart(day + 8), end) << name << " " << last_day;
    }
  }
}

// ---------------------------------------------------------------- AppliedRetention JSON

TEST(AppliedRetentionTest, JsonRoundTrip) {
  const AppliedRetention plain{"u", "America/New_York", kSep07 * kDay + 4 * kHour, std::nullopt};
  const nlohmann::json j = plain.ToJson();
  EXPECT_EQ(j, nlohmann::json::parse(R"({"ns":"u","zone":"America/New_York","hourly_from":1788753600})"));
  auto back = AppliedRetention::FromJson(j);
  ASSERT_TRUE(back.ok()) << back.status().ToString();
  EXPECT_EQ(*back, plain);

  const AppliedRetention dropped{"clicks", "UTC", kSep07 * kDay, kDec06_2025 * kDay};
  const nlohmann::json k = dropped.ToJson();
  EXPECT_EQ(k["kept_from"], 1764979200);
  auto back2 = AppliedRetention::FromJson(nlohmann::json::parse(k.dump()));
  ASSERT_TRUE(back2.ok()) << back2.status().ToString();
  EXPECT_EQ(*back2, dropped);

  // kept_from == hourly_from is fine.
  const AppliedRetention equal{"u", "UTC", kSep07 * kDay, kSep07 * kDay};
  auto back3 = AppliedRetention::FromJson(equal.ToJson());
  ASSERT_TRUE(back3.ok()) << back3.status().ToString();
  EXPECT_EQ(*back3, equal);
}

TEST(AppliedRetentionTest, FromJsonRefusesWhatIsMissingOrWrong) {
  for (const char* text : {
           R"([])",
           R"("u")",
           R"({})",
           R"({"zone":"UTC","hourly_from":1})",
           R"({"ns":"u","hourly_from":1})",
           R"({"ns":"u","zone":"UTC"})",
           R"({"ns":1,"zone":"UTC","hourly_from":1})",
           R"({"ns":"u","zone":9,"hourly_from":1})",
           R"({"ns":"u","zone":"UTC","hourly_from":"1"})",
           R"({"ns":"u","zone":"UTC","hourly_from":1.5})",
           R"({"ns":"u","zone":"UTC","hourly_from":1,"kept_from":"0"})",
           R"({"ns":"u","zone":"UTC","hourly_from":86400,"kept_from":172800})",  // kept_from after hourly_from
       }) {
    auto r = AppliedRetention::FromJson(nlohmann::json::parse(text));
    EXPECT_FALSE(r.ok()) << text;
  }
}

TEST(AppliedRetentionTest, DescribeNamesTheBoundariesAndZone) {
  const std::string text = DescribeRetention({"u", "America/New_York", kSep07 * kDay, kDec06_2025 * kDay});
  EXPECT_TRUE(Contains(text, "hourly until 2026-09-07T00:00:00Z")) << text;
  EXPECT_TRUE(Contains(text, "America/New_York")) << text;
  EXPECT_TRUE(Contains(text, "2025-12-06T00:00:00Z")) << text;
  const std::string plain = DescribeRetention({"u", "UTC", kSep07 * kDay, std::nullopt});
  EXPECT_FALSE(Contains(plain, "kept")) << plain;
}

}  // namespace
}  // namespace clickatron::retention_test
