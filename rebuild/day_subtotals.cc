#include "day_subtotals.h"

#include <utility>


#include "clickatron/record.h"
#include "sortmerge/line_combine.h"

namespace clickatron::rebuild {
namespace {

// The day key of a subtotal hour key: the key without its hour character
// (sns.ns|tkey.c3p1 -> sns.ns|tkey.c3p; ymdh.h: a day code is its hours'
// codes without their last character).
std::string_view DayKeyOf(std::string_view hour_key) { return hour_key.substr(0, hour_key.size() - 1); }

bool InGroup(std::string_view key, std::string_view day_key) {
  return key.size() == day_key.size() + 1 && key.starts_with(day_key) &&
         RecordTypeOfKey(key) == RecordType::kSubtotal;
}

}  // namespace

bool DaySubtotalSource::Fail(Status status) {
  if (status_.ok()) status_ = std::move(status);
  out_.clear();
  return false;
}

bool DaySubtotalSource::ReadAhead() {
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

bool DaySubtotalSource::ReadGroup() {
  const std::string day_key(DayKeyOf(LineKey(lookahead_)));
  // The day's record: its key and the first hour's columns, then every other
  // hour combined in as the rebuild combines equal keys (columns summed).
  std::string day_line;
  size_t hours = 0;
  const auto add_hour = [&](std::string_view hour_line) -> Status {
    ++hours;
    if (day_line.empty()) {
      day_line = day_key;
      day_line.append(hour_line.substr(hour_line.find(',')));
      return Status::Ok();
    }
    return CombineArchiveLineInto(&day_line, hour_line);
  };
  do {
    out_.emplace_back(lookahead_);
    if (Status st = add_hour(out_.back()); !st.ok()) return Fail(std::move(st));
    has_lookahead_ = false;
  } while (ReadAhead() && InGroup(LineKey(lookahead_), day_key));
  if (!status_.ok()) return false;
  // What the previous generation holds of the day (its record sorts first):
  // with its record, ours is an addition to it; without, its hours join ours.
  std::string_view before = previous_ ? previous_(day_key) : std::string_view();
  bool addition = false;
  while (!before.empty() && !addition) {
    const size_t nl = before.find('\n');
    const std::string_view line = before.substr(0, nl);
    before.remove_prefix(nl == std::string_view::npos ? before.size() : nl + 1);
    addition = LineKey(line) == day_key;
    if (!addition) {
      if (Status st = add_hour(line); !st.ok()) return Fail(std::move(st));
    }
  }
  if (!addition && hours < 2) return true;  // one hour of the day in all: no day record
  out_.push_front(std::move(day_line));
  ++days_written_;
  return true;
}

bool DaySubtotalSource::Next(std::string_view* line) {
  while (out_.empty()) {
    if (!has_lookahead_ && !ReadAhead()) return false;
    const std::string_view key = LineKey(lookahead_);
    switch (RecordTypeOfKey(key)) {
      case RecordType::kDaySubtotal:
        ++days_dropped_;  // made again from the hours that follow it
        has_lookahead_ = false;
        continue;
      case RecordType::kSubtotal:
        if (!ReadGroup()) return false;
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
