// TZif (RFC 8536) and POSIX TZ rule reading; see timezone.h.
#include "clickatron/timezone.h"

#include <charconv>
#include <fmt/format.h>

#include <algorithm>
#include <fstream>
#include <sstream>
#include <sys/stat.h>

#include "clickatron/key_codec.h"
#include "clickatron/ymdh.h"

namespace clickatron {
namespace {

constexpr size_t kMaxZoneFileBytes = 1 << 20;
constexpr size_t kMaxZoneNameLength = 64;
constexpr int64_t kHour = 3600;

// ---- POSIX TZ strings ------------------------------------------------------

class TzCursor {
 public:
  explicit TzCursor(std::string_view text) : text_(text) {}
  bool done() const { return pos_ >= text_.size(); }
  char peek() const { return done() ? '\0' : text_[pos_]; }
  bool Eat(char c) {
    if (peek() != c) return false;
    ++pos_;
    return true;
  }
  // "EST" or "<+0530>": a zone abbreviation, which we only skip.
  bool SkipName() {
    if (Eat('<')) {
      const size_t close = text_.find('>', pos_);
      if (close == std::string_view::npos || close == pos_) return false;
      pos_ = close + 1;
      return true;
    }
    const size_t start = pos_;
    while (!done() && ((peek() >= 'A' && peek() <= 'Z') || (peek() >= 'a' && peek() <= 'z'))) ++pos_;
    return pos_ - start >= 3;
  }
  bool Number(int max, int* out) {
    const size_t start = pos_;
    int64_t value = 0;
    while (!done() && peek() >= '0' && peek() <= '9' && pos_ - start < 4) value = value * 10 + (text_[pos_++] - '0');
    if (pos_ == start || value > max) return false;
    *out = static_cast<int>(value);
    return true;
  }
  // [+-]hh[:mm[:ss]] in seconds; hours up to max_hours.
  bool Duration(int max_hours, int64_t* out) {
    int sign = 1;
    if (Eat('-')) {
      sign = -1;
    } else {
      Eat('+');
    }
    int h = 0, m = 0, s = 0;
    if (!Number(max_hours, &h)) return false;
    if (Eat(':')) {
      if (!Number(59, &m)) return false;
      if (Eat(':') && !Number(59, &s)) return false;
    }
    *out = sign * (static_cast<int64_t>(h) * kHour + m * 60 + s);
    return true;
  }
  bool RuleDate(PosixTzRule::Date* date) {
    if (Eat('M')) {
      date->kind = PosixTzRule::Date::kMonthWeekDay;
      if (!Number(12, &date->month) || date->month < 1 || !Eat('.') || !Number(5, &date->week) ||
          date->week < 1 || !Eat('.') || !Number(6, &date->day)) {
        return false;
      }
    } else if (Eat('J')) {
      date->kind = PosixTzRule::Date::kJulianNoLeap;
      if (!Number(365, &date->day) || date->day < 1) return false;
    } else {
      date->kind = PosixTzRule::Date::kZeroBasedDay;
      if (!Number(365, &date->day)) return false;
    }
    date->time = 2 * kHour;
    // RFC 8536 allows -167..167 hours here.
    if (Eat('/') && !Duration(167, &date->time)) return false;
    return true;
  }

