#include "checkpoint_file.h"

#include <fmt/format.h>
#include <rocksdb/sst_file_writer.h>

#include <algorithm>
#include <string_view>
#include <vector>

#include "clickatron/key_codec.h"
#include "clickatron/record.h"
#include "counter_merge.h"
#include "rocks_status.h"

namespace clickatron::realtime {
namespace {

// A unique record to write: its sketch beside its counter key's sort form.
struct SortableSketch {
  SortKey key;
  const UniqueSketch* sketch;
  bool operator<(const SortableSketch& o) const { return key < o.key; }
};
// MemTable::kCheckpointBytesPerSketch counts one by SortableCounter's size.
static_assert(sizeof(SortableSketch) == sizeof(SortableCounter));

// How far ahead the loops over records prefetch keys: about as many misses
// as a core keeps in flight.
constexpr size_t kKeysAhead = 8;

std::vector<SortableSketch> SortedSketches(const std::vector<const StoreWrite::Unite*>& records) {
  std::vector<SortableSketch> items;
  items.reserve(records.size());
  for (size_t i = 0; i < records.size(); ++i) {
    // The keys lie in the frozen table's hash order: each prefix read is a
    // cache miss unless asked for ahead.
    if (i + kKeysAhead < records.size()) __builtin_prefetch(records[i + kKeysAhead]->counter_key.data());
    items.push_back(SortableSketch{SortKey(records[i]->counter_key), records[i]->sketch});
  }
  std::sort(items.begin(), items.end());
  return items;
}

}  // namespace

Status WriteCheckpointFile(const rocksdb::Options& options, rocksdb::ColumnFamilyHandle* family,
                           const std::string& path, FamilyRecords& records) {
  // Equal keys of counters and sketches fold the same in any order (a sum, a
  // union); puts keep theirs (the last one wins). Counters are sorted in
  // their own array, with their keys' first bytes beside them: a checkpoint
  // of new keys sorts a million records, and comparing the keys where they
  // live (the frozen table's entries, all over its arena) was most of the
  // checkpoint's CPU (memcmp 30% of a shard's perf samples under uniform keys).
  SortableCounters& counters = records.counters;
  std::sort(counters.begin(), counters.end());
  std::stable_sort(records.puts.begin(), records.puts.end(), [](const auto* a, const auto* b) { return a->key < b->key; });
  const std::vector<SortableSketch> sketches = SortedSketches(records.sketches);

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
  while (i < counters.size() || p < records.puts.size()) {
    const bool counter_next =
        p == records.puts.size() || (i < counters.size() && counters[i].key.key < records.puts[p]->key);
    if (counter_next) {
      // The keys live where the frozen table put them, in hash order: ask
      // for one a few records ahead so that its cache miss overlaps the
      // work on this one (the writer copies every key).
      if (i + kKeysAhead < counters.size()) __builtin_prefetch(counters[i + kKeysAhead].key.key.data());
      const SortableCounter& first = counters[i];
      const std::string_view key = first.key.key;
      // The fold starts past `first`: comparing a record with itself read
      // its key where it lives, a cache miss per record that was 9% of a
      // shard's CPU under new keys (perf, memcmp comparing keys).
      int64_t sum = first.delta;
      for (++i; i < counters.size() && counters[i].key == first.key; ++i) {
        if (__builtin_add_overflow(sum, counters[i].delta, &sum)) {
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
  for (size_t s = 0; s < sketches.size();) {
    const SortableSketch& first = sketches[s];
    value.clear();
    if (s + 1 < sketches.size() && sketches[s + 1].key == first.key) {
      UniqueSketch united = *first.sketch;
      for (++s; s < sketches.size() && sketches[s].key == first.key; ++s) united.Merge(*sketches[s].sketch);
      united.AppendBinary(&value);
    } else {
      first.sketch->AppendBinary(&value);
      ++s;
    }
    key.assign(1, kUniqueMark);
    key.append(first.key.key);
    CLICKATRON_RETURN_IF_ERROR(added(writer.Merge(key, value), key));
  }
  // The sorted counters go now, not with the whole write: a checkpoint
  // across midnight writes two days.
  SortableCounters().swap(counters);
  return FromRocks(writer.Finish(), fmt::format("finishing the checkpoint file {}", path));
}

}  // namespace clickatron::realtime
