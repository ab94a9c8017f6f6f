// Kept records' decoded columns; see decoded_columns.h.
#include "query/merge/decoded_columns.h"

#include "query/merge/read_records.h"

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
  Status st = ForEachSubtotalCount(value, [&](std::string_view skey, int64_t count) {
    out.counts.emplace_back(std::string(skey), count);
    return Status::Ok();
  });
  if (!st.ok()) return st;
  out.counts.shrink_to_fit();
  return out;
}

Result<DecodedColumns> DecodeUniqueRecord(std::string_view value, bool total) {
  DecodedColumns out;
  Status st = ForEachArchiveSketch(value, total, "",
                                   [&](std::string_view skey, std::shared_ptr<const UniqueSketch> sketch) {
                                     out.sketches.emplace_back(std::string(skey), std::move(sketch));
                                     return Status::Ok();
                                   });
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