 private:
  std::string_view text_;
  size_t pos_ = 0;
};

// Days since the epoch of a rule date in `year` (local calendar).
int64_t RuleDays(const PosixTzRule::Date& date, int year) {
  const int64_t jan1 = DaysFromCivil({year, 1, 1});
  const bool leap = DaysInMonth(year, 2) == 29;
  switch (date.kind) {
    case PosixTzRule::Date::kJulianNoLeap:
      // Feb 29 is never counted: day 60 is always March 1.
      return jan1 + date.day - 1 + ((leap && date.day >= 60) ? 1 : 0);
    case PosixTzRule::Date::kZeroBasedDay:
      return jan1 + date.day;
    case PosixTzRule::Date::kMonthWeekDay: {
      const int64_t first = DaysFromCivil({year, date.month, 1});
      const int first_weekday = WeekdayFromDays(first);
      int64_t day = first + (date.day - first_weekday + 7) % 7 + static_cast<int64_t>(date.week - 1) * 7;
      const int64_t month_end = first + DaysInMonth(year, date.month);
      while (day >= month_end) day -= 7;  // week 5 means "the last"
      return day;
    }
  }
  return jan1;
}

// ---- TZif ------------------------------------------------------------------

class ByteReader {
 public:
  explicit ByteReader(std::string_view data) : data_(data) {}
  bool Has(size_t n) const { return data_.size() - pos_ >= n; }
  size_t pos() const { return pos_; }
  void Skip(size_t n) { pos_ += n; }
  std::string_view Take(size_t n) {
    auto s = data_.substr(pos_, n);
    pos_ += n;
    return s;
  }
  uint32_t U32() {
    uint32_t v = 0;
    for (int i = 0; i < 4; ++i) v = (v << 8) | static_cast<uint8_t>(data_[pos_++]);
    return v;
  }
  int64_t I64() {
    uint64_t v = 0;
    for (int i = 0; i < 8; ++i) v = (v << 8) | static_cast<uint8_t>(data_[pos_++]);
    return static_cast<int64_t>(v);
  }
  uint8_t U8() { return static_cast<uint8_t>(data_[pos_++]); }

