// Query strings are decoded as the ecosystem encodes them
// (application/x-www-form-urlencoded: '+' is a space, %2B a '+'), checked
// with real clients: Python's urllib and curl --data-urlencode.
#include <gtest/gtest.h>

#include <string>

#include <fmt/format.h>

#include "clickatron/query_string.h"
#include "integration/cluster_fixture.h"

// A namespace of this file's own: its names beside those of the other files
// compiled with it in one unity file (tests/CMakeLists.txt).
namespace clickatron::integration::query_encoding_test {
namespace {

using clickatron::testing::RunCommand;
using clickatron::testing::WaitFor;

const std::string kDay = "2024-06-01";

class QueryEncodingTest : public StartedClusterTest {
 protected:
  QueryEncodingTest() : StartedClusterTest(kDay) {}
  std::string ApiUrl() const { return "http://" + cluster_.api().ToString(); }
};

TEST_F(QueryEncodingTest, PythonUrllibAndCurlDataUrlencodeKeysArriveAsSent) {
  const int64_t ts = UnixOfDate(kDay) + 3600;
  // urlencode turns the space into '+' and the '+' into %2B, as forms do.
  const std::string python = fmt::format(
      "import urllib.parse, urllib.request\n"
      "q = urllib.parse.urlencode({{'ns': 'u', 'key': 'a b+c', 'ts': {}, 'sub': 'c:New York'}})\n"
      "assert '+' in q and '%2B' in q, q\n"
      "print(urllib.request.urlopen('{}/incr?' + q, timeout=10).status)\n",
      ts, ApiUrl());
  std::string out;
  ASSERT_EQ(RunCommand({"python3", "-c", python}, &out), 0) << out;
  EXPECT_EQ(out, "200\n");
  // curl --data-urlencode sends the space as %20 and the '+' as %2B: both
  // clients must land on the same key.
  ASSERT_EQ(RunCommand({"curl", "-sS", "-o", "/dev/null", "-w", "%{http_code}", "-G", ApiUrl() + "/incr",
                        "--data-urlencode", "ns=u", "--data-urlencode", "key=a b+c", "--data-urlencode",
                        "ts=" + std::to_string(ts), "--data-urlencode", "sub=c:New York"},
                       &out),
            0)
      << out;
  EXPECT_EQ(out, "200");

  // Read back with our own client (which percent-encodes everything): two
  // clicks on "a b+c", none on "a b c" or "a+b+c".
  ASSERT_TRUE(WaitFor([&] { return cluster_.DayTotal("a b+c", kDay) == 2; })) << cluster_.DayTotal("a b+c", kDay);
  EXPECT_EQ(cluster_.DayTotal("a b c", kDay), 0);
  EXPECT_EQ(cluster_.DayTotal("a+b+c", kDay), 0);
  auto breakdown = cluster_.ApiGet("/breakdown?sns=c&ns=u&key=" + PercentEncode("a b+c") +
                                   "&unit=day&units=1&timezone=0&unit_reference_ts=" +
                                   std::to_string(UnixOfDate(kDay)));
  ASSERT_TRUE(breakdown["data"]["breakdown"].is_array()) << breakdown.dump();
  ASSERT_EQ(breakdown["data"]["breakdown"].size(), 1u) << breakdown.dump();
  EXPECT_EQ(breakdown["data"]["breakdown"][0]["value"], "New York") << breakdown.dump();
  EXPECT_EQ(breakdown["data"]["breakdown"][0]["clicks"], 2) << breakdown.dump();
  // One value's series: "New York" is stored as its hash (it has a space).
  for (const auto& [value, clicks] : std::vector<std::pair<std::string, int>>{{"New York", 2}, {"New York City", 0}}) {
    auto series = cluster_.ApiGet("/clicks?ns=u&key=" + PercentEncode("a b+c") + "&sns=c&skey=" +
                                  PercentEncode(value) + "&unit=day&units=1&rollup=true&timezone=0&unit_reference_ts=" +
                                  std::to_string(UnixOfDate(kDay)));
    EXPECT_EQ(series["data"]["clicks"], clicks) << value << ": " << series.dump();
  }

  // A query string written by hand with '+' for the space reads the same key.
  auto clicks = cluster_.ApiGet("/clicks?ns=u&key=a+b%2Bc&unit=day&units=1&rollup=true&timezone=0&unit_reference_ts=" +
                                std::to_string(UnixOfDate(kDay)));
  EXPECT_EQ(clicks["data"]["clicks"], 2) << clicks.dump();
}

}  // namespace
}  // namespace clickatron::integration::query_encoding_test
