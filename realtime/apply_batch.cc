#include "apply_batch.h"

#include <fmt/format.h>

#include <algorithm>
#include <optional>

#include "clickatron/key_codec.h"
#include "clickatron/record.h"
#include "clickatron/ymdh.h"

namespace clickatron::realtime {
namespace {

Status BadLine(size_t number, std::string_view why) {
  return Status::InvalidArgument(fmt::format("line {}: {}", number, why), "BAD_LINE");
}

// A unique line right after its counter's line ("u|k.H,3" then
// "~u|k.H,SKETCH"): "~" + a valid counter key is a valid unique key of the
// same hour, so the key need not be parsed again. The line as far as its
// sketch, or nullopt for any other line.
std::optional<BatchLine> RideOnCounter(const ParsedBatch& batch, std::string_view text) {
  if (text[0] != kUniqueMark || batch.lines.empty()) return std::nullopt;
  const BatchLine& previous = batch.lines.back();
  if (previous.lookup || previous.unique) return std::nullopt;
  const std::string_view counter_key = previous.key;
  // The counter's key holds no ',' (its line was split at the first one).
  if (text.size() < counter_key.size() + 2 || text.substr(1, counter_key.size()) != counter_key ||
      text[counter_key.size() + 1] != ',') {
    return std::nullopt;
  }
  BatchLine line;
  line.key = text.substr(0, counter_key.size() + 1);
  line.day = previous.day;
  line.unique = true;
  line.follows_its_counter = true;
  return line;
}

}  // namespace

Result<ParsedBatch> ParseBatch(std::string_view body) {
  ParsedBatch out;
  size_t number = 0;
  size_t start = 0;
  while (start < body.size()) {
    size_t end = body.find('\n', start);
    if (end == std::string_view::npos) end = body.size();
    const std::string_view text = body.substr(start, end - start);
    start = end + 1;
    ++number;
    if (text.empty()) return BadLine(number, "empty line");
    // A unique line's sketch, decoded into the batch (the words
    // ParseRealtimeLine uses for the same line when it does not decode).
    auto take_sketch = [&](BatchLine& line, std::string_view sketch_text) -> Status {
      Result<UniqueSketch> sketch = UniqueSketch::FromText(sketch_text);
      if (!sketch.ok()) {
        return BadLine(number,
                       sketch.status().WithContext(fmt::format("realtime line {}", QuoteForMessage(text))).message());
      }
      line.unique = true;
      line.sketch = out.sketches.size();
      out.sketches.push_back(std::move(sketch).value());
      ++out.uniques;
      return Status::Ok();
    };
    if (std::optional<BatchLine> rider = RideOnCounter(out, text)) {
      CLICKATRON_RETURN_IF_ERROR(take_sketch(*rider, text.substr(rider->key.size() + 1)));
      out.lines.push_back(*rider);
      continue;
    }
    RealtimeLineView parsed;
    if (Status st = ParseRealtimeLineView(text, &parsed); !st.ok()) return BadLine(number, st.message());
    BatchLine line;
    line.key = text.substr(0, text.size() - parsed.value.size() - 1);  // before the comma
    if (parsed.key.type == RecordType::kLookup) {
      line.lookup = true;
      line.value = parsed.value;
      ++out.lookups;
    } else {
      line.day = FloorDiv(parsed.key.hour_start, kSecondsPerDay);  // the parser decoded the hour to check it
    }
    if (IsUniqueType(parsed.key.type)) {
      CLICKATRON_RETURN_IF_ERROR(take_sketch(line, parsed.value));
    } else if (!line.lookup) {
      if (parsed.count <= 0) {
        return BadLine(number, fmt::format("delta {} is not positive (increments only add)", parsed.count));
      }
      line.delta = parsed.count;
      ++out.counters;
    }
    out.lines.push_back(line);
  }
  return out;
}

std::vector<int64_t> TargetDays(const ParsedBatch& batch, int64_t lookup_day) {
  std::vector<int64_t> days;
  for (const BatchLine& line : batch.lines) {
    const int64_t day = line.lookup ? lookup_day : line.day;
    if (days.empty() || days.back() != day) days.push_back(day);
  }
  std::sort(days.begin(), days.end());
  days.erase(std::unique(days.begin(), days.end()), days.end());
  return days;
}

}  // namespace clickatron::realtime
