// Sibling servers (HttpServer::NewSibling): two loops on one port, the
// sibling's own routes answered on its loop and every route of the primary
// handed to the primary's loop and answered through the sibling's connection.
// Each test pins requests to a loop by keeping one connection open (a
// connection stays with the loop that accepted it).
#include "clickatron/http_server.h"

#include <gtest/gtest.h>

#include <arpa/inet.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <unistd.h>

#include <atomic>
#include <ctime>
#include <future>
#include <map>
#include <thread>

#include "clickatron/cluster_auth.h"
#include "clickatron/unique_fd.h"
#include "testutil/testutil.h"

// A namespace of this file's own: its names beside those of the other files
// compiled with it in one unity file (tests/CMakeLists.txt).
namespace clickatron::http_server_sibling_test {
namespace {

// One keep-alive HTTP/1.1 connection, request by request.
class RawConnection {
 public:
  struct Answer {
    int status = 0;
    std::map<std::string, std::string> headers;  // names lower-cased
    std::string body;
  };

  explicit RawConnection(uint16_t port) : fd_(::socket(AF_INET, SOCK_STREAM, 0)) {
    sockaddr_in addr{};
    addr.sin_family = AF_INET;
    addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    addr.sin_port = htons(port);
    connected_ = ::connect(fd_.get(), reinterpret_cast<sockaddr*>(&addr), sizeof(addr)) == 0;
    timeval tv{10, 0};  // a test that waits longer has failed
    ::setsockopt(fd_.get(), SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof(tv));
  }
  bool connected() const { return connected_; }

  Answer Ask(const std::string& method, const std::string& target, const std::string& body = "",
             const std::string& extra_headers = "") {
    std::string request = method + " " + target + " HTTP/1.1\r\nHost: t\r\n" + extra_headers +
                          "Content-Length: " + std::to_string(body.size()) + "\r\n\r\n" + body;
    if (::send(fd_.get(), request.data(), request.size(), MSG_NOSIGNAL) != static_cast<ssize_t>(request.size())) {
      return {};
    }
    Answer a;
    size_t end;
    while ((end = buffered_.find("\r\n\r\n")) == std::string::npos) {
      if (!Fill()) return {};
    }
    std::string head = buffered_.substr(0, end);
    buffered_.erase(0, end + 4);
    a.status = std::atoi(head.substr(head.find(' ') + 1, 3).c_str());
    for (size_t pos = head.find("\r\n"); pos != std::string::npos;) {
      const size_t next = head.find("\r\n", pos + 2);
      std::string line = head.substr(pos + 2, next == std::string::npos ? std::string::npos : next - pos - 2);
      const size_t colon = line.find(':');
      if (colon != std::string::npos) {
        std::string name = line.substr(0, colon);
        for (char& c : name) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
        a.headers[name] = line.substr(line.find_first_not_of(' ', colon + 1));
      }
      pos = next;
    }
    if (a.headers.count("content-length")) {
      const size_t n = std::stoul(a.headers["content-length"]);
      while (buffered_.size() < n) {
        if (!Fill()) return {};
      }
      a.body = buffered_.substr(0, n);
      buffered_.erase(0, n);
    } else if (a.headers["transfer-encoding"] == "chunked") {
      while (true) {
        size_t eol;
        while ((eol = buffered_.find("\r\n")) == std::string::npos) {
          if (!Fill()) return {};
        }
        const size_t n = std::stoul(buffered_.substr(0, eol), nullptr, 16);
        while (buffered_.size() < eol + 2 + n + 2) {
          if (!Fill()) return {};
        }
        a.body += buffered_.substr(eol + 2, n);
        buffered_.erase(0, eol + 2 + n + 2);
        if (n == 0) break;
      }
    }
    return a;
  }

 private:
  bool Fill() {
    char buf[4096];
    const ssize_t n = ::recv(fd_.get(), buf, sizeof(buf), 0);
    if (n <= 0) return false;
    buffered_.append(buf, static_cast<size_t>(n));
    return true;
  }

