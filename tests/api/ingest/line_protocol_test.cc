// InfluxDB line protocol -> increments: syntax and escapes, the mapping of
// tags and fields to /incr parameters, timestamps in every precision, and the
// batch rules (all or nothing, "line N:", comments, CRLF, the size limit).
#include "ingest/line_protocol.h"

#include "clickatron/query_string.h"

#include <gtest/gtest.h>

#include <string>
#include <string_view>
#include <vector>

#include "clickatron/unique_sketch.h"
#include "ingest/increment_parser.h"

namespace clickatron::api {
namespace {

// 2012-04-01 03:00:00 UTC, hour code "c413" (b32 digits c=12, 4, 1, 3), as in
// increment_parser_test; an hour earlier is "c412".
constexpr int64_t kLpNow = 1333249200;

IncrementLimits LpLimits() {
  IncrementLimits l;
  l.now = kLpNow;
  l.future_margin_hours = 48;
  return l;
}

struct LpOutcome {
  Status status;
  std::vector<Increment> incs;  // what on_increment was given
};

LpOutcome LpParse(std::string_view body, LineProtocolPrecision precision = LineProtocolPrecision::kNanoseconds) {
  LpOutcome out;
  HourCache cache;
  out.status = ParseLineProtocol(body, precision, LpLimits(), &cache,
                                 [&](const Increment& inc) { out.incs.push_back(inc); });
  return out;
}

// One line that must parse; its increment.
Increment LpOne(std::string_view line, LineProtocolPrecision precision = LineProtocolPrecision::kNanoseconds) {
  LpOutcome o = LpParse(line, precision);
  EXPECT_TRUE(o.status.ok()) << line << " -> " << o.status.ToString();
  EXPECT_EQ(o.incs.size(), 1u) << line;
  return o.incs.empty() ? Increment() : o.incs.front();
}

// A key part as the client wrote it, hashed or not.
std::string LpKeyText(const IncrementKeyPart& part) { return part.hashed ? part.full : part.stored; }

bool LpStartsWith(const std::string& s, std::string_view prefix) { return s.rfind(prefix, 0) == 0; }

TEST(LineProtocolTest, ParsePrecisionTakesInfluxNames) {
  struct Case {
    std::string_view text;
    LineProtocolPrecision want;
  };
  const std::vector<Case> good = {
      {"", LineProtocolPrecision::kNanoseconds},   {"ns", LineProtocolPrecision::kNanoseconds},
      {"n", LineProtocolPrecision::kNanoseconds},  {"us", LineProtocolPrecision::kMicroseconds},
      {"u", LineProtocolPrecision::kMicroseconds}, {"ms", LineProtocolPrecision::kMilliseconds},
      {"s", LineProtocolPrecision::kSeconds},      {"m", LineProtocolPrecision::kMinutes},
      {"h", LineProtocolPrecision::kHours},
  };
  for (const Case& c : good) {
    Result<LineProtocolPrecision> p = ParsePrecision(c.text);
    ASSERT_TRUE(p.ok()) << c.text;
    EXPECT_EQ(*p, c.want) << c.text;
  }
  for (std::string_view bad : {"M", "hh", "NS", "sec", "s ", "µs"}) {
    Result<LineProtocolPrecision> p = ParsePrecision(bad);
    EXPECT_FALSE(p.ok()) << bad;
    EXPECT_EQ(p.status().reason(), "INVALID_PRECISION") << bad;
    EXPECT_EQ(p.status().code(), StatusCode::kInvalidArgument) << bad;
    // It names every name taken (a probe read "ns, us, ms, s, m, h", without n and u).
    EXPECT_NE(p.status().message().find("is not one of ns, us, ms, s, n, u, m, h"), std::string::npos)
        << p.status().message();
  }
}

// The parameters of an Influx write: what Influx 1 and 2 clients send is
// taken (only precision means anything); a misspelt or repeated one is
// refused rather than leaving the points in nanoseconds.
TEST(LineProtocolTest, InfluxWriteParametersAreTheInfluxApisOwn) {
  auto precision_of = [](std::string_view query) {
    QueryArgs args;
    EXPECT_TRUE(ParseQueryString(query, &args).ok()) << query;
    return InfluxWritePrecision(args);
  };
  Result<LineProtocolPrecision> v1 = precision_of("db=clicks&rp=autogen&consistency=one&precision=s&u=a&p=b");
  ASSERT_TRUE(v1.ok()) << v1.status().ToString();
  EXPECT_EQ(*v1, LineProtocolPrecision::kSeconds);
  Result<LineProtocolPrecision> v2 = precision_of("org=o&orgID=1&bucket=clicks&precision=ms");
  ASSERT_TRUE(v2.ok()) << v2.status().ToString();
  EXPECT_EQ(*v2, LineProtocolPrecision::kMilliseconds);
  Result<LineProtocolPrecision> none = precision_of("db=clicks");
  ASSERT_TRUE(none.ok());
  EXPECT_EQ(*none, LineProtocolPrecision::kNanoseconds);
  EXPECT_EQ(precision_of("db=clicks&precison=s").status().reason(), "UNKNOWN_PARAMETER");
  EXPECT_EQ(precision_of("db=clicks&precision=s&precision=ms").status().reason(), "INVALID_PRECISION");
  EXPECT_EQ(precision_of("db=clicks&precision=s&precision=s").status().reason(), "INVALID_PRECISION");
}

TEST(LineProtocolTest, TheSameInstantAtEveryPrecisionIsTheSameHour) {
  // 2012-04-01 02:29:59.123456789 UTC = kLpNow - 1801 s (+ a fraction): hour "c412".
  EXPECT_EQ(LpOne("u,key=a value=1i 1333247399123456789", LineProtocolPrecision::kNanoseconds).ymdh, "c412");
  EXPECT_EQ(LpOne("u,key=a value=1i 1333247399123456", LineProtocolPrecision::kMicroseconds).ymdh, "c412");
  EXPECT_EQ(LpOne("u,key=a value=1i 1333247399123", LineProtocolPrecision::kMilliseconds).ymdh, "c412");
  EXPECT_EQ(LpOne("u,key=a value=1i 1333247399", LineProtocolPrecision::kSeconds).ymdh, "c412");
  // Influx 1's coarse precisions: 22220789 minutes = 1333247340 s (02:29), and
  // 370346 hours = 1333245600 s (02:00).
  EXPECT_EQ(LpOne("u,key=a value=1i 22220789", LineProtocolPrecision::kMinutes).ymdh, "c412");
  EXPECT_EQ(LpOne("u,key=a value=1i 370346", LineProtocolPrecision::kHours).ymdh, "c412");
  // Read at the wrong precision, the same digits are another time: seconds
  // as nanoseconds are 1.3 s after the epoch, 1970-01-01 00:00 ("/0110").
  EXPECT_EQ(LpOne("u,key=a value=1i 1333247399", LineProtocolPrecision::kNanoseconds).ymdh, "/0110");
  // Floored, never rounded: the last nanosecond of 02:59:59 is still in hour 2.
  EXPECT_EQ(LpOne("u,key=a value=1i 1333249199999999999").ymdh, "c412");
  EXPECT_EQ(LpOne("u,key=a value=1i 1333249200000000000").ymdh, "c413");
  // No timestamp: limits.now.
  EXPECT_EQ(LpOne("u,key=a value=1i").ymdh, "c413");
}

TEST(LineProtocolTest, NegativeTimestampsFloorToTheSecondBefore) {
  // Truncation would make -1 ns and -999 ms second 0 (1970-01-01 00:00, a
  // valid hour); flooring makes them second -1, before the first hour code.
  EXPECT_EQ(LpOne("u,key=a value=1i 0").ymdh, "/0110");
  EXPECT_EQ(LpParse("u,key=a value=1i -1").status.reason(), "TS_OUT_OF_RANGE");
  EXPECT_EQ(LpParse("u,key=a value=1i -999", LineProtocolPrecision::kMilliseconds).status.reason(),
            "TS_OUT_OF_RANGE");
}

TEST(LineProtocolTest, ValueTakesIntegersAndWholeFloats) {
  EXPECT_EQ(LpOne("u,key=a value=5i").value, 5);
  EXPECT_EQ(LpOne("u,key=a value=7u").value, 7);
  EXPECT_EQ(LpOne("u,key=a value=5").value, 5);
  EXPECT_EQ(LpOne("u,key=a value=5.0").value, 5);
  EXPECT_EQ(LpOne("u,key=a value=5e0").value, 5);
  EXPECT_EQ(LpOne("u,key=a value=2.5e1").value, 25);
  EXPECT_EQ(LpOne("u,key=a value=1000000000i").value, kMaxIncrementValue);
  // No value field: the /incr default of 1.
  EXPECT_EQ(LpOne("u,key=a uniq=\"v\"").value, 1);
}

struct LpBadCase {
  std::string line;
  std::string reason;
};

TEST(LineProtocolTest, EachBadPointNamesItsProblem) {
  const std::vector<LpBadCase> cases = {
      // value of the wrong type or out of range
      {"u,key=a value=1.5", "INVALID_VALUE"},
      {"u,key=a value=1e300", "INVALID_VALUE"},
      {"u,key=a value=true", "INVALID_VALUE"},
      {"u,key=a value=t", "INVALID_VALUE"},
      {"u,key=a value=\"5\"", "INVALID_VALUE"},
      {"u,key=a value=abc", "INVALID_VALUE"},
      {"u,key=a value=nan", "INVALID_VALUE"},
      {"u,key=a value=0i", "INVALID_VALUE"},
      {"u,key=a value=-3i", "INVALID_VALUE"},
      {"u,key=a value=-3u", "INVALID_VALUE"},
      {"u,key=a value=1000000001i", "INVALID_VALUE"},
      {"u,key=a value=1i,value=2i", "INVALID_VALUE"},  // given twice
      // uniq must be a non-empty string
      {"u,key=a uniq=123i", "INVALID_UNIQ"},
      {"u,key=a uniq=visitor", "INVALID_UNIQ"},
      {"u,key=a uniq=\"\"", "INVALID_UNIQ"},
      // fields other than value and uniq
      {"u,key=a temperature=82", "UNKNOWN_FIELD"},
      {"u,key=a value=1i,ts=5i", "UNKNOWN_FIELD"},
      // what ParseIncrement checks, reached through the mapping
      {"u,c=US value=1i", "MISSING_ARG_KEY"},
      {"u value=1i", "MISSING_ARG_KEY"},
      {"u,key=a,key=b value=1i", "INVALID_KEY"},
      {"toolongnamespace,key=a value=1i", "INVALID_NS"},
      {"l,key=a value=1i", "INVALID_NS"},  // reserved for lookups
      {"u,key=a,c=US,c=JP value=1i", "INVALID_SUB"},
      {"u,key=a,l=x value=1i", "INVALID_SUB"},
      {"u,key=a,c:x=US value=1i", "INVALID_SUB"},  // ':' would split as sub=c:x:US
      {"u,key=a value=1i " + std::to_string(kLpNow + 48 * 3600 + 1) + "000000000", "TS_TOO_FAR_IN_FUTURE"},
      // timestamps
      {"u,key=a value=1i 12.5", "INVALID_TS"},
      {"u,key=a value=1i abc", "INVALID_TS"},
      {"u,key=a value=1i 1333245600s", "INVALID_TS"},
      {"u,key=a value=1i +1333245600", "INVALID_TS"},
      {"u,key=a value=1i 99999999999999999999", "INVALID_TS"},  // over int64
      // syntax
      {"u,key=a", "INVALID_LINE_PROTOCOL"},   // no field set
      {"u,key=a ", "INVALID_LINE_PROTOCOL"},  // still none
      {"u,key=a value", "INVALID_LINE_PROTOCOL"},
      {"u,key=a value=", "INVALID_LINE_PROTOCOL"},
      {"u,key=a value=1i,", "INVALID_LINE_PROTOCOL"},
      {"u,key=a value=1i,,uniq=\"v\"", "INVALID_LINE_PROTOCOL"},
      {"u,key= value=1i", "INVALID_LINE_PROTOCOL"},  // empty tag value
      {"u,key value=1i", "INVALID_LINE_PROTOCOL"},
      {"u,,key=a value=1i", "INVALID_LINE_PROTOCOL"},
      {"u,key=a, value=1i", "INVALID_LINE_PROTOCOL"},
      {"u,key=a=b value=1i", "INVALID_LINE_PROTOCOL"},
      {",key=a value=1i", "INVALID_LINE_PROTOCOL"},  // no measurement
      {"u,key=a uniq=\"abc", "INVALID_LINE_PROTOCOL"},
      {"u,key=a uniq=\"abc\\\"", "INVALID_LINE_PROTOCOL"},  // the only closing quote is escaped
      {"u,key=a uniq=\"abc\"def", "INVALID_LINE_PROTOCOL"},
      {"u,key=a value=1i 1333245600 5", "INVALID_LINE_PROTOCOL"},
  };
  for (const LpBadCase& c : cases) {
    LpOutcome o = LpParse(c.line);
    EXPECT_FALSE(o.status.ok()) << c.line;
    EXPECT_EQ(o.status.reason(), c.reason) << c.line << " -> " << o.status.ToString();
    EXPECT_EQ(o.status.code(), StatusCode::kInvalidArgument) << c.line;
    EXPECT_TRUE(LpStartsWith(o.status.message(), "line 1: ")) << o.status.message();
    EXPECT_TRUE(o.incs.empty()) << c.line;
  }
}

TEST(LineProtocolTest, MessagesSayWhatIsWrong) {
  EXPECT_NE(LpParse("u,key=a temperature=82").status.message().find("temperature"), std::string::npos);
  EXPECT_NE(LpParse("u,key=a uniq=\"abc").status.message().find("closing quote"), std::string::npos);
  EXPECT_NE(LpParse("u,key= value=1i").status.message().find("empty value"), std::string::npos);
  EXPECT_NE(LpParse("u,key=a").status.message().find("no field set"), std::string::npos);
  EXPECT_NE(LpParse("u,key=a=b value=1i").status.message().find("unescaped '='"), std::string::npos);
  // An escaped field key is unescaped before it is named.
  EXPECT_NE(LpParse("u,key=a val\\ ue=1i").status.message().find("\"val ue\""), std::string::npos);
}

TEST(LineProtocolTest, TagsBecomeKeyAndSubsInAnyOrder) {
  // The key tag in the middle; a ':' in a tag value belongs to the subtotal key.
  Increment inc = LpOne("u,c=US,key=jehiah,r=http://www.facebook.com/ value=3i", LineProtocolPrecision::kSeconds);
  EXPECT_EQ(inc.ns, "u");
  EXPECT_EQ(inc.tkey.stored, "jehiah");
  EXPECT_EQ(inc.value, 3);
  ASSERT_EQ(inc.subs.size(), 2u);
  EXPECT_EQ(inc.subs[0].first, "c");
  EXPECT_EQ(inc.subs[0].second.stored, "US");
  EXPECT_EQ(inc.subs[1].first, "r");
  // The seed's hash of this referrer (increment_parser_test).
  EXPECT_EQ(inc.subs[1].second.stored, "h0aMB8AuNw4=");
  EXPECT_TRUE(inc.subs[1].second.hashed);
  EXPECT_EQ(inc.subs[1].second.full, "http://www.facebook.com/");
  EXPECT_FALSE(inc.has_visitor);
}

TEST(LineProtocolTest, EscapesInNamesAndTagValues) {
  // An escaped space and comma stay in the tag value (and make it hashed).
  Increment inc = LpOne("u,key=big\\ red\\,car,c=a\\=b value=1i");
  EXPECT_TRUE(inc.tkey.hashed);
  EXPECT_EQ(inc.tkey.full, "big red,car");
  ASSERT_EQ(inc.subs.size(), 1u);
  EXPECT_EQ(inc.subs[0].first, "c");
  EXPECT_EQ(LpKeyText(inc.subs[0].second), "a=b");
  // A backslash before anything else is a literal backslash.
  EXPECT_EQ(LpKeyText(LpOne("u,key=a\\b value=1i").tkey), "a\\b");
  // An escaped tag key: "c\ x" is one (invalid) subtotal namespace, not a split.
  EXPECT_EQ(LpParse("u,key=a,c\\ x=US value=1i").status.reason(), "INVALID_SUB");
  // Escaped comma and space in the measurement are part of it; unescaped,
  // "u\" would be the measurement and "x,key=a" a tag.
  LpOutcome o = LpParse("u\\,x,key=a value=1i");
  EXPECT_EQ(o.status.reason(), "INVALID_NS");
  EXPECT_NE(o.status.message().find("\"u,x\""), std::string::npos) << o.status.message();
  o = LpParse("u\\ x,key=a value=1i");
  EXPECT_EQ(o.status.reason(), "INVALID_NS");
  EXPECT_NE(o.status.message().find("\"u x\""), std::string::npos) << o.status.message();
}

TEST(LineProtocolTest, UniqIsAStringWithEscapes) {
  Increment inc = LpOne("u,key=a uniq=\"visitor-\\\"123\\\"\"");
  EXPECT_TRUE(inc.has_visitor);
  EXPECT_EQ(inc.visitor, HashVisitor("visitor-\"123\""));
  EXPECT_EQ(inc.value, 1);
  // \\ is one backslash; a space and a comma inside quotes do not end the field.
  inc = LpOne("u,key=a uniq=\"a\\\\b c,d\",value=2i");
  EXPECT_EQ(inc.visitor, HashVisitor("a\\b c,d"));
  EXPECT_EQ(inc.value, 2);
  // Two different tokens, two different visitors.
  EXPECT_NE(LpOne("u,key=a uniq=\"x\"").visitor, LpOne("u,key=a uniq=\"y\"").visitor);
}

TEST(LineProtocolTest, SameIncrementAsTheIncrDoor) {
  std::vector<Increment> incr;
  ASSERT_TRUE(ParseIncrementBatch("ns=u&key=jehiah&ts=1333245600&value=4&sub=c:US&uniq=v1", LpLimits(), 1024, &incr)
                  .ok());
  ASSERT_EQ(incr.size(), 1u);
  Increment lp = LpOne("u,c=US,key=jehiah value=4i,uniq=\"v1\" 1333245600000", LineProtocolPrecision::kMilliseconds);
  EXPECT_EQ(lp.ns, incr[0].ns);
  EXPECT_EQ(lp.tkey.stored, incr[0].tkey.stored);
  EXPECT_EQ(lp.ymdh, incr[0].ymdh);
  EXPECT_EQ(lp.value, incr[0].value);
  EXPECT_EQ(lp.visitor, incr[0].visitor);
  ASSERT_EQ(lp.subs.size(), 1u);
  EXPECT_EQ(lp.subs[0].second.stored, incr[0].subs[0].second.stored);
}

TEST(LineProtocolTest, BodyWithCommentsBlankLinesAndCrlf) {
  // CRLF: without dropping the '\r', "2i\r" would not be a number,
  // "1333245600\r" not a timestamp and "\"v\"\r" not a closed string.
  LpOutcome o = LpParse("# clicks\r\n\r\nu,key=a value=2i\r\n  # indented comment\r\n"
                        "u,key=b value=1i 1333245600\r\nu,key=c uniq=\"v\"\r\n",
                        LineProtocolPrecision::kSeconds);
  ASSERT_TRUE(o.status.ok()) << o.status.ToString();
  ASSERT_EQ(o.incs.size(), 3u);
  EXPECT_EQ(o.incs[0].tkey.stored, "a");
  EXPECT_EQ(o.incs[0].value, 2);
  EXPECT_EQ(o.incs[1].tkey.stored, "b");
  EXPECT_EQ(o.incs[1].ymdh, "c412");
  EXPECT_EQ(o.incs[2].tkey.stored, "c");
  EXPECT_EQ(o.incs[2].visitor, HashVisitor("v"));
  // A line may end without a line break.
  o = LpParse("u,key=a value=1i\nu,key=b value=1i");
  ASSERT_TRUE(o.status.ok()) << o.status.ToString();
  EXPECT_EQ(o.incs.size(), 2u);
}

TEST(LineProtocolTest, ReportsTheFirstBadPhysicalLine) {
  // Line 2 is blank and still counted.
  LpOutcome o = LpParse("u,key=a value=1i\n\nu,key=b value=1.5\nu,key=c value=x\n");
  EXPECT_FALSE(o.status.ok());
  EXPECT_EQ(o.status.reason(), "INVALID_VALUE");
  EXPECT_TRUE(LpStartsWith(o.status.message(), "line 3: value ")) << o.status.message();
  // Comment lines count too.
  o = LpParse("# header\nu,key=a value=1i\nu,key=b");
  EXPECT_EQ(o.status.reason(), "INVALID_LINE_PROTOCOL");
  EXPECT_TRUE(LpStartsWith(o.status.message(), "line 3: ")) << o.status.message();
}

TEST(LineProtocolTest, AllOrNothingIsTheCallersToKeep) {
  // Good lines before the bad one were handed to on_increment; the status
  // says the batch failed, so the caller applies none of them.
  LpOutcome o = LpParse("u,key=a value=1i\nu,key=b value=2i\nu,key=c value=0i\n");
  EXPECT_EQ(o.status.reason(), "INVALID_VALUE");
  EXPECT_TRUE(LpStartsWith(o.status.message(), "line 3: ")) << o.status.message();
  EXPECT_EQ(o.incs.size(), 2u);  // given, but not to be applied
  // Nothing after the bad line is looked at.
  o = LpParse("u,key=a value=1.5\nu,key=b value=2i\n");
  EXPECT_TRUE(o.incs.empty());
}

TEST(LineProtocolTest, BodyLimits) {
  // One too many; the comment line counts as a line, not as an increment.
  std::string body = "# c\n";
  for (size_t i = 0; i <= kMaxBatchIncrements; ++i) body += "u,key=a value=1i\n";
  LpOutcome o = LpParse(body);
  EXPECT_EQ(o.status.reason(), "BODY_TOO_LARGE");
  EXPECT_TRUE(LpStartsWith(o.status.message(), "line " + std::to_string(kMaxBatchIncrements + 2) + ": "))
      << o.status.message();
  body.resize(body.size() - std::string("u,key=a value=1i\n").size());  // exactly the limit is fine
  o = LpParse(body);
  EXPECT_TRUE(o.status.ok()) << o.status.ToString();
  EXPECT_EQ(o.incs.size(), kMaxBatchIncrements);

  o = LpParse("u,key=a value=1i\nu,key=" + std::string(kMaxIncrementLineBytes, 'x') + " value=1i\n");
  EXPECT_EQ(o.status.reason(), "LINE_TOO_LONG");
  EXPECT_TRUE(LpStartsWith(o.status.message(), "line 2: ")) << o.status.message();
}

TEST(LineProtocolTest, EmptyBodyHasNoIncrements) {
  LpOutcome o = LpParse("\n\r\n# only a comment\n");
  EXPECT_TRUE(o.status.ok());
  EXPECT_TRUE(o.incs.empty());
}

}  // namespace
}  // namespace clickatron::api
