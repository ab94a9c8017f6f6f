// ArchiveReplyCache: kept answers come back only for the file (generation
// and crc32), shard and shard count they were kept with; an answer without
// the file's identity is not kept; a decoded form replaces the text it was
// decoded from; a read cache of 0 bytes keeps nothing. Which entries go
// first is the read cache's (read_cache_test.cc).
#include "query/cache/archive_reply_cache.h"

#include <gtest/gtest.h>

#include <functional>
#include <memory>
#include <string>

namespace clickatron::api {
namespace {

constexpr int64_t kLastDay = 20000;  // the manifest's last day of every file here

// Generation g's file; `other` gives another file of the same number (a
// rollback, then a new build).
ServedFile File(uint64_t generation, bool other = false) {
  return ServedFile{generation, static_cast<uint32_t>(1000 + generation + (other ? 500 : 0)), kLastDay};
}

ArchiveReply Reply(uint64_t generation, std::string body, bool found = true, bool other_file = false) {
  ArchiveReply reply;
  reply.view.generation = generation;
  reply.view.file_crc32 = File(generation, other_file).crc32;
  reply.view.last_day = kLastDay;
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
  ServedFile other_last_day = File(3);
  other_last_day.last_day = kLastDay - 1;
  EXPECT_EQ(cache.Find(0, "u|a", other_last_day, 2), nullptr) << "its manifest says another last day";
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

// What AttachTotalHours and AttachColumns share: a decoded form is kept for
// the file its view names (as that file's answer for the key), nothing for a
// view that names none; it comes back in place of the text and is charged
// instead of it, and another file's entry for the key is left as it was.
template <typename Decoded>
void ExpectAttachedInPlaceOfTheText(
    const std::string& key, const std::string& text,
    const std::function<void(ArchiveReplyCache&, const std::string&, const ArchiveView&)>& attach,
    std::shared_ptr<const Decoded> ArchiveReply::*member, std::shared_ptr<const Decoded> decoded, size_t charge) {
  ReadCache read_cache(1 << 20);
  ArchiveReplyCache cache(read_cache);
  cache.Insert(0, key, Reply(3, text), 2);
  cache.Insert(0, key, Reply(4, text), 2);
  const size_t bytes = read_cache.Figures(CacheKind::kArchiveReply).bytes;
  ArchiveView anonymous = Reply(3, text).view;
  anonymous.file_crc32.reset();
  attach(cache, key, anonymous);
  EXPECT_EQ((*cache.Find(0, key, File(3), 2)).*member, nullptr) << "a view without its file names nothing";
  EXPECT_EQ(read_cache.Figures(CacheKind::kArchiveReply).bytes, bytes);
  attach(cache, key, Reply(3, text).view);
  const auto kept = cache.Find(0, key, File(3), 2);
  ASSERT_NE(kept, nullptr);
  EXPECT_EQ((*kept).*member, decoded);
  EXPECT_TRUE(kept->kept);
  EXPECT_TRUE(kept->found);
  EXPECT_TRUE(kept->body.empty()) << "the text is not kept beside its decoded form";
  EXPECT_EQ(read_cache.Figures(CacheKind::kArchiveReply).entries, 2u);
  EXPECT_EQ(read_cache.Figures(CacheKind::kArchiveReply).bytes, bytes - text.size() + charge);
  EXPECT_EQ(cache.Find(0, key, File(4), 2)->body, text) << "generation 4's entry untouched";
}

TEST(ArchiveReplyCacheTest, DecodedHoursReplaceTheirTextAndAreCharged) {
  auto hours = std::make_shared<ArchiveTotalHours>();
  hours->hours = {{100, 2}, {200, 3}};
  std::shared_ptr<const ArchiveTotalHours> decoded = hours;
  ExpectAttachedInPlaceOfTheText<ArchiveTotalHours>(
      "u|a", "c413:2 c414:3\n",
      [&](ArchiveReplyCache& cache, const std::string& key, const ArchiveView& view) {
        cache.AttachTotalHours(0, key, view, /*found=*/true, 2, decoded);
      },
      &ArchiveReply::total_hours, decoded, sizeof(ArchiveTotalHours) + 2 * sizeof(hours->hours[0]));
}

TEST(ArchiveReplyCacheTest, DecodedColumnsReplaceTheirTextAndAreCharged) {
  auto columns = std::make_shared<DecodedColumns>();
  columns->counts = {{"US", 2}, {"a-value-longer-than-a-small-string", 5}};
  // Charged: the vector and the long key's heap block at least.
  EXPECT_GE(columns->Bytes(), 2 * sizeof(columns->counts[0]) + columns->counts[1].first.size());
  std::shared_ptr<const DecodedColumns> decoded = columns;
  ExpectAttachedInPlaceOfTheText<DecodedColumns>(
      "c.u|a.c413", "US:2 a-value-longer-than-a-small-string:5\n",
      [&](ArchiveReplyCache& cache, const std::string& key, const ArchiveView& view) {
        cache.AttachColumns(0, key, view, 2, decoded);
      },
      &ArchiveReply::columns, decoded, columns->Bytes());
}

// A decoded form too large for the cache leaves the kept text in place:
// dropping both would have every query fetch and decode the key again.
TEST(ArchiveReplyCacheTest, ADecodedFormTooLargeToKeepLeavesTheText) {
  ReadCache read_cache(ReadCache::kShards * 2048);  // a part's share: 2 KiB
  ArchiveReplyCache cache(read_cache);
  ASSERT_TRUE(cache.Insert(0, "u|a", Reply(3, "c413:2\n"), 2));
  auto hours = std::make_shared<ArchiveTotalHours>();
  hours->hours.resize(1000, {100, 1});  // 16 KB decoded
  cache.AttachTotalHours(0, "u|a", Reply(3, "").view, /*found=*/true, 2, hours);
  const auto kept = cache.Find(0, "u|a", File(3), 2);
  ASSERT_NE(kept, nullptr);
  EXPECT_EQ(kept->body, "c413:2\n");
  EXPECT_EQ(kept->total_hours, nullptr);
}

// An absent key's decoded total (no hours) stays absent.
TEST(ArchiveReplyCacheTest, AnAbsentKeysDecodedTotalStaysAbsent) {
  ReadCache read_cache(1 << 20);
  ArchiveReplyCache cache(read_cache);
  cache.AttachTotalHours(0, "u|none", Reply(3, "", /*found=*/false).view, /*found=*/false, 2,
                         std::make_shared<const ArchiveTotalHours>());
  ASSERT_NE(cache.Find(0, "u|none", File(3), 2), nullptr);
  EXPECT_FALSE(cache.Find(0, "u|none", File(3), 2)->found);
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
