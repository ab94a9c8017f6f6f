#include "day_subtotals.h"

#include <algorithm>
#include <cstring>
#include <utility>

#include <fmt/format.h>

#include "clickatron/key_codec.h"
#include "clickatron/record.h"

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

// Appends the "skey:count" columns of a subtotal line to *columns.
Status AppendColumns(std::string_view line, std::vector<std::pair<std::string_view, int64_t>>* columns) {
  std::string_view value = line.substr(line.find(',') + 1);
  while (!value.empty()) {
    const size_t space = value.find(' ');
    const std::string_view column = value.substr(0, space);
    const size_t colon = column.rfind(':');
    if (colon == std::string_view::npos) {
      return Status::Corruption(fmt::format("subtotal line {} has a column without ':'", QuoteForMessage(line)));
    }
    Result<int64_t> count = ParseCount(column.substr(colon + 1));
    if (!count.ok()) return count.status().WithContext(fmt::format("subtotal line {}", QuoteForMessage(line)));
    columns->emplace_back(column.substr(0, colon), *count);
    if (space == std::string_view::npos) break;
    value.remove_prefix(space + 1);
  }
  return Status::Ok();
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
  std::vector<std::pair<std::string_view, int64_t>> columns;
  // out_ is empty here; the views below point into its strings, which a
  // deque never moves as it grows.
  size_t hours = 0;
  do {
    out_.emplace_back(lookahead_);
    ++hours;
    if (Status st = AppendColumns(out_.back(), &columns); !st.ok()) return Fail(std::move(st));
    has_lookahead_ = false;
  } while (ReadAhead() && InGroup(LineKey(lookahead_), day_key));
  if (!status_.ok()) return false;
  // What the previous generation holds of the day: with its day record, ours
  // is an addition to it; without, the previous hours join the new ones.
  std::string_view before = previous_ ? previous_(day_key) : std::string_view();
  bool addition = false;
  while (!before.empty()) {
    const size_t nl = before.find('\n');
    const std::string_view line = before.substr(0, nl);
    before.remove_prefix(nl == std::string_view::npos ? before.size() : nl + 1);
    if (LineKey(line) == day_key) {
      addition = true;
      break;
    }
    ++hours;
    if (Status st = AppendColumns(line, &columns); !st.ok()) return Fail(std::move(st));
  }
  if (!addition && hours < 2) return true;  // one hour of the day in all: no day record

  std::stable_sort(columns.begin(), columns.end(),
                   [](const auto& a, const auto& b) { return a.first < b.first; });
  std::string day_line = day_key;
  day_line.push_back(',');
  for (size_t i = 0; i < columns.size();) {
    int64_t sum = 0;
    size_t j = i;
    for (; j < columns.size() && columns[j].first == columns[i].first; ++j) {
      if (Status st = AddCount(&sum, columns[j].second); !st.ok()) {
        return Fail(st.WithContext(fmt::format("day subtotal {} column {}", QuoteForMessage(day_key),
                                               QuoteForMessage(columns[i].first))));
      }
    }
    if (i > 0) day_line.push_back(' ');
    day_line.append(columns[i].first);
    day_line.push_back(':');
    day_line.append(fmt::format_int(sum).str());
    i = j;
  }
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

bool TextLineSource::Next(std::string_view* line) {
  if (pos_ >= text_.size()) return false;
  const void* nl = std::memchr(text_.data() + pos_, '\n', text_.size() - pos_);
  const size_t end = nl == nullptr ? text_.size() : static_cast<const char*>(nl) - text_.data();
  *line = text_.substr(pos_, end - pos_);
  pos_ = end + 1;
  return true;
}

}  // namespace clickatron::rebuild
