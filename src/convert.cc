// Realtime <-> archive conversion and the combining step (see convert.h).
#include "clickatron/convert.h"

#include <fmt/format.h>

#include "clickatron/key_codec.h"
#include "clickatron/unique_sketch.h"

namespace clickatron {
namespace {

// Merges two name-sorted column lists, summing equal names. Sortedness is
// checked on the way (records can be built by hand, not only parsed), since a
// merge of unsorted input would silently keep duplicate names.
Status MergeColumns(const std::string& key, bool sketches, const std::vector<ArchiveColumn>& a,
                    const std::vector<ArchiveColumn>& b, std::vector<ArchiveColumn>* out) {
  out->clear();
  out->reserve(a.size() + b.size());
  size_t i = 0, j = 0;
  while (i < a.size() || j < b.size()) {
    ArchiveColumn next;
    if (j == b.size() || (i < a.size() && a[i].name < b[j].name)) {
      next = a[i++];
    } else if (i == a.size() || b[j].name < a[i].name) {
      next = b[j++];
    } else if (sketches) {
      next = a[i++];
      next.sketch.Merge(b[j++].sketch);
    } else {
      next = a[i++];
      if (Status st = AddCount(&next.count, b[j++].count); !st.ok()) {
        return st.WithContext(fmt::format("key {} column \"{}\"", QuoteForMessage(key), next.name));
      }
    }
    if (!out->empty() && !(out->back().name < next.name)) {
      return Status::InvalidArgument(fmt::format(
          "key {}: columns are not sorted and unique (\"{}\" then \"{}\")", QuoteForMessage(key),
          out->back().name, next.name));
    }
    out->push_back(std::move(next));
  }
  return Status::Ok();
}

}  // namespace

Result<std::string> RealtimeToArchiveLine(std::string_view realtime_line) {
  Result<RealtimeLine> line = ParseRealtimeLine(realtime_line);
  if (!line.ok()) return line.status();
  const RealtimeKey& k = line->key;
  switch (k.type) {
    case RecordType::kTotal:
      return fmt::format("{},{}:{}", TotalArchiveKey(k.ns, k.tkey), k.ymdh, line->count);
    case RecordType::kSubtotal:
      return fmt::format("{},{}:{}", SubtotalArchiveKey(k.sns, k.ns, k.tkey, k.ymdh), k.skey,
                         line->count);
    case RecordType::kLookup:
      return FormatRealtimeLine(*line);
    case RecordType::kUniqueTotal:
      return FormatRealtimeLine(*line);  // one line per hour in both formats
    case RecordType::kUniqueSubtotal:
      return fmt::format("{},{}:{}", UniqueSubtotalArchiveKey(k.sns, k.ns, k.tkey, k.ymdh), k.skey,
                         line->sketch.ToText());
    case RecordType::kDaySubtotal:
    case RecordType::kDayUniqueTotal:
    case RecordType::kDayUniqueSubtotal:
      break;  // never parsed from a realtime line
  }
  return Status::Internal("unknown record type");
}

Status ArchiveToRealtimeLines(std::string_view archive_line, std::vector<std::string>* out) {
  Result<ArchiveRecord> record = ParseArchiveLine(archive_line);
  if (!record.ok()) return record.status();
  if (record->type == RecordType::kLookup || record->type == RecordType::kUniqueTotal) {
    out->push_back(FormatArchiveLine(*record));  // the same line in both formats
    return Status::Ok();
  }
  // A day record is the sum (or union) of its day's hours, which convert on
  // their own: converting it too would count the day twice.
  if (IsDayType(record->type)) return Status::Ok();
  // The key parsed above, so its parts are known to be there.
  Result<RealtimeKey> parts = ParseArchiveKey(record->key);
  if (!parts.ok()) return parts.status();
  RealtimeLine line;
  line.key = std::move(parts).value();
  for (const ArchiveColumn& column : record->columns) {
    if (line.key.type == RecordType::kTotal) {
      line.key.ymdh = column.name;
    } else {
      line.key.skey = column.name;
    }
    line.count = column.count;
    line.sketch = column.sketch;
    out->push_back(FormatRealtimeLine(line));
  }
  return Status::Ok();
}

Status CombineArchiveRecords(ArchiveRecord* into, const ArchiveRecord& from) {
  if (into->key != from.key || into->type != from.type) {
    return Status::InvalidArgument(fmt::format("cannot combine records with different keys {} and {}",
                                               QuoteForMessage(into->key),
                                               QuoteForMessage(from.key)));
  }
  if (into->type == RecordType::kLookup) {
    if (into->lookup_value == from.lookup_value) return Status::Ok();
    return Status::Corruption(fmt::format("lookup {} has two different values {} and {}",
                                          QuoteForMessage(into->key),
                                          QuoteForMessage(into->lookup_value),
                                          QuoteForMessage(from.lookup_value)));
  }
  if (IsSketchValueType(into->type)) {
    into->sketch.Merge(from.sketch);
    return Status::Ok();
  }
  // Merge into a fresh vector so that `into` is untouched on error.
  std::vector<ArchiveColumn> merged;
  CLICKATRON_RETURN_IF_ERROR(MergeColumns(into->key, IsUniqueType(into->type), into->columns,
                                          from.columns, &merged));
  into->columns = std::move(merged);
  return Status::Ok();
}

Status ArchiveCombiner::Add(std::string_view archive_line) {
  Result<ArchiveRecord> record = ParseArchiveLine(archive_line);
  if (!record.ok()) return record.status().WithContext(fmt::format("input line {}", lines_in_ + 1));
  return Add(std::move(record).value());
}

Status ArchiveCombiner::Add(ArchiveRecord record) {
  ++lines_in_;
  if (has_current_) {
    const int order = CompareArchiveKeys(current_.key, record.key);
    if (order == 0) {
      return CombineArchiveRecords(&current_, record)
          .WithContext(fmt::format("input line {}", lines_in_));
    }
    if (order > 0) {
      return Status::InvalidArgument(fmt::format(
          "input line {}: key {} is out of order after key {} (input must be sorted, LC_ALL=C)",
          lines_in_, QuoteForMessage(record.key), QuoteForMessage(current_.key)));
    }
    CLICKATRON_RETURN_IF_ERROR(Flush());
  }
  current_ = std::move(record);
  has_current_ = true;
  return Status::Ok();
}

Status ArchiveCombiner::Finish() {
  if (!has_current_) return Status::Ok();
  CLICKATRON_RETURN_IF_ERROR(Flush());
  has_current_ = false;
  return Status::Ok();
}

Status ArchiveCombiner::Flush() {
  CLICKATRON_RETURN_IF_ERROR(sink_(FormatArchiveLine(current_)));
  ++records_out_;
  return Status::Ok();
}

}  // namespace clickatron
