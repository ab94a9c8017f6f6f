#include "clickatron/query_string.h"

#include <gtest/gtest.h>

namespace clickatron {
namespace {

TEST(QueryStringTest, RepeatedNamesKeepOrder) {
  QueryArgs args;
  ASSERT_TRUE(ParseQueryString("ns=u&key=jehiah&sub=c:US&sub=r:http%3A%2F%2Fwww.facebook.com%2F", &args).ok());
  EXPECT_EQ(*args.Get("ns"), "u");
  auto subs = args.GetAll("sub");
  ASSERT_EQ(subs.size(), 2u);
  EXPECT_EQ(*subs[0], "c:US");
  EXPECT_EQ(*subs[1], "r:http://www.facebook.com/");
}

TEST(QueryStringTest, EmptyPartsAndBareNames) {
  QueryArgs args;
  ASSERT_TRUE(ParseQueryString("&&a&b=&c=1&", &args).ok());
  EXPECT_EQ(args.size(), 3u);
  EXPECT_EQ(*args.Get("a"), "");
  EXPECT_EQ(*args.Get("b"), "");
  EXPECT_EQ(*args.Get("c"), "1");
  EXPECT_EQ(args.Get("d"), nullptr);
}

TEST(QueryStringTest, MalformedEscapes) {
  for (const char* bad : {"a=%", "a=%4", "a=%4g", "%zz=1"}) {
    QueryArgs args;
    Status st = ParseQueryString(bad, &args);
    EXPECT_FALSE(st.ok()) << bad;
    EXPECT_EQ(st.reason(), "BAD_QUERY");
  }
}

TEST(QueryStringTest, EncodeDecodeRoundTripAllBytes) {
  std::string all;
  for (int c = 0; c < 256; ++c) all.push_back(static_cast<char>(c));
  std::string decoded;
  ASSERT_TRUE(PercentDecode(PercentEncode(all), &decoded));
  EXPECT_EQ(decoded, all);
}

TEST(QueryStringTest, GetSingleRefusesARepeatedParameterWithItsReason) {
  QueryArgs args;
  ASSERT_TRUE(ParseQueryString("a=1&b=2&b=3&c=", &args).ok());
  auto a = args.GetSingle("a", "INVALID_A");
  ASSERT_TRUE(a.ok());
  ASSERT_NE(*a, nullptr);
  EXPECT_EQ(**a, "1");
  auto missing = args.GetSingle("z", "INVALID_Z");
  ASSERT_TRUE(missing.ok());
  EXPECT_EQ(*missing, nullptr);
  auto empty = args.GetSingle("c", "INVALID_C");
  ASSERT_TRUE(empty.ok());
  EXPECT_EQ(**empty, "");
  auto b = args.GetSingle("b", "INVALID_B");
  ASSERT_FALSE(b.ok());
  EXPECT_EQ(b.status().reason(), "INVALID_B");
  EXPECT_EQ(b.status().message(), "b is given more than once");
}

}  // namespace
}  // namespace clickatron
