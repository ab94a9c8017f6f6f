// LruMap: least recently used out first within the budget of charges; a
// key put again replaces its value and its charge; an entry charged more
// than the budget is not kept.
#include "clickatron/lru_map.h"

#include <gtest/gtest.h>

#include <string>

namespace clickatron {
namespace {

TEST(LruMapTest, LeastRecentlyUsedGoFirstWithinTheBudget) {
  LruMap<int> map(10);
  map.Put("a", 1, 4);
  map.Put("b", 2, 4);
  ASSERT_NE(map.Find("a"), nullptr);  // a used last: b is the oldest
  map.Put("c", 3, 4);                 // 12 > 10: b goes
  EXPECT_EQ(map.Find("b"), nullptr);
  ASSERT_NE(map.Find("a"), nullptr);
  EXPECT_EQ(*map.Find("a"), 1);
  EXPECT_EQ(*map.Find("c"), 3);
  EXPECT_EQ(map.size(), 2u);
  EXPECT_EQ(map.charged(), 8u);
}

TEST(LruMapTest, PutAgainReplacesValueAndCharge) {
  LruMap<std::string> map(10);
  map.Put("a", "first", 3);
  map.Put("b", "other", 3);
  map.Put("a", "second", 6);  // 3 + 6 fits: both stay
  EXPECT_EQ(*map.Find("a"), "second");
  EXPECT_EQ(*map.Find("b"), "other");
  EXPECT_EQ(map.size(), 2u);
  EXPECT_EQ(map.charged(), 9u);
}

TEST(LruMapTest, EntryLargerThanTheBudgetIsNotKept) {
  LruMap<int> map(5);
  map.Put("small", 1, 2);
  map.Put("huge", 2, 6);
  EXPECT_EQ(map.Find("huge"), nullptr);
  EXPECT_NE(map.Find("small"), nullptr) << "nothing dropped for an entry that could never fit";
  LruMap<int> off(0);
  off.Put("a", 1, 1);
  EXPECT_EQ(off.size(), 0u);
}

}  // namespace
}  // namespace clickatron