  UniqueFd fd_;
  bool connected_ = false;
  std::string buffered_;
};

class HttpServerSiblingTest : public ::testing::Test {
 protected:
  void SetUp() override {
    HttpServerOptions options;
    options.daemon = "test-daemon";
    options.member = "t-0";
    options.listen = HostPort{"127.0.0.1", 0};
    options.admin_token = "sekrit";
    options.cluster_secret = kSecret;
    options.stop_on_signals = false;
    options.share_port = true;
    // A stop waits this long for a request it took (the primary's /held,
    // handed over by a sibling) before its loop ends anyway.
    options.stop_drain_timeout = drain_timeout_;
    auto created = HttpServer::Create(options);
    ASSERT_TRUE(created.ok()) << created.status().ToString();
    primary_ = std::move(created).value();
    primary_->Route("/loop", [](const HttpExchangePtr& ex) { ex->Reply(200, "primary"); }, kGet);
    // The primary's own routes: where they run, and what they saw.
    primary_->Route("/write", [this](const HttpExchangePtr& ex) {
      const bool on_primary = std::this_thread::get_id() == primary_loop_.load();
      const std::string* key = ex->args().Get("key");
      ex->AddHeader("X-Ran-On", on_primary ? "primary" : "elsewhere");
      ex->Reply(201, (key ? *key : std::string("<none>")) + "|" + ex->body() + "|" + ex->header("x-test"),
                "text/x-test");
    });
    primary_->AdminRoute("/admin", [](const HttpExchangePtr& ex) { ex->Reply(200, "done"); });
    primary_->InternalRoute("/internal", [](const HttpExchangePtr& ex) { ex->Reply(200, "member"); });
    primary_->Route("/stream", [](const HttpExchangePtr& ex) {
      // Each chunk is sent from the previous one's on_sent: on the primary's
      // loop, or the stream would stall.
      testing::StreamPieces(ex, 20, [](int i) { return std::string(3000, static_cast<char>('a' + i % 26)); });
    });
    primary_->Route("/forgotten", [](const HttpExchangePtr&) {});  // a handler that never answers
    primary_->Route("/held", [this](const HttpExchangePtr& ex) {
      held_.push_back(ex);
      held_count_ = held_.size();
    });
    primary_->AdminRoute("/admin-held", [this](const HttpExchangePtr& ex) {
      held_.push_back(ex);
      held_count_ = held_.size();
    });

    auto sibling = primary_->NewSibling();
    ASSERT_TRUE(sibling.ok()) << sibling.status().ToString();
    sibling_ = std::move(sibling).value();
    sibling_->Route("/loop", [](const HttpExchangePtr& ex) { ex->Reply(200, "sibling"); }, kGet);
    ASSERT_EQ(sibling_->port(), primary_->port());
    primary_thread_ = std::thread([this] {
      primary_loop_ = std::this_thread::get_id();
      EXPECT_TRUE(primary_->Run().ok());
    });
    sibling_thread_ = std::thread([this] { EXPECT_TRUE(sibling_->Run().ok()); });
  }

  void TearDown() override {
    if (sibling_) sibling_->Stop();
    if (sibling_thread_.joinable()) sibling_thread_.join();
    if (!primary_) return;
    primary_->RunInLoop([this] { held_.clear(); });
    primary_->Stop();
    if (primary_thread_.joinable()) primary_thread_.join();
  }

  static constexpr const char* kSecret = "0123456789abcdef0123456789abcdef";

  // A connection the kernel gave to `loop` ("primary" or "sibling"): new
  // connections are spread over the two sockets, so a handful of tries finds
  // one of each (200 give up, with odds of 2^-200 of failing by chance).
  std::unique_ptr<RawConnection> ConnectionTo(const std::string& loop) {
    for (int i = 0; i < 200; ++i) {
      auto c = std::make_unique<RawConnection>(primary_->port());
      if (!c->connected()) continue;
      ++loop_requests_;
      if (c->Ask("GET", "/loop").body == loop) return c;
    }
    return nullptr;
  }

