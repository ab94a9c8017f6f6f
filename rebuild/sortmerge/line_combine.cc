#include "sortmerge/line_combine.h"

#include <charconv>
#include <vector>

#include <fmt/format.h>

#include "clickatron/convert.h"
#include "clickatron/key_codec.h"
#include "clickatron/record.h"

namespace clickatron::rebuild {
namespace {

struct ColumnView {
  std::string_view name;
  std::string_view count;  // decimal text
};

void SplitColumns(std::string_view value, std::vector<ColumnView>* out) {
  out->clear();
  size_t start = 0;
  while (start <= value.size()) {
    size_t space = value.find(' ', start);
    if (space == std::string_view::npos) space = value.size();
    const std::string_view column = value.substr(start, space - start);
    const size_t colon = column.rfind(':');
    out->push_back({column.substr(0, colon), column.substr(colon + 1)});
    start = space + 1;
  }
}

std::string_view FirstColumnName(std::string_view value) {
  return value.substr(0, value.find(':'));
}

std::string_view LastColumnName(std::string_view value) {
  const size_t space = value.rfind(' ');
  const std::string_view last = space == std::string_view::npos ? value : value.substr(space + 1);
  return last.substr(0, last.rfind(':'));
}

int64_t CountOf(std::string_view text) {
  int64_t value = 0;
  std::from_chars(text.data(), text.data() + text.size(), value);  // validated on entry
  return value;
}

// Merges two name-sorted column lists, summing equal names, into *out.
Status MergeColumnText(std::string_view key, std::string_view a, std::string_view b,
                       std::string* out) {
  thread_local std::vector<ColumnView> left, right;
  SplitColumns(a, &left);
  SplitColumns(b, &right);
  size_t i = 0, j = 0;
  const auto append = [&](std::string_view name, std::string_view count) {
    if (!out->empty() && out->back() != ',') out->push_back(' ');
    out->append(name);
    out->push_back(':');
    out->append(count);
  };
  while (i < left.size() || j < right.size()) {
    if (j == right.size() || (i < left.size() && left[i].name < right[j].name)) {
      append(left[i].name, left[i].count);
      ++i;
    } else if (i == left.size() || right[j].name < left[i].name) {
      append(right[j].name, right[j].count);
      ++j;
    } else {
      int64_t sum = CountOf(left[i].count);
      if (Status st = AddCount(&sum, CountOf(right[j].count)); !st.ok()) {
        return st.WithContext(
            fmt::format("key {} column \"{}\"", QuoteForMessage(key), left[i].name));
      }
      char digits[24];
      const auto [end, ec] = std::to_chars(digits, digits + sizeof(digits), sum);
      append(left[i].name, std::string_view(digits, static_cast<size_t>(end - digits)));
      ++i;
      ++j;
    }
  }
  return Status::Ok();
}

}  // namespace

Status CombineArchiveLineInto(std::string* into, std::string_view from) {
  const size_t comma = into->find(',');
  const std::string_view key = std::string_view(*into).substr(0, comma);
  const std::string_view from_value = from.substr(from.find(',') + 1);
  const RecordType type = RecordTypeOfKey(key);
  // Sketches unite: decode both lines, union, encode once.
  auto unite = [&]() -> Status {
    Result<ArchiveRecord> a = ParseArchiveLine(*into);
    if (!a.ok()) return a.status();
    Result<ArchiveRecord> b = ParseArchiveLine(from);
    if (!b.ok()) return b.status();
    CLICKATRON_RETURN_IF_ERROR(CombineArchiveRecords(&a.value(), *b));
    *into = FormatArchiveLine(*a);
    return Status::Ok();
  };
  if (IsSketchValueType(type)) return unite();  // one sketch, no columns
  if (type == RecordType::kLookup) {
    if (std::string_view(*into).substr(comma + 1) == from_value) return Status::Ok();
    // Let the core word the conflict (and check both lines on the way).
    Result<ArchiveRecord> a = ParseArchiveLine(*into);
    if (!a.ok()) return a.status();
    Result<ArchiveRecord> b = ParseArchiveLine(from);
    if (!b.ok()) return b.status();
    return CombineArchiveRecords(&a.value(), *b);
  }
  const std::string_view into_value = std::string_view(*into).substr(comma + 1);
  if (LastColumnName(into_value) < FirstColumnName(from_value)) {
    // Every new column comes after the existing ones: the usual case, for
    // counters and unique subtotals alike (a sketch's text has no ':' or
    // ' '), so sorted input of k skeys costs k appends, not k decodes.
    into->push_back(' ');
    into->append(from_value);
    return Status::Ok();
  }
  if (IsUniqueType(type)) return unite();  // a column in both: a union, not a sum
  std::string merged;
  merged.reserve(into->size() + from_value.size() + 1);
  merged.append(key);
  merged.push_back(',');
  CLICKATRON_RETURN_IF_ERROR(MergeColumnText(key, into_value, from_value, &merged));
  *into = std::move(merged);
  return Status::Ok();
}

}  // namespace clickatron::rebuild
