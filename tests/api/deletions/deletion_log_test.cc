// DeletionLog: what it keeps across a reopen, and which deleted hours a read
// of an archive generation must hide.
#include <gtest/gtest.h>

#include "deletions/deletion_log.h"
#include "testutil/testutil.h"

namespace clickatron::api::deletion_log_test {
namespace {

using Range = DeletionLog::HourRange;

Deletion Of(std::string id, std::string ns, std::string tkey, int64_t from, int64_t to, uint64_t folded_into = 0) {
  Deletion d;
  d.id = std::move(id);
  d.ns = std::move(ns);
  d.tkey = std::move(tkey);
  d.key = d.tkey;
  d.from_unix = from;
  d.to_unix = to;
  d.folded_into = folded_into;
  return d;
}

TEST(DeletionLogTest, MasksAreTheCoveringDeletionsHoursMergedAndSorted) {
  clickatron::testing::TempDir dir;
  auto log = DeletionLog::Open(dir.path() + "/deletions");
  ASSERT_TRUE(log.ok()) << log.status().ToString();
  EXPECT_TRUE((*log)->ArchiveMasks("u", "k", 7).empty());
  ASSERT_TRUE((*log)->Put(Of("d1", "u", "k", 7200, 14400)).ok());
  ASSERT_TRUE((*log)->Put(Of("d2", "u", "", 0, 3600)).ok());         // every key of u
  ASSERT_TRUE((*log)->Put(Of("d3", "u", "k", 10800, 21600)).ok());   // overlaps d1
  ASSERT_TRUE((*log)->Put(Of("d4", "u", "other", 50000, 60000)).ok());
  ASSERT_TRUE((*log)->Put(Of("d5", "v", "k", 90000, 93600)).ok());
  EXPECT_EQ((*log)->ArchiveMasks("u", "k", 7), (std::vector<Range>{{0, 3600}, {7200, 21600}}));
  EXPECT_EQ((*log)->ArchiveMasks("u", "nobody", 7), (std::vector<Range>{{0, 3600}}));
  EXPECT_TRUE((*log)->ArchiveMasks("w", "k", 7).empty());
}

TEST(DeletionLogTest, AGenerationThatFoldedADeletionInIsNotMasked) {
  clickatron::testing::TempDir dir;
  auto log = DeletionLog::Open(dir.path());
  ASSERT_TRUE(log.ok());
  ASSERT_TRUE((*log)->Put(Of("d1", "u", "k", 7200, 14400, /*folded_into=*/5)).ok());
  EXPECT_EQ((*log)->ArchiveMasks("u", "k", 4), (std::vector<Range>{{7200, 14400}}));  // built before it
  EXPECT_TRUE((*log)->ArchiveMasks("u", "k", 5).empty());
  EXPECT_TRUE((*log)->ArchiveMasks("u", "k", 6).empty());
  EXPECT_EQ((*log)->ArchiveMasks("u", "k", 0), (std::vector<Range>{{7200, 14400}}));  // any generation
  // Kept across a reopen, with where it was folded in.
  auto again = DeletionLog::Open(dir.path());
  ASSERT_TRUE(again.ok());
  EXPECT_EQ((*again)->ArchiveMasks("u", "k", 4), (std::vector<Range>{{7200, 14400}}));
  EXPECT_TRUE((*again)->ArchiveMasks("u", "k", 5).empty());
}

// Another node's copy under an id this log has: another deletion (other
// key or hours) is refused and never replaces the one here, also across a
// reopen; the same deletion under two owners is kept under the owner whose
// name sorts first, whichever copy comes first, so every node agrees on one.
TEST(DeletionLogTest, ACopyOfAnotherDeletionUnderAKnownIdIsRefused) {
  clickatron::testing::TempDir dir;
  auto log = DeletionLog::Open(dir.path());
  ASSERT_TRUE(log.ok());
  Deletion mine = Of("race", "u", "a", 0, 3600);
  mine.owner = "api-1";
  ASSERT_TRUE((*log)->Put(mine).ok());
  Deletion other = Of("race", "u", "b", 0, 3600);
  other.owner = "api-0";
  const Status refused = (*log)->PutCopy(other);
  EXPECT_EQ(refused.reason(), "DELETION_ID_CONFLICT") << refused.ToString();
  Deletion later_hours = mine;
  later_hours.to_unix = 7200;
  EXPECT_EQ((*log)->PutCopy(later_hours).reason(), "DELETION_ID_CONFLICT");
  auto again = DeletionLog::Open(dir.path());
  ASSERT_TRUE(again.ok());
  ASSERT_TRUE((*again)->Get("race").has_value());
  EXPECT_EQ((*again)->Get("race")->tkey, "a");
  EXPECT_EQ((*again)->Get("race")->owner, "api-1");

  // The same deletion, owned by api-2 and by api-0: api-0 keeps it.
  Deletion by_two = mine;
  by_two.owner = "api-2";
  ASSERT_TRUE((*again)->PutCopy(by_two).ok());
  EXPECT_EQ((*again)->Get("race")->owner, "api-1");
  Deletion by_zero = mine;
  by_zero.owner = "api-0";
  ASSERT_TRUE((*again)->PutCopy(by_zero).ok());
  EXPECT_EQ((*again)->Get("race")->owner, "api-0");
  ASSERT_TRUE((*again)->PutCopy(mine).ok());
  EXPECT_EQ((*again)->Get("race")->owner, "api-0");
}

}  // namespace
}  // namespace clickatron::api::deletion_log_test
