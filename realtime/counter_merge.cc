#include "counter_merge.h"

#include <rocksdb/merge_operator.h>
#include <rocksdb/slice.h>
#include <spdlog/spdlog.h>

#include <atomic>
#include <cstring>
#include <deque>

#include "clickatron/key_codec.h"
#include "clickatron/record.h"
#include "clickatron/unique_sketch.h"

namespace clickatron::realtime {
namespace {

std::atomic<uint64_t> merge_failures{0};

// One merge folds every operand at once: a sketch is decoded once per
// operand and encoded once per merge. (RocksDB's AssociativeMergeOperator,
// used before, folds pairwise: a key with N operands in a compaction had
// its growing union encoded and decoded again N times, a dense sketch's
// 12 KiB each time.) Counters sum the same either way.
class CounterAddOperator : public rocksdb::MergeOperator {
 public:
  // Part of the on-disk format: RocksDB records the name in each table and
  // refuses to open tables written with another operator of another name.
  // Values and operands are encoded as before, so the name stays.
  const char* Name() const override { return "clickatron.CounterAdd.int64le"; }

  bool FullMergeV2(const MergeOperationInput& in, MergeOperationOutput* out) const override {
    return MergeAll(in.key, in.existing_value, in.operand_list, &out->new_value);
  }

  // Operands without their base (a compaction above the key's oldest
  // entry): united, or summed, into one operand of the same encoding.
  bool PartialMergeMulti(const rocksdb::Slice& key, const std::deque<rocksdb::Slice>& operand_list,
                         std::string* new_value, rocksdb::Logger*) const override {
    return MergeAll(key, nullptr, operand_list, new_value);
  }

 private:
  template <typename Operands>
  static bool MergeAll(const rocksdb::Slice& key, const rocksdb::Slice* existing_value, const Operands& operands,
                       std::string* new_value) {
    if (IsUniqueKey(key.ToStringView())) return Unite(key, existing_value, operands, new_value);
    int64_t sum = 0;
    if (existing_value != nullptr && !DecodeCounter(existing_value->ToStringView(), &sum)) {
      return Fail(key, "stored value is not an 8-byte counter");
    }
    for (const rocksdb::Slice& operand : operands) {
      int64_t delta = 0;
      if (!DecodeCounter(operand.ToStringView(), &delta)) return Fail(key, "merge operand is not an 8-byte counter");
      if (__builtin_add_overflow(sum, delta, &sum)) return Fail(key, "counter overflows int64");
    }
    new_value->clear();
    AppendCounter(sum, new_value);
    return true;
  }

  // A unique record ("~…"): the stored value and operands are binary
  // sketches; their union. (The operator keeps its name: stores from before
  // uniques hold no '~' key, so their counters merge exactly as before.)
  template <typename Operands>
  static bool Unite(const rocksdb::Slice& key, const rocksdb::Slice* existing_value, const Operands& operands,
                    std::string* new_value) {
    // One operand and no base (a record read from one ingested checkpoint
    // file, before a compaction folds it): the operand is already the
    // union, in the encoding a merge would write. Copied as it is instead of
    // decoded and encoded again on every read of it; checked as far as a
    // read sending a stored value checks it (UniqueSketch::AppendTextOfBinary).
    if (existing_value == nullptr && operands.size() == 1) {
      const std::string_view only = operands.front().ToStringView();
      if (!UniqueSketch::CheckBinaryForm(only).ok()) return Fail(key, "merge operand is not a sketch");
      new_value->assign(only);
      return true;
    }
    UniqueSketch all;
    if (existing_value != nullptr) {
      Result<UniqueSketch> stored = UniqueSketch::FromBinary(existing_value->ToStringView());
      if (!stored.ok()) return Fail(key, "stored value is not a sketch");
      all = std::move(stored).value();
    }
    for (const rocksdb::Slice& operand : operands) {
      Result<UniqueSketch> sketch = UniqueSketch::FromBinary(operand.ToStringView());
      if (!sketch.ok()) return Fail(key, "merge operand is not a sketch");
      all.Merge(*sketch);
    }
    new_value->clear();
    all.AppendBinary(new_value);
    return true;
  }

  // Runs on RocksDB's threads too (compaction): logging and an atomic only.
  static bool Fail(const rocksdb::Slice& key, const char* why) {
    merge_failures.fetch_add(1, std::memory_order_relaxed);
    spdlog::error("counter merge failed for key {}: {}", QuoteForMessage(key.ToStringView()), why);
    return false;
  }
};

}  // namespace

void AppendCounter(int64_t value, std::string* out) {
  const auto u = static_cast<uint64_t>(value);
  char buf[kCounterBytes];
  for (size_t i = 0; i < kCounterBytes; ++i) buf[i] = static_cast<char>((u >> (8 * i)) & 0xff);
  out->append(buf, kCounterBytes);
}

std::string EncodeCounter(int64_t value) {
  std::string out;
  AppendCounter(value, &out);
  return out;
}

bool DecodeCounter(std::string_view bytes, int64_t* value) {
  if (bytes.size() != kCounterBytes) return false;
  uint64_t u = 0;
  for (size_t i = 0; i < kCounterBytes; ++i) u |= static_cast<uint64_t>(static_cast<unsigned char>(bytes[i])) << (8 * i);
  *value = static_cast<int64_t>(u);
  return true;
}

std::shared_ptr<rocksdb::MergeOperator> NewCounterMergeOperator() { return std::make_shared<CounterAddOperator>(); }

uint64_t CounterMergeFailures() { return merge_failures.load(std::memory_order_relaxed); }

}  // namespace clickatron::realtime
