// A busy key's archive part of a /uniques window; see unique_window_cache.h.
#include "query/unique_window_cache.h"

#include <cstring>
#include <utility>

namespace clickatron::api {
namespace {

void AppendInt(std::string* out, int64_t v) {
  char bytes[sizeof v];
  std::memcpy(bytes, &v, sizeof v);
  out->append(bytes, sizeof v);
}

}  // namespace

std::string_view UniqueWindowCache::NameOf(std::string_view run_prefix, const HourSpan& span, const HourSpan& skip,
                                           const std::vector<int64_t>& splits) {
  // Fixed-size fields first, so no two windows share a name.
  name_.clear();
  for (int64_t v : {span.begin_ts, span.end_ts, skip.begin_ts, skip.end_ts, static_cast<int64_t>(splits.size())}) {
    AppendInt(&name_, v);
  }
  for (int64_t split : splits) AppendInt(&name_, split);
  name_.append(run_prefix);
  return name_;
}

const UniqueWindowCache::Part* UniqueWindowCache::Find(const ServedFile& file, int shard_count,
                                                       std::string_view run_prefix, const HourSpan& span,
                                                       const HourSpan& skip, const std::vector<int64_t>& splits) {
  if (!enabled_) return nullptr;
  const Entry* entry = map_.Find(NameOf(run_prefix, span, skip, splits));
  if (entry == nullptr || entry->file != file || entry->shard_count != shard_count) return nullptr;
  return &entry->part;
}

void UniqueWindowCache::Put(const ServedFile& file, int shard_count, std::string_view run_prefix,
                            const HourSpan& span, const HourSpan& skip, const std::vector<int64_t>& splits,
                            Part part) {
  if (!enabled_) return;
  const std::string_view name = NameOf(run_prefix, span, skip, splits);
  size_t charge = kEntryOverhead + sizeof(Entry) + 2 * name.size() + part.hours.capacity() * sizeof(HourSketch);
  for (const HourSketch& h : part.hours) {
    charge += kHourOverhead + h.key.capacity() + (h.sketch ? h.sketch->MemoryBytes() : 0);
  }
  map_.Put(name, Entry{file, shard_count, std::move(part)}, charge);
}

}  // namespace clickatron::api
