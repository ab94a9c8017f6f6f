// Unique records ('~' keys, sketch values) through the core codecs:
// parsing, conversion to the archive form, combining, routing.
#include <gtest/gtest.h>

#include "clickatron/convert.h"
#include "clickatron/record.h"
#include "clickatron/shard.h"
#include "clickatron/unique_sketch.h"

namespace clickatron {
namespace {

std::string SketchText(std::initializer_list<std::string_view> tokens) {
  UniqueSketch s;
  for (std::string_view t : tokens) s.Add(HashVisitor(t));
  return s.ToText();
}

TEST(UniqueRecordTest, RealtimeKeysParseAsUniqueTypes) {
  Result<RealtimeLine> total = ParseRealtimeLine("~u|jehiah.c41l," + SketchText({"a", "b"}));
  ASSERT_TRUE(total.ok()) << total.status().ToString();
  EXPECT_EQ(total->key.type, RecordType::kUniqueTotal);
  EXPECT_EQ(total->key.ns, "u");
  EXPECT_EQ(total->key.tkey, "jehiah");
  EXPECT_EQ(total->key.ymdh, "c41l");
  EXPECT_EQ(total->sketch.Estimate(), 2u);

  Result<RealtimeLine> sub = ParseRealtimeLine("~c.u|jehiah.US.w0110," + SketchText({"a"}));
  ASSERT_TRUE(sub.ok()) << sub.status().ToString();
  EXPECT_EQ(sub->key.type, RecordType::kUniqueSubtotal);
  EXPECT_EQ(sub->key.sns, "c");
  EXPECT_EQ(sub->key.skey, "US");
  EXPECT_EQ(sub->key.ymdh, "w0110");
  EXPECT_EQ(FormatRealtimeLine(*sub), "~c.u|jehiah.US.w0110," + SketchText({"a"}));

  EXPECT_EQ(RecordTypeOfKey("~u|jehiah.c41l"), RecordType::kUniqueTotal);
  EXPECT_EQ(RecordTypeOfKey("~c.u|jehiah.US.c41l"), RecordType::kUniqueSubtotal);
}

TEST(UniqueRecordTest, BadUniqueLinesAreRefused) {
  const std::string ok = SketchText({"a"});
  for (const std::string& line :
       {std::string("~u|jehiah.c41l,5"),             // a count where a sketch belongs
        std::string("~u|jehiah.c41l,"),              // no sketch
        "~u|jehiah," + ok,                           // no hour
        "~l|h0aMB8AuNw4=," + ok,                     // lookups have no uniques
        "~~u|jehiah.c41l," + ok,                     // one mark only
        "~c.u|jehiah.c41l," + ok,                    // a subtotal without its skey
        "~u|jehiah.c41l,d" + ok.substr(1)}) {        // dense letter, explicit payload
    EXPECT_FALSE(ParseRealtimeLine(line).ok()) << line;
  }
}

TEST(UniqueRecordTest, ArchiveFormKeepsTotalsPerHourAndSubtotalsAsColumns) {
  const std::string a = SketchText({"a"});
  Result<std::string> total = RealtimeToArchiveLine("~u|jehiah.c41l," + a);
  ASSERT_TRUE(total.ok());
  EXPECT_EQ(*total, "~u|jehiah.c41l," + a);
  Result<std::string> sub = RealtimeToArchiveLine("~c.u|jehiah.US.c41l," + a);
  ASSERT_TRUE(sub.ok());
  EXPECT_EQ(*sub, "~c.u|jehiah.c41l,US:" + a);

  Result<ArchiveRecord> parsed = ParseArchiveLine("~c.u|jehiah.c41l,JP:" + a + " US:" + SketchText({"b", "c"}));
  ASSERT_TRUE(parsed.ok()) << parsed.status().ToString();
  EXPECT_EQ(parsed->type, RecordType::kUniqueSubtotal);
  ASSERT_EQ(parsed->columns.size(), 2u);
  EXPECT_EQ(parsed->columns[1].sketch.Estimate(), 2u);

  std::vector<std::string> back;
  ASSERT_TRUE(ArchiveToRealtimeLines(FormatArchiveLine(*parsed), &back).ok());
  ASSERT_EQ(back.size(), 2u);
  EXPECT_EQ(back[0], "~c.u|jehiah.JP.c41l," + a);

  EXPECT_FALSE(ParseArchiveLine("~c.u|jehiah.c41l,US:" + a + " JP:" + a).ok());  // columns out of order
  EXPECT_FALSE(ParseArchiveLine("~c.u|jehiah.c41l,US:7").ok());
  EXPECT_FALSE(ParseArchiveLine("~u|jehiah,c41l:" + a).ok());  // a unique total is per hour
}

TEST(UniqueRecordTest, CombiningUnitesSketches) {
  std::vector<std::string> out;
  ArchiveCombiner combiner([&](std::string_view line) {
    out.emplace_back(line);
    return Status::Ok();
  });
  ASSERT_TRUE(combiner.Add("~c.u|jehiah.c41l,US:" + SketchText({"a", "b"})).ok());
  ASSERT_TRUE(combiner.Add("~c.u|jehiah.c41l,JP:" + SketchText({"x"}) + " US:" + SketchText({"b", "c"})).ok());
  ASSERT_TRUE(combiner.Add("~u|jehiah.c41l," + SketchText({"a", "b"})).ok());
  ASSERT_TRUE(combiner.Add("~u|jehiah.c41l," + SketchText({"b", "c", "d"})).ok());
  ASSERT_TRUE(combiner.Finish().ok());
  ASSERT_EQ(out.size(), 2u);
  EXPECT_EQ(out[0], "~c.u|jehiah.c41l,JP:" + SketchText({"x"}) + " US:" + SketchText({"a", "b", "c"}));
  EXPECT_EQ(out[1], "~u|jehiah.c41l," + SketchText({"a", "b", "c", "d"}));
}

TEST(UniqueRecordTest, UniquesRouteWithTheirCounters) {
  const std::string s = SketchText({"a"});
  EXPECT_EQ(*ShardKeyOfRealtimeKey("~u|jehiah.c41l," + s), "u|jehiah");
  EXPECT_EQ(*ShardKeyOfRealtimeKey("~c.u|jehiah.US.c41l," + s), "u|jehiah");
  EXPECT_EQ(*ShardKeyOfArchiveKey("~u|jehiah.c41l"), "u|jehiah");
  EXPECT_EQ(*ShardKeyOfArchiveKey("~c.u|jehiah.c41l"), "u|jehiah");
}

TEST(UniqueRecordTest, UniqueRecordsSortAfterEveryCounterOfTheirKey) {
  // '~' is above every namespace byte: a file's counters come first, so
  // sortdb-style fwmatch of "u|jehiah" never returns sketches.
  EXPECT_LT(CompareArchiveKeys("zz|jehiah", "~u|jehiah.c41l"), 0);
  EXPECT_LT(CompareArchiveKeys("~u|jehiah.c41l", "~u|jehiah.c41m"), 0);
  EXPECT_LT(CompareArchiveKeys("~u|jehiah.vcvn", "~u|jehiah.w0110"), 0);
}

}  // namespace
}  // namespace clickatron
