// Time zone offsets from tzdata. The reference is the C library
// (libc_zone.h).
#include <gtest/gtest.h>

#include <algorithm>
#include <fstream>

#include "timezone/libc_zone.h"
#include "testutil/testutil.h"
#include "clickatron/timezone.h"

namespace clickatron {
namespace {

// Offset the C library gives for `tz` (a zone name, or a POSIX rule) at t.
int64_t LibcOffset(const std::string& tz, int64_t t) { return LibcZone(tz).OffsetAt(t); }

// 2000-01-01 .. 2040: hourly data lives in 2000..2031; later instants
// exercise the TZif footer rule.
std::vector<int64_t> Instants() {
  std::vector<int64_t> out;
  for (int64_t t = 946684800; t < 2208988800; t += 86400 * 7 + 3600 * 5 + 17) out.push_back(t);
  return out;
}

TEST(TimezoneTest, ZonesMatchTheCLibraryEverywhere) {
  TimeZoneDb db;
  for (const std::string zone :
       {"America/New_York", "Europe/London", "Europe/Berlin", "Australia/Sydney", "Asia/Tokyo", "America/Sao_Paulo",
        "Asia/Kolkata", "Pacific/Auckland", "America/St_Johns", "Africa/Casablanca", "UTC", "Etc/GMT+5",
        "Pacific/Kiritimati", "America/Santiago"}) {
    for (int64_t t : Instants()) {
      auto got = db.OffsetSecondsAt(zone, t);
      ASSERT_TRUE(got.ok()) << zone << ": " << got.status().ToString();
      ASSERT_EQ(*got, LibcOffset(zone, t)) << zone << " at " << t;
    }
  }
}

TEST(TimezoneTest, PosixRulesMatchTheCLibrary) {
  for (const std::string rule : {"EST5EDT,M3.2.0,M11.1.0", "AEST-10AEDT,M10.1.0,M4.1.0/3", "<+0530>-5:30",
                                 "CET-1CEST,M3.5.0,M10.5.0/3", "<-03>3<-02>,M3.5.0/-2,M10.5.0/-1",
                                 "NZST-12NZDT,M9.5.0,M4.1.0/3", "XXX3YYY,J60/1,300/4"}) {
    auto parsed = ParsePosixTz(rule);
    ASSERT_TRUE(parsed.ok()) << rule << ": " << parsed.status().ToString();
    for (int64_t t : Instants()) {
      ASSERT_EQ(PosixTzOffsetAt(*parsed, t), LibcOffset(rule, t)) << rule << " at " << t;
    }
  }
  EXPECT_FALSE(ParsePosixTz("").ok());
  EXPECT_FALSE(ParsePosixTz("EST").ok());
  EXPECT_FALSE(ParsePosixTz("EST5EDT,M13.1.0,M11.1.0").ok());
}

// Between two instants NextChangeAfter names, the offset must not move: check
// every hour of [from, to) against the offset at its stretch's start, and
// return the instants where the offset really changed.
std::vector<int64_t> WalkChanges(const ZoneInfo& zone, int64_t from, int64_t to) {
  std::vector<int64_t> changes;
  int64_t start = from;
  for (;;) {
    const auto next = zone.NextChangeAfter(start);
    const int64_t stop = next ? std::min(*next, to) : to;
    EXPECT_GT(stop, start);
    const int64_t offset = zone.OffsetAt(start);
    for (int64_t t = start; t < stop; t += 3600) EXPECT_EQ(zone.OffsetAt(t), offset) << "at " << t;
    EXPECT_EQ(zone.OffsetAt(stop - 1), offset) << "at " << stop - 1;
    if (stop >= to) return changes;
    if (zone.OffsetAt(stop) != offset) changes.push_back(stop);
    start = stop;
  }
}

TEST(TimezoneTest, NextChangeAfterNeverSkipsAChange) {
  TimeZoneDb db;
  // 2036..2041 crosses New York's last listed transition (2037-11-01) into
  // the footer rule; Sydney's DST spans the new year; Kolkata has none.
  auto ny = db.Find("America/New_York");
  ASSERT_TRUE(ny.ok());
  const std::vector<int64_t> changes = WalkChanges(**ny, 2082758400, 2240611200);
  EXPECT_EQ(changes.size(), 10u);
  for (int64_t t : {int64_t{2140668000} /* 2037-11-01 06:00Z, listed */, int64_t{2152162800} /* 2038-03-14 07:00Z */,
                    int64_t{2172722400} /* 2038-11-07 06:00Z */}) {
    EXPECT_NE(std::find(changes.begin(), changes.end(), t), changes.end()) << t;
  }
  for (const std::string name : {"Australia/Sydney", "Asia/Kolkata", "Etc/UTC"}) {
    auto zone = db.Find(name);
    ASSERT_TRUE(zone.ok()) << name;
    EXPECT_EQ(WalkChanges(**zone, 2082758400, 2240611200).size(), name == "Australia/Sydney" ? 10u : 0u) << name;
  }
}

TEST(TimezoneTest, FileThatIsNotTzifIsUnknown) {
  clickatron::testing::TempDir dir;
  std::ofstream(dir / "Fake") << "not a tzif file";
  TimeZoneDb db(dir.path());
  auto r = db.OffsetSecondsAt("Fake", 0);
  EXPECT_EQ(r.status().code(), StatusCode::kNotFound);
}

TEST(TimezoneTest, TruncatedTzifIsRefused) {
  std::ifstream in("/usr/share/zoneinfo/America/New_York", std::ios::binary);
  std::string data((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  ASSERT_GT(data.size(), 100u);
  EXPECT_TRUE(ZoneInfo::Parse(data).ok());
  for (size_t cut : {size_t{10}, size_t{44}, size_t{60}, data.size() / 2}) {
    EXPECT_FALSE(ZoneInfo::Parse(data.substr(0, cut)).ok()) << cut;
  }
}

}  // namespace
}  // namespace clickatron