 private:
  std::string_view data_;
  size_t pos_ = 0;
};

struct TzifCounts {
  uint32_t isutcnt, isstdcnt, leapcnt, timecnt, typecnt, charcnt;
  size_t DataBytes(size_t time_size) const {
    return timecnt * time_size + timecnt + typecnt * 6 + charcnt + leapcnt * (time_size + 4) + isstdcnt +
           isutcnt;
  }
};

bool ReadHeader(ByteReader* r, char* version, TzifCounts* c) {
  if (!r->Has(44)) return false;
  if (r->Take(4) != "TZif") return false;
  *version = r->Take(1)[0];
  r->Skip(15);
  c->isutcnt = r->U32();
  c->isstdcnt = r->U32();
  c->leapcnt = r->U32();
  c->timecnt = r->U32();
  c->typecnt = r->U32();
  c->charcnt = r->U32();
  return c->typecnt >= 1 && c->typecnt <= 256 && c->timecnt <= (1u << 20) && c->leapcnt <= (1u << 16) &&
         c->charcnt <= (1u << 16) && c->isstdcnt <= 256 && c->isutcnt <= 256;
}

bool ValidZoneName(std::string_view name) {
  if (name.empty() || name.size() > kMaxZoneNameLength || name.front() == '/') return false;
  for (char c : name) {
    const bool ok = (c >= 'A' && c <= 'Z') || (c >= 'a' && c <= 'z') || (c >= '0' && c <= '9') || c == '_' ||
                    c == '-' || c == '+' || c == '/';
    if (!ok) return false;
  }
  // No empty, "." or ".." component can reach outside the root (dots are
  // refused above; this catches "//" and a trailing '/').
  return name.find("//") == std::string_view::npos && name.back() != '/';
}

}  // namespace

Result<PosixTzRule> ParsePosixTz(std::string_view text) {
  PosixTzRule rule;
  TzCursor cur(text);
  const auto bad = [&] { return Status::InvalidArgument(fmt::format("bad POSIX TZ rule {}", QuoteForMessage(text))); };
  int64_t west = 0;
  if (!cur.SkipName() || !cur.Duration(24, &west)) return bad();
  rule.std_offset = -west;
  if (cur.done()) return rule;
  if (!cur.SkipName()) return bad();
  rule.has_dst = true;
  rule.dst_offset = rule.std_offset + kHour;
  if (!cur.done() && cur.peek() != ',') {
    if (!cur.Duration(24, &west)) return bad();
    rule.dst_offset = -west;
  }
  if (cur.done()) {
    // No rule given: POSIX leaves it implementation-defined; tzcode uses the
    // US rules.
    rule.dst_start = {PosixTzRule::Date::kMonthWeekDay, 0, 3, 2, 2 * kHour};
    rule.dst_end = {PosixTzRule::Date::kMonthWeekDay, 0, 11, 1, 2 * kHour};
    return rule;
  }
  if (!cur.Eat(',') || !cur.RuleDate(&rule.dst_start) || !cur.Eat(',') || !cur.RuleDate(&rule.dst_end) ||
      !cur.done()) {
    return bad();
  }
  return rule;
}

int64_t PosixTzOffsetAt(const PosixTzRule& rule, int64_t unix_seconds) {
  if (!rule.has_dst) return rule.std_offset;
  const int year = CivilFromDays(FloorDiv(unix_seconds + rule.std_offset, kSecondsPerDay)).year;
  // Start is given in local standard time, end in local daylight time.
  const int64_t start = RuleDays(rule.dst_start, year) * kSecondsPerDay + rule.dst_start.time - rule.std_offset;
  const int64_t end = RuleDays(rule.dst_end, year) * kSecondsPerDay + rule.dst_end.time - rule.dst_offset;
  bool dst;
  if (start < end) {
    dst = unix_seconds >= start && unix_seconds < end;  // northern hemisphere
  } else {
    dst = !(unix_seconds >= end && unix_seconds < start);  // southern: DST spans the new year
  }
  return dst ? rule.dst_offset : rule.std_offset;
}

std::optional<int64_t> PosixTzNextChangeAfter(const PosixTzRule& rule, int64_t unix_seconds) {
  if (!rule.has_dst) return std::nullopt;
  // PosixTzOffsetAt depends only on the local standard year and on where the
  // instant lies against that year's start and end: it is constant until the
  // next of those three instants.
  const int year = CivilFromDays(FloorDiv(unix_seconds + rule.std_offset, kSecondsPerDay)).year;
  const int64_t start = RuleDays(rule.dst_start, year) * kSecondsPerDay + rule.dst_start.time - rule.std_offset;
  const int64_t end = RuleDays(rule.dst_end, year) * kSecondsPerDay + rule.dst_end.time - rule.dst_offset;
  int64_t next = DaysFromCivil({year + 1, 1, 1}) * kSecondsPerDay - rule.std_offset;
  for (int64_t t : {start, end}) {
    if (t > unix_seconds) next = std::min(next, t);
  }
  return next;
}

Result<ZoneInfo> ZoneInfo::Parse(std::string_view data) {
  const auto bad = [](std::string_view why) { return Status::Corruption(fmt::format("bad TZif data: {}", why)); };
  ByteReader r(data);
  char version = 0;
  TzifCounts c{};
  if (!ReadHeader(&r, &version, &c)) return bad("header");
  size_t time_size = 4;
  if (version >= '2') {
    // Skip the 32-bit block; the 64-bit one after the second header covers
    // every instant and is followed by the footer rule.
    if (!r.Has(c.DataBytes(4))) return bad("truncated v1 block");
    r.Skip(c.DataBytes(4));
    char version2 = 0;
    if (!ReadHeader(&r, &version2, &c)) return bad("second header");
    time_size = 8;
  }
  if (!r.Has(c.DataBytes(time_size))) return bad("truncated data block");
  ZoneInfo zone;
  zone.transitions_.reserve(c.timecnt);
  for (uint32_t i = 0; i < c.timecnt; ++i) {
    const int64_t t = time_size == 8 ? r.I64() : static_cast<int32_t>(r.U32());
    if (!zone.transitions_.empty() && t <= zone.transitions_.back()) return bad("transitions out of order");
    zone.transitions_.push_back(t);
  }
  for (uint32_t i = 0; i < c.timecnt; ++i) {
    const uint8_t type = r.U8();
    if (type >= c.typecnt) return bad("transition type out of range");
    zone.transition_type_.push_back(type);
  }
  for (uint32_t i = 0; i < c.typecnt; ++i) {
    const int64_t utoff = static_cast<int32_t>(r.U32());
    r.Skip(2);  // isdst, desigidx
    zone.offsets_.push_back(utoff);
  }
  r.Skip(c.charcnt + c.leapcnt * (time_size + 4) + c.isstdcnt + c.isutcnt);
  if (time_size == 8 && r.Has(1)) {
    std::string_view rest = data.substr(r.pos());
    if (rest.size() >= 2 && rest.front() == '\n') {
      const size_t end = rest.find('\n', 1);
      std::string_view footer = rest.substr(1, end == std::string_view::npos ? std::string_view::npos : end - 1);
      if (!footer.empty()) {
        auto rule = ParsePosixTz(footer);
        if (!rule.ok()) return bad(rule.status().message());
        zone.footer_ = *rule;
      }
    }
  }
  return zone;
}

int64_t ZoneInfo::OffsetAt(int64_t unix_seconds) const {
  if (transitions_.empty()) return footer_ ? PosixTzOffsetAt(*footer_, unix_seconds) : offsets_.front();
  // RFC 8536: before the first transition, local time type 0 applies.
  if (unix_seconds < transitions_.front()) return offsets_.front();
  const size_t i = std::upper_bound(transitions_.begin(), transitions_.end(), unix_seconds) - transitions_.begin() - 1;
  if (i + 1 == transitions_.size() && unix_seconds > transitions_.back() && footer_) {
    return PosixTzOffsetAt(*footer_, unix_seconds);
  }
  return offsets_[transition_type_[i]];
}

std::optional<int64_t> ZoneInfo::NextChangeAfter(int64_t unix_seconds) const {
  if (transitions_.empty()) return footer_ ? PosixTzNextChangeAfter(*footer_, unix_seconds) : std::nullopt;
  const auto next = std::upper_bound(transitions_.begin(), transitions_.end(), unix_seconds);
  if (next != transitions_.end()) return *next;
  if (!footer_) return std::nullopt;
  // OffsetAt hands over to the footer one second after the last transition.
  if (unix_seconds == transitions_.back()) return unix_seconds + 1;
  return PosixTzNextChangeAfter(*footer_, unix_seconds);
}

Result<int64_t> TimeZoneDb::OffsetSecondsAt(std::string_view name, int64_t unix_seconds) {
  auto zone = Find(name);
  if (!zone.ok()) return zone.status();
  return (*zone)->OffsetAt(unix_seconds);
}

Result<std::shared_ptr<const ZoneInfo>> TimeZoneDb::Find(std::string_view name) {
  if (!ValidZoneName(name)) {
    return Status::InvalidArgument(fmt::format("{} is not a time zone name", QuoteForMessage(name)));
  }
  auto it = cache_.find(name);
  if (it == cache_.end()) {
    const std::string path = root_ + "/" + std::string(name);
    struct stat st {};
    if (::stat(path.c_str(), &st) != 0 || !S_ISREG(st.st_mode) || static_cast<size_t>(st.st_size) > kMaxZoneFileBytes) {
      return Status::NotFound(fmt::format("unknown time zone {}", QuoteForMessage(name)));
    }
    std::ifstream in(path, std::ios::binary);
    std::stringstream buf;
    buf << in.rdbuf();
    if (!in) return Status::NotFound(fmt::format("cannot read time zone {}", QuoteForMessage(name)));
    auto zone = ZoneInfo::Parse(buf.str());
    if (!zone.ok()) return Status::NotFound(fmt::format("{} is not a time zone", QuoteForMessage(name)));
    if (cache_.size() >= kMaxCachedZones) cache_.clear();
    it = cache_.emplace(std::string(name), std::make_shared<const ZoneInfo>(std::move(*zone))).first;
  }
  return it->second;
}

// See timezone.h. Moved from the retention policies' zones, which took
// "-05:00" while queries refused it.
std::optional<int64_t> ParseWholeHourOffset(std::string_view text) {
  if (text.empty()) return std::nullopt;
  int sign = 1;
  if (text[0] == '+' || text[0] == '-') {
    sign = text[0] == '-' ? -1 : 1;
    text.remove_prefix(1);
  }
  if (text.ends_with(":00")) text.remove_suffix(3);
  if (text.empty() || text.size() > 2) return std::nullopt;
  int hours = 0;
  const auto [end, ec] = std::from_chars(text.data(), text.data() + text.size(), hours);
  if (ec != std::errc() || end != text.data() + text.size() || hours < 0 || hours > 14) return std::nullopt;
  return int64_t{sign} * hours * kSecondsPerHour;
}


}  // namespace clickatron
