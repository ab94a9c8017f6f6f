// Kept records' decoded columns; see decoded_columns.h.
#include "query/decoded_columns.h"

#include "clickatron/record.h"
#include "query/read_records.h"

namespace clickatron::api {
namespace {

// A string's heap bytes (none while it fits the small-string buffer).
size_t HeapBytes(const std::string& s) { return s.capacity() > std::string().capacity() ? s.capacity() + 1 : 0; }

}  // namespace

size_t DecodedColumns::Bytes() const {
  size_t bytes = counts.capacity() * sizeof(counts[0]) + sketches.capacity() * sizeof(sketches[0]);
  for (const auto& [key, count] : counts) bytes += HeapBytes(key);
  for (const auto& [key, sketch] : sketches) {
    // The shared sketch's own block: the object and its control block.
    bytes += HeapBytes(key) + sizeof(UniqueSketch) + 2 * sizeof(void*) + sketch->MemoryBytes();
  }
  return bytes;
}

Result<DecodedColumns> DecodeSubtotalRecord(std::string_view value) {
  DecodedColumns out;
  Status st = ForEachColumn(value, "archive subtotal", [&](std::string_view skey, std::string_view text) -> Status {
    auto count = ParseCount(text);
    if (!count.ok()) return BadPeerValue("archive subtotal", value);
    out.counts.emplace_back(std::string(skey), *count);
    return Status::Ok();
  });
  if (!st.ok()) return st;
  out.counts.shrink_to_fit();
  return out;
}

Result<DecodedColumns> DecodeUniqueRecord(std::string_view value, bool total) {
  DecodedColumns out;
  auto add = [&](std::string_view skey, std::string_view text, std::string_view what) -> Status {
    auto sketch = DecodeSketch(text, what);
    if (!sketch.ok()) return sketch.status();
    out.sketches.emplace_back(std::string(skey), std::move(sketch).value());
    return Status::Ok();
  };
  Status st = Status::Ok();
  if (total) {
    while (!value.empty() && (value.back() == '\n' || value.back() == '\r')) value.remove_suffix(1);
    st = add("", value, "archive unique total");
  } else {
    st = ForEachColumn(value, "archive unique subtotal", [&](std::string_view skey, std::string_view text) {
      return add(skey, text, "archive unique subtotal");
    });
  }
  if (!st.ok()) return st;
  out.sketches.shrink_to_fit();
  return out;
}

void AddDecodedSubtotals(const DecodedColumns& columns, int64_t hour, HourlyBreakdown* out) {
  for (const auto& [skey, count] : columns.counts) out->push_back(SubtotalCount{hour, skey, count});
}

void AddDecodedSketches(const DecodedColumns& columns, int64_t hour, std::string_view only_key, HourlySketches* out) {
  for (const auto& [skey, sketch] : columns.sketches) {
    if (!only_key.empty() && skey != only_key) continue;
    out->push_back(HourSketch{hour, skey, sketch});
  }
}

}  // namespace clickatron::api
