// The statsd door: each line taken or dropped on its own, with the reason
// counted, and every field judged by ParseIncrement as /incr judges it.
#include "ingest/statsd_parser.h"

#include <gtest/gtest.h>

#include <string>
#include <vector>

namespace clickatron::api {
namespace {

// 2012-04-01 03:00:00 UTC: hour code c413 (as in increment_parser_test).
constexpr int64_t kSdNow = 1333249200;

struct SdParsed {
  StatsdPacketResult result;
  std::vector<Increment> incs;
};

SdParsed SdParse(std::string_view packet) {
  IncrementLimits limits;
  limits.now = kSdNow;
  HourCache cache;
  SdParsed out;
  out.result = ParseStatsdPacket(packet, limits, &cache, [&](const Increment& inc) { out.incs.push_back(inc); });
  return out;
}

// Each line alone must be dropped for `want`, and nothing else counted.
void SdExpectDropped(const std::vector<std::string>& lines, StatsdDrop want) {
  for (const std::string& line : lines) {
    SdParsed p = SdParse(line);
    EXPECT_EQ(p.result.taken, 0u) << line;
    EXPECT_TRUE(p.incs.empty()) << line;
    for (size_t i = 0; i < kStatsdDropCount; ++i) {
      EXPECT_EQ(p.result.dropped[i], i == static_cast<size_t>(want) ? 1u : 0u)
          << line << " reason " << StatsdDropName(static_cast<StatsdDrop>(i));
    }
  }
}

TEST(StatsdParserTest, ABadLineDoesNotDropTheOthers) {
  SdParsed p = SdParse("u.a:1|c\nu.b:2\nu.c:3|c\n");
  EXPECT_EQ(p.result.taken, 2u);
  EXPECT_EQ(p.result.sampled, 0u);
  EXPECT_EQ(p.result.Dropped(StatsdDrop::kMalformed), 1u);
  EXPECT_EQ(p.result.Dropped(StatsdDrop::kNotCounter), 0u);
  EXPECT_EQ(p.result.Dropped(StatsdDrop::kInvalid), 0u);
  ASSERT_EQ(p.incs.size(), 2u);
  EXPECT_EQ(p.incs[0].tkey.stored, "a");
  EXPECT_EQ(p.incs[0].value, 1);
  EXPECT_EQ(p.incs[1].tkey.stored, "c");
  EXPECT_EQ(p.incs[1].value, 3);
}

TEST(StatsdParserTest, OneOfEachReasonInOnePacket) {
  SdParsed p = SdParse("u.a:1|c\nu.b:1|g\nu.c:1|c|@0.5\nuc:1|c\nu.d|c\nu.e:2|c\n");
  EXPECT_EQ(p.result.taken, 3u);
  EXPECT_EQ(p.result.sampled, 1u);
  EXPECT_EQ(p.result.Dropped(StatsdDrop::kMalformed), 1u);
  EXPECT_EQ(p.result.Dropped(StatsdDrop::kNotCounter), 1u);
  EXPECT_EQ(p.result.Dropped(StatsdDrop::kInvalid), 1u);
  ASSERT_EQ(p.incs.size(), 3u);
  EXPECT_EQ(p.incs[0].tkey.stored, "a");
  EXPECT_EQ(p.incs[1].tkey.stored, "c");
  EXPECT_EQ(p.incs[1].value, 2);
  EXPECT_EQ(p.incs[2].tkey.stored, "e");
  EXPECT_EQ(p.incs[2].value, 2);
}

TEST(StatsdParserTest, NameSplitsAtTheFirstDotAndHourIsNow) {
  SdParsed p = SdParse("u.example.com:1|c");
  ASSERT_EQ(p.incs.size(), 1u);
  EXPECT_EQ(p.incs[0].ns, "u");
  // '.' is reserved in stored keys, so the key is kept as its hash, with the
  // full value for the lookup record: base64(md5("example.com")[0:8]),
  // computed with `openssl md5 -binary | head -c 8 | base64`.
  EXPECT_TRUE(p.incs[0].tkey.hashed);
  EXPECT_EQ(p.incs[0].tkey.full, "example.com");
  EXPECT_EQ(p.incs[0].tkey.stored, "Wrq9YDsieAM=");
  EXPECT_EQ(p.incs[0].value, 1);
  EXPECT_EQ(p.incs[0].ymdh, "c413");
  EXPECT_TRUE(p.incs[0].subs.empty());
  EXPECT_FALSE(p.incs[0].has_visitor);
}

TEST(StatsdParserTest, KeyMayHoldColonsTheLastOneEndsTheName) {
  SdParsed p = SdParse("u.http://x.com/a:2|c");
  ASSERT_EQ(p.incs.size(), 1u);
  EXPECT_EQ(p.incs[0].ns, "u");
  const IncrementKeyPart& key = p.incs[0].tkey;
  EXPECT_EQ(key.hashed ? key.full : key.stored, "http://x.com/a");
  EXPECT_EQ(p.incs[0].value, 2);
}

TEST(StatsdParserTest, SampleRateScalesAndRounds) {
  SdParsed p = SdParse("u.k:1|c|@0.1\nu.k:1|c|@0.3\nu.k:3|c|@0.5\nu.k:5|c|@1\nu.k:5|c|@1.0\n");
  EXPECT_EQ(p.result.taken, 5u);
  EXPECT_EQ(p.result.sampled, 3u);  // @1 and @1.0 are no sampling
  ASSERT_EQ(p.incs.size(), 5u);
  EXPECT_EQ(p.incs[0].value, 10);  // 1 / 0.1
  EXPECT_EQ(p.incs[1].value, 3);   // 1 / 0.3 = 3.33…
  EXPECT_EQ(p.incs[2].value, 6);   // 3 / 0.5
  EXPECT_EQ(p.incs[3].value, 5);
  EXPECT_EQ(p.incs[4].value, 5);
}

TEST(StatsdParserTest, CountMayBeAnyNumberRoundedToNearest) {
  SdParsed p = SdParse("u.k:1.0|c\nu.k:1.5|c\nu.k:2.4|c\nu.k:1e2|c\nu.k:1000000000|c\n");
  EXPECT_EQ(p.result.taken, 5u);
  EXPECT_EQ(p.result.sampled, 0u);
  ASSERT_EQ(p.incs.size(), 5u);
  EXPECT_EQ(p.incs[0].value, 1);
  EXPECT_EQ(p.incs[1].value, 2);  // halves away from zero
  EXPECT_EQ(p.incs[2].value, 2);
  EXPECT_EQ(p.incs[3].value, 100);
  EXPECT_EQ(p.incs[4].value, kMaxIncrementValue);
}

TEST(StatsdParserTest, TagsBecomeSubtotalsInEitherOrder) {
  SdParsed p = SdParse("u.k:1|c|#country:US|@0.5\nu.k:1|c|@0.5|#country:US\nu.k:1|c|#c:US,b:firefox\n");
  EXPECT_EQ(p.result.taken, 3u);
  EXPECT_EQ(p.result.sampled, 2u);
  ASSERT_EQ(p.incs.size(), 3u);
  for (size_t i = 0; i < 2; ++i) {
    EXPECT_EQ(p.incs[i].value, 2) << i;
    ASSERT_EQ(p.incs[i].subs.size(), 1u) << i;
    EXPECT_EQ(p.incs[i].subs[0].first, "country") << i;
    EXPECT_EQ(p.incs[i].subs[0].second.stored, "US") << i;
  }
  EXPECT_EQ(p.incs[2].value, 1);
  ASSERT_EQ(p.incs[2].subs.size(), 2u);
  EXPECT_EQ(p.incs[2].subs[0].first, "c");
  EXPECT_EQ(p.incs[2].subs[0].second.stored, "US");
  EXPECT_EQ(p.incs[2].subs[1].first, "b");
  EXPECT_EQ(p.incs[2].subs[1].second.stored, "firefox");
}

TEST(StatsdParserTest, OtherTypesEventsAndServiceChecksAreNotCounters) {
  SdExpectDropped({"u.k:1|g", "u.k:+3|g", "u.k:-3|g", "u.k:12.5|ms", "u.k:1|h", "u.k:abc|s", "u.k:1|d",
                   "u.k:1|set", "u.k:1|ms|@0.1", "_e{5,4}:title|text", "_sc|name|0"},
                  StatsdDrop::kNotCounter);
}

TEST(StatsdParserTest, NegativeZeroAndTooLargeCountsAreInvalid) {
  SdExpectDropped({"u.k:-1|c", "u.k:-5|c|@0.5", "u.k:0|c", "u.k:0|c|@0.5", "u.k:0.4|c", "u.k:1000000001|c",
                   "u.k:600000000|c|@0.5", "u.k:1|c|@1e-300", "u.k:1|c|@4.9e-324"},
                  StatsdDrop::kInvalid);
}

TEST(StatsdParserTest, NamesAndTagsParseIncrementRefusesAreInvalid) {
  SdExpectDropped({"uk:1|c", ".k:1|c", "u.:1|c", ":1|c", "toolongns.k:1|c", "l.k:1|c", "u.k:1|c|#prod",
                   "u.k:1|c|#", "u.k:1|c|#c:US,", "u.k:1|c|#c:US,c:JP", "u.k:1|c|#:US", "u.k:1|c|#c:"},
                  StatsdDrop::kInvalid);
}

TEST(StatsdParserTest, BrokenSyntaxIsMalformed) {
  SdExpectDropped({"u.k:1",            // no '|'
                   "u.k|c",            // no ':'
                   "u.k:|c",           // no count
                   "u.k:abc|c",        // count not a number
                   "u.k:+1|c", "u.k:inf|c", "u.k:nan|c", "u.k:0x10|c", "u.k:1 |c",
                   "u.k:1|",           // no type
                   "u.k:1|C",          // not a type
                   "u.k:1|c:2|c",      // etsy's several values per line
                   "u.k:1|c|",         // empty section
                   "u.k:1|c||@0.5",
                   "u.k:1|c|@0", "u.k:1|c|@-0.5", "u.k:1|c|@1.5", "u.k:1|c|@abc", "u.k:1|c|@", "u.k:1|c|@nan",
                   "u.k:1|c|@0.5|@0.5",  // a section twice
                   "u.k:1|c|#a:b|#c:d",
                   "u.k:1|c|T1333249200",     // DogStatsD timestamp: refused, not ignored
                   "u.k:1|c|c:abc123"},       // DogStatsD container id
                  StatsdDrop::kMalformed);
}

TEST(StatsdParserTest, CrlfAndBlankLinesAreTolerated) {
  SdParsed p = SdParse("u.a:1|c\r\n\r\n\nu.b:2|c|#c:US\r\n");
  EXPECT_EQ(p.result.taken, 2u);
  for (size_t n : p.result.dropped) EXPECT_EQ(n, 0u);
  ASSERT_EQ(p.incs.size(), 2u);
  EXPECT_EQ(p.incs[0].tkey.stored, "a");
  EXPECT_EQ(p.incs[1].tkey.stored, "b");
  ASSERT_EQ(p.incs[1].subs.size(), 1u);
  EXPECT_EQ(p.incs[1].subs[0].second.stored, "US");  // no '\r' left on the tag
}

TEST(StatsdParserTest, EmptyPacketsCountNothing) {
  for (std::string_view packet : {std::string_view(""), std::string_view("\n"), std::string_view("\r\n\n\r\n")}) {
    SdParsed p = SdParse(packet);
    EXPECT_EQ(p.result.taken, 0u);
    EXPECT_EQ(p.result.sampled, 0u);
    for (size_t n : p.result.dropped) EXPECT_EQ(n, 0u);
    EXPECT_TRUE(p.incs.empty());
  }
}

TEST(StatsdParserTest, TrailingNewlineIsOptional) {
  EXPECT_EQ(SdParse("u.a:1|c\n").result.taken, 1u);
  EXPECT_EQ(SdParse("u.a:1|c").result.taken, 1u);
  SdParsed p = SdParse("u.a:1|c\nu.b:1|c");
  EXPECT_EQ(p.result.taken, 2u);
  ASSERT_EQ(p.incs.size(), 2u);
  EXPECT_EQ(p.incs[1].tkey.stored, "b");
}

TEST(StatsdParserTest, DropNamesAreLabelValues) {
  EXPECT_EQ(StatsdDropName(StatsdDrop::kMalformed), "malformed");
  EXPECT_EQ(StatsdDropName(StatsdDrop::kNotCounter), "not_counter");
  EXPECT_EQ(StatsdDropName(StatsdDrop::kInvalid), "invalid");
  EXPECT_EQ(kStatsdDropCount, 3u);
}

}  // namespace
}  // namespace clickatron::api
