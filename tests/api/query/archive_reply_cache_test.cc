// ArchiveReplyCache: kept answers come back only for the generation and
// shard count they were kept with, the least recently used go first when the
// byte budget is full, and a budget of 0 keeps nothing.
#include "query/archive_reply_cache.h"

#include <gtest/gtest.h>

#include <memory>
#include <string>

namespace clickatron::api {
namespace {

// Generation g's file; `other` gives another file of the same number (a
// rollback, then a new build).
ServedFile File(uint64_t generation, bool other = false) {
  return ServedFile{generation, static_cast<uint32_t>(1000 + generation + (other ? 500 : 0))};
}

ArchiveReply Reply(uint64_t generation, std::string body, bool found = true, bool other_file = false) {
  ArchiveReply reply;
  reply.view.generation = generation;
  reply.view.file_crc32 = File(generation, other_file).crc32;
  reply.view.last_day = 20000;
  reply.view.shard_count = 2;
  reply.found = found;
  reply.body = std::move(body);
  return reply;
}

TEST(ArchiveReplyCacheTest, KeptAnswerComesBackForItsGenerationOnly) {
  ArchiveReplyCache cache(1 << 20);
  EXPECT_EQ(cache.Find(0, "u|a", File(3), 2), nullptr);
  cache.Insert(0, "u|a", Reply(3, "x:1\n"), 2);
  const ArchiveReply* kept = cache.Find(0, "u|a", File(3), 2);
  ASSERT_NE(kept, nullptr);
  EXPECT_EQ(kept->body, "x:1\n");
  EXPECT_TRUE(kept->found);
  EXPECT_EQ(kept->view.generation, 3u);
  // Another shard: not this answer (and it stays).
  EXPECT_EQ(cache.Find(1, "u|a", File(3), 2), nullptr);
  EXPECT_NE(cache.Find(0, "u|a", File(3), 2), nullptr);
  // A newer generation: not this answer, and it is dropped.
  EXPECT_EQ(cache.Find(0, "u|a", File(4), 2), nullptr);
  EXPECT_EQ(cache.Find(0, "u|a", File(3), 2), nullptr);
  // Another shard count (the archive re-partitioned): likewise.
  cache.Insert(0, "u|a", Reply(3, "x:1\n"), 2);
  EXPECT_EQ(cache.Find(0, "u|a", File(3), 4), nullptr);
  EXPECT_EQ(cache.Find(0, "u|a", File(3), 2), nullptr);
  EXPECT_EQ(cache.figures().entries, 0u);
  EXPECT_EQ(cache.figures().bytes, 0u);
}

TEST(ArchiveReplyCacheTest, AnotherFileOfTheSameGenerationNumberIsNotThisAnswer) {
  ArchiveReplyCache cache(1 << 20);
  // Generation 7 was rolled back; the next build is numbered 7 again.
  EXPECT_TRUE(cache.Insert(0, "u|a", Reply(7, "c413:2\n"), 2));
  EXPECT_EQ(cache.Find(0, "u|a", File(7, /*other=*/true), 2), nullptr);
  // And it is gone: the first file of that number will not be served again.
  EXPECT_EQ(cache.Find(0, "u|a", File(7), 2), nullptr);
  // A reply that does not say its file is not kept at all.
  ArchiveReply anonymous = Reply(8, "c413:2\n");
  anonymous.view.file_crc32.reset();
  EXPECT_FALSE(cache.Insert(0, "u|b", anonymous, 2));
  EXPECT_EQ(cache.figures().entries, 0u);
}

TEST(ArchiveReplyCacheTest, AReplicaBehindDoesNotDropANewerAnswer) {
  ArchiveReplyCache cache(1 << 20);
  cache.Insert(0, "u|a", Reply(5, "c413:2\n"), 2);
  EXPECT_EQ(cache.Find(0, "u|a", File(4), 2), nullptr);  // asked by a session on a replica still at 4
  EXPECT_NE(cache.Find(0, "u|a", File(5), 2), nullptr);  // still kept for those at 5
}

TEST(ArchiveReplyCacheTest, AbsentKeysAreKeptAsAbsent) {
  ArchiveReplyCache cache(1 << 20);
  cache.Insert(0, "c.u|a.k", Reply(1, "", /*found=*/false), 2);
  const ArchiveReply* kept = cache.Find(0, "c.u|a.k", File(1), 2);
  ASSERT_NE(kept, nullptr);
  EXPECT_FALSE(kept->found);
}

TEST(ArchiveReplyCacheTest, InsertReplacesTheKeysEntry) {
  ArchiveReplyCache cache(1 << 20);
  cache.Insert(0, "u|a", Reply(1, "x:1\n"), 2);
  cache.Insert(0, "u|a", Reply(2, "x:22\n"), 2);
  EXPECT_EQ(cache.figures().entries, 1u);
  EXPECT_EQ(cache.figures().bytes, std::string("u|a").size() + 5 + ArchiveReplyCache::kEntryOverhead);
  ASSERT_NE(cache.Find(0, "u|a", File(2), 2), nullptr);
  EXPECT_EQ(cache.Find(0, "u|a", File(2), 2)->body, "x:22\n");
}

TEST(ArchiveReplyCacheTest, LeastRecentlyUsedGoFirstWithinTheBudget) {
  const std::string value(100, 'v');
  const size_t entry = 4 + value.size() + ArchiveReplyCache::kEntryOverhead;  // keys "k000"…
  ArchiveReplyCache cache(entry * 10);  // room for ten
  for (int i = 0; i < 10; ++i) cache.Insert(0, "k" + std::string(3 - std::to_string(i).size(), '0') + std::to_string(i),
                                            Reply(1, value), 2);
  EXPECT_EQ(cache.figures().entries, 10u);
  ASSERT_NE(cache.Find(0, "k000", File(1), 2), nullptr);  // used: now the most recent
  cache.Insert(0, "k010", Reply(1, value), 2);      // one must go: the least recently used, k001
  EXPECT_EQ(cache.figures().entries, 10u);
  EXPECT_EQ(cache.figures().evictions, 1u);
  EXPECT_LE(cache.figures().bytes, entry * 10);
  EXPECT_NE(cache.Find(0, "k000", File(1), 2), nullptr);
  EXPECT_EQ(cache.Find(0, "k001", File(1), 2), nullptr);
  EXPECT_NE(cache.Find(0, "k002", File(1), 2), nullptr);
  EXPECT_NE(cache.Find(0, "k010", File(1), 2), nullptr);
}

TEST(ArchiveReplyCacheTest, SameKeyOnTwoShardsAreTwoEntries) {
  ArchiveReplyCache cache(1 << 20);
  cache.Insert(0, "u|a", Reply(1, "x:1\n"), 2);
  cache.Insert(5, "u|a", Reply(1, "x:2\n"), 2);  // a shard beyond any seen so far
  ASSERT_NE(cache.Find(0, "u|a", File(1), 2), nullptr);
  ASSERT_NE(cache.Find(5, "u|a", File(1), 2), nullptr);
  EXPECT_EQ(cache.Find(0, "u|a", File(1), 2)->body, "x:1\n");
  EXPECT_EQ(cache.Find(5, "u|a", File(1), 2)->body, "x:2\n");
}

TEST(ArchiveReplyCacheTest, AValueTooLargeForItsShareIsNotKept) {
  ArchiveReplyCache cache(8000);
  cache.Insert(0, "u|small", Reply(1, "x:1\n"), 2);
  cache.Insert(0, "u|huge", Reply(1, std::string(2000, 'v')), 2);  // more than an eighth of the budget
  EXPECT_EQ(cache.Find(0, "u|huge", File(1), 2), nullptr);
  EXPECT_NE(cache.Find(0, "u|small", File(1), 2), nullptr);  // and it pushed nothing out
}

// What AttachTotalHours and AttachColumns share: nothing is attached to
// another generation's entry or to a key not kept; once attached, the decoded
// form comes back with the entry and `charge` more bytes count in the
// budget; a new answer for the key drops both.
template <typename Decoded>
void ExpectAttachedWithTheEntry(
    const std::string& key, const std::string& other_key, const std::string& first, const std::string& second,
    void (ArchiveReplyCache::*attach)(int, std::string_view, const ServedFile&, int, std::shared_ptr<const Decoded>),
    std::shared_ptr<const Decoded> ArchiveReply::*member, std::shared_ptr<const Decoded> decoded, size_t charge) {
  ArchiveReplyCache cache(1 << 20);
  cache.Insert(0, key, Reply(3, first), 2);
  const size_t bytes = cache.figures().bytes;
  (cache.*attach)(0, key, File(4), 2, decoded);
  (cache.*attach)(0, other_key, File(3), 2, decoded);
  ASSERT_NE(cache.Find(0, key, File(3), 2), nullptr);
  EXPECT_EQ(cache.Find(0, key, File(3), 2)->*member, nullptr);
  EXPECT_EQ(cache.figures().bytes, bytes);
  (cache.*attach)(0, key, File(3), 2, decoded);
  const ArchiveReply* kept = cache.Find(0, key, File(3), 2);
  ASSERT_NE(kept, nullptr);
  EXPECT_EQ(kept->*member, decoded);
  EXPECT_TRUE(kept->kept);
  EXPECT_EQ(cache.figures().bytes, bytes + charge);
  cache.Insert(0, key, Reply(5, second), 2);
  EXPECT_EQ(cache.Find(0, key, File(5), 2)->*member, nullptr);
  EXPECT_EQ(cache.figures().bytes, bytes - first.size() + second.size());
}

TEST(ArchiveReplyCacheTest, DecodedHoursGoWithTheirEntryAndCountInTheBudget) {
  auto hours = std::make_shared<ArchiveTotalHours>();
  hours->hours = {{100, 2}, {200, 3}};
  ExpectAttachedWithTheEntry<ArchiveTotalHours>("u|a", "u|b", "c413:2\n", "c413:9\n",
                                                &ArchiveReplyCache::AttachTotalHours, &ArchiveReply::total_hours,
                                                hours, 2 * sizeof(hours->hours[0]));
}

TEST(ArchiveReplyCacheTest, DecodedColumnsGoWithTheirEntryAndCountInTheBudget) {
  auto columns = std::make_shared<DecodedColumns>();
  columns->counts = {{"US", 2}, {"a-value-longer-than-a-small-string", 5}};
  // Charged: the vector and the long key's heap block at least.
  EXPECT_GE(columns->Bytes(), 2 * sizeof(columns->counts[0]) + columns->counts[1].first.size());
  ExpectAttachedWithTheEntry<DecodedColumns>("c.u|a.c413", "c.u|b.c413", "US:2 a-value-longer-than-a-small-string:5\n",
                                             "US:9\n", &ArchiveReplyCache::AttachColumns, &ArchiveReply::columns,
                                             columns, columns->Bytes());
}

TEST(ArchiveReplyCacheTest, ZeroBudgetKeepsNothing) {
  ArchiveReplyCache cache(0);
  EXPECT_FALSE(cache.enabled());
  cache.Insert(0, "u|a", Reply(1, "x:1\n"), 2);
  EXPECT_EQ(cache.Find(0, "u|a", File(1), 2), nullptr);
  EXPECT_EQ(cache.figures().entries, 0u);
}

}  // namespace
}  // namespace clickatron::api
