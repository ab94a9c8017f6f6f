// Does Debian's date/tz (libhowardhinnant-date-dev, built with USE_OS_TZDB=1:
// it reads the same /usr/share/zoneinfo) give the offsets our TZif reader
// gives, for every zone, at every hour of 1970..2039? timezone.h says why we
// keep our reader; this test is the evidence, and fails when it goes stale.
//
// Hourly would be 613,608 instants per zone. Both sides are piecewise
// constant, so instead each zone's 1970..2040 is cut at the union of both
// sides' change instants (date/tz: sys_info begin/end; ours:
// ZoneInfo::NextChangeAfter), and the sides are compared at the first second
// of each stretch, after checking that each gives the same offset at its
// last second. Equal on every stretch means equal at every second, hence at
// every hour. The C library is asked at every stretch too, as the judge.
// CLICKATRON_TZDB_HOURLY=1 also runs the plain hourly comparison and checks
// it finds exactly the differing hours the stretches predict.
#include <date/tz.h>
#include <gtest/gtest.h>

#include <chrono>
#include <cstdlib>
#include <filesystem>
#include <iostream>
#include <map>
#include <set>
#include <string>
#include <vector>

#include "timezone/libc_zone.h"
#include "clickatron/timezone.h"

namespace clickatron {
namespace {

constexpr char kRoot[] = "/usr/share/zoneinfo";
constexpr int64_t kFrom = 0;           // 1970-01-01T00:00Z
constexpr int64_t kTo = 2208988800;    // 2040-01-01T00:00Z
constexpr int64_t kHour = 3600;

int64_t DateTzOffset(const date::time_zone* zone, int64_t t) {
  return zone->get_info(date::sys_seconds{std::chrono::seconds{t}}).offset.count();
}

// After a zone's last listed transition date/tz answers one open-ended
// sys_info, ending at the last representable year.
bool IsDateTzOpenEnd(const date::sys_info& info) {
  return info.end >= date::sys_days{date::year::max() / 1 / 1};
}

// One stretch of time on which neither side says it changes.
struct Stretch {
  int64_t begin, end;  // [begin, end)
  int64_t ours, theirs, libc;           // at begin
  int64_t ours_last, theirs_last;       // at end - 1: must equal ours, theirs
  bool their_open_end;  // date/tz's final sys_info: past the zone's last listed transition
  int64_t Hours() const { return (end + kHour - 1) / kHour - (begin + kHour - 1) / kHour; }  // kFrom = 0
};

// Every name under the root our reader accepts.
std::set<std::string> OurNames() {
  namespace fs = std::filesystem;
  TimeZoneDb db(kRoot);
  std::set<std::string> names;
  for (auto it = fs::recursive_directory_iterator(kRoot, fs::directory_options::follow_directory_symlink);
       it != fs::recursive_directory_iterator(); ++it) {
    if (!it->is_regular_file()) continue;
    const std::string name = fs::path(it->path()).lexically_relative(kRoot).string();
    if (db.Find(name).ok()) names.insert(name);
  }
  return names;
}

// With USE_OS_TZDB there are no links: a link is a file (or symlink) like
// any zone, and date/tz lists it among the zones.
std::set<std::string> DateTzNames() {
  std::set<std::string> names;
  for (const auto& zone : date::get_tzdb().zones) names.insert(std::string(zone.name()));
  return names;
}

// date/tz leaves these out of its zone list on purpose (its directory walk
// skips "posix*", "right" and "Factory"): posix/ repeats every zone, right/
// counts leap seconds, Factory is "-00" for unconfigured machines.
bool DateTzSkipsOnPurpose(const std::string& name) {
  return name.starts_with("posix/") || name.starts_with("right/") || name == "posixrules" || name == "Factory";
}

struct Comparison {
  std::set<std::string> ours_only, theirs_only;
  std::map<std::string, std::vector<Stretch>> stretches;  // every zone both sides know
};

std::vector<Stretch> CompareZone(const std::string& name, const ZoneInfo& ours, const date::time_zone* theirs) {
  const LibcZone libc(name);
  std::vector<Stretch> out;
  for (int64_t t = kFrom; t < kTo;) {
    const auto info = theirs->get_info(date::sys_seconds{std::chrono::seconds{t}});
    int64_t next = std::min<int64_t>(kTo, info.end.time_since_epoch().count());
    if (auto change = ours.NextChangeAfter(t)) next = std::min(next, *change);
    out.push_back({t, next, ours.OffsetAt(t), info.offset.count(), libc.OffsetAt(t), ours.OffsetAt(next - 1),
                   DateTzOffset(theirs, next - 1), IsDateTzOpenEnd(info)});
    t = next;
  }
  return out;
}

const Comparison& Compare() {
  static const Comparison* const result = [] {
    auto* c = new Comparison;
    const auto ours = OurNames();
    const auto theirs = DateTzNames();
    TimeZoneDb db(kRoot);
    for (const auto& name : ours) {
      if (!theirs.contains(name)) {
        c->ours_only.insert(name);
        continue;
      }
      auto zone = db.Find(name);
      c->stretches[name] = CompareZone(name, **zone, date::locate_zone(name));
    }
    for (const auto& name : theirs) {
      if (!ours.contains(name)) c->theirs_only.insert(name);
    }
    return c;
  }();
  return *result;
}

TEST(TzdbDifferentialTest, BothSidesKnowTheSameZones) {
  const Comparison& c = Compare();
  std::map<std::string, int> skipped;  // by first path component
  for (const auto& name : c.ours_only) {
    EXPECT_TRUE(DateTzSkipsOnPurpose(name)) << name << " is a zone our reader knows and date/tz does not";
    ++skipped[name.substr(0, name.find('/'))];
  }
  EXPECT_TRUE(c.theirs_only.empty()) << "date/tz knows " << *c.theirs_only.begin() << " and "
                                     << c.theirs_only.size() - 1 << " more that our reader refuses";
  std::cout << "zones both sides know: " << c.stretches.size() << "; only ours:";
  for (const auto& [group, n] : skipped) std::cout << " " << group << (n > 1 ? "/*" : "") << " (" << n << ")";
  std::cout << "; only date/tz: " << c.theirs_only.size() << "\n";
  EXPECT_GT(c.stretches.size(), 500u);  // a tzdata install, not an empty directory
}

// The stretches are only as good as each side's word on where it changes:
// a change it does not announce would hide inside a stretch. The last second
// of every stretch must still give the first second's offset. (An offset
// that moves and comes back within a stretch is beyond this check; the
// hourly mode below would see it.)
TEST(TzdbDifferentialTest, EachSideIsConstantOnEveryStretch) {
  for (const auto& [name, zone] : Compare().stretches) {
    for (const Stretch& s : zone) {
      EXPECT_EQ(s.ours_last, s.ours) << name << ": our reader changed within [" << s.begin << ", " << s.end << ")";
      EXPECT_EQ(s.theirs_last, s.theirs) << name << ": date/tz changed within [" << s.begin << ", " << s.end << ")";
    }
  }
}

// Where the two disagree, it is only past a zone's last listed transition
// (2037 in Debian's "fat" TZif files), where date/tz keeps the last
// transition's offset and ignores the file's POSIX TZ footer rule; there the
// C library agrees with us. Everywhere the C library agrees with us.
TEST(TzdbDifferentialTest, DifferencesAreOnlyDateTzIgnoringTheFooter) {
  const Comparison& c = Compare();
  size_t stretches = 0, differing_stretches = 0, differing_zones = 0;
  int64_t differing_hours = 0, first_difference = kTo;
  for (const auto& [name, zone] : c.stretches) {
    bool differs = false;
    for (const Stretch& s : zone) {
      ++stretches;
      EXPECT_EQ(s.ours, s.libc) << name << " at " << s.begin;
      if (s.ours == s.theirs) continue;
      EXPECT_TRUE(s.their_open_end) << name << " at " << s.begin << ": ours " << s.ours << ", date/tz " << s.theirs
                                    << " before the zone's last listed transition";
      differs = true;
      ++differing_stretches;
      differing_hours += s.Hours();
      first_difference = std::min(first_difference, s.begin);
    }
    differing_zones += differs;
  }
  std::cout << "stretches compared: " << stretches << "; differing: " << differing_stretches << " in "
            << differing_zones << " zones, " << differing_hours << " hours, the first at " << first_difference << "\n";
}

// The reason timezone.h gives for keeping our reader. If this fails, date/tz
// has learnt the footer: rerun the comparison and revisit that decision.
TEST(TzdbDifferentialTest, DateTzStillIgnoresTheFooter) {
  const auto& ny = Compare().stretches.at("America/New_York");
  const int64_t dst_2038 = 2152162800;  // 2038-03-14T07:00Z, the first DST start the footer alone gives
  auto it = std::find_if(ny.begin(), ny.end(), [](const Stretch& s) { return s.ours != s.theirs; });
  ASSERT_NE(it, ny.end()) << "date/tz and our reader now agree on America/New_York through 2039";
  EXPECT_EQ(it->begin, dst_2038);
  EXPECT_EQ(it->ours, -4 * kHour);
  EXPECT_EQ(it->theirs, -5 * kHour);
  EXPECT_EQ(it->libc, -4 * kHour);
}

// The hourly comparison itself (~15 s): every zone both know, every hour
// of 1970..2039, both sides asked. It must find exactly the differing hours
// the stretches predict, zone by zone.
TEST(TzdbDifferentialTest, HourlyBruteForceAgreesWithTheStretches) {
  if (std::getenv("CLICKATRON_TZDB_HOURLY") == nullptr) GTEST_SKIP() << "set CLICKATRON_TZDB_HOURLY=1 to run";
  const auto started = std::chrono::steady_clock::now();
  TimeZoneDb db(kRoot);
  int64_t hours = 0, differing = 0;
  for (const auto& [name, stretches] : Compare().stretches) {
    auto ours = db.Find(name);
    ASSERT_TRUE(ours.ok()) << name;
    const date::time_zone* theirs = date::locate_zone(name);
    int64_t zone_differing = 0;
    for (int64_t t = kFrom; t < kTo; t += kHour) {
      zone_differing += (*ours)->OffsetAt(t) != DateTzOffset(theirs, t);
      ++hours;
    }
    int64_t predicted = 0;
    for (const Stretch& s : stretches) predicted += s.ours != s.theirs ? s.Hours() : 0;
    EXPECT_EQ(zone_differing, predicted) << name;
    differing += zone_differing;
  }
  const auto seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - started).count();
  std::cout << "hourly: " << hours << " (zone, hour) pairs, " << differing << " differ; " << seconds << " s\n";
}

}  // namespace
}  // namespace clickatron
