// YMDH codes and the civil-calendar helpers behind them (see ymdh.h).
#include "clickatron/ymdh.h"

#include <fmt/format.h>

#include <algorithm>
#include <charconv>
#include <limits>

#include "clickatron/key_codec.h"

namespace clickatron {
namespace {

constexpr char kB32Digits[] = "0123456789abcdefghijklmnopqrstuv";

// -1 for anything outside [0-9a-v]; upper case is refused so that one hour has
// exactly one spelling (keys are compared bytewise).
int B32Value(char c) {
  if (c >= '0' && c <= '9') return c - '0';
  if (c >= 'a' && c <= 'v') return c - 'a' + 10;
  return -1;
}

bool IsLeapYear(int64_t y) { return (y % 4 == 0 && y % 100 != 0) || y % 400 == 0; }

// Reads exactly text.size() decimal digits (no sign); false on anything else.
bool ParseFixedDigits(std::string_view text, int* out) {
  int value = 0;
  for (char c : text) {
    if (c < '0' || c > '9') return false;
    value = value * 10 + (c - '0');
  }
  *out = value;
  return !text.empty();
}

bool ValidCivil(int year, int month, int day) {
  return month >= 1 && month <= 12 && day >= 1 && day <= DaysInMonth(year, month);
}

// The years outside the seed's 2000-2031 take a 5-character code: an era
// character, then b32(year - the era's first year), then month, day, hour.
// Eras sort before ('/') and after ('w' < 'x' < 'y') every seed code's first
// character, so bytewise order stays time order, and no code is a prefix of
// another (see ymdh.h).
struct Era {
  char mark;
  int first_year;
  int years;
};
constexpr Era kEras[] = {{'/', 1970, 30}, {'w', 2032, 32}, {'x', 2064, 32}, {'y', 2096, 32}};

const Era* EraOfMark(char c) {
  for (const Era& e : kEras) {
    if (e.mark == c) return &e;
  }
  return nullptr;
}

const Era* EraOfYear(int year) {
  for (const Era& e : kEras) {
    if (year >= e.first_year && year < e.first_year + e.years) return &e;
  }
  return nullptr;
}

}  // namespace

// Howard Hinnant's days_from_civil: exact for the whole proleptic Gregorian
// calendar, no tables, no time zone database (the ring must not depend on TZ).
int64_t DaysFromCivil(const CivilDate& date) {
  const int64_t y = static_cast<int64_t>(date.year) - (date.month <= 2 ? 1 : 0);
  const int64_t era = FloorDiv(y, 400);
  const int64_t yoe = y - era * 400;                                     // [0, 399]
  const int64_t mp = (date.month + 9) % 12;                              // March = 0
  const int64_t doy = (153 * mp + 2) / 5 + date.day - 1;                 // [0, 365]
  const int64_t doe = yoe * 365 + yoe / 4 - yoe / 100 + doy;             // [0, 146096]
  return era * 146097 + doe - 719468;
}

CivilDate CivilFromDays(int64_t days) {
  const int64_t z = days + 719468;
  const int64_t era = FloorDiv(z, 146097);
  const int64_t doe = z - era * 146097;
  const int64_t yoe = (doe - doe / 1460 + doe / 36524 - doe / 146096) / 365;
  const int64_t doy = doe - (365 * yoe + yoe / 4 - yoe / 100);
  const int64_t mp = (5 * doy + 2) / 153;
  const int day = static_cast<int>(doy - (153 * mp + 2) / 5 + 1);
  const int month = static_cast<int>(mp < 10 ? mp + 3 : mp - 9);
  const int64_t year = yoe + era * 400 + (month <= 2 ? 1 : 0);
  return CivilDate{static_cast<int>(year), month, day};
}

int DaysInMonth(int year, int month) {
  static constexpr int kDays[] = {31, 28, 31, 30, 31, 30, 31, 31, 30, 31, 30, 31};
  if (month < 1 || month > 12) return 0;
  if (month == 2 && IsLeapYear(year)) return 29;
  return kDays[month - 1];
}

// 1970-01-01 was a Thursday (4).
int WeekdayFromDays(int64_t days) {
  const int64_t w = (days + 4) % 7;
  return static_cast<int>(w < 0 ? w + 7 : w);
}

Result<std::string> YmdhFromUnix(int64_t unix_seconds) {
  // Range check on seconds first: CivilFromDays narrows the year to int, and a
  // far-away time must not alias into range.
  static const int64_t kFirst = DaysFromCivil({kMinYmdhYear, 1, 1}) * kSecondsPerDay;
  if (unix_seconds < kFirst || unix_seconds >= kEndOfHourCodes) {
    constexpr int64_t kYear10000 = 253402300800;  // FormatIsoTime is 4-digit-year safe below
    const std::string iso = (unix_seconds > -kYear10000 && unix_seconds < kYear10000)
                                ? fmt::format(" ({})", FormatIsoTime(unix_seconds))
                                : std::string();
    return Status::OutOfRange(fmt::format(
        "time {}{} is outside the YMDH range {}-01-01T00:00:00Z..{}-12-31T23:59:59Z", unix_seconds,
        iso, kMinYmdhYear, kMaxYmdhYear));
  }
  const int64_t days = FloorDiv(unix_seconds, kSecondsPerDay);
  const CivilDate date = CivilFromDays(days);
  const int64_t hour = (unix_seconds - days * kSecondsPerDay) / kSecondsPerHour;
  std::string code;
  if (date.year >= kFirstSeedYmdhYear && date.year <= kLastSeedYmdhYear) {
    code.push_back(kB32Digits[date.year - kFirstSeedYmdhYear]);
  } else {
    const Era* era = EraOfYear(date.year);  // in range (checked above)
    code.push_back(era->mark);
    code.push_back(kB32Digits[date.year - era->first_year]);
  }
  code.push_back(kB32Digits[date.month]);
  code.push_back(kB32Digits[date.day]);
  code.push_back(kB32Digits[hour]);
  return code;
}

bool LooksLikeYmdh(std::string_view ymdh) {
  if (ymdh.size() == 5) {
    const Era* era = EraOfMark(ymdh[0]);
    if (era == nullptr || B32Value(ymdh[1]) < 0 || B32Value(ymdh[1]) >= era->years) return false;
    ymdh.remove_prefix(2);
  } else if (ymdh.size() != 4) {
    return false;
  }
  for (char c : ymdh) {
    if (B32Value(c) < 0) return false;
  }
  return true;
}

namespace {
// The hour code of a day code's first hour (its code + '0'), in a buffer:
// day codes are checked on hot read and rebuild paths.
struct FirstHourCode {
  char bytes[kMaxYmdhLength];
  size_t size = 0;
  explicit FirstHourCode(std::string_view day_code) {
    if (day_code.size() + 1 > kMaxYmdhLength) return;
    std::copy(day_code.begin(), day_code.end(), bytes);
    bytes[day_code.size()] = '0';
    size = day_code.size() + 1;
  }
  std::string_view view() const { return {bytes, size}; }
};
}  // namespace

bool LooksLikeDayCode(std::string_view code) {
  if (code.size() != 3 && code.size() != 4) return false;
  return LooksLikeYmdh(FirstHourCode(code).view());
}

Result<std::string> DayCodeFromDays(int64_t days) {
  if (days > std::numeric_limits<int64_t>::max() / kSecondsPerDay ||
      days < std::numeric_limits<int64_t>::min() / kSecondsPerDay) {
    return Status::OutOfRange(fmt::format("day {} is outside the YMDH range", days));
  }
  Result<std::string> hour = YmdhFromUnix(days * kSecondsPerDay);
  if (!hour.ok()) return hour.status();
  hour->pop_back();
  return hour;
}

Result<int64_t> DaysFromDayCode(std::string_view code) {
  if (!LooksLikeDayCode(code)) {
    return Status::InvalidArgument(fmt::format(
        "{} is not a day code (an hour code without its hour: 3 characters of [0-9a-v] for 2000-2031, or "
        "'/', 'w', 'x' or 'y' and 3 more)",
        QuoteForMessage(code)));
  }
  Result<int64_t> first_hour = UnixFromYmdh(FirstHourCode(code).view());
  if (!first_hour.ok()) return first_hour.status().WithContext(fmt::format("day code {}", QuoteForMessage(code)));
  return FloorDiv(*first_hour, kSecondsPerDay);
}

DaySpan SpanHolding(int64_t day, int level) {
  const int64_t days = int64_t{1} << level;
  return DaySpan{FloorDiv(day, days) * days, level};
}

Result<std::string> SpanCode(const DaySpan& span) {
  if (span.level < 0 || span.level > kMaxSpanLevel || FloorDiv(span.first_day, span.days()) * span.days() != span.first_day) {
    return Status::InvalidArgument(
        fmt::format("no span of level {} starts on day {} (levels 0-{}, aligned on their length)", span.level,
                    span.first_day, kMaxSpanLevel));
  }
  Result<std::string> code = DayCodeFromDays(span.last_day());
  if (!code.ok() || span.level == 0) return code;
  code->push_back('z');
  code->push_back(static_cast<char>('0' + span.level));
  return code;
}

bool LooksLikeSpanCode(std::string_view code) {
  if (LooksLikeDayCode(code)) return true;
  return code.size() >= 5 && code[code.size() - 2] == 'z' && code.back() >= '1' &&
         code.back() <= '0' + kMaxSpanLevel && LooksLikeDayCode(code.substr(0, code.size() - 2));
}

Result<DaySpan> SpanFromCode(std::string_view code) {
  if (!LooksLikeSpanCode(code)) {
    return Status::InvalidArgument(fmt::format(
        "{} is not a span code (a day code, or a day code, 'z' and a level 1-{})", QuoteForMessage(code),
        kMaxSpanLevel));
  }
  if (LooksLikeDayCode(code)) {
    Result<int64_t> day = DaysFromDayCode(code);
    if (!day.ok()) return day.status();
    return DaySpan{*day, 0};
  }
  Result<int64_t> last = DaysFromDayCode(code.substr(0, code.size() - 2));
  if (!last.ok()) return last.status().WithContext(fmt::format("span code {}", QuoteForMessage(code)));
  const int level = code.back() - '0';
  const DaySpan span = SpanHolding(*last, level);
  if (span.last_day() != *last) {
    return Status::InvalidArgument(fmt::format("span code {}: no span of {} days ends on that day",
                                               QuoteForMessage(code), span.days()));
  }
  return span;
}

Result<int64_t> UnixFromYmdh(std::string_view ymdh) {
  if (!LooksLikeYmdh(ymdh)) {
    return Status::InvalidArgument(fmt::format(
        "ymdh {} is not an hour code (4 characters of [0-9a-v] for 2000-2031, or '/', 'w', 'x' or 'y' "
        "and 4 more for {}-{})",
        QuoteForMessage(ymdh), kMinYmdhYear, kMaxYmdhYear));
  }
  int year = 0;
  if (ymdh.size() == 4) {
    year = kFirstSeedYmdhYear + B32Value(ymdh[0]);
  } else {
    year = EraOfMark(ymdh[0])->first_year + B32Value(ymdh[1]);
    ymdh.remove_prefix(1);
  }
  const int month = B32Value(ymdh[1]);
  const int day = B32Value(ymdh[2]);
  const int hour = B32Value(ymdh[3]);
  if (!ValidCivil(year, month, day) || hour > 23) {
    return Status::InvalidArgument(fmt::format(
        "ymdh \"{}\" names no real hour (year {}, month {}, day {}, hour {})", ymdh, year, month,
        day, hour));
  }
  return DaysFromCivil({year, month, day}) * kSecondsPerDay + hour * kSecondsPerHour;
}

Result<int64_t> ParseDate(std::string_view text) {
  int year = 0, month = 0, day = 0;
  if (text.size() != 10 || text[4] != '-' || text[7] != '-' ||
      !ParseFixedDigits(text.substr(0, 4), &year) || !ParseFixedDigits(text.substr(5, 2), &month) ||
      !ParseFixedDigits(text.substr(8, 2), &day)) {
    return Status::InvalidArgument(
        fmt::format("date {} is not YYYY-MM-DD", QuoteForMessage(text)));
  }
  if (!ValidCivil(year, month, day)) {
    return Status::InvalidArgument(fmt::format("date \"{}\" is not a real day", text));
  }
  return DaysFromCivil({year, month, day});
}

std::string FormatDate(int64_t days) {
  const CivilDate d = CivilFromDays(days);
  return fmt::format("{:04d}-{:02d}-{:02d}", d.year, d.month, d.day);
}

Result<int64_t> ParseTimestamp(std::string_view text) {
  // Unix seconds: an optional '-' then digits, nothing else (from_chars refuses
  // '+' and reports overflow).
  if (!text.empty() && (text[0] == '-' || (text[0] >= '0' && text[0] <= '9')) &&
      text.find_first_not_of("-0123456789") == std::string_view::npos) {
    int64_t value = 0;
    const auto [ptr, ec] = std::from_chars(text.data(), text.data() + text.size(), value);
    if (ec == std::errc() && ptr == text.data() + text.size()) return value;
    return Status::InvalidArgument(
        fmt::format("timestamp {} is not a valid int64 of unix seconds", QuoteForMessage(text)));
  }
  // RFC 3339 with whole seconds: YYYY-MM-DDTHH:MM:SS then Z or ±HH:MM ('t'
  // and 'z' in lower case too: section 5.6 allows them).
  const auto bad = [&](std::string_view why) {
    return Status::InvalidArgument(fmt::format(
        "timestamp {} {} (want unix seconds or YYYY-MM-DDTHH:MM:SSZ)", QuoteForMessage(text), why));
  };
  if (text.size() < 20 || (text[10] != 'T' && text[10] != 't') || text[13] != ':' || text[16] != ':') {
    return bad("is not a timestamp");
  }
  Result<int64_t> days = ParseDate(text.substr(0, 10));
  if (!days.ok()) return bad("has no valid date");
  int hour = 0, minute = 0, second = 0;
  if (!ParseFixedDigits(text.substr(11, 2), &hour) || !ParseFixedDigits(text.substr(14, 2), &minute) ||
      !ParseFixedDigits(text.substr(17, 2), &second) || hour > 23 || minute > 59 || second > 59) {
    return bad("has no valid time of day");
  }
  std::string_view zone = text.substr(19);
  int64_t offset_seconds = 0;
  if (zone == "Z" || zone == "z") {
    offset_seconds = 0;
  } else if (!zone.empty() && zone[0] == '.') {
    return bad("has fractional seconds");
  } else if (zone.size() == 6 && (zone[0] == '+' || zone[0] == '-') && zone[3] == ':') {
    int oh = 0, om = 0;
    if (!ParseFixedDigits(zone.substr(1, 2), &oh) || !ParseFixedDigits(zone.substr(4, 2), &om) ||
        oh > 23 || om > 59) {
      return bad("has an invalid UTC offset");
    }
    offset_seconds = (oh * 3600 + om * 60) * (zone[0] == '-' ? -1 : 1);
  } else {
    return bad("has no time zone (Z or +HH:MM)");
  }
  return *days * kSecondsPerDay + hour * 3600 + minute * 60 + second - offset_seconds;
}

std::string FormatIsoTime(int64_t unix_seconds) {
  const int64_t days = FloorDiv(unix_seconds, kSecondsPerDay);
  const int64_t rest = unix_seconds - days * kSecondsPerDay;
  const CivilDate d = CivilFromDays(days);
  return fmt::format("{:04d}-{:02d}-{:02d}T{:02d}:{:02d}:{:02d}Z", d.year, d.month, d.day,
                     rest / 3600, rest / 60 % 60, rest % 60);
}

}  // namespace clickatron
