// Step: retention (clickatron/retention.h) applied to a generation's lines.
//
// Between the merge of a generation's inputs and its day and span records
// (day_records.h): for every namespace with boundaries, an hour before its
// hourly_from goes into its day's anchor hour (the day's start + 12 h in the
// policy's zone), summed (counters) or united (sketches), and an hour before
// kept_from is dropped. A total's hour columns are rolled within its line;
// subtotal and unique hour records of one key and day become one record at
// the anchor. Day and span records of those namespaces are dropped here,
// because the records of a rolled day are made again from its anchor
// (DayRecordSource makes them all from the hours it sees).
//
// The input's lines sort by key and a key's records by hour: a day's hours
// are one run of lines of one key, and its anchor lies inside the day, so the
// rolled record takes the run's place and the output stays sorted. Rolling
// is idempotent: an anchor rolls onto itself, so the previous generation,
// late data and loads can all pass through again.
//
// Thread-safety: one instance per thread.
#pragma once

#include <cstdint>
#include <deque>
#include <map>
#include <string>
#include <string_view>
#include <vector>

#include "clickatron/retention.h"
#include "clickatron/status.h"
#include "sortmerge/line_io.h"

namespace clickatron::rebuild {

class RetentionSource : public LineSource {
 public:
  struct Rule {
    AppliedRetention applied;
    RetentionZone zone;
  };
  // What happened to one namespace's lines.
  struct Counts {
    uint64_t hours_rolled = 0;    // hour records and total columns folded into an anchor (not anchors)
    uint64_t anchors_written = 0; // rolled days written (those of earlier generations too)
    uint64_t hours_dropped = 0;   // hour records and total columns before kept_from
    void Add(const Counts& other) {
      hours_rolled += other.hours_rolled;
      anchors_written += other.anchors_written;
      hours_dropped += other.hours_dropped;
    }
  };

  // REQUIRES: `input` yields sorted archive lines with unique keys.
  // `keep_day_records`: the rules' namespaces' day and span records pass
  // through instead of being dropped. Only for lines whose rolled days are
  // UTC days (then rolling changes no day's sum or union, so none of those
  // records) and where nothing is dropped that they hold.
  RetentionSource(LineSource* input, std::vector<Rule> rules, bool keep_day_records = false)
      : input_(input), rules_(std::move(rules)), keep_day_records_(keep_day_records), counts_(rules_.size()) {}

  bool Next(std::string_view* line) override;
  const Status& status() const override { return status_; }
  const std::string& name() const override { return input_->name(); }
  // By namespace (every rule's, zeros too).
  std::map<std::string, Counts> counts() const;

 private:
  const Rule* RuleFor(std::string_view ns) const;
  bool Fail(Status status);
  // The anchor of the day holding `hour` (a one-day cache: lines come day by day).
  int64_t AnchorOf(const Rule& rule, int64_t hour);
  // Rolls a total's columns; false on error. *out empty: every column dropped.
  bool RollTotal(const Rule& rule, std::string_view line, std::string* out, Counts* counts);
  // Moves the record being rolled, if any, to out_.
  void FlushPending();

  LineSource* input_;
  std::vector<Rule> rules_;
  const bool keep_day_records_;
  Status status_;
  std::deque<std::string> out_;  // lines ready to hand out, in order
  std::string current_;          // the line last handed out from out_
  std::string_view held_;        // an input line handed out after out_ drains
  bool has_held_ = false;
  bool input_done_ = false;
  // The subtotal or unique record being rolled: its key up to the hour code,
  // its anchor and the line so far (under the anchor's key).
  std::string pending_prefix_;
  int64_t pending_anchor_ = 0;
  std::string pending_line_;
  // AnchorOf's cache: [day_begin_, day_end_) is the day whose anchor is day_anchor_.
  const Rule* cached_rule_ = nullptr;
  int64_t day_begin_ = 0, day_end_ = 0, day_anchor_ = 0;
  std::vector<Counts> counts_;  // by rule
};

}  // namespace clickatron::rebuild
