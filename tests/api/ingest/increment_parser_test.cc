// /incr validation: each bad input gets the reason that names its field; a
// batch is all or nothing and names the first bad line.
#include "ingest/increment_parser.h"

#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "clickatron/query_string.h"

// A namespace of this file's own: its names beside those of the other files
// compiled with it in one unity file (tests/CMakeLists.txt).
namespace clickatron::api::increment_parser_test {
namespace {

// 2012-04-01 03:00:00 UTC, the seed's example hour ("c41l" wants day 21; this one is c413).
constexpr int64_t kNow = 1333249200;

IncrementLimits Limits() {
  IncrementLimits l;
  l.now = kNow;
  l.future_margin_hours = 48;
  return l;
}

Status Parse(const std::string& query, Increment* out) {
  QueryArgs args;
  Status st = ParseQueryString(query, &args);
  if (!st.ok()) return st;
  HourCache cache;
  return ParseIncrement(args, Limits(), &cache, out);
}

struct BadCase {
  std::string query;
  std::string reason;
};

TEST(WriteIncrementParserTest, EachBadInputNamesItsField) {
  const std::vector<BadCase> cases = {
      {"key=jehiah", "MISSING_ARG_NS"},
      {"ns=u", "MISSING_ARG_KEY"},
      {"ns=&key=a", "INVALID_NS"},
      {"ns=toolongnamespace&key=a", "INVALID_NS"},
      {"ns=u%7Cx&key=a", "INVALID_NS"},
      {"ns=l&key=a", "INVALID_NS"},  // reserved for lookups
      {"ns=u&ns=v&key=a", "INVALID_NS"},
      {"ns=u&key=", "INVALID_KEY"},
      {"ns=u&key=a%0Ab", "INVALID_KEY"},  // a line break can never be stored
      {"ns=u&key=%FF%FE", "INVALID_KEY"},  // not UTF-8
      {"ns=u&key=a&key=b", "INVALID_KEY"},
      {"ns=u&ns=v&key=a", "INVALID_NS"},
      {"ns=u&key=a&value=1&value=2", "INVALID_VALUE"},
      {"ns=u&key=a&uniq=x&uniq=y", "INVALID_UNIQ"},
      // Each field's error at its turn: ns, key, ts, value, uniq, sub; a
      // parameter no increment takes before any of them.
      {"value=0&ts=1&ts=2&key=a&ns=u", "INVALID_TS"},
      {"uniq=&uniq=&value=x&key=a&ns=u", "INVALID_VALUE"},
      {"sub=x&uniq=&key=a&ns=u", "INVALID_UNIQ"},
      {"ns=u&ns=v&key=a&vaule=3", "UNKNOWN_PARAMETER"},
      {"ns=u&key=a&ts=abc", "INVALID_TS"},
      {"ns=u&key=a&ts=", "INVALID_TS"},
      {"ns=u&key=a&ts=1333249200.5", "INVALID_TS"},
      {"ns=u&key=a&ts=1&ts=2", "INVALID_TS"},
      {"ns=u&key=a&ts=4985971200", "TS_OUT_OF_RANGE"},  // 2128-01-01T00:00:00Z, after the last hour code
      {"ns=u&key=a&ts=-5", "TS_OUT_OF_RANGE"},
      {"ns=u&key=a&ts=" + std::to_string(kNow + 48 * 3600 + 1), "TS_TOO_FAR_IN_FUTURE"},
      {"ns=u&key=a&value=0", "INVALID_VALUE"},
      {"ns=u&key=a&value=-1", "INVALID_VALUE"},
      {"ns=u&key=a&value=1.5", "INVALID_VALUE"},
      {"ns=u&key=a&value=abc", "INVALID_VALUE"},
      {"ns=u&key=a&value=", "INVALID_VALUE"},
      {"ns=u&key=a&value=1000000001", "INVALID_VALUE"},
      {"ns=u&key=a&value=99999999999999999999999", "INVALID_VALUE"},
      {"ns=u&key=a&sub=US", "INVALID_SUB"},            // no colon
      {"ns=u&key=a&sub=:US", "INVALID_SUB"},           // empty namespace
      {"ns=u&key=a&sub=c:", "INVALID_SUB"},            // empty key
      {"ns=u&key=a&sub=c%7Cx:US", "INVALID_SUB"},      // bad namespace
      {"ns=u&key=a&sub=l:US", "INVALID_SUB"},          // reserved namespace
      {"ns=u&key=a&sub=c:US&sub=c:JP", "INVALID_SUB"},  // one subtotal namespace twice
      {"ns=u&key=a&sub=c:a%0Ab", "INVALID_SUB"},
      {"ns=u&key=a%ZZ", "BAD_QUERY"},
  };
  for (const BadCase& c : cases) {
    Increment inc;
    Status st = Parse(c.query, &inc);
    EXPECT_FALSE(st.ok()) << c.query;
    EXPECT_EQ(st.reason(), c.reason) << c.query << " -> " << st.ToString();
    EXPECT_EQ(st.code(), StatusCode::kInvalidArgument) << c.query;
  }
}

TEST(WriteIncrementParserTest, TooManySubsIsInvalidSub) {
  std::string q = "ns=u&key=a";
  for (size_t i = 0; i <= kMaxSubsPerIncrement; ++i) q += "&sub=s" + std::to_string(i) + ":x";
  Increment inc;
  QueryArgs args;
  ASSERT_TRUE(ParseQueryString(q, &args, 10000).ok());
  HourCache cache;
  Status st = ParseIncrement(args, Limits(), &cache, &inc);
  EXPECT_EQ(st.reason(), "INVALID_SUB");
}

TEST(WriteIncrementParserTest, DefaultsAreNowAndOne) {
  Increment inc;
  ASSERT_TRUE(Parse("ns=u&key=jehiah", &inc).ok());
  EXPECT_EQ(inc.ns, "u");
  EXPECT_EQ(inc.tkey.stored, "jehiah");
  EXPECT_FALSE(inc.tkey.hashed);
  EXPECT_EQ(inc.value, 1);
  // kNow = 2012-04-01 03:00 UTC: b32 digits c (12) 4 1 3.
  EXPECT_EQ(inc.ymdh, "c413");
  EXPECT_TRUE(inc.subs.empty());
}

TEST(WriteIncrementParserTest, SeedExampleWithHashedSub) {
  // The seed's example: sub r:http://www.facebook.com/ is hashed to h0aMB8AuNw4=.
  Increment inc;
  ASSERT_TRUE(Parse("ns=u&key=jehiah&ts=1333249200&value=3&sub=c:US&sub=r:http%3A%2F%2Fwww.facebook.com%2F", &inc)
                  .ok());
  EXPECT_EQ(inc.value, 3);
  ASSERT_EQ(inc.subs.size(), 2u);
  EXPECT_EQ(inc.subs[0].first, "c");
  EXPECT_EQ(inc.subs[0].second.stored, "US");
  EXPECT_FALSE(inc.subs[0].second.hashed);
  EXPECT_EQ(inc.subs[1].first, "r");
  EXPECT_EQ(inc.subs[1].second.stored, "h0aMB8AuNw4=");
  EXPECT_TRUE(inc.subs[1].second.hashed);
  EXPECT_EQ(inc.subs[1].second.full, "http://www.facebook.com/");
}

TEST(WriteIncrementParserTest, BoundaryValuesAreAccepted) {
  Increment inc;
  EXPECT_TRUE(Parse("ns=u&key=a&value=1000000000", &inc).ok());
  EXPECT_EQ(inc.value, kMaxIncrementValue);
  EXPECT_TRUE(Parse("ns=u&key=a&ts=" + std::to_string(kNow + 48 * 3600), &inc).ok());
  EXPECT_TRUE(Parse("ns=u&key=a&ts=946684800", &inc).ok());  // 2000-01-01 00:00
  EXPECT_EQ(inc.ymdh, "0110");
  EXPECT_TRUE(Parse("ns=u&key=a&ts=2012-04-01T03:00:00Z", &inc).ok());
  EXPECT_EQ(inc.ymdh, "c413");
  EXPECT_TRUE(Parse("ns=Ab_9-x&key=a", &inc).ok());
}

// A parameter an increment does not take is refused: ignored, each of these
// counted something else than meant (probe 10a: 200 for all of them).
TEST(WriteIncrementParserTest, AMisspeltParameterIsRefusedNotIgnored) {
  Increment inc;
  for (const std::string line : {"ns=u&key=a&vaule=3", "ns=u&key=a&tss=946684800", "ns=u&key=a&sbu=c:US",
                                 "ns=u&key=a&uniqe=v1", "ns=u&key=a&unknown=ignored"}) {
    Status st = Parse(line, &inc);
    EXPECT_FALSE(st.ok()) << line;
    EXPECT_EQ(st.reason(), "UNKNOWN_PARAMETER") << line;
  }
  // A cache-buster is no one's typo: taken and ignored.
  EXPECT_TRUE(Parse("ns=u&key=a&_=1796600000123", &inc).ok());
  EXPECT_EQ(inc.value, 1);
}

TEST(WriteIncrementParserTest, BatchParsesEveryLineAndSkipsBlankOnes) {
  std::vector<Increment> out;
  Status st = ParseIncrementBatch("ns=u&key=a\n\nns=u&key=b&value=2\r\n\r\nns=v&key=c&sub=c:US\n", Limits(), 1024, &out);
  ASSERT_TRUE(st.ok()) << st.ToString();
  ASSERT_EQ(out.size(), 3u);
  EXPECT_EQ(out[0].tkey.stored, "a");
  EXPECT_EQ(out[1].value, 2);
  EXPECT_EQ(out[2].ns, "v");
  EXPECT_EQ(out[2].subs.size(), 1u);
}

TEST(WriteIncrementParserTest, BatchFailsWholeAndNamesTheFirstBadLine) {
  std::vector<Increment> out;
  // Lines: 1 ok, 2 blank, 3 ok, 4 bad value, 5 bad ns.
  Status st = ParseIncrementBatch("ns=u&key=a\n\nns=u&key=b\nns=u&key=c&value=0\nns=&key=d\n", Limits(), 1024, &out);
  EXPECT_EQ(st.reason(), "INVALID_VALUE");
  EXPECT_EQ(st.message().rfind("line 4:", 0), 0u) << st.message();
  EXPECT_TRUE(out.empty());
}

TEST(WriteIncrementParserTest, BatchLineTooLong) {
  std::string body = "ns=u&key=a\nns=u&key=" + std::string(kMaxIncrementLineBytes, 'x') + "\n";
  std::vector<Increment> out;
  Status st = ParseIncrementBatch(body, Limits(), 1024, &out);
  EXPECT_EQ(st.reason(), "LINE_TOO_LONG");
  EXPECT_EQ(st.message().rfind("line 2:", 0), 0u) << st.message();
}

TEST(WriteIncrementParserTest, BatchOverTheIncrementLimitIsBodyTooLarge) {
  std::string body;
  for (size_t i = 0; i <= kMaxBatchIncrements; ++i) body += "ns=u&key=a\n";
  size_t seen = 0;
  Status st = ParseIncrementBatch(body, Limits(), 1024, [&](const Increment&) { ++seen; });
  EXPECT_EQ(st.reason(), "BODY_TOO_LARGE");
  EXPECT_EQ(st.message().rfind("line " + std::to_string(kMaxBatchIncrements + 1) + ":", 0), 0u) << st.message();
  body.resize(body.size() - std::string("ns=u&key=a\n").size());  // exactly the limit is fine
  EXPECT_TRUE(ParseIncrementBatch(body, Limits(), 1024, [](const Increment&) {}).ok());
}

TEST(WriteIncrementParserTest, BatchWithOnlyBlankLinesHasNoIncrements) {
  std::vector<Increment> out;
  EXPECT_TRUE(ParseIncrementBatch("\n\r\n\n", Limits(), 1024, &out).ok());
  EXPECT_TRUE(out.empty());
}

}  // namespace
}  // namespace clickatron::api::increment_parser_test
