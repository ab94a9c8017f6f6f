// Step: day records (docs/protocols.md, "Day records").
//
// For every UTC day that has one or more subtotal hours of a key, the archive
// holds one more record beside them, `sns.ns|tkey.DAY,skey:sum …`, the sum of
// that day's hours column by column, so a breakdown over whole days reads one
// record per day instead of up to 24. Unique records have theirs the same
// way: `~ns|tkey.DAY,SKETCH` and `~sns.ns|tkey.DAY,skey:SKETCH …`, the union
// of the day's unique hours, so distinct visitors over whole days read one
// sketch per day. Also a day of one hour has one: a reader knows which hours
// the key's total has, not which of them carry this subtotal namespace or
// visitors, so it can take a day record that is absent for a day without such
// hours only if every day with them has one.
//
// The rebuild keeps them by addition, like everything else it merges: the
// new lines of a generation (a day's export, late data, loads) pass through
// a DayRecordSource, which puts before each day's group of hours of one key
// a day record, the sum (or union) of the group; the merge with the previous
// generation then adds it to the day record already there, as it adds hours
// to hours (a union for sketches). Where the previous generation has no
// record of that day it has no hour of it either, so the new record is the
// whole day. That is exact only if the previous generation's day records are
// whole, which its manifest says (`day_subtotals_every_day`,
// `day_uniques_every_day`); a generation without them (built before they
// existed, built under the older two-hour rule, or a file brought in with
// `clickatron manifest`) is read in full through a DayRecordSource once, and
// every later one is whole.
//
// Day records arriving in the input (an archive-format load, or the previous
// generation read in full) are dropped and made again from the hours beside
// them: the hours are the data, a day record only their sum.
//
// Thread-safety: one instance per thread.
#pragma once

#include <cstdint>
#include <deque>
#include <string>
#include <string_view>

#include "clickatron/record.h"
#include "clickatron/status.h"
#include "sortmerge/line_io.h"

namespace clickatron::rebuild {

class DayRecordSource : public LineSource {
 public:
  // REQUIRES: `input` yields sorted archive lines with unique keys.
  explicit DayRecordSource(LineSource* input) : input_(input) {}

  bool Next(std::string_view* line) override;
  const Status& status() const override { return status_; }
  const std::string& name() const override { return input_->name(); }

  uint64_t subtotal_days_written() const { return subtotal_days_written_; }
  uint64_t unique_days_written() const { return unique_days_written_; }
  uint64_t days_dropped() const { return days_dropped_; }  // day records in the input, made again

 private:
  bool Fail(Status status);
  // Reads the next input line into lookahead_; false at the end (or error).
  bool ReadAhead();
  // Reads the whole group of the hour in lookahead_ (its key, type and UTC
  // day) into out_: the day record, then the hours.
  bool ReadGroup(RecordType hour_type);

  LineSource* input_;
  Status status_;
  std::string_view lookahead_;
  bool has_lookahead_ = false;
  bool input_done_ = false;
  std::deque<std::string> out_;  // lines ready to hand out, in order
  std::string current_;          // the line last handed out (out_ pops it)
  uint64_t subtotal_days_written_ = 0;
  uint64_t unique_days_written_ = 0;
  uint64_t days_dropped_ = 0;
};

}  // namespace clickatron::rebuild
