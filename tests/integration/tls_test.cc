// TLS between members ([cluster] tls_cert_file, tls_key_file, tls_ca_file;
// include/clickatron/tls.h), on loopback with a CA and a certificate made
// here by the openssl command line: members serve TLS only, clients verify
// the certificate and the address, and the API node's batches reach a shard
// over TLS, again after the shard restarts (fresh TLS sessions); the nightly
// run exports, publishes and deploys over TLS.
#include <gtest/gtest.h>
#include <chrono>
#include <unistd.h>
#include <sys/socket.h>
#include <netinet/in.h>
#include <arpa/inet.h>
#include <sys/stat.h>

#include <string>

#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include "clickatron/config.h"
#include "clickatron/file_util.h"
#include "clickatron/http_client.h"
#include "clickatron/query_string.h"
#include "clickatron/tls.h"
#include "clickatron/ymdh.h"
#include "testutil/cluster.h"

namespace clickatron {
namespace {

using testing::kTestClusterSecret;
using testing::RunCommand;
using testing::WaitFor;

// openssl in a shell, in `dir`; false with its output on failure.
bool Openssl(const std::string& dir, const std::string& args, std::string* out) {
  return RunCommand({"sh", "-c", "cd '" + dir + "' && openssl " + args + " 2>&1"}, out) == 0;
}

// A CA ("ca"), and a certificate for 127.0.0.1 signed by it ("member");
// files NAME.crt and NAME.key in `dir`.
bool MakeCertificates(const std::string& dir, const std::string& ca, std::string* out) {
  if (!Openssl(dir,
               fmt::format("req -x509 -newkey rsa:2048 -nodes -days 2 -subj /CN={0}-ca -keyout {0}.key -out {0}.crt",
                           ca),
               out)) {
    return false;
  }
  if (!WriteFileAtomically(dir + "/san.ext", "subjectAltName = IP:127.0.0.1\n").ok()) return false;
  return Openssl(dir,
                 fmt::format("req -newkey rsa:2048 -nodes -subj /CN=member -keyout member.key -out member.csr && "
                             "openssl x509 -req -in member.csr -CA {0}.crt -CAkey {0}.key -CAcreateserial -days 2 "
                             "-extfile san.ext -out member.crt && chmod 600 member.key",
                             ca),
                 out);
}

class TlsTest : public ::testing::Test {
 protected:
  void SetUp() override {
    std::string out;
    // The certificates live in the cluster's directory, made before its file.
    ASSERT_TRUE(MakeCertificates(cluster_.dir(), "ca", &out)) << out;
    ASSERT_TRUE(Openssl(cluster_.dir(), "req -x509 -newkey rsa:2048 -nodes -days 2 -subj /CN=other -keyout other.key "
                                     "-out other.crt",
                        &out))
        << out;
    testing::ClusterSpec spec;
    spec.cluster.SetString("clock", "manual")
        .SetString("admin_token", "tls-test-admin-token")
        .SetString("tls_cert_file", cluster_ / "member.crt")
        .SetString("tls_key_file", cluster_ / "member.key")
        .SetString("tls_ca_file", cluster_ / "ca.crt");
    spec.api.SetInt("request_timeout_ms", 2000).SetInt("retry_backoff_min_ms", 20).SetInt("retry_backoff_max_ms", 200);
    const Status written = cluster_.Write(spec);
    ASSERT_TRUE(written.ok()) << written.ToString();
    ASSERT_NE(cluster_.config().client_tls, nullptr);
    api_ = cluster_.Address("api-0");
    realtime_ = cluster_.Address("realtime-0");
  }

  // Starts a member and waits until it answers /ping over TLS.
  void StartMember(const std::string& name) {
    std::string error;
    ASSERT_TRUE(cluster_.Start(name, &error)) << error;
  }
  HttpResponse Get(const HostPort& at, const std::string& target, const std::string& bearer = "") const {
    BlockingHttpClient client(cluster_.config());
    HttpRequestSpec spec;
    spec.target = target;
    spec.bearer_token = bearer;
    spec.timeout_ms = 5000;
    return client.Fetch(at, std::move(spec));
  }
  HttpResponse Post(const HostPort& at, const std::string& target, const std::string& bearer) const {
    BlockingHttpClient client(cluster_.config());
    HttpRequestSpec spec;
    spec.method = "POST";
    spec.target = target;
    spec.bearer_token = bearer;
    spec.timeout_ms = 5000;
    return client.Fetch(at, std::move(spec));
  }
  // The realtime value of u|KEY at the day's first hour ("" when absent).
  std::string RealtimeValue(const std::string& key) const {
    const std::string hour = *YmdhFromUnix(*ParseDate(kDay) * 86400);
    auto r = Get(realtime_, "/get?key=" + PercentEncode("u|" + key + "." + hour));
    return r.status_code == 200 ? r.body : "";
  }

