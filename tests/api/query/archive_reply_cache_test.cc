// ArchiveReplyCache: kept answers come back only for the generation and
// shard count they were kept with, the least recently used go first when the
// byte budget is full, and a budget of 0 keeps nothing.
#include "query/archive_reply_cache.h"

#include <gtest/gtest.h>

#include <memory>
#include <string>

namespace clickatron::api {
namespace {

ArchiveReply Reply(uint64_t generation, std::string body, bool found = true) {
  ArchiveReply reply;
  reply.view.generation = generation;
  reply.view.last_day = 20000;
  reply.view.shard_count = 2;
  reply.found = found;
  reply.body = std::move(body);
  return reply;
}

TEST(ArchiveReplyCacheTest, KeptAnswerComesBackForItsGenerationOnly) {
  ArchiveReplyCache cache(1 << 20);
  EXPECT_EQ(cache.Find(0, "u|a", 3, 2), nullptr);
  cache.Insert(0, "u|a", Reply(3, "x:1\n"), 2);
  const ArchiveReply* kept = cache.Find(0, "u|a", 3, 2);
  ASSERT_NE(kept, nullptr);
  EXPECT_EQ(kept->body, "x:1\n");
  EXPECT_TRUE(kept->found);
  EXPECT_EQ(kept->view.generation, 3u);
  // Another shard, another count, another generation: not this answer.
  EXPECT_EQ(cache.Find(1, "u|a", 3, 2), nullptr);
  EXPECT_EQ(cache.Find(0, "u|a", 3, 4), nullptr);
  EXPECT_EQ(cache.Find(0, "u|a", 4, 2), nullptr);
  // The entry of the older generation was dropped by that last look.
  EXPECT_EQ(cache.Find(0, "u|a", 3, 2), nullptr);
  EXPECT_EQ(cache.figures().entries, 0u);
  EXPECT_EQ(cache.figures().bytes, 0u);
  EXPECT_EQ(cache.figures().hits, 1u);
}

TEST(ArchiveReplyCacheTest, AbsentKeysAreKeptAsAbsent) {
  ArchiveReplyCache cache(1 << 20);
  cache.Insert(0, "c.u|a.k", Reply(1, "", /*found=*/false), 2);
  const ArchiveReply* kept = cache.Find(0, "c.u|a.k", 1, 2);
  ASSERT_NE(kept, nullptr);
  EXPECT_FALSE(kept->found);
}

TEST(ArchiveReplyCacheTest, InsertReplacesTheKeysEntry) {
  ArchiveReplyCache cache(1 << 20);
  cache.Insert(0, "u|a", Reply(1, "x:1\n"), 2);
  cache.Insert(0, "u|a", Reply(2, "x:22\n"), 2);
  EXPECT_EQ(cache.figures().entries, 1u);
  EXPECT_EQ(cache.figures().bytes, std::string("u|a").size() + 5 + ArchiveReplyCache::kEntryOverhead);
  ASSERT_NE(cache.Find(0, "u|a", 2, 2), nullptr);
  EXPECT_EQ(cache.Find(0, "u|a", 2, 2)->body, "x:22\n");
}

TEST(ArchiveReplyCacheTest, LeastRecentlyUsedGoFirstWithinTheBudget) {
  const std::string value(100, 'v');
  const size_t entry = 4 + value.size() + ArchiveReplyCache::kEntryOverhead;  // keys "k000"…
  ArchiveReplyCache cache(entry * 10);  // room for ten
  for (int i = 0; i < 10; ++i) cache.Insert(0, "k" + std::string(3 - std::to_string(i).size(), '0') + std::to_string(i),
                                            Reply(1, value), 2);
  EXPECT_EQ(cache.figures().entries, 10u);
  ASSERT_NE(cache.Find(0, "k000", 1, 2), nullptr);  // used: now the most recent
  cache.Insert(0, "k010", Reply(1, value), 2);      // one must go: the least recently used, k001
  EXPECT_EQ(cache.figures().entries, 10u);
  EXPECT_EQ(cache.figures().evictions, 1u);
  EXPECT_LE(cache.figures().bytes, entry * 10);
  EXPECT_NE(cache.Find(0, "k000", 1, 2), nullptr);
  EXPECT_EQ(cache.Find(0, "k001", 1, 2), nullptr);
  EXPECT_NE(cache.Find(0, "k002", 1, 2), nullptr);
  EXPECT_NE(cache.Find(0, "k010", 1, 2), nullptr);
}

TEST(ArchiveReplyCacheTest, SameKeyOnTwoShardsAreTwoEntries) {
  ArchiveReplyCache cache(1 << 20);
  cache.Insert(0, "u|a", Reply(1, "x:1\n"), 2);
  cache.Insert(5, "u|a", Reply(1, "x:2\n"), 2);  // a shard beyond any seen so far
  ASSERT_NE(cache.Find(0, "u|a", 1, 2), nullptr);
  ASSERT_NE(cache.Find(5, "u|a", 1, 2), nullptr);
  EXPECT_EQ(cache.Find(0, "u|a", 1, 2)->body, "x:1\n");
  EXPECT_EQ(cache.Find(5, "u|a", 1, 2)->body, "x:2\n");
}

TEST(ArchiveReplyCacheTest, AValueTooLargeForItsShareIsNotKept) {
  ArchiveReplyCache cache(8000);
  cache.Insert(0, "u|small", Reply(1, "x:1\n"), 2);
  cache.Insert(0, "u|huge", Reply(1, std::string(2000, 'v')), 2);  // more than an eighth of the budget
  EXPECT_EQ(cache.Find(0, "u|huge", 1, 2), nullptr);
  EXPECT_NE(cache.Find(0, "u|small", 1, 2), nullptr);  // and it pushed nothing out
}

TEST(ArchiveReplyCacheTest, DecodedHoursGoWithTheirEntryAndCountInTheBudget) {
  ArchiveReplyCache cache(1 << 20);
  cache.Insert(0, "u|a", Reply(3, "c413:2\n"), 2);
  const size_t bytes = cache.figures().bytes;
  auto hours = std::make_shared<ArchiveTotalHours>();
  hours->hours = {{100, 2}, {200, 3}};
  // Not for another generation's entry, nor for a key not kept.
  cache.AttachTotalHours(0, "u|a", 4, 2, hours);
  cache.AttachTotalHours(0, "u|b", 3, 2, hours);
  ASSERT_NE(cache.Find(0, "u|a", 3, 2), nullptr);
  EXPECT_EQ(cache.Find(0, "u|a", 3, 2)->total_hours, nullptr);
  cache.AttachTotalHours(0, "u|a", 3, 2, hours);
  const ArchiveReply* kept = cache.Find(0, "u|a", 3, 2);
  ASSERT_NE(kept, nullptr);
  ASSERT_NE(kept->total_hours, nullptr);
  EXPECT_EQ(kept->total_hours->hours, hours->hours);
  EXPECT_TRUE(kept->kept);
  EXPECT_EQ(cache.figures().bytes, bytes + 2 * sizeof(hours->hours[0]));
  // Replacing the entry drops them (a new answer is decoded again).
  cache.Insert(0, "u|a", Reply(5, "c413:9\n"), 2);
  EXPECT_EQ(cache.Find(0, "u|a", 5, 2)->total_hours, nullptr);
  EXPECT_EQ(cache.figures().bytes, bytes);
}

TEST(ArchiveReplyCacheTest, ZeroBudgetKeepsNothing) {
  ArchiveReplyCache cache(0);
  EXPECT_FALSE(cache.enabled());
  cache.Insert(0, "u|a", Reply(1, "x:1\n"), 2);
  EXPECT_EQ(cache.Find(0, "u|a", 1, 2), nullptr);
  EXPECT_EQ(cache.figures().entries, 0u);
}

}  // namespace
}  // namespace clickatron::api
