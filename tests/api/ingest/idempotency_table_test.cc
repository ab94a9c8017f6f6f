#include "ingest/idempotency_table.h"

#include <gtest/gtest.h>

#include <string>

namespace clickatron::api {
namespace {

using Verdict = IdempotencyTable::Verdict;

IdempotencyTable Table(int64_t window_seconds = 3600, size_t max_keys = 100) {
  return IdempotencyTable({.window_seconds = window_seconds, .max_keys = max_keys});
}

TEST(IdempotencyKeyTest, OneTo255PrintableAsciiCharacters) {
  EXPECT_TRUE(ValidIdempotencyKey("8e03978e-40d5-43e8-bc93-6894a57f9324"));
  EXPECT_TRUE(ValidIdempotencyKey("a"));
  EXPECT_TRUE(ValidIdempotencyKey("with space and ~!\"#"));
  EXPECT_TRUE(ValidIdempotencyKey(std::string(255, 'k')));
  EXPECT_FALSE(ValidIdempotencyKey(""));
  EXPECT_FALSE(ValidIdempotencyKey(std::string(256, 'k')));
  EXPECT_FALSE(ValidIdempotencyKey("tab\there"));
  EXPECT_FALSE(ValidIdempotencyKey("nl\n"));
  EXPECT_FALSE(ValidIdempotencyKey("caf\xc3\xa9"));
  EXPECT_FALSE(ValidIdempotencyKey(std::string("nul\0", 4)));
}

TEST(IdempotencyTableTest, ADoneKeyIsReplayedWithItsAnswerAndAnotherRequestIsRefused) {
  IdempotencyTable t = Table();
  EXPECT_EQ(t.Begin("k", "d1", 100).verdict, Verdict::kNew);
  EXPECT_EQ(t.in_flight(), 1u);
  // While its commit runs: the same request waits for nothing, it is 409.
  EXPECT_EQ(t.Begin("k", "d1", 101).verdict, Verdict::kInFlight);
  EXPECT_EQ(t.Begin("k", "d2", 101).verdict, Verdict::kReused);
  t.Complete("k", 7, 102);
  EXPECT_EQ(t.in_flight(), 0u);
  IdempotencyTable::Lookup again = t.Begin("k", "d1", 103);
  EXPECT_EQ(again.verdict, Verdict::kReplay);
  EXPECT_EQ(again.increments, 7u);
  EXPECT_EQ(t.Begin("k", "d2", 103).verdict, Verdict::kReused);
  EXPECT_EQ(t.counters().replays, 1u);
  EXPECT_EQ(t.counters().reused, 2u);
  EXPECT_EQ(t.counters().in_flight_refusals, 1u);
}

TEST(IdempotencyTableTest, AnAbortedKeyIsForgottenSoItsRetryIsNew) {
  IdempotencyTable t = Table();
  ASSERT_EQ(t.Begin("k", "d", 100).verdict, Verdict::kNew);
  t.Abort("k");
  EXPECT_EQ(t.size(), 0u);
  EXPECT_EQ(t.bytes(), 0u);
  EXPECT_EQ(t.Begin("k", "other", 101).verdict, Verdict::kNew);
}

TEST(IdempotencyTableTest, KeysLastTheWindowFromTheirCommit) {
  IdempotencyTable t = Table(/*window_seconds=*/60);
  ASSERT_EQ(t.Begin("k", "d", 100).verdict, Verdict::kNew);
  t.Complete("k", 1, 110);
  EXPECT_EQ(t.Begin("k", "d", 169).verdict, Verdict::kReplay);
  EXPECT_EQ(t.Begin("k", "d", 170).verdict, Verdict::kNew) << "60 s after the commit at 110";
  EXPECT_EQ(t.counters().expired, 1u);
}

TEST(IdempotencyTableTest, PastMaxKeysTheOldestAreForgottenAndCounted) {
  IdempotencyTable t = Table(3600, /*max_keys=*/3);
  for (int i = 0; i < 5; ++i) {
    const std::string key = "k" + std::to_string(i);
    ASSERT_EQ(t.Begin(key, "d", 100 + i).verdict, Verdict::kNew);
    t.Complete(key, 1, 100 + i);
  }
  EXPECT_EQ(t.size(), 3u);
  EXPECT_EQ(t.counters().evicted, 2u);
  EXPECT_EQ(t.Begin("k0", "d", 200).verdict, Verdict::kNew);
  EXPECT_EQ(t.Begin("k4", "d", 200).verdict, Verdict::kReplay);
}

TEST(IdempotencyTableTest, RestoredKeysAnswerAsDoneOnesUnlessPastTheWindow) {
  IdempotencyTable t = Table(/*window_seconds=*/60);
  t.Restore("old", "d", 3, /*unix=*/10, /*now=*/100);
  t.Restore("recent", "d", 4, /*unix=*/90, /*now=*/100);
  EXPECT_EQ(t.size(), 1u);
  EXPECT_EQ(t.counters().restored, 1u);
  IdempotencyTable::Lookup l = t.Begin("recent", "d", 100);
  EXPECT_EQ(l.verdict, Verdict::kReplay);
  EXPECT_EQ(l.increments, 4u);
  EXPECT_EQ(t.Begin("old", "d", 100).verdict, Verdict::kNew);
}

TEST(IdempotencyTableTest, BytesFollowWhatIsHeld) {
  IdempotencyTable t = Table(60);
  ASSERT_EQ(t.Begin(std::string(200, 'k'), std::string(32, 'd'), 0).verdict, Verdict::kNew);
  const size_t one = t.bytes();
  EXPECT_GE(one, 200u + 32u);
  t.Complete(std::string(200, 'k'), 1, 0);
  EXPECT_EQ(t.bytes(), one);
  t.Expire(60);
  EXPECT_EQ(t.bytes(), 0u);
}

}  // namespace
}  // namespace clickatron::api
