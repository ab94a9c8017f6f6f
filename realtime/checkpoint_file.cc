#include "checkpoint_file.h"

#include <fmt/format.h>
#include <rocksdb/sst_file_writer.h>

#include <algorithm>

#include "clickatron/key_codec.h"
#include "clickatron/record.h"
#include "counter_merge.h"
#include "rocks_status.h"

namespace clickatron::realtime {

Status WriteCheckpointFile(const rocksdb::Options& options, rocksdb::ColumnFamilyHandle* family,
                           const std::string& path, FamilyRecords& records) {
  // Equal keys of counters and sketches fold the same in any order (a sum, a
  // union); puts keep theirs (the last one wins).
  const auto by_key = [](const auto* a, const auto* b) { return a->key < b->key; };
  std::sort(records.increments.begin(), records.increments.end(), by_key);
  std::stable_sort(records.puts.begin(), records.puts.end(), by_key);
  std::sort(records.sketches.begin(), records.sketches.end(),
            [](const auto* a, const auto* b) { return a->counter_key < b->counter_key; });

  rocksdb::SstFileWriter writer(rocksdb::EnvOptions(), options, family);
  CLICKATRON_RETURN_IF_ERROR(FromRocks(writer.Open(path), fmt::format("creating the checkpoint file {}", path)));
  // A block is written to disk as it fills: a full disk shows here too.
  const auto added = [&](const rocksdb::Status& s, std::string_view key) -> Status {
    if (s.ok()) return Status::Ok();  // the message is built only for a failure: this runs per record
    return FromRocks(s, fmt::format("writing {} into the checkpoint file {}", QuoteForMessage(key), path));
  };

  // Counters and lookups merged by key, each key folded.
  std::string value;
  size_t i = 0;
  size_t p = 0;
  while (i < records.increments.size() || p < records.puts.size()) {
    const bool counter_next =
        p == records.puts.size() ||
        (i < records.increments.size() && records.increments[i]->key < records.puts[p]->key);
    if (counter_next) {
      const std::string_view key = records.increments[i]->key;
      int64_t sum = 0;
      for (; i < records.increments.size() && records.increments[i]->key == key; ++i) {
        if (__builtin_add_overflow(sum, records.increments[i]->delta, &sum)) {
          return Status(StatusCode::kInternal,
                        fmt::format("counter {} would pass the int64 range in one checkpoint", QuoteForMessage(key)),
                        "COUNTER_OVERFLOW");
        }
      }
      value.clear();
      AppendCounter(sum, &value);
      CLICKATRON_RETURN_IF_ERROR(added(writer.Merge(rocksdb::Slice(key.data(), key.size()), value), key));
    } else {
      const std::string_view key = records.puts[p]->key;
      while (p + 1 < records.puts.size() && records.puts[p + 1]->key == key) ++p;  // the last one wins
      const std::string_view put = records.puts[p]->value;
      ++p;
      CLICKATRON_RETURN_IF_ERROR(added(
          writer.Put(rocksdb::Slice(key.data(), key.size()), rocksdb::Slice(put.data(), put.size())), key));
    }
  }

  // Unique records after them ('~' sorts after every valid key's first character).
  std::string key;
  for (size_t s = 0; s < records.sketches.size();) {
    const std::string_view counter_key = records.sketches[s]->counter_key;
    value.clear();
    if (s + 1 < records.sketches.size() && records.sketches[s + 1]->counter_key == counter_key) {
      UniqueSketch united = *records.sketches[s]->sketch;
      for (++s; s < records.sketches.size() && records.sketches[s]->counter_key == counter_key; ++s) {
        united.Merge(*records.sketches[s]->sketch);
      }
      united.AppendBinary(&value);
    } else {
      records.sketches[s]->sketch->AppendBinary(&value);
      ++s;
    }
    key.assign(1, kUniqueMark);
    key.append(counter_key);
    CLICKATRON_RETURN_IF_ERROR(added(writer.Merge(key, value), key));
  }
  return FromRocks(writer.Finish(), fmt::format("finishing the checkpoint file {}", path));
}

}  // namespace clickatron::realtime
