// GET /mfwmatch on a real clickatron-realtime: several prefixes in one
// request answer the union of their records once, sorted; each prefix's
// share of the lines is what /fwmatch of that prefix answers.
#include <gtest/gtest.h>

#include <map>

#include "daemon_fixture.h"

namespace clickatron::realtime::testing {
namespace {

class MfwmatchIntegrationTest : public StartedDaemonTest {
 protected:
  void SetUp() override {
    ASSERT_NO_FATAL_FAILURE(StartedDaemonTest::SetUp());
    std::string body;
    int64_t v = 1;
    for (const char* tkey : {"a", "ab", "b"}) {
      for (int64_t day : {today_ - 1, today_}) {
        for (int hour : {3, 4}) {
          for (const std::string& key : {TotalKey(tkey, day, hour), SubtotalKey("c", tkey, "US", day, hour)}) {
            body += key + "," + std::to_string(v) + "\n";
            oracle_[key] += v++;
          }
        }
      }
    }
    nlohmann::json r = daemon_.Incr("api-0", 1, body);
    ASSERT_TRUE(r.is_object()) << daemon_.LogTail();
    ASSERT_EQ(r["status_code"], 200) << r.dump();
  }

  std::string Expected(const std::vector<std::string>& prefixes) const {
    return clickatron::testing::LinesWithAnyPrefix(oracle_, prefixes);
  }

  static std::string Target(const std::vector<std::string>& prefixes) {
    std::string t = "/mfwmatch";
    for (size_t i = 0; i < prefixes.size(); ++i) t += (i == 0 ? "?key=" : "&key=") + Q(prefixes[i]);
    return t;
  }

  std::map<std::string, int64_t> oracle_;
};

TEST_F(MfwmatchIntegrationTest, UnionOfPrefixesMatchesTheOracleAndEachFwmatch) {
  const std::vector<std::string> prefixes = {"u|b.", "u|a.", "c.u|ab.", "u|a", "u|none."};
  HttpResponse r = daemon_.Get(Target(prefixes));
  ASSERT_TRUE(r.ok()) << r.transport.ToString();
  ASSERT_EQ(r.status_code, 200) << r.body;
  EXPECT_EQ(r.body, Expected(prefixes));
  // Each prefix's lines, picked out of the union, are its own /fwmatch answer.
  for (const std::string& p : prefixes) {
    std::string mine;
    for (const std::string& line : Lines(r.body)) {
      if (line.substr(0, line.find(',')).starts_with(p)) mine += line + "\n";
    }
    EXPECT_EQ(mine, daemon_.Get("/fwmatch?key=" + Q(p)).body) << p;
  }
  // date= restricts every prefix to that day's store.
  HttpResponse one_day = daemon_.Get(Target({"u|a.", "u|b."}) + "&date=" + Date(today_ - 1));
  ASSERT_EQ(one_day.status_code, 200);
  std::string expected_day;
  for (const char* tkey : {"a", "b"}) {
    for (int hour : {3, 4}) {
      const std::string key = TotalKey(tkey, today_ - 1, hour);
      expected_day += key + "," + std::to_string(oracle_.at(key)) + "\n";
    }
  }
  EXPECT_EQ(one_day.body, expected_day);
  EXPECT_FALSE(expected_day.empty());
}

TEST_F(MfwmatchIntegrationTest, AfterSkipsTheDaysUpToIt) {
  // The days after D only: what a reader that has D from the archive asks.
  std::string expected_today;
  for (const std::string& key : {TotalKey("a", today_, 3), TotalKey("a", today_, 4), TotalKey("b", today_, 3),
                                 TotalKey("b", today_, 4)}) {
    expected_today += key + "," + std::to_string(oracle_.at(key)) + "\n";
  }
  HttpResponse many = daemon_.Get(Target({"u|a.", "u|b."}) + "&after=" + Date(today_ - 1));
  ASSERT_EQ(many.status_code, 200) << many.body;
  EXPECT_EQ(many.body, expected_today);
  HttpResponse one = daemon_.Get("/fwmatch?key=" + Q("u|a.") + "&after=" + Date(today_ - 1));
  ASSERT_EQ(one.status_code, 200) << one.body;
  EXPECT_EQ(one.body, expected_today.substr(0, expected_today.find("u|b.")));
  // After a day before every store: all of them, as without it.
  EXPECT_EQ(daemon_.Get(Target({"u|a.", "u|b."}) + "&after=" + Date(today_ - 30)).body,
            daemon_.Get(Target({"u|a.", "u|b."})).body);
  // After today: nothing (Tomorrow holds nothing here).
  EXPECT_EQ(daemon_.Get("/fwmatch?key=" + Q("u|a.") + "&after=" + Date(today_)).body, "");
}

TEST_F(MfwmatchIntegrationTest, BadRequestsAreRefused) {
  EXPECT_EQ(daemon_.Get("/mfwmatch").status_code, 400);
  EXPECT_EQ(daemon_.Get("/mfwmatch?key=u%7Ca.&date=yesterday").status_code, 400);
  EXPECT_EQ(daemon_.Get("/mfwmatch?key=u%7Ca.&after=yesterday").status_code, 400);
  EXPECT_EQ(daemon_.Get("/fwmatch?key=u%7Ca.&after=2024-02-30").status_code, 400);
  for (const char* target : {"/fwmatch?key=u%7Ca.&unite=hour", "/mfwmatch?key=u%7Ca.&key=u%7Cb.&unite="}) {
    HttpResponse bad = daemon_.Get(target);
    EXPECT_EQ(bad.status_code, 400) << target;
    EXPECT_NE(bad.body.find("INVALID_UNITE"), std::string::npos) << bad.body;
  }
  // Counters are answered as without it.
  EXPECT_EQ(daemon_.Get(Target({"u|a.", "u|b."}) + "&unite=day").body, daemon_.Get(Target({"u|a.", "u|b."})).body);
  std::vector<std::string> many;
  for (int i = 0; i < 257; ++i) many.push_back("u|k" + std::to_string(i) + ".");
  HttpResponse r = daemon_.Get(Target(many));
  EXPECT_EQ(r.status_code, 400);
  EXPECT_NE(r.body.find("TOO_MANY_KEYS"), std::string::npos) << r.body;
  many.pop_back();
  EXPECT_EQ(daemon_.Get(Target(many)).status_code, 200);
}

}  // namespace
}  // namespace clickatron::realtime::testing
