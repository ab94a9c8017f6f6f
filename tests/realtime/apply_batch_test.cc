#include "apply_batch.h"

#include <gtest/gtest.h>

#include "clickatron/key_codec.h"
#include "clickatron/record.h"
#include "clickatron/unique_sketch.h"
#include "clickatron/ymdh.h"

namespace clickatron::realtime {
namespace {

// From the seed: c3p1 is 2012-03-25 01:00 UTC.
const int64_t kMarch25 = DaysFromCivil({2012, 3, 25});

TEST(ParseBatchTest, ParsesCountersWithTheirDayAndLookups) {
  const std::string hash = Hash12("http://www.facebook.com/");
  const std::string body = "u|jehiah.c3p1,5\nc.u|jehiah.US.c3p1,4\nl|" + hash + ",http://www.facebook.com/\n" +
                           "u|jehiah.c3q0,2\n";
  Result<ParsedBatch> batch = ParseBatch(body);
  ASSERT_TRUE(batch.ok()) << batch.status().ToString();
  ASSERT_EQ(batch->lines.size(), 4u);
  EXPECT_EQ(batch->counters, 3u);
  EXPECT_EQ(batch->lookups, 1u);
  EXPECT_EQ(batch->lines[0].key, "u|jehiah.c3p1");
  EXPECT_EQ(batch->lines[0].delta, 5);
  EXPECT_EQ(batch->lines[0].day, kMarch25);
  EXPECT_EQ(batch->lines[1].delta, 4);
  EXPECT_TRUE(batch->lines[2].lookup);
  EXPECT_EQ(batch->lines[2].key, "l|" + hash);
  EXPECT_EQ(batch->lines[2].value, "http://www.facebook.com/");
  // c3q0 = 2012-03-26 00:00: the next day.
  EXPECT_EQ(batch->lines[3].day, kMarch25 + 1);
}

TEST(ParseBatchTest, LastNewlineIsOptional) {
  Result<ParsedBatch> with = ParseBatch("u|a.c3p1,1\nu|b.c3p1,2\n");
  Result<ParsedBatch> without = ParseBatch("u|a.c3p1,1\nu|b.c3p1,2");
  ASSERT_TRUE(with.ok());
  ASSERT_TRUE(without.ok());
  EXPECT_EQ(with->lines.size(), 2u);
  EXPECT_EQ(without->lines.size(), 2u);
}

TEST(ParseBatchTest, EmptyBodyIsAnEmptyBatch) {
  Result<ParsedBatch> batch = ParseBatch("");
  ASSERT_TRUE(batch.ok());
  EXPECT_TRUE(batch->lines.empty());
}

void ExpectBadLine(const std::string& body, const std::string& line_number) {
  Result<ParsedBatch> batch = ParseBatch(body);
  ASSERT_FALSE(batch.ok()) << body;
  EXPECT_EQ(batch.status().reason(), "BAD_LINE");
  EXPECT_EQ(batch.status().HttpStatus(), 400);
  EXPECT_EQ(batch.status().message().rfind("line " + line_number + ":", 0), 0u) << batch.status().message();
}

TEST(ParseBatchTest, BadLinesAreNamedByNumber) {
  ExpectBadLine("u|a.c3p1,1\nnot a line\n", "2");
  ExpectBadLine("u|a.c3p1,1\n\nu|b.c3p1,1\n", "2");        // empty line inside
  ExpectBadLine("u|a.c3p1,x\n", "1");                       // not a number
  ExpectBadLine("u|a.c3p1,1\nu|a.c3p1,1\r\n", "2");         // CR is not part of the format
  ExpectBadLine("u|a.c3pz,1\n", "1");                       // not an hour
  ExpectBadLine("u|a.c3p1,1\nu|b.c3p1,99999999999999999999\n", "2");  // overflows int64
  ExpectBadLine("l|AAAAAAAAAAA=,not the value of that hash\n", "1");
}

TEST(ParseBatchTest, DeltasMustBePositive) {
  ExpectBadLine("u|a.c3p1,0\n", "1");
  ExpectBadLine("u|a.c3p1,1\nu|a.c3p1,-3\n", "2");
}

std::string SketchText(std::initializer_list<std::string_view> tokens) {
  UniqueSketch sketch;
  for (std::string_view token : tokens) sketch.Add(HashVisitor(token));
  return sketch.ToText();
}

TEST(ParseBatchTest, AUniqueLineAfterItsCounterIsMarkedAndTheOthersAreNot) {
  const std::string two = SketchText({"a", "b"});
  const std::string body = "u|k.c3p1,2\n~u|k.c3p1," + two + "\n" +  // the API's shape
                           "~u|k.c3p1," + SketchText({"c"}) + "\n" +  // after a unique line
                           "u|k.c3p1,1\n~u|kk.c3p1," + two + "\n" +   // after another key's counter
                           "u|kk.c3p1,1\n~u|k.c3p1," + two + "\n" +   // a key that is a prefix of it
                           "c.u|k.JP.c3q0,1\n~c.u|k.JP.c3q0," + two + "\n";  // a subtotal, the next day
  Result<ParsedBatch> batch = ParseBatch(body);
  ASSERT_TRUE(batch.ok()) << batch.status().ToString();
  ASSERT_EQ(batch->lines.size(), 9u);
  EXPECT_EQ(batch->uniques, 5u);
  EXPECT_EQ(batch->counters, 4u);
  const std::vector<bool> follows = {false, true, false, false, false, false, false, false, true};
  for (size_t i = 0; i < follows.size(); ++i) {
    EXPECT_EQ(batch->lines[i].follows_its_counter, follows[i]) << "line " << i + 1;
  }
  // Riders and the others carry the same key, day and sketch.
  EXPECT_EQ(batch->lines[1].key, "~u|k.c3p1");
  EXPECT_EQ(batch->lines[1].day, kMarch25);
  EXPECT_EQ(batch->sketches[batch->lines[1].sketch].Estimate(), 2u);
  EXPECT_EQ(batch->lines[8].key, "~c.u|k.JP.c3q0");
  EXPECT_EQ(batch->lines[8].day, kMarch25 + 1);
  EXPECT_EQ(batch->lines[2].key, "~u|k.c3p1");
  EXPECT_EQ(batch->lines[2].day, kMarch25);
  EXPECT_EQ(batch->lines[4].key, "~u|kk.c3p1");
  EXPECT_EQ(batch->lines[6].key, "~u|k.c3p1");
}

TEST(ParseBatchTest, ABadSketchAfterItsCounterIsRefusedInTheSameWords) {
  // The same bad sketch, alone and after its counter: the same message, but
  // for the line number.
  for (const std::string& bad : std::vector<std::string>{"", "x", "e!!!", SketchText({"a"}) + "="}) {
    Result<ParsedBatch> alone = ParseBatch("u|other.c3p1,1\n~u|k.c3p1," + bad + "\n");
    Result<ParsedBatch> rider = ParseBatch("u|k.c3p1,1\n~u|k.c3p1," + bad + "\n");
    ASSERT_FALSE(alone.ok()) << bad;
    ASSERT_FALSE(rider.ok()) << bad;
    EXPECT_EQ(rider.status().reason(), "BAD_LINE");
    EXPECT_EQ(rider.status().message(), alone.status().message()) << bad;
    EXPECT_EQ(rider.status().message().rfind("line 2:", 0), 0u);
  }
}

// The batch parser checks each line through views (ParseRealtimeLineView)
// and decodes sketches itself: it must refuse exactly what the core's
// ParseRealtimeLine refuses, in its words, behind the line's number.
TEST(ParseBatchTest, ABadLineIsRefusedInTheCoreParsersWords) {
  const std::string lookup_value = "x y";
  const std::vector<std::string> bad = {
      "u|a.c3p1",                                  // no comma
      "u|a.c3p1,",                                 // no count
      "u|a.c3p1,12x",                              // not a number
      "u|a.c3p1,99999999999999999999",             // past int64
      "ua.c3p1,1",                                 // no bar
      "u|a|b.c3p1,1",                              // two bars
      "u|a,1",                                     // no hour
      "u|a.zzzz,1",                                // not an hour code
      "c.u|a.c3p1,1",                              // a subtotal without its skey
      "bad ns|a.c3p1,1",                           // a namespace with a space
      "~u|a.c3p1,e!!!",                            // a sketch that is no sketch
      "l|" + Hash12(lookup_value) + ",other",      // a lookup under another value's hash
      "l|short,x",                                 // not a hash
      "~l|" + Hash12(lookup_value) + ",x",         // a lookup has no unique record
  };
  for (const std::string& line : bad) {
    Result<RealtimeLine> core = ParseRealtimeLine(line);
    ASSERT_FALSE(core.ok()) << line;
    Result<ParsedBatch> batch = ParseBatch(line + "\n");
    ASSERT_FALSE(batch.ok()) << line;
    EXPECT_EQ(batch.status().reason(), "BAD_LINE") << line;
    EXPECT_EQ(batch.status().message(), "line 1: " + core.status().message()) << line;
  }
}

TEST(TargetDaysTest, LookupsGoToTheLookupDay) {
  const std::string hash = Hash12("x y");
  const std::string body = "u|a.c3p1,1\nl|" + hash + ",x y\nu|a.c3q0,1\nu|b.c3p2,1\n";
  Result<ParsedBatch> batch = ParseBatch(body);
  ASSERT_TRUE(batch.ok()) << batch.status().ToString();
  EXPECT_EQ(TargetDays(*batch, kMarch25 + 10), (std::vector<int64_t>{kMarch25, kMarch25 + 1, kMarch25 + 10}));
}

}  // namespace
}  // namespace clickatron::realtime