  std::unique_ptr<HttpServer> primary_;
  std::unique_ptr<HttpServer> sibling_;
  std::thread primary_thread_;
  std::atomic<std::thread::id> primary_loop_;  // set by the primary's thread itself
  std::thread sibling_thread_;
  std::vector<HttpExchangePtr> held_;  // primary loop only
  std::atomic<size_t> held_count_{0};
  int loop_requests_ = 0;
  std::chrono::milliseconds drain_timeout_{300};  // set before SetUp by a fixture that needs another
};

// A fixture whose stops would wait a minute for a request they owe.
class HttpServerSiblingLongDrainTest : public HttpServerSiblingTest {
 protected:
  void SetUp() override {
    drain_timeout_ = std::chrono::seconds(60);
    HttpServerSiblingTest::SetUp();
  }
};

TEST_F(HttpServerSiblingTest, BothLoopsTakeConnectionsOnTheOnePort) {
  EXPECT_NE(ConnectionTo("primary"), nullptr);
  EXPECT_NE(ConnectionTo("sibling"), nullptr);
}

TEST_F(HttpServerSiblingTest, ThePrimarysRoutesRunOnItsLoopWithTheWholeRequest) {
  auto c = ConnectionTo("sibling");
  ASSERT_NE(c, nullptr);
  for (int i = 0; i < 3; ++i) {  // the connection stays usable after a forwarded answer
    auto a = c->Ask("POST", "/write?key=k" + std::to_string(i), "the body", "X-Test: hdr\r\n");
    EXPECT_EQ(a.status, 201);
    EXPECT_EQ(a.body, "k" + std::to_string(i) + "|the body|hdr");
    EXPECT_EQ(a.headers["x-ran-on"], "primary");
    EXPECT_EQ(a.headers["content-type"], "text/x-test");
    EXPECT_EQ(c->Ask("GET", "/loop").body, "sibling");
  }
}

TEST_F(HttpServerSiblingTest, AdminAndMethodRulesHoldThroughTheSibling) {
  auto c = ConnectionTo("sibling");
  ASSERT_NE(c, nullptr);
  EXPECT_EQ(c->Ask("POST", "/admin").status, 401);
  EXPECT_EQ(c->Ask("POST", "/admin", "", "Authorization: Bearer wrong\r\n").status, 401);
  auto ok = c->Ask("POST", "/admin", "", "Authorization: Bearer sekrit\r\n");
  EXPECT_EQ(ok.status, 200);
  EXPECT_EQ(ok.body, "done");
  EXPECT_EQ(c->Ask("POST", "/loop").status, 405);        // the sibling's own route
  EXPECT_EQ(c->Ask("GET", "/no-such-path").status, 404);  // neither loop has it
  EXPECT_EQ(c->Ask("GET", "/ping").status, 200);
}

TEST_F(HttpServerSiblingTest, SignedInternalRoutesVerifyThroughTheSibling) {
  auto c = ConnectionTo("sibling");
  ASSERT_NE(c, nullptr);
  const std::string address = "127.0.0.1:" + std::to_string(primary_->port());
  const std::string signature = SignRequest(kSecret, address, "POST", "/internal?x=1", "payload", std::time(nullptr));
  EXPECT_EQ(c->Ask("POST", "/internal?x=1", "payload").status, 401);
  auto tampered = c->Ask("POST", "/internal?x=1", "other payload",
                         std::string(kSignatureHeader) + ": " + signature + "\r\n");
  EXPECT_EQ(tampered.status, 401);
  auto ok = c->Ask("POST", "/internal?x=1", "payload", std::string(kSignatureHeader) + ": " + signature + "\r\n");
  EXPECT_EQ(ok.status, 200);
  EXPECT_EQ(ok.body, "member");
}

TEST_F(HttpServerSiblingTest, AStreamedAnswerArrivesWholeThroughTheSibling) {
  auto c = ConnectionTo("sibling");
  ASSERT_NE(c, nullptr);
  auto a = c->Ask("GET", "/stream");
  ASSERT_EQ(a.status, 200);
  std::string expected;
  for (int remaining = 19; remaining >= 0; --remaining) {
    expected += std::string(3000, static_cast<char>('a' + remaining % 26));
  }
  EXPECT_EQ(a.body.size(), expected.size());
  EXPECT_EQ(a.body, expected);
  EXPECT_EQ(c->Ask("GET", "/loop").body, "sibling");
}

TEST_F(HttpServerSiblingTest, AForgottenAnswerIsA500ThroughTheSibling) {
  auto c = ConnectionTo("sibling");
  ASSERT_NE(c, nullptr);
  EXPECT_EQ(c->Ask("GET", "/forgotten").status, 500);
  EXPECT_EQ(c->Ask("GET", "/loop").body, "sibling");
}

TEST_F(HttpServerSiblingTest, StatsCountBothLoopsRequests) {
  auto sib = ConnectionTo("sibling");
  auto prim = ConnectionTo("primary");
  ASSERT_NE(sib, nullptr);
  ASSERT_NE(prim, nullptr);
  for (int i = 0; i < 5; ++i) EXPECT_EQ(sib->Ask("GET", "/loop").status, 200);
  for (int i = 0; i < 3; ++i) EXPECT_EQ(prim->Ask("GET", "/loop").status, 200);
  for (int i = 0; i < 4; ++i) EXPECT_EQ(sib->Ask("POST", "/write", "x").status, 201);
  for (auto* c : {sib.get(), prim.get()}) {
    auto stats = c->Ask("GET", "/stats");
    ASSERT_EQ(stats.status, 200);
    auto j = nlohmann::json::parse(stats.body);
    EXPECT_EQ(j["data"]["endpoints"]["/loop"]["requests"], loop_requests_ + 8);
    EXPECT_EQ(j["data"]["endpoints"]["/write"]["requests"], 4);
    EXPECT_EQ(j["data"]["daemon"], "test-daemon");
  }
}

TEST_F(HttpServerSiblingTest, AnAnswerAfterTheSiblingIsGoneIsDroppedSafely) {
  auto c = ConnectionTo("sibling");
  ASSERT_NE(c, nullptr);
  // Sent without waiting: the primary holds the exchange unanswered.
  RawConnection::Answer seen;
  std::thread asker([&] { seen = c->Ask("GET", "/held"); });
  struct Join {
    std::thread& t;
    ~Join() {
      if (t.joinable()) t.join();
    }
  } join{asker};
  ASSERT_TRUE(testing::WaitFor([&] { return held_count_.load() == 1; }));
  sibling_->Stop();
  sibling_thread_.join();
  sibling_.reset();  // its loop and its connections are gone
  asker.join();
  EXPECT_EQ(seen.status, 0);  // the client saw its connection close, with no answer
  // The primary answers the held exchange now, and drops it.
  std::promise<void> done;
  primary_->RunInLoop([&] {
    for (auto& ex : held_) ex->Reply(200, "too late");
    held_.clear();
    done.set_value();
  });
  done.get_future().get();
  // The primary still serves.
  auto after = testing::HttpGet(testing::Loopback(primary_->port()), "/loop");
  EXPECT_EQ(after.status_code, 200);
  EXPECT_EQ(after.body, "primary");
}

// An admin request handed over by a sibling to its primary (an operator's
// job, which a stop gives up) does not hold the sibling's stop for its
// drain timeout, as a handed-over query would.
TEST_F(HttpServerSiblingLongDrainTest, AnAdminRequestHandedOverDoesNotHoldTheSiblingsStop) {
  auto c = ConnectionTo("sibling");
  ASSERT_NE(c, nullptr);
  RawConnection::Answer seen;
  std::thread asker([&] { seen = c->Ask("POST", "/admin-held", "", "Authorization: Bearer sekrit\r\n"); });
  ASSERT_TRUE(testing::WaitFor([&] { return held_count_.load() == 1; }));
  const auto stop_at = std::chrono::steady_clock::now();
  sibling_->Stop();
  sibling_thread_.join();
  EXPECT_LT(std::chrono::steady_clock::now() - stop_at, std::chrono::seconds(30))
      << "the sibling's stop waited for an admin request";
  sibling_.reset();
  asker.join();
}

TEST(HttpServerSharePortTest, APortSomeoneHoldsIsStillRefused) {
  HttpServerOptions options;
  options.listen = HostPort{"127.0.0.1", 0};
  options.stop_on_signals = false;
  options.share_port = true;
  auto first = HttpServer::Create(options);
  ASSERT_TRUE(first.ok()) << first.status().ToString();
  options.listen.port = (*first)->port();
  // Another process's server would join the port group without the probe.
  auto second = HttpServer::Create(options);
  ASSERT_FALSE(second.ok());
  EXPECT_NE(second.status().message().find("cannot listen"), std::string::npos) << second.status().message();

  options.listen.port = 0;
  options.share_port = false;
  auto plain = HttpServer::Create(options);
  ASSERT_TRUE(plain.ok());
  auto sibling = (*plain)->NewSibling();
  ASSERT_FALSE(sibling.ok());
  EXPECT_EQ(sibling.status().code(), StatusCode::kFailedPrecondition);
}

}  // namespace
}  // namespace clickatron::http_server_sibling_test
