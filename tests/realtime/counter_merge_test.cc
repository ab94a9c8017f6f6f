#include "counter_merge.h"

#include <gtest/gtest.h>
#include <rocksdb/merge_operator.h>

#include <deque>
#include <limits>
#include <optional>
#include <string>
#include <vector>

#include "clickatron/unique_sketch.h"

namespace clickatron::realtime {
namespace {

const rocksdb::MergeOperator& Operator() {
  static std::shared_ptr<rocksdb::MergeOperator> op = NewCounterMergeOperator();
  return *op;
}

// FullMergeV2 of `operands` onto `existing` (nullptr: none); nullopt when
// the merge fails.
std::optional<std::string> FullMerge(std::string_view key, const std::string* existing,
                                     const std::vector<std::string>& operands) {
  const rocksdb::Slice key_slice(key.data(), key.size());
  rocksdb::Slice existing_slice;
  if (existing != nullptr) existing_slice = rocksdb::Slice(*existing);
  std::vector<rocksdb::Slice> operand_slices(operands.begin(), operands.end());
  std::string out;
  rocksdb::Slice existing_operand;
  const rocksdb::MergeOperator::MergeOperationInput in(key_slice, existing != nullptr ? &existing_slice : nullptr,
                                                       operand_slices, nullptr);
  rocksdb::MergeOperator::MergeOperationOutput merge_out(out, existing_operand);
  if (!Operator().FullMergeV2(in, &merge_out)) return std::nullopt;
  return out;
}

std::optional<std::string> PartialMerge(std::string_view key, const std::vector<std::string>& operands) {
  std::deque<rocksdb::Slice> operand_slices(operands.begin(), operands.end());
  std::string out;
  if (!Operator().PartialMergeMulti(rocksdb::Slice(key.data(), key.size()), operand_slices, &out, nullptr)) {
    return std::nullopt;
  }
  return out;
}

int64_t CounterOf(const std::optional<std::string>& bytes) {
  int64_t v = 0;
  EXPECT_TRUE(bytes.has_value());
  if (bytes) {
    EXPECT_TRUE(DecodeCounter(*bytes, &v));
  }
  return v;
}

// The binary sketch of visitors first .. first+count-1.
std::string SketchOf(uint64_t first, uint64_t count) {
  UniqueSketch s;
  for (uint64_t i = first; i < first + count; ++i) s.Add(HashVisitor("visitor-" + std::to_string(i)));
  return s.ToBinary();
}

TEST(CounterEncodingTest, RoundTripsExtremesAndIsLittleEndian) {
  for (int64_t v : {int64_t{0}, int64_t{1}, int64_t{-1}, int64_t{300}, std::numeric_limits<int64_t>::max(),
                    std::numeric_limits<int64_t>::min()}) {
    std::string bytes = EncodeCounter(v);
    ASSERT_EQ(bytes.size(), kCounterBytes);
    int64_t back = 0;
    ASSERT_TRUE(DecodeCounter(bytes, &back));
    EXPECT_EQ(back, v);
  }
  // 300 = 0x012c: least significant byte first.
  std::string bytes = EncodeCounter(300);
  EXPECT_EQ(static_cast<unsigned char>(bytes[0]), 0x2c);
  EXPECT_EQ(static_cast<unsigned char>(bytes[1]), 0x01);
}

TEST(CounterEncodingTest, DecodeRefusesWrongLengths) {
  int64_t v = 42;
  EXPECT_FALSE(DecodeCounter("", &v));
  EXPECT_FALSE(DecodeCounter("1234567", &v));
  EXPECT_FALSE(DecodeCounter("123456789", &v));
  EXPECT_EQ(v, 42);
}

TEST(CounterMergeTest, AddsOperandsToExistingValue) {
  const std::string existing = EncodeCounter(5);
  EXPECT_EQ(CounterOf(FullMerge("k", &existing, {EncodeCounter(7)})), 12);
  EXPECT_EQ(CounterOf(FullMerge("k", &existing, {EncodeCounter(7), EncodeCounter(1), EncodeCounter(100)})), 113);
}

TEST(CounterMergeTest, MissingExistingValueStartsAtZero) {
  EXPECT_EQ(CounterOf(FullMerge("k", nullptr, {EncodeCounter(9)})), 9);
  EXPECT_EQ(CounterOf(FullMerge("k", nullptr, {EncodeCounter(9), EncodeCounter(-2)})), 7);
}

TEST(CounterMergeTest, PartialMergeSumsOperandsIntoOne) {
  const auto partial = PartialMerge("k", {EncodeCounter(3), EncodeCounter(4), EncodeCounter(5)});
  EXPECT_EQ(CounterOf(partial), 12);
  // The partial result is an operand like any other.
  const std::string existing = EncodeCounter(10);
  EXPECT_EQ(CounterOf(FullMerge("k", &existing, {*partial, EncodeCounter(1)})), 23);
}

TEST(CounterMergeTest, BadOperandIsAFailureNotZero) {
  const uint64_t before = CounterMergeFailures();
  const std::string existing = EncodeCounter(5);
  EXPECT_FALSE(FullMerge("k", &existing, {EncodeCounter(1), "abc"}).has_value());
  const std::string bad_existing = "xyz";
  EXPECT_FALSE(FullMerge("k", &bad_existing, {EncodeCounter(1)}).has_value());
  EXPECT_FALSE(PartialMerge("k", {EncodeCounter(1), "abcdefghi"}).has_value());
  EXPECT_EQ(CounterMergeFailures(), before + 3);
}

TEST(CounterMergeTest, OverflowIsAFailure) {
  const std::string existing = EncodeCounter(std::numeric_limits<int64_t>::max());
  EXPECT_FALSE(FullMerge("k", &existing, {EncodeCounter(1)}).has_value());
  EXPECT_FALSE(PartialMerge("k", {EncodeCounter(std::numeric_limits<int64_t>::max()), EncodeCounter(1)}).has_value());
}

// Unique records ("~" keys): the union of the stored sketch and every
// operand, the same bytes as merging the sketches one by one, in any order.
TEST(CounterMergeTest, UniqueRecordsUniteEverySketch) {
  const std::string key = "~u|jehiah.2026112812";
  const std::string stored = SketchOf(0, 40);
  const std::vector<std::string> operands = {SketchOf(30, 20), SketchOf(45, 1), SketchOf(0, 5), SketchOf(100, 3)};
  const auto merged = FullMerge(key, &stored, operands);
  ASSERT_TRUE(merged.has_value());
  UniqueSketch expected = *UniqueSketch::FromBinary(stored);
  for (const std::string& op : operands) expected.Merge(*UniqueSketch::FromBinary(op));
  EXPECT_EQ(*merged, expected.ToBinary());
  EXPECT_EQ(UniqueSketch::FromBinary(*merged)->Estimate(), 53u);  // visitors 0..49 and 100..102

  // Partial merges of some operands, then the rest: the same bytes.
  const auto partial = PartialMerge(key, {operands[2], operands[0]});
  ASSERT_TRUE(partial.has_value());
  EXPECT_EQ(FullMerge(key, &stored, {*partial, operands[3], operands[1]}), merged);
  // Without a stored value, and past the dense size.
  EXPECT_EQ(UniqueSketch::FromBinary(*FullMerge(key, nullptr, operands))->Estimate(), 28u);  // 0..4, 30..49, 100..102
  const auto dense = FullMerge(key, nullptr, {SketchOf(0, 3000), SketchOf(2000, 3000), SketchOf(10, 2)});
  ASSERT_TRUE(dense.has_value());
  UniqueSketch dense_expected = *UniqueSketch::FromBinary(SketchOf(0, 3000));
  dense_expected.Merge(*UniqueSketch::FromBinary(SketchOf(2000, 3000)));
  EXPECT_EQ(*dense, dense_expected.ToBinary());
}

// A lone operand without a stored value (a record of one ingested
// checkpoint file, read before a compaction): the merge gives exactly the
// bytes merging it into an empty sketch would, explicit or dense, and a
// malformed one still fails.
TEST(CounterMergeTest, ALoneSketchOperandMergesToItsOwnBytes) {
  const std::string key = "~u|jehiah.2026112812";
  for (uint64_t visitors : {1u, 50u, 3000u}) {
    const std::string only = SketchOf(7, visitors);
    UniqueSketch expected;
    expected.Merge(*UniqueSketch::FromBinary(only));
    EXPECT_EQ(FullMerge(key, nullptr, {only}), expected.ToBinary()) << visitors;
  }
  const uint64_t before = CounterMergeFailures();
  EXPECT_FALSE(FullMerge(key, nullptr, {"q-not-a-form"}).has_value());
  EXPECT_FALSE(FullMerge(key, nullptr, {std::string()}).has_value());
  EXPECT_FALSE(FullMerge(key, nullptr, {"d" + std::string(10, '\0')}).has_value());  // dense, short
  EXPECT_EQ(CounterMergeFailures(), before + 3);
}

TEST(CounterMergeTest, BadSketchIsAFailure) {
  const uint64_t before = CounterMergeFailures();
  const std::string key = "~u|jehiah.2026112812";
  const std::string stored = SketchOf(0, 4);
  EXPECT_FALSE(FullMerge(key, &stored, {SketchOf(1, 2), "not a sketch"}).has_value());
  const std::string bad_stored = "x";
  EXPECT_FALSE(FullMerge(key, &bad_stored, {SketchOf(1, 2)}).has_value());
  EXPECT_FALSE(PartialMerge(key, {SketchOf(1, 2), EncodeCounter(3)}).has_value());
  EXPECT_EQ(CounterMergeFailures(), before + 3);
}

}  // namespace
}  // namespace clickatron::realtime
