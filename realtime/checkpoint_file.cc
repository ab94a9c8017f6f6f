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

// Sorts records by key. A checkpoint of new keys sorts a million of them, and
// comparing the keys where they live (the frozen table's nodes, all over the
// heap) was most of the checkpoint's CPU (memcmp 30% of a shard's perf
// samples under uniform keys): the prefixes sit in the array being sorted,
// and only keys that share their first 16 bytes are compared whole.
template <typename Record, typename KeyOf>
void SortByKey(std::vector<const Record*>& records, KeyOf key_of) {
  struct Item {
    KeyPrefix prefix;
    const Record* record;
  };
  std::vector<Item> items;
  items.reserve(records.size());
  for (const Record* r : records) items.push_back({KeyPrefix(key_of(*r)), r});
  std::sort(items.begin(), items.end(), [&](const Item& a, const Item& b) {
    if (a.prefix != b.prefix) return a.prefix < b.prefix;
    return key_of(*a.record) < key_of(*b.record);
  });
  for (size_t i = 0; i < items.size(); ++i) records[i] = items[i].record;
}

}  // namespace

Status WriteCheckpointFile(const rocksdb::Options& options, rocksdb::ColumnFamilyHandle* family,
                           const std::string& path, FamilyRecords& records) {
  // Equal keys of counters and sketches fold the same in any order (a sum, a
  // union); puts keep theirs (the last one wins).
  SortByKey(records.increments, [](const StoreWrite::Increment& r) { return r.key; });
  std::stable_sort(records.puts.begin(), records.puts.end(), [](const auto* a, const auto* b) { return a->key < b->key; });
  SortByKey(records.sketches, [](const StoreWrite::Unite& r) { return r.counter_key; });

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
