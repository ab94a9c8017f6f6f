#include "retention_rollup.h"

#include <fmt/format.h>

#include "clickatron/key_codec.h"
#include "clickatron/record.h"
#include "clickatron/ymdh.h"
#include "sortmerge/line_combine.h"

namespace clickatron::rebuild {

std::map<std::string, RetentionSource::Counts> RetentionSource::counts() const {
  std::map<std::string, Counts> by_ns;
  for (size_t i = 0; i < rules_.size(); ++i) by_ns[rules_[i].applied.ns] = counts_[i];
  return by_ns;
}

const RetentionSource::Rule* RetentionSource::RuleFor(std::string_view ns) const {
  for (const Rule& rule : rules_) {
    if (rule.applied.ns == ns) return &rule;
  }
  return nullptr;
}

bool RetentionSource::Fail(Status status) {
  if (status_.ok()) status_ = std::move(status);
  out_.clear();
  has_held_ = false;
  return false;
}

int64_t RetentionSource::AnchorOf(const Rule& rule, int64_t hour) {
  if (cached_rule_ != &rule || hour < day_begin_ || hour >= day_end_) {
    const int64_t day = rule.zone.DayOf(hour);
    cached_rule_ = &rule;
    day_begin_ = rule.zone.DayStart(day);
    day_end_ = rule.zone.DayStart(day + 1);
    day_anchor_ = rule.zone.DayAnchor(day);
  }
  return day_anchor_;
}

void RetentionSource::FlushPending() {
  if (pending_prefix_.empty()) return;
  out_.push_back(std::move(pending_line_));
  pending_line_.clear();
  pending_prefix_.clear();
}

bool RetentionSource::RollTotal(const Rule& rule, std::string_view line, std::string* out, Counts* counts) {
  const size_t comma = line.find(',');
  out->assign(line.substr(0, comma + 1));
  const size_t empty_size = out->size();
  int64_t last_hour = 0;       // of the column last written
  size_t last_count_at = 0;    // where its count starts in *out
  int64_t last_count = 0;
  bool last_is_anchor = false;
  const Status st = ForEachValueColumn(line.substr(comma + 1), [&](std::string_view name, std::string_view value) {
    Result<int64_t> hour = UnixFromYmdh(name);
    if (!hour.ok()) return hour.status();
    if (rule.applied.kept_from && *hour < *rule.applied.kept_from) {
      ++counts->hours_dropped;
      return Status::Ok();
    }
    if (*hour >= rule.applied.hourly_from) {
      if (out->size() > empty_size) out->push_back(' ');
      out->append(name);
      out->push_back(':');
      out->append(value);
      last_is_anchor = false;
      return Status::Ok();
    }
    Result<int64_t> count = ParseCount(value);
    if (!count.ok()) return count.status();
    const int64_t anchor = AnchorOf(rule, *hour);
    if (*hour != anchor) ++counts->hours_rolled;
    if (last_is_anchor && last_hour == anchor) {
      CLICKATRON_RETURN_IF_ERROR(AddCount(&last_count, *count));
      out->resize(last_count_at);
      fmt::format_to(std::back_inserter(*out), "{}", last_count);
      return Status::Ok();
    }
    Result<std::string> code = YmdhFromUnix(anchor);
    if (!code.ok()) return code.status();
    if (out->size() > empty_size) out->push_back(' ');
    out->append(*code);
    out->push_back(':');
    last_count_at = out->size();
    last_count = *count;
    last_hour = anchor;
    last_is_anchor = true;
    out->append(value);
    ++counts->anchors_written;
    return Status::Ok();
  });
  if (!st.ok()) return Fail(st.WithContext(fmt::format("rolling up {}", QuoteForMessage(line.substr(0, comma)))));
  if (out->size() == empty_size) out->clear();
  return true;
}

bool RetentionSource::Next(std::string_view* line) {
  while (true) {
    if (!out_.empty()) {
      current_ = std::move(out_.front());
      out_.pop_front();
      *line = current_;
      return true;
    }
    if (has_held_) {
      has_held_ = false;
      *line = held_;
      return true;
    }
    if (!status_.ok() || input_done_) return false;
    std::string_view in;
    if (!input_->Next(&in)) {
      input_done_ = true;
      if (!input_->status().ok()) return Fail(input_->status());
      FlushPending();
      continue;
    }
    const std::string_view key = LineKey(in);
    const ArchiveKeyView view = SplitArchiveKey(key);
    const Rule* rule = view.type == RecordType::kLookup ? nullptr : RuleFor(view.ns);
    if (rule == nullptr) {
      FlushPending();
      held_ = in;
      has_held_ = true;
      continue;
    }
    Counts& counts = counts_[static_cast<size_t>(rule - rules_.data())];
    if (IsDayType(view.type)) {
      if (!keep_day_records_) continue;  // made again from the hours (day_records.h)
      // A day's record sorts before its hours, a span's after its last
      // day's: the day being rolled is done by then.
      FlushPending();
      held_ = in;
      has_held_ = true;
      continue;
    }
    if (view.type == RecordType::kTotal) {
      FlushPending();
      // Columns sort by hour: a total whose first hour is kept as it is
      // passes whole (a new day's totals, most nights).
      const std::string_view first = in.substr(key.size() + 1, in.find(':', key.size()) - key.size() - 1);
      if (Result<int64_t> hour = UnixFromYmdh(first); hour.ok() && *hour >= rule->applied.hourly_from) {
        held_ = in;
        has_held_ = true;
        continue;
      }
      std::string rolled;
      if (!RollTotal(*rule, in, &rolled, &counts)) return false;
      if (!rolled.empty()) out_.push_back(std::move(rolled));
      continue;
    }
    Result<int64_t> hour = UnixFromYmdh(view.code);
    if (!hour.ok()) return Fail(hour.status().WithContext(fmt::format("rolling up {}", QuoteForMessage(key))));
    if (rule->applied.kept_from && *hour < *rule->applied.kept_from) {
      ++counts.hours_dropped;
      continue;
    }
    if (*hour >= rule->applied.hourly_from) {
      FlushPending();
      held_ = in;
      has_held_ = true;
      continue;
    }
    // An hour of a day to roll up: into the record of the key's day.
    const std::string_view prefix = key.substr(0, key.size() - view.code.size());
    const int64_t anchor = AnchorOf(*rule, *hour);
    if (*hour != anchor) ++counts.hours_rolled;
    // The line under the anchor's key (itself when it is the anchor).
    const auto keyed = [&]() -> Result<std::string> {
      if (*hour == anchor) return std::string(in);
      Result<std::string> code = YmdhFromUnix(anchor);
      if (!code.ok()) return code.status();
      return std::string(prefix) + *code + std::string(in.substr(key.size()));
    };
    if (!pending_prefix_.empty() && pending_prefix_ == prefix && pending_anchor_ == anchor) {
      // Counters are combined by their values; a sketch line is parsed whole
      // and must carry the record's key.
      Status st = Status::Ok();
      if (IsUniqueType(view.type)) {
        Result<std::string> line = keyed();
        st = line.ok() ? CombineArchiveLineInto(&pending_line_, *line) : line.status();
      } else {
        st = CombineArchiveLineInto(&pending_line_, in);
      }
      if (!st.ok()) return Fail(st.WithContext(fmt::format("rolling up {}", QuoteForMessage(key))));
      continue;
    }
    Result<std::string> line = keyed();
    if (!line.ok()) return Fail(line.status().WithContext(fmt::format("rolling up {}", QuoteForMessage(key))));
    FlushPending();
    pending_prefix_ = std::string(prefix);
    pending_anchor_ = anchor;
    pending_line_ = std::move(line).value();
    ++counts.anchors_written;
  }
}

}  // namespace clickatron::rebuild
