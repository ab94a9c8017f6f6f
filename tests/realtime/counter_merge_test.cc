#include "counter_merge.h"

#include <gtest/gtest.h>
#include <rocksdb/merge_operator.h>

#include <limits>

namespace clickatron::realtime {
namespace {

const rocksdb::AssociativeMergeOperator& Operator() {
  static std::shared_ptr<rocksdb::MergeOperator> op = NewCounterMergeOperator();
  return dynamic_cast<const rocksdb::AssociativeMergeOperator&>(*op);
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

TEST(CounterMergeTest, AddsOperandToExistingValue) {
  std::string existing = EncodeCounter(5);
  rocksdb::Slice existing_slice(existing);
  std::string operand = EncodeCounter(7);
  std::string out;
  ASSERT_TRUE(Operator().Merge("k", &existing_slice, operand, &out, nullptr));
  int64_t v = 0;
  ASSERT_TRUE(DecodeCounter(out, &v));
  EXPECT_EQ(v, 12);
}

TEST(CounterMergeTest, MissingExistingValueStartsAtZero) {
  std::string operand = EncodeCounter(9);
  std::string out;
  ASSERT_TRUE(Operator().Merge("k", nullptr, operand, &out, nullptr));
  int64_t v = 0;
  ASSERT_TRUE(DecodeCounter(out, &v));
  EXPECT_EQ(v, 9);
}

TEST(CounterMergeTest, BadOperandIsAFailureNotZero) {
  const uint64_t before = CounterMergeFailures();
  std::string existing = EncodeCounter(5);
  rocksdb::Slice existing_slice(existing);
  std::string out;
  EXPECT_FALSE(Operator().Merge("k", &existing_slice, "abc", &out, nullptr));
  rocksdb::Slice bad_existing("xyz");
  std::string operand = EncodeCounter(1);
  EXPECT_FALSE(Operator().Merge("k", &bad_existing, operand, &out, nullptr));
  EXPECT_EQ(CounterMergeFailures(), before + 2);
}

TEST(CounterMergeTest, OverflowIsAFailure) {
  std::string existing = EncodeCounter(std::numeric_limits<int64_t>::max());
  rocksdb::Slice existing_slice(existing);
  std::string operand = EncodeCounter(1);
  std::string out;
  EXPECT_FALSE(Operator().Merge("k", &existing_slice, operand, &out, nullptr));
}

}  // namespace
}  // namespace clickatron::realtime
