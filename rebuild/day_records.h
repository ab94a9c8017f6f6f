// Step: day and span records (docs/protocols.md, "Day and span records").
//
// For every UTC day that has one or more subtotal hours of a key, the archive
// holds one more record beside them, `sns.ns|tkey.DAY,skey:sum …`, the sum of
// that day's hours column by column, so a breakdown over whole days reads one
// record per day instead of up to 24. Unique records have theirs the same
// way: `~ns|tkey.DAY,SKETCH` and `~sns.ns|tkey.DAY,skey:SKETCH …`, the union
// of the day's unique hours. Also a day of one hour has one: a reader knows
// which hours the key's total has, not which of them carry this subtotal
// namespace or visitors, so it can take a day record that is absent for a day
// without such hours only if every day with them has one.
//
// Beside them, span records: for each level k = 1 .. kMaxSpanLevel, the sum
// (or union) of the days of each aligned span of 2^k days that has one or
// more of them (`sns.ns|tkey.c41z3`, ymdh.h's span codes), so any run of
// whole days is at most 2 records per level below the top and one per 128
// days at it (365 days: at most 16 records, not 365). A span's key sorts right after its last
// day's hours, so they are written in one pass with one open span per level.
//
// The rebuild keeps them by addition, like everything else it merges: the
// new lines of a generation (a day's export, late data, loads) pass through
// a DayRecordSource, which puts before each day's group of hours of one key
// its day record, the sum (or union) of the group, and after it the spans
// that end that day, each the sum of the new days in it; the merge with the
// previous generation then adds each to the record already there, as it adds
// hours to hours (a union for sketches). Where the previous generation has no
// record of that day or span it has no hour of it either, so the new record
// is the whole. That is exact only if the previous generation's day and span
// records are whole, which its manifest says (`format` 2); a generation
// without them (an older format, or a file brought in by hand) is read in
// full through a DayRecordSource once, and every later one is whole.
//
// Day and span records arriving in the input (an archive-format load, or the
// previous generation read in full) are dropped and made again from the hours
// beside them: the hours are the data, these only their sums.
//
// Thread-safety: one instance per thread.
#pragma once

#include <array>
#include <cstdint>
#include <deque>
#include <limits>
#include <string>
#include <string_view>

#include "clickatron/record.h"
#include "clickatron/status.h"
#include "clickatron/ymdh.h"
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
  uint64_t spans_written() const { return spans_written_; }
  uint64_t days_dropped() const { return days_dropped_; }  // day and span records in the input, made again

 private:
  // The span of one level being summed for the current record.
  struct OpenSpan {
    bool used = false;
    bool sketches = false;
    DaySpan span;
    std::string line;       // counters: the line so far
    ArchiveRecord record;   // sketches: the union so far
  };
  bool Fail(Status status);
  // Reads the next input line into lookahead_; false at the end (or error).
  bool ReadAhead();
  // Reads the whole group of the hour in lookahead_ (its key, type and UTC
  // day) into out_: the spans of its record that end before the day, the
  // day record, the hours, the spans that end with the day.
  bool ReadGroup(RecordType hour_type);
  // Adds a day's record to the open span of every level that holds it.
  bool AddToSpans(std::string_view prefix, int64_t day, bool sketches, std::string_view day_line,
                  ArchiveRecord* day_record);
  // Appends the open spans that end before `before_day` to *out, in key
  // order, and closes them.
  void CloseSpans(int64_t before_day, std::deque<std::string>* out);

  LineSource* input_;
  Status status_;
  std::string_view lookahead_;
  bool has_lookahead_ = false;
  bool input_done_ = false;
  std::deque<std::string> out_;  // lines ready to hand out, in order
  std::string current_;          // the line last handed out (out_ pops it)
  std::string span_prefix_;                        // the record whose spans are open
  std::array<OpenSpan, kMaxSpanLevel + 1> open_;   // by level; [0] unused (the day record)
  uint64_t spans_written_ = 0;
  uint64_t subtotal_days_written_ = 0;
  uint64_t unique_days_written_ = 0;
  uint64_t days_dropped_ = 0;
};

}  // namespace clickatron::rebuild
