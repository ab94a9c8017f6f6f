// ArchiveReplyCache: kept answers come back only for the file (generation
// and crc32), shard and shard count they were kept with; an answer without
// the file's identity is not kept; a read cache of 0 bytes keeps nothing. Which entries go
// first is the read cache's (read_cache_test.cc).
#include "query/cache/archive_reply_cache.h"

#include <gtest/gtest.h>

#include <functional>
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

TEST(ArchiveReplyCacheTest, KeptAnswerComesBackForItsFileShardAndCountOnly) {
  ReadCache read_cache(1 << 20);
  ArchiveReplyCache cache(read_cache);
  EXPECT_EQ(cache.Find(0, "u|a", File(3), 2), nullptr);
  EXPECT_TRUE(cache.Insert(0, "u|a", Reply(3, "x:1\n"), 2));
  const auto kept = cache.Find(0, "u|a", File(3), 2);
  ASSERT_NE(kept, nullptr);
  EXPECT_EQ(kept->body, "x:1\n");
  EXPECT_TRUE(kept->kept);
  EXPECT_EQ(kept->view.generation, 3u);
  EXPECT_EQ(cache.Find(1, "u|a", File(3), 2), nullptr) << "another shard";
  EXPECT_EQ(cache.Find(0, "u|a", File(4), 2), nullptr) << "another generation";
  EXPECT_EQ(cache.Find(0, "u|a", File(3, /*other=*/true), 2), nullptr) << "another file of that number";
  EXPECT_EQ(cache.Find(0, "u|a", File(3), 4), nullptr) << "routed by another shard count";
  EXPECT_NE(cache.Find(0, "u|a", File(3), 2), nullptr) << "and still kept for its own";
}

TEST(ArchiveReplyCacheTest, TwoFilesAnswersForOneKeyAreTwoEntries) {
  // A replica behind another (a deploy under way): each file's sessions find
  // their own answer.
  ReadCache read_cache(1 << 20);
  ArchiveReplyCache cache(read_cache);
  cache.Insert(0, "u|a", Reply(4, "c413:1\n"), 2);
  cache.Insert(0, "u|a", Reply(5, "c413:2\n"), 2);
  EXPECT_EQ(cache.Find(0, "u|a", File(4), 2)->body, "c413:1\n");
  EXPECT_EQ(cache.Find(0, "u|a", File(5), 2)->body, "c413:2\n");
  EXPECT_EQ(read_cache.Figures(CacheKind::kArchiveReply).entries, 2u);
}

TEST(ArchiveReplyCacheTest, AnAnswerThatDoesNotNameItsFileIsNotKept) {
  ReadCache read_cache(1 << 20);
  ArchiveReplyCache cache(read_cache);
  ArchiveReply anonymous = Reply(7, "c413:2\n");
  anonymous.view.file_crc32.reset();
  EXPECT_FALSE(cache.Insert(0, "u|b", anonymous, 2));
  EXPECT_EQ(read_cache.Figures(CacheKind::kArchiveReply).entries, 0u);
}

TEST(ArchiveReplyCacheTest, AbsentKeysAreKeptAsAbsent) {
  ReadCache read_cache(1 << 20);
  ArchiveReplyCache cache(read_cache);
  cache.Insert(0, "c.u|a.k", Reply(1, "", /*found=*/false), 2);
  const auto kept = cache.Find(0, "c.u|a.k", File(1), 2);
  ASSERT_NE(kept, nullptr);
  EXPECT_FALSE(kept->found);
}

TEST(ArchiveReplyCacheTest, InsertReplacesTheKeysEntryOfThatFile) {
  ReadCache read_cache(1 << 20);
  ArchiveReplyCache cache(read_cache);
  cache.Insert(0, "u|a", Reply(2, "x:1\n"), 2);
  cache.Insert(0, "u|a", Reply(2, "x:22\n"), 2);
  EXPECT_EQ(read_cache.Figures(CacheKind::kArchiveReply).entries, 1u);
  EXPECT_EQ(cache.Find(0, "u|a", File(2), 2)->body, "x:22\n");
}

TEST(ArchiveReplyCacheTest, ForgetDropsOnlyThatFilesAnswer) {
  ReadCache read_cache(1 << 20);
  ArchiveReplyCache cache(read_cache);
  cache.Insert(0, "u|a", Reply(2, "x:1\n"), 2);
  cache.Insert(0, "u|a", Reply(3, "x:2\n"), 2);
  cache.Forget(0, "u|a", File(2), 2);
  EXPECT_EQ(cache.Find(0, "u|a", File(2), 2), nullptr);
  EXPECT_NE(cache.Find(0, "u|a", File(3), 2), nullptr);
}

TEST(ArchiveReplyCacheTest, AReadCacheOfZeroBytesKeepsNothing) {
  ReadCache nothing(0);
  ArchiveReplyCache cache(nothing);
  EXPECT_FALSE(cache.enabled());
  EXPECT_FALSE(cache.Insert(0, "u|a", Reply(1, "x:1\n"), 2));
  EXPECT_EQ(cache.Find(0, "u|a", File(1), 2), nullptr);
}

}  // namespace
}  // namespace clickatron::api
