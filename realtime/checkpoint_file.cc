#include "checkpoint_file.h"

#include <fmt/format.h>
#include <rocksdb/sst_file_writer.h>

#include <algorithm>
#include <bit>
#include <compare>
#include <cstring>
#include <string_view>
#include <vector>

#include "clickatron/key_codec.h"
#include "clickatron/record.h"
#include "counter_merge.h"
#include "rocks_status.h"

namespace clickatron::realtime {
namespace {

static_assert(std::endian::native == std::endian::little, "KeyPrefix swaps bytes to big-endian");

// The first 16 bytes of a key as two big-endian words, zero-padded: they
// compare as the bytes do, and a key that ends sooner (padded with the
// smallest byte) sorts first, as it does among strings.
struct KeyPrefix {
  uint64_t high = 0;
  uint64_t low = 0;
  explicit KeyPrefix(std::string_view key) {
    char bytes[16] = {};
    key.copy(bytes, sizeof bytes);
    std::memcpy(&high, bytes, 8);
    std::memcpy(&low, bytes + 8, 8);
    high = __builtin_bswap64(high);
    low = __builtin_bswap64(low);
  }
  auto operator<=>(const KeyPrefix&) const = default;
};

// A record to write, with what folding and writing it needs held in the
// array being sorted. A checkpoint of new keys sorts a million records, and
// comparing the keys where they live (the frozen table's entries, all over
// its arena) was most of the checkpoint's CPU (memcmp 30% of a shard's perf
// samples under uniform keys): the prefixes sit in the array, only keys
// that share their first 16 bytes are compared whole, and the fold after
// the sort walks the array instead of following a pointer per record.
template <typename Payload>
struct Keyed {
  KeyPrefix prefix;
  std::string_view key;
  Payload payload;  // a counter's delta, a unique record's sketch
  // Whether `other` has the same key (the prefixes first: most differ there).
  bool SameKey(const Keyed& other) const { return prefix == other.prefix && key == other.key; }
};

std::string_view RecordKey(const StoreWrite::Increment& r) { return r.key; }
std::string_view RecordKey(const StoreWrite::Unite& r) { return r.counter_key; }

// How far ahead the loops over records prefetch keys: about as many misses
// as a core keeps in flight.
constexpr size_t kKeysAhead = 8;

template <typename Payload, typename Record, typename Make>
std::vector<Keyed<Payload>> SortedByKey(const std::vector<const Record*>& records, Make make) {
  std::vector<Keyed<Payload>> items;
  items.reserve(records.size());
  for (size_t i = 0; i < records.size(); ++i) {
    // The keys lie in the frozen table's hash order: each prefix read is a
    // cache miss unless asked for ahead.
    if (i + kKeysAhead < records.size()) __builtin_prefetch(RecordKey(*records[i + kKeysAhead]).data());
    items.push_back(make(*records[i]));
  }
  std::sort(items.begin(), items.end(), [](const Keyed<Payload>& a, const Keyed<Payload>& b) {
    if (a.prefix != b.prefix) return a.prefix < b.prefix;
    return a.key < b.key;
  });
  return items;
}

}  // namespace

Status WriteCheckpointFile(const rocksdb::Options& options, rocksdb::ColumnFamilyHandle* family,
                           const std::string& path, FamilyRecords& records) {
  // Equal keys of counters and sketches fold the same in any order (a sum, a
  // union); puts keep theirs (the last one wins).
  const std::vector<Keyed<int64_t>> counters =
      SortedByKey<int64_t>(records.increments, [](const StoreWrite::Increment& r) {
        return Keyed<int64_t>{KeyPrefix(r.key), r.key, r.delta};
      });
  // The sorted copy holds all the fold needs: the pointers go now, not
  // after the file is written (a checkpoint's arrays are memory the budget
  // does not count: docs/scaling.md).
  std::vector<const StoreWrite::Increment*>().swap(records.increments);
  std::stable_sort(records.puts.begin(), records.puts.end(), [](const auto* a, const auto* b) { return a->key < b->key; });
  const std::vector<Keyed<const UniqueSketch*>> sketches =
      SortedByKey<const UniqueSketch*>(records.sketches, [](const StoreWrite::Unite& r) {
        return Keyed<const UniqueSketch*>{KeyPrefix(r.counter_key), r.counter_key, r.sketch};
      });

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
        p == records.puts.size() || (i < counters.size() && counters[i].key < records.puts[p]->key);
    if (counter_next) {
      // The keys live where the frozen table put them, in hash order: ask
      // for one a few records ahead so that its cache miss overlaps the
      // work on this one (the writer copies every key).
      if (i + kKeysAhead < counters.size()) __builtin_prefetch(counters[i + kKeysAhead].key.data());
      const Keyed<int64_t>& first = counters[i];
      const std::string_view key = first.key;
      // The fold starts past `first`: comparing a record with itself read
      // its key where it lives, a cache miss per record that was 9% of a
      // shard's CPU under new keys (perf, memcmp in SameKey).
      int64_t sum = first.payload;
      for (++i; i < counters.size() && counters[i].SameKey(first); ++i) {
        if (__builtin_add_overflow(sum, counters[i].payload, &sum)) {
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
    const Keyed<const UniqueSketch*>& first = sketches[s];
    value.clear();
    if (s + 1 < sketches.size() && sketches[s + 1].SameKey(first)) {
      UniqueSketch united = *first.payload;
      for (++s; s < sketches.size() && sketches[s].SameKey(first); ++s) united.Merge(*sketches[s].payload);
      united.AppendBinary(&value);
    } else {
      first.payload->AppendBinary(&value);
      ++s;
    }
    key.assign(1, kUniqueMark);
    key.append(first.key);
    CLICKATRON_RETURN_IF_ERROR(added(writer.Merge(key, value), key));
  }
  return FromRocks(writer.Finish(), fmt::format("finishing the checkpoint file {}", path));
}

}  // namespace clickatron::realtime
