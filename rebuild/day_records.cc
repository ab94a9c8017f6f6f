#include "day_records.h"

#include <utility>

#include "clickatron/convert.h"
#include "clickatron/record.h"
#include "sortmerge/line_combine.h"

namespace clickatron::rebuild {
namespace {

// The day key of an hour key: the key without its hour character
// (sns.ns|tkey.c3p1 -> sns.ns|tkey.c3p; ymdh.h: a day code is its hours'
// codes without their last character).
std::string_view DayKeyOf(std::string_view hour_key) { return hour_key.substr(0, hour_key.size() - 1); }

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

bool DayRecordSource::ReadGroup(RecordType hour_type) {
  const std::string day_key(DayKeyOf(LineKey(lookahead_)));
  // The day's record: its key and the first hour's value, then every other
  // hour combined in. Counters as the rebuild combines equal keys (columns
  // summed, on the text); sketches decoded once per hour and united, the
  // day's text encoded once at the end.
  const bool sketches = IsUniqueType(hour_type);
  std::string day_line;
  ArchiveRecord day_record;
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
  // Every day of one hour or more has its record (see the header): where the
  // previous generation has one, the merge adds this one to it.
  out_.push_front(sketches ? FormatArchiveLine(day_record) : std::move(day_line));
  ++(sketches ? unique_days_written_ : subtotal_days_written_);
  return true;
}

bool DayRecordSource::Next(std::string_view* line) {
  while (out_.empty()) {
    if (!has_lookahead_ && !ReadAhead()) return false;
    const std::string_view key = LineKey(lookahead_);
    const RecordType type = RecordTypeOfKey(key);
    switch (type) {
      case RecordType::kDaySubtotal:
      case RecordType::kDayUniqueTotal:
      case RecordType::kDayUniqueSubtotal:
        ++days_dropped_;  // made again from the hours that follow it
        has_lookahead_ = false;
        continue;
      case RecordType::kSubtotal:
      case RecordType::kUniqueTotal:
      case RecordType::kUniqueSubtotal:
        if (!ReadGroup(type)) return false;
        break;
      default:
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
