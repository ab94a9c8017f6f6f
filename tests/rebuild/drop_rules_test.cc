// DropFilter: what a restatement's rule takes out of each kind of line.
#include "drop_rules.h"

#include <gtest/gtest.h>

#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include "clickatron/file_util.h"
#include "clickatron/ymdh.h"
#include "testutil/testutil.h"

namespace clickatron::rebuild::drop_rules_test {
namespace {

// Hour codes of 2012-03-25 (day 15424) and the day after.
std::string Hour(int64_t day, int hour) { return *YmdhFromUnix(day * kSecondsPerDay + hour * kSecondsPerHour); }
constexpr int64_t kDay = 15424;

DropRule DayRule(const std::string& ns, std::string keys_file = "") {
  DropRule rule;
  rule.id = "load-x";
  rule.ns = ns;
  rule.from_unix = kDay * kSecondsPerDay;
  rule.to_unix = (kDay + 1) * kSecondsPerDay;
  rule.keys_file = std::move(keys_file);
  return rule;
}

struct Outcome {
  DropFilter::Verdict verdict;
  std::string line;  // the line after the filter ("" when dropped)
};
Outcome Filter(const DropFilter& filter, const std::string& line) {
  std::string rewritten;
  const DropFilter::Verdict v = filter.Apply(line, &rewritten);
  if (v == DropFilter::Verdict::kDrop) return {v, ""};
  return {v, v == DropFilter::Verdict::kRewritten ? rewritten : line};
}

TEST(DropFilter, TakesTheRangesHoursOutOfEveryRecordTypeOfItsNamespace) {
  auto rule = LoadedDropRule::Load(DayRule("u"), "");
  ASSERT_TRUE(rule.ok());
  const DropFilter filter({rule->get()});
  const std::string in = Hour(kDay, 5), before = Hour(kDay - 1, 23), after = Hour(kDay + 1, 0);
  using V = DropFilter::Verdict;
  // A total keeps the columns outside the range, in order.
  Outcome o = Filter(filter, fmt::format("u|k,{}:1 {}:2 {}:3", before, in, after));
  EXPECT_EQ(o.verdict, V::kRewritten);
  EXPECT_EQ(o.line, fmt::format("u|k,{}:1 {}:3", before, after));
  EXPECT_EQ(Filter(filter, fmt::format("u|k,{}:2", in)).verdict, V::kDrop);  // nothing left
  EXPECT_EQ(Filter(filter, fmt::format("u|k,{}:1", before)).verdict, V::kKeep);
  // Hour records: all or nothing.
  EXPECT_EQ(Filter(filter, fmt::format("c.u|k.{},US:1", in)).verdict, V::kDrop);
  EXPECT_EQ(Filter(filter, fmt::format("c.u|k.{},US:1", after)).verdict, V::kKeep);
  EXPECT_EQ(Filter(filter, fmt::format("~u|k.{},eAQ", in)).verdict, V::kDrop);
  EXPECT_EQ(Filter(filter, fmt::format("~c.u|k.{},US:eAQ", in)).verdict, V::kDrop);
  EXPECT_EQ(Filter(filter, fmt::format("~c.u|k.{},US:eAQ", before)).verdict, V::kKeep);
  // Day and span records are made again downstream; lookups are shared.
  EXPECT_EQ(Filter(filter, fmt::format("c.u|k.{},US:1", *DayCodeFromDays(kDay))).verdict, V::kKeep);
  EXPECT_EQ(Filter(filter, "l|h0aMB8AuNw4=,http://www.facebook.com/").verdict, V::kKeep);
  // Another namespace, even one whose name the restated one starts with.
  EXPECT_EQ(Filter(filter, fmt::format("uu|k,{}:2", in)).verdict, V::kKeep);
  EXPECT_EQ(Filter(filter, fmt::format("c.uu|k.{},US:1", in)).verdict, V::kKeep);
  EXPECT_EQ(Filter(filter, fmt::format("~v|k.{},eAQ", in)).verdict, V::kKeep);
  // No rules: everything kept.
  EXPECT_EQ(Filter(DropFilter(), fmt::format("u|k,{}:2", in)).verdict, V::kKeep);
}

// A deletion's rule: one key without a keys file, and the key's own lookup
// record (a hashed key deleted for all time), which no other rule touches.
TEST(DropFilter, ADeletionsRuleTakesOutOneKeyAndTheLookupItNames) {
  DropRule deletion = DayRule("u");
  deletion.tkey = "h0aMB8AuNw4=";
  deletion.lookup = "l|h0aMB8AuNw4=";
  auto rule = LoadedDropRule::Load(deletion, "");
  ASSERT_TRUE(rule.ok()) << rule.status().ToString();
  const DropFilter filter({rule->get()});
  const std::string in = Hour(kDay, 5);
  using V = DropFilter::Verdict;
  EXPECT_EQ(Filter(filter, fmt::format("u|h0aMB8AuNw4=,{}:2", in)).verdict, V::kDrop);
  EXPECT_EQ(Filter(filter, fmt::format("c.u|h0aMB8AuNw4=.{},US:1", in)).verdict, V::kDrop);
  EXPECT_EQ(Filter(filter, fmt::format("~u|h0aMB8AuNw4=.{},eAQ", in)).verdict, V::kDrop);
  EXPECT_EQ(Filter(filter, fmt::format("u|other,{}:2", in)).verdict, V::kKeep);
  EXPECT_EQ(Filter(filter, fmt::format("u|h0aMB8AuNw4=,{}:2", Hour(kDay + 1, 0))).verdict, V::kKeep);
  EXPECT_EQ(Filter(filter, "l|h0aMB8AuNw4=,http://bit.ly/a-long-link-key").verdict, V::kDrop);
  EXPECT_EQ(Filter(filter, "l|zzzzzzzzzzz=,http://www.facebook.com/").verdict, V::kKeep);
  // The same round trip through the JSON a merge task's spec carries.
  auto parsed = DropRule::FromJson(deletion.ToJson());
  ASSERT_TRUE(parsed.ok());
  EXPECT_EQ(*parsed, deletion);
}

TEST(DropFilter, ARuleWithAKeysFileTakesOutOnlyThoseKeys) {
  testing::TempDir dir;
  const std::string keys = dir / "keys.txt";
  ASSERT_TRUE(WriteFileAtomically(keys, "u|a\nu|h0aMB8AuNw4=\n").ok());
  auto rule = LoadedDropRule::Load(DayRule("u", "keys.txt"), keys);
  ASSERT_TRUE(rule.ok()) << rule.status().ToString();
  const DropFilter filter({rule->get()});
  const std::string in = Hour(kDay, 5);
  using V = DropFilter::Verdict;
  EXPECT_EQ(Filter(filter, fmt::format("u|a,{}:2", in)).verdict, V::kDrop);
  EXPECT_EQ(Filter(filter, fmt::format("u|h0aMB8AuNw4=,{}:2", in)).verdict, V::kDrop);
  EXPECT_EQ(Filter(filter, fmt::format("c.u|a.{},US:1", in)).verdict, V::kDrop);
  EXPECT_EQ(Filter(filter, fmt::format("~c.u|a.{},US:eAQ", in)).verdict, V::kDrop);
  EXPECT_EQ(Filter(filter, fmt::format("u|b,{}:2", in)).verdict, V::kKeep);
  EXPECT_EQ(Filter(filter, fmt::format("u|ab,{}:2", in)).verdict, V::kKeep);
  EXPECT_EQ(Filter(filter, fmt::format("c.u|b.{},US:1", in)).verdict, V::kKeep);
  // A missing keys file is an error, not a rule that matches nothing.
  EXPECT_FALSE(LoadedDropRule::Load(DayRule("u", "gone.txt"), dir / "gone.txt").ok());
}

TEST(DropRule, ReadsBackWhatItWritesAndRefusesPartHours) {
  const DropRule rule = DayRule("u", "/w/queue/x/keys.txt");
  auto back = DropRule::FromJson(rule.ToJson());
  ASSERT_TRUE(back.ok());
  EXPECT_EQ(*back, rule);
  nlohmann::json bad = rule.ToJson();
  bad["to_unix"] = rule.to_unix - 60;
  EXPECT_FALSE(DropRule::FromJson(bad).ok());
  bad = rule.ToJson();
  bad["to_unix"] = rule.from_unix;
  EXPECT_FALSE(DropRule::FromJson(bad).ok());
}

}  // namespace
}  // namespace clickatron::rebuild::drop_rules_test
