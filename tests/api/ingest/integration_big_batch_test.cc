// Issue 53 §3: one huge /incr body neither stalls the other clients (it is
// parsed off the event loop) nor takes a gigabyte (the records one request
// may expand to are bounded: 413 TOO_MANY_RECORDS, nothing taken).
#include <atomic>
#include <ctime>
#include <string>
#include <thread>

#include "api/ingest/cluster_fixture.h"
#include "clickatron/ymdh.h"

namespace clickatron::api::write_testing {
namespace {

// `lines` increments of key `key`, each with `subs` subtotals: the shape of
// the probe's 63.8 MB body (95k lines x 64 subtotals), kept under the
// default 64 MiB body limit.
std::string BigBatchBody(const std::string& key, int64_t ts, int lines, int subs) {
  std::string line = fmt::format("ns=t&key={}&ts={}&value=1", key, ts);
  for (int s = 0; s < subs; ++s) line += fmt::format("&sub=s{}%3Av", s);
  line += '\n';
  std::string body;
  body.reserve(line.size() * static_cast<size_t>(lines));
  for (int i = 0; i < lines; ++i) body += line;
  return body;
}

TEST(IntegrationBigBatchTest, SmallRequestsAreAnsweredWhileAHugeOneIsParsedAndItIsRefusedWhole) {
  WriteCluster c;
  c.StartAll();
  const int64_t ts = static_cast<int64_t>(std::time(nullptr));
  const std::string hour = *YmdhFromUnix(ts);
  const std::string huge = BigBatchBody("huge", ts, 70'000, 64);
  ASSERT_GT(huge.size(), 50u << 20);
  ASSERT_LT(huge.size(), 64u << 20);

  std::atomic<bool> huge_answered{false};
  HttpResponse huge_answer;
  std::thread sender([&] {
    huge_answer = HttpPost(c.Api(), "/incr", huge, 120'000);
    huge_answered = true;
  });
  // Once the whole body is in and handed to the parse thread, small
  // requests go on being answered while it is parsed.
  const bool parsing = WaitFor([&] { return c.ApiStats()["write"]["parsed_off_loop"] == 1 || huge_answered; });
  int answered_meanwhile = 0;
  int small_sent = 0;
  while (parsing && !huge_answered && small_sent < 2000) {
    auto r = HttpPost(c.Api(), "/incr", fmt::format("ns=t&key=small&ts={}&value=1\n", ts), 10'000);
    EXPECT_EQ(r.status_code, 200) << r.body;
    if (r.status_code != 200) break;
    ++small_sent;
    if (!huge_answered) ++answered_meanwhile;
  }
  sender.join();
  ASSERT_TRUE(parsing) << c.ApiStats().dump();
  EXPECT_GE(answered_meanwhile, 1) << "no small request was answered while the huge body was parsed";

  // 70k x (1 + 64) records is past the bound: refused whole, nothing taken.
  EXPECT_EQ(huge_answer.status_code, 413) << huge_answer.body.substr(0, 300);
  auto j = nlohmann::json::parse(huge_answer.body, nullptr, false);
  ASSERT_FALSE(j.is_discarded()) << huge_answer.body.substr(0, 300);
  EXPECT_EQ(j["status_txt"], "TOO_MANY_RECORDS");

  // A big body within the bound is parsed off the loop too, and counts exactly.
  const std::string big = BigBatchBody("big", ts, 4'000, 8);
  ASSERT_GE(big.size(), 256u << 10);
  auto r = HttpPost(c.Api(), "/incr", big, 60'000);
  ASSERT_EQ(r.status_code, 200) << r.body;
  EXPECT_EQ(nlohmann::json::parse(r.body)["data"]["increments"], 4000);
  EXPECT_EQ(c.ApiStats()["write"]["parsed_off_loop"], 2);

  ASSERT_TRUE(WaitFor([&] { return c.Drained(); })) << c.ApiStats().dump();
  const std::map<std::string, int64_t> counters = c.Counters("t|");
  EXPECT_EQ(counters.count("t|huge." + hour), 0u);
  EXPECT_EQ(counters.at("t|small." + hour), small_sent);
  EXPECT_EQ(counters.at("t|big." + hour), 4000);
  EXPECT_EQ(c.ApiStats()["write"]["rejected_too_large"], 1);
}

}  // namespace
}  // namespace clickatron::api::write_testing
