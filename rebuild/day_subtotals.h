// Step: day subtotal records (docs/protocols.md, "Day subtotals").
//
// For every UTC day that has one or more subtotal hours of a key, the archive
// holds one more record beside them, `sns.ns|tkey.DAY,skey:sum …`, the sum of
// that day's hours column by column, so a breakdown over whole days reads one
// record per day instead of up to 24. Also a day of one hour has one: a reader
// knows which hours the key's total has, not which of them carry this subtotal
// namespace, so it can take a day record that is absent for a day without
// hours of the namespace only if every day with hours has one.
//
// The rebuild keeps them by addition, like everything else it merges: the
// new lines of a generation (a day's export, late data, loads) pass through
// a DaySubtotalSource, which puts before each day's group of subtotal hours
// a day record, the sum of the group; the merge with the previous generation
// then adds it to the day record already there, as it adds hours to hours.
// Where the previous generation has no record of that day it has no hour of
// it either, so the new record is the whole day. That is exact only if the
// previous generation's day records are whole, which its manifest says
// (`day_subtotals_every_day`); a generation without them (built before they
// existed, built under the older two-hour rule, or a file brought in with
// `clickatron manifest`) is read in full through a DaySubtotalSource once,
// and every later one is whole.
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

#include "clickatron/status.h"
#include "sortmerge/line_io.h"

namespace clickatron::rebuild {

class DaySubtotalSource : public LineSource {
 public:
  // REQUIRES: `input` yields sorted archive lines with unique keys.
  explicit DaySubtotalSource(LineSource* input) : input_(input) {}

  bool Next(std::string_view* line) override;
  const Status& status() const override { return status_; }
  const std::string& name() const override { return input_->name(); }

  uint64_t days_written() const { return days_written_; }
  uint64_t days_dropped() const { return days_dropped_; }  // day records in the input, made again

 private:
  bool Fail(Status status);
  // Reads the next input line into lookahead_; false at the end (or error).
  bool ReadAhead();
  // Reads the whole group of the subtotal hour in lookahead_ (its key and
  // UTC day) into out_: the day record, then the hours.
  bool ReadGroup();

  LineSource* input_;
  Status status_;
  std::string_view lookahead_;
  bool has_lookahead_ = false;
  bool input_done_ = false;
  std::deque<std::string> out_;  // lines ready to hand out, in order
  std::string current_;          // the line last handed out (out_ pops it)
  uint64_t days_written_ = 0;
  uint64_t days_dropped_ = 0;
};

}  // namespace clickatron::rebuild
