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
  do {
    out_.emplace_back(lookahead_);
    if (day_line.empty()) {
      day_line = day_key;
      day_line.append(lookahead_.substr(lookahead_.find(',')));
    } else if (Status st = CombineArchiveLineInto(&day_line, lookahead_); !st.ok()) {
      return Fail(std::move(st));
    }
    has_lookahead_ = false;
  } while (ReadAhead() && InGroup(LineKey(lookahead_), day_key));
  if (!status_.ok()) return false;
  // Every day of one hour or more has its record (see the header): where the
  // previous generation has one, the merge adds this one to it.
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
