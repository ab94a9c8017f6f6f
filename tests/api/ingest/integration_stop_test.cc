// An API node stopped with SIGTERM (a restart, a deploy) while increments
// stream in: every request it took is answered 200 before it exits, and
// every request it did not take is answered 503 STOPPING, refused at
// connect, or cut off unread. So a request that got no 200 was never
// applied, and a client that sends it again counts it once. (Before, the
// requests in the window being logged were saved to the oplog and applied
// after the restart, but never answered: a retrying client doubled them.)
//
// How "applied" is decided per request: increment_stream.h (a marker key
// per request, and the shared hot keys must equal the oracle's sum).
#include <csignal>
#include <ctime>

#include "api/ingest/cluster_fixture.h"
#include "api/ingest/increment_stream.h"

namespace clickatron::api::write_testing {
namespace {

constexpr int kClients = 4;
constexpr int kRequestsPerClient = 150;
constexpr int kStops = 3;

// With read_loops = 2 an increment may arrive on the second loop and be
// handed to the first, whose answer goes back through the second.
class IntegrationWriteStopTest : public ::testing::TestWithParam<int> {};

TEST_P(IntegrationWriteStopTest, SigtermAnswersEveryRequestItTook) {
  ClusterSpec spec = WriteCluster::Spec(kStreamShards);
  spec.api.SetInt("read_loops", GetParam());
  WriteCluster c(spec);
  c.StartAll();
  Stream stream(c, "", kClients, kRequestsPerClient, static_cast<int64_t>(std::time(nullptr)));
  stream.Run();
  for (int stop = 1; stop <= kStops; ++stop) {
    // Mid-stream: clients are sending, some requests wait for the oplog.
    ASSERT_TRUE(WaitFor([&] { return stream.done() >= stop * stream.total() / (kStops + 1); },
                        std::chrono::seconds(60)));
    EXPECT_EQ(c.Stop("api-0"), 0) << "a SIGTERM stop is a clean exit\n" << c.LogTail("api-0");
    c.Start("api-0");
  }
  stream.Join();
  ASSERT_TRUE(WaitFor([&] { return c.Drained(); }, std::chrono::seconds(40))) << c.ApiStats().dump();
  const Outcomes outcomes = Verify(c, {&stream}, "after three SIGTERM restarts");
  EXPECT_EQ(outcomes.applied_unanswered, 0) << "a request the API took and did not answer: a retry would double it";
  EXPECT_EQ(outcomes.acked + outcomes.unanswered, stream.total());
  EXPECT_GT(outcomes.acked, stream.total() / 2);
}

INSTANTIATE_TEST_SUITE_P(ReadLoops, IntegrationWriteStopTest, ::testing::Values(1, 2),
                         [](const ::testing::TestParamInfo<int>& info) { return fmt::format("Loops{}", info.param); });

}  // namespace
}  // namespace clickatron::api::write_testing
