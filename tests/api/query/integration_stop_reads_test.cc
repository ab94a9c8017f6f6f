// An API node stopped with SIGTERM (a restart, a deploy) while queries wait
// for a shard: every query it took is answered in full before it exits, on
// every read loop; one that reaches it during the stop is answered 503
// STOPPING. None sees its connection closed with no answer (a black-box
// probe saw three such reads cut when an API node stopped under load).
#include <gtest/gtest.h>

#include <sys/socket.h>
#include <sys/time.h>
#include <unistd.h>

#include <csignal>
#include <ctime>
#include <random>
#include <string>
#include <vector>

#include "api/query/cluster_fixture.h"

namespace clickatron::api::testing::integration_stop_reads_test {
namespace {

constexpr int64_t kDay = 86400;
constexpr int64_t kHour = 3600;
// With two loops, the chance that none of these lands on the second is
// 2^-12 (the kernel spreads connections by their address hash).
constexpr int kConnections = 12;

// Everything the connection brings until the server closes it (the request
// asks it to), waiting at most 30 s.
std::string ReadUntilClosed(int fd) {
  timeval tv{30, 0};
  ::setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof tv);
  std::string got;
  char buf[8192];
  ssize_t n;
  while ((n = ::recv(fd, buf, sizeof buf, 0)) > 0) got.append(buf, static_cast<size_t>(n));
  return got;
}

bool Send(int fd, const std::string& request) {
  return ::send(fd, request.data(), request.size(), MSG_NOSIGNAL) == static_cast<ssize_t>(request.size());
}

// kConnections connections the API has taken (spread over its loops by
// the kernel), each with one request answered, so none waits in the listen
// queue.
std::vector<int> KeptConnections(uint16_t port) {
  std::vector<int> fds;
  for (int i = 0; i < kConnections; ++i) {
    const int fd = clickatron::testing::ConnectLoopback(port);
    EXPECT_GE(fd, 0);
    if (fd < 0) break;
    fds.push_back(fd);
    char buf[512];
    EXPECT_TRUE(Send(fd, "GET /ping HTTP/1.1\r\nHost: t\r\nContent-Length: 0\r\n\r\n"));
    EXPECT_GT(::recv(fd, buf, sizeof buf, 0), 0);  // /ping's answer fits one read
  }
  return fds;
}

// SIGTERM to the API; true once it refuses new connections (its stop began).
bool SigtermTaken(DaemonProcess& api, uint16_t port) {
  if (::kill(api.pid(), SIGTERM) != 0) return false;
  return clickatron::testing::WaitFor([&] {
    const int fd = clickatron::testing::ConnectLoopback(port);
    if (fd >= 0) ::close(fd);
    return fd < 0;
  });
}

class IntegrationStopReadsTest : public ::testing::TestWithParam<int> {
 protected:
  ReadCluster cluster_{ReadCluster::Spec{
      .realtime_shards = 1, .archive_shards = 1, .replicas = 1, .request_timeout_ms = 30000, .read_loops = GetParam()}};
};

TEST_P(IntegrationStopReadsTest, QueriesTakenBeforeASigtermAreAnsweredInFull) {
  ReadCluster& cluster = cluster_;
  cluster.WriteConfig();
  const int64_t today = TestRingToday();
  ReadDataset data;
  std::mt19937_64 rng(11);
  for (int64_t h = (today - 3) * kDay; h < (today + 1) * kDay; h += kHour) {
    data.AddAtRing("u", "stopping", h, 1 + static_cast<int64_t>(rng() % 9), {}, today);
  }
  cluster.StartWithData(data, today);
  const int64_t ref = today * kDay + 20 * kHour;
  const std::string target = fmt::format("/clicks?ns=u&key=stopping&unit=day&units=5&unit_reference_ts={}", ref);
  const nlohmann::json want = ExpectedSeries(oracle::Rollup("day", 0, ref, 5, data.Hours("u", "stopping")));
  const nlohmann::json first = cluster.Api(target);
  ASSERT_EQ(first["http_status"], 200) << first.dump();
  ASSERT_EQ(first["data"]["clicks"], want) << first.dump();

  const uint16_t port = cluster.Peer("api-0").port;
  const std::vector<int> fds = KeptConnections(port);
  ASSERT_EQ(fds.size(), static_cast<size_t>(kConnections));
  // The realtime shard frozen: the queries wait for it.
  DaemonProcess& realtime = cluster.Daemon("realtime-0");
  const int64_t realtime_before = cluster.ReadFigure("realtime_requests");
  ASSERT_EQ(::kill(realtime.pid(), SIGSTOP), 0);
  const int64_t asked = static_cast<int64_t>(std::time(nullptr));
  for (int fd : fds) ASSERT_TRUE(Send(fd, "GET " + target + " HTTP/1.1\r\nHost: t\r\nConnection: close\r\n\r\n"));
  ASSERT_TRUE(clickatron::testing::WaitFor([&] { return cluster.ReadFigure("realtime_requests") > realtime_before; }));

  DaemonProcess& api = cluster.Daemon("api-0");
  ASSERT_TRUE(SigtermTaken(api, port)) << "the API kept taking connections after SIGTERM";
  ASSERT_EQ(::kill(realtime.pid(), SIGCONT), 0);

  int whole = 0;
  for (size_t i = 0; i < fds.size(); ++i) {
    const std::string answer = ReadUntilClosed(fds[i]);
    ::close(fds[i]);
    const size_t body_at = answer.find("\r\n\r\n");
    ASSERT_NE(body_at, std::string::npos) << "query " << i << " was cut off with no answer: '" << answer << "'";
    if (answer.rfind("HTTP/1.1 503", 0) == 0) {
      EXPECT_NE(answer.find("STOPPING"), std::string::npos) << answer;
      continue;
    }
    ASSERT_EQ(answer.rfind("HTTP/1.1 200", 0), 0u) << answer;
    nlohmann::json j = nlohmann::json::parse(answer.substr(body_at + 4), nullptr, false);
    ASSERT_TRUE(j.is_object()) << "query " << i << ": a partial body: " << answer;
    CheckAndStripComplete(&j["data"], asked, static_cast<int64_t>(std::time(nullptr)) + 1, target);
    EXPECT_EQ(j["data"]["clicks"], want) << answer;
    ++whole;
  }
  EXPECT_GE(whole, 1) << "no query was taken before the stop: the test tested nothing";
  EXPECT_EQ(api.Stop(), 0) << api.LogTail();
}

// Clients that keep their connections (every HTTP library's pool) and send
// on them while the node stops, on every read loop: each request is
// answered (503 STOPPING, Connection: close), none finds its connection
// closed under it; the node exits once they have closed.
TEST_P(IntegrationStopReadsTest, RequestsOnKeptConnectionsDuringTheStopAreAnsweredStopping) {
  ReadCluster& cluster = cluster_;
  cluster.WriteConfig();
  const int64_t today = TestRingToday();
  ReadDataset data;
  data.AddAtRing("u", "kept", (today - 1) * kDay, 3, {}, today);
  cluster.StartWithData(data, today);
  const uint16_t port = cluster.Peer("api-0").port;
  const std::string query = "GET /clicks?ns=u&key=kept&unit=day&units=2 HTTP/1.1\r\nHost: t\r\n\r\n";
  const std::vector<int> fds = KeptConnections(port);
  ASSERT_EQ(fds.size(), static_cast<size_t>(kConnections));
  DaemonProcess& api = cluster.Daemon("api-0");
  ASSERT_TRUE(SigtermTaken(api, port)) << "the API kept taking connections after SIGTERM";
  for (size_t i = 0; i < fds.size(); ++i) {
    ASSERT_TRUE(Send(fds[i], query));
    const std::string answer = ReadUntilClosed(fds[i]);
    ::close(fds[i]);
    EXPECT_EQ(answer.rfind("HTTP/1.1 503", 0), 0u) << "connection " << i << ": '" << answer << "'";
    EXPECT_NE(answer.find("STOPPING"), std::string::npos) << answer;
    EXPECT_NE(answer.find("Connection: close"), std::string::npos) << answer;
  }
  EXPECT_EQ(api.Stop(), 0) << api.LogTail();
}

INSTANTIATE_TEST_SUITE_P(ReadLoops, IntegrationStopReadsTest, ::testing::Values(1, 2),
                         [](const ::testing::TestParamInfo<int>& info) { return fmt::format("Loops{}", info.param); });

}  // namespace
}  // namespace clickatron::api::testing::integration_stop_reads_test