  static constexpr const char* kDay = "2024-06-01";
  testing::Cluster cluster_;
  HostPort api_, realtime_;
};

TEST_F(TlsTest, MembersServeTlsOnlyAndClientsCheckTheCaAndTheAddress) {
  StartMember("realtime-0");
  // Signed and over TLS: answered.
  EXPECT_EQ(Get(realtime_, "/watermark?source=api-0").status_code, 200);

  HttpRequestSpec ping;
  ping.target = "/ping";
  ping.timeout_ms = 5000;
  // Plain HTTP gets no HTTP answer at all.
  const HttpResponse plain = BlockingHttpClient(kTestClusterSecret).Fetch(realtime_, ping);
  EXPECT_FALSE(plain.ok()) << plain.status_code << " " << plain.body;

  // A client trusting another CA refuses the member's certificate.
  auto other = TlsContext::ForClient({"", "", cluster_ / "other.crt"});
  ASSERT_TRUE(other.ok()) << other.status().ToString();
  // Why is said: not "connection closed by peer", which reads as the
  // member being down.
  const HttpResponse other_ca = BlockingHttpClient(kTestClusterSecret, *other).Fetch(realtime_, ping);
  EXPECT_FALSE(other_ca.ok());
  EXPECT_NE(other_ca.transport.message().find("certificate was not accepted"), std::string::npos)
      << other_ca.transport.ToString();

  // The certificate names 127.0.0.1 only: the same server reached as
  // "localhost" is refused (the address is checked, not just the CA).
  const HttpResponse by_name = BlockingHttpClient(cluster_.config()).Fetch(HostPort{"localhost", realtime_.port}, ping);
  EXPECT_FALSE(by_name.ok());
  EXPECT_NE(by_name.transport.message().find("certificate was not accepted"), std::string::npos)
      << by_name.transport.ToString();
  EXPECT_EQ(BlockingHttpClient(cluster_.config()).Fetch(realtime_, ping).status_code, 200);
}

// A client that trickles its TLS handshake a byte at a time never sends a
// request byte, so no request deadline started: it held its connection for
// as long as it liked (a few thousand fill max_connections). The handshake
// now starts the deadline: such a connection is closed once it passes.
TEST_F(TlsTest, AHandshakeTrickledAByteAtATimeIsCutAtTheRequestDeadline) {
  testing::ClusterSpec spec = cluster_.spec();
  spec.http.SetInt("request_deadline_seconds", 2).SetInt("timeout_seconds", 60);
  ASSERT_TRUE(cluster_.Write(spec).ok());
  StartMember("realtime-0");
  const int fd = ::socket(AF_INET, SOCK_STREAM, 0);
  ASSERT_GE(fd, 0);
  sockaddr_in addr{};
  addr.sin_family = AF_INET;
  addr.sin_port = htons(realtime_.port);
  ::inet_pton(AF_INET, "127.0.0.1", &addr.sin_addr);
  ASSERT_EQ(::connect(fd, reinterpret_cast<sockaddr*>(&addr), sizeof(addr)), 0);
  const timeval wait{0, 300 * 1000};
  ::setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &wait, sizeof(wait));
  // A handshake record header announcing 512 bytes, then its body a byte at
  // a time, each well within the idle timeout.
  const unsigned char header[] = {0x16, 0x03, 0x01, 0x02, 0x00};
  ASSERT_EQ(::send(fd, header, sizeof(header), MSG_NOSIGNAL), static_cast<ssize_t>(sizeof(header)));
  const auto started = std::chrono::steady_clock::now();
  bool closed = false;
  while (!closed && std::chrono::steady_clock::now() - started < std::chrono::seconds(15)) {
    const unsigned char byte = 0x01;
    if (::send(fd, &byte, 1, MSG_NOSIGNAL) != 1) {
      closed = true;
      break;
    }
    char buf[64];
    const ssize_t n = ::recv(fd, buf, sizeof(buf), 0);
    closed = n == 0 || (n < 0 && errno != EAGAIN && errno != EWOULDBLOCK);
  }
  ::close(fd);
  EXPECT_TRUE(closed) << "a handshake trickled for 15 s is still open (request_deadline_seconds = 2)";
  // The member still answers others.
  EXPECT_EQ(Get(realtime_, "/watermark?source=api-0").status_code, 200);
}

// Over TLS no raw answer can be written on a request's head: a body
// declared over max_body_bytes is read and thrown away by libevent, which
// then answers 413 (a real client, curl, with and without waiting for
// 100 Continue).
TEST_F(TlsTest, ABodyDeclaredOverTheBoundIsAnswered413OverTls) {
  StartMember("realtime-0");
  StartMember("api-0");
  const std::string big = cluster_ / "big.txt";
  ASSERT_TRUE(WriteFileAtomically(big, std::string(70u << 20, 'a')).ok());  // over the default 64 MiB
  for (const std::string expect : {"", "-H 'Expect:'"}) {
    std::string out;
    const int rc = RunCommand({"sh", "-c",
                               fmt::format("curl -s -o /dev/null -w '%{{http_code}}' --max-time 60 --cacert '{}' {} "
                                           "--data-binary @'{}' https://{}/incr",
                                           cluster_ / "ca.crt", expect, big, api_.ToString())},
                              &out);
    EXPECT_EQ(rc, 0) << out;
    EXPECT_EQ(out, "413") << expect;
  }
  // And the bytes thrown away were not held against the bound.
  const nlohmann::json stats = nlohmann::json::parse(Get(api_, "/stats").body, nullptr, false);
  ASSERT_TRUE(stats.is_object());
  EXPECT_EQ(stats["data"]["connections"]["refused_bytes_in_flight"], 0) << stats["data"]["connections"].dump();
  EXPECT_EQ(stats["data"]["connections"]["refused_too_large"], 2) << stats["data"]["connections"].dump();
}

TEST_F(TlsTest, TheApiNodesBatchesReachAShardOverTlsAlsoAfterTheShardRestarts) {
  StartMember("realtime-0");
  ASSERT_EQ(Post(realtime_, std::string("/rotate?today=") + kDay, "tls-test-admin-token").status_code, 200);
  StartMember("api-0");
  const int64_t ts = *ParseDate(kDay) * 86400 + 60;
  for (int i = 0; i < 5; ++i) {
    ASSERT_EQ(Get(api_, fmt::format("/incr?ns=u&key=secure&ts={}", ts)).status_code, 200);
  }
  ASSERT_TRUE(WaitFor([&] { return RealtimeValue("secure") == "5\n"; })) << RealtimeValue("secure");

  // The API node's pooled TLS connections die with the shard; the next
  // batches need new TLS sessions.
  ASSERT_EQ(cluster_.Stop("realtime-0"), 0);
  StartMember("realtime-0");
  // More batches than the API keeps connections per peer (16): every pooled
  // connection, closed ones included, carries one.
  for (int i = 0; i < 40; ++i) {
    ASSERT_EQ(Get(api_, fmt::format("/incr?ns=u&key=secure&ts={}", ts)).status_code, 200);
    ASSERT_TRUE(WaitFor([&] { return RealtimeValue("secure") == fmt::format("{}\n", 6 + i); }))
        << i << ": " << RealtimeValue("secure") << cluster_.LogTail("api-0");
  }
}

// The rebuild over TLS: the export from the realtime shard, the publish
// server the archive replica fetches the generation from, and the checks of
// every replica's manifest; then the API reads the day from the archive.
TEST_F(TlsTest, TheNightlyRunExportsPublishesAndDeploysOverTls) {
  StartMember("realtime-0");
  StartMember("archive-0");
  StartMember("api-0");
  ASSERT_EQ(Post(realtime_, std::string("/rotate?today=") + kDay, "tls-test-admin-token").status_code, 200);
  const int64_t ts = *ParseDate(kDay) * 86400 + 60;
  for (int i = 0; i < 7; ++i) {
    ASSERT_EQ(Get(api_, fmt::format("/incr?ns=u&key=nightly&ts={}", ts)).status_code, 200);
  }
  ASSERT_TRUE(WaitFor([&] { return RealtimeValue("nightly") == "7\n"; })) << RealtimeValue("nightly");
  const std::string next_day = FormatDate(*ParseDate(kDay) + 1);
  ASSERT_EQ(Post(realtime_, "/rotate?today=" + next_day, "tls-test-admin-token").status_code, 200);

  std::string out;
  ASSERT_EQ(RunCommand({testing::BinaryPath("clickatron-rebuild"), "run", "--config", cluster_.config_path(), "--date",
                        kDay},
                       &out),
            0)
      << out;
  auto manifest = Get(cluster_.Address("archive-0"), "/manifest?shard=0");
  ASSERT_EQ(manifest.status_code, 200) << manifest.body;
  auto j = nlohmann::json::parse(manifest.body, nullptr, false);
  ASSERT_TRUE(j.is_object()) << manifest.body;
  EXPECT_EQ(j["data"]["generation"], 1) << manifest.body;
  EXPECT_EQ(j["data"]["last_day"], kDay) << manifest.body;
  auto clicks = Get(api_, fmt::format("/clicks?ns=u&key=nightly&unit=day&units=1&unit_reference_ts={}", ts));
  ASSERT_EQ(clicks.status_code, 200) << clicks.body;
  auto c = nlohmann::json::parse(clicks.body, nullptr, false);
  ASSERT_TRUE(c.is_object()) << clicks.body;
  EXPECT_EQ(c["data"]["clicks"][0]["clicks"], 7) << clicks.body;
}

}  // namespace
}  // namespace clickatron
