#include "day_records.h"

#include <algorithm>
#include <utility>

#include "clickatron/convert.h"
#include "clickatron/record.h"
#include "clickatron/ymdh.h"
#include "sortmerge/line_combine.h"

namespace clickatron::rebuild {
namespace {

// The day key of an hour key: the key without its hour character
// (sns.ns|tkey.c3p1 -> sns.ns|tkey.c3p; ymdh.h: a day code is its hours'
// codes without their last character).
std::string_view DayKeyOf(std::string_view hour_key) { return hour_key.substr(0, hour_key.size() - 1); }

// A record's key up to and with the '.' before its code: what its hours,
// its day records and its spans share.
std::string_view PrefixOf(std::string_view key) { return key.substr(0, key.rfind('.') + 1); }

bool InGroup(std::string_view key, std::string_view day_key, RecordType hour_type) {
  return key.size() == day_key.size() + 1 && key.starts_with(day_key) && RecordTypeOfKey(key) == hour_type;
}

}  // namespace

bool DayRecordSource::Fail(Status status) {
  if (status_.ok()) status_ = std::move(status);
  out_.clear();
  return false;
}

bool DayRecordSource::ReadAhead() {
  if (input_done_) return false;
  if (input_->Next(&lookahead_)) {
    has_lookahead_ = true;
    return true;
  }
  input_done_ = true;
  has_lookahead_ = false;
  if (!input_->status().ok()) return Fail(input_->status());
  return false;
}

void DayRecordSource::CloseSpans(int64_t before_day, std::deque<std::string>* out) {
  // Key order is by last day, then by level ("c41z1" < "c41z2"). Every open
  // span holds the last day added, so they are nested and a higher level
  // never ends earlier: level order is key order.
  for (OpenSpan& open : open_) {
    if (!open.used || open.span.last_day() >= before_day) continue;
    out->push_back(open.sketches ? FormatArchiveLine(open.record) : std::move(open.line));
    ++spans_written_;
    open.used = false;
    open.line.clear();
    open.record = ArchiveRecord{};
  }
}

bool DayRecordSource::AddToSpans(std::string_view prefix, int64_t day, bool sketches, std::string_view day_line,
                                 ArchiveRecord* day_record) {
  for (int level = 1; level <= kMaxSpanLevel; ++level) {
    OpenSpan& open = open_[static_cast<size_t>(level)];
    // An open span holds this day: the spans that ended before it were
    // closed (CloseSpans) before its group was read.
    if (open.used) {
      if (sketches) {
        // United under the span's key (the day record lends its sketch
        // without a copy, and gets its own key back).
        std::string day_key = std::exchange(day_record->key, open.record.key);
        const Status st = CombineArchiveRecords(&open.record, *day_record);
        day_record->key = std::move(day_key);
        if (!st.ok()) return Fail(st);
      } else if (Status st = CombineArchiveLineInto(&open.line, day_line); !st.ok()) {
        return Fail(std::move(st));
      }
      continue;
    }
    const DaySpan span = SpanHolding(day, level);
    // A span past 2127 has no code (ymdh.h): readers never ask for one.
    Result<std::string> code = SpanCode(span);
    if (!code.ok()) continue;
    std::string key = std::string(prefix) + *code;
    if (sketches) {
      open.record = *day_record;
      open.record.key = std::move(key);
    } else {
      open.line = std::move(key);
      open.line.append(day_line.substr(day_line.find(',')));  // the day's value under the span's key
    }
    open.used = true;
    open.span = span;
    open.sketches = sketches;
  }
  return true;
}

bool DayRecordSource::ReadGroup(RecordType hour_type) {
  const std::string day_key(DayKeyOf(LineKey(lookahead_)));
  const std::string_view prefix = PrefixOf(day_key);
  Result<int64_t> day = DaysFromDayCode(std::string_view(day_key).substr(prefix.size()));
  if (!day.ok()) return Fail(day.status());
  // Spans of another record close before its lines (they sort before them);
  // this record's spans that end before the day, before the day's record.
  if (prefix != span_prefix_) {
    CloseSpans(std::numeric_limits<int64_t>::max(), &out_);
    span_prefix_ = std::string(prefix);
  } else {
    CloseSpans(*day, &out_);
  }
  // The day's record: its key and the first hour's value, then every other
  // hour combined in. Counters as the rebuild combines equal keys (columns
  // summed, on the text); sketches decoded once per hour and united, the
  // day's text encoded once at the end.
  const bool sketches = IsUniqueType(hour_type);
  std::string day_line;
  ArchiveRecord day_record;
  // The day's record goes before its hours: a slot for it, filled once they are read.
  const size_t day_slot = out_.size();
  out_.emplace_back();
  do {
    out_.emplace_back(lookahead_);
    const std::string_view value = lookahead_.substr(lookahead_.find(','));  // from the comma
    if (sketches) {
      Result<ArchiveRecord> hour = ParseArchiveLine(lookahead_);
      if (!hour.ok()) return Fail(hour.status());
      hour->key = day_key;
      hour->type = DayTypeOf(hour_type);
      if (day_record.key.empty()) {
        day_record = std::move(hour).value();
      } else if (Status st = CombineArchiveRecords(&day_record, *hour); !st.ok()) {
        return Fail(std::move(st));
      }
    } else if (day_line.empty()) {
      day_line = day_key;
      day_line.append(value);
    } else if (Status st = CombineArchiveLineInto(&day_line, lookahead_); !st.ok()) {
      return Fail(std::move(st));
    }
    has_lookahead_ = false;
  } while (ReadAhead() && InGroup(LineKey(lookahead_), day_key, hour_type));
  if (!status_.ok()) return false;
  // Every day of one hour or more has its record, and every span of such a
  // day has its own (see the header): where the previous generation has one,
  // the merge adds this one to it.
  if (!AddToSpans(span_prefix_, *day, sketches, day_line, &day_record)) return false;
  out_[day_slot] = sketches ? FormatArchiveLine(day_record) : std::move(day_line);
  ++(sketches ? unique_days_written_ : subtotal_days_written_);
  // Spans that end with this day come right after its hours.
  CloseSpans(*day + 1, &out_);
  return true;
}

bool DayRecordSource::Next(std::string_view* line) {
  while (out_.empty()) {
    if (!has_lookahead_ && !ReadAhead()) {
      if (!status_.ok()) return false;
      CloseSpans(std::numeric_limits<int64_t>::max(), &out_);  // the last record's
      if (out_.empty()) return false;
      break;
    }
    const std::string_view key = LineKey(lookahead_);
    const RecordType type = RecordTypeOfKey(key);
    switch (type) {
      case RecordType::kDaySubtotal:
      case RecordType::kDayUniqueTotal:
      case RecordType::kDayUniqueSubtotal:
        ++days_dropped_;  // made again from the hours around it
        has_lookahead_ = false;
        continue;
      case RecordType::kSubtotal:
      case RecordType::kUniqueTotal:
      case RecordType::kUniqueSubtotal:
        if (!ReadGroup(type)) return false;
        break;
      default:
        // The open spans sort before this line (another record's).
        if (!span_prefix_.empty()) {
          CloseSpans(std::numeric_limits<int64_t>::max(), &out_);
          span_prefix_.clear();
          continue;
        }
        // Handed out as it is: the view stays valid until the next call,
        // which is the first to read the input again.
        *line = lookahead_;
        has_lookahead_ = false;
        return true;
    }
  }
  current_ = std::move(out_.front());
  out_.pop_front();
  *line = current_;
  return true;
}

}  // namespace clickatron::rebuild
