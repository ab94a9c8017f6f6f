// The HTTP core over a real loopback socket: routing, limits, stats, admin
// token, async answers and streaming.
#include "clickatron/http_server.h"

#include <gtest/gtest.h>

#include <cerrno>

#include <malloc.h>
#include <strings.h>
#include <sys/socket.h>
#include <sys/time.h>
#include <unistd.h>

#include <chrono>
#include <ctime>
#include <future>
#include <thread>
#include <vector>

#include "clickatron/http_client.h"
#include "testutil/testutil.h"

namespace clickatron {
namespace {

using testing::Loopback;

class HttpServerTest : public ::testing::Test {
 protected:
  void SetUp() override {
    HttpServerOptions options;
    options.daemon = "test-daemon";
    options.member = "t-0";
    options.listen = HostPort{"127.0.0.1", 0};
    options.limits.max_body_bytes = 4096;
    options.limits.max_query_args = 8;
    options.admin_token = "sekrit";
    auto created = HttpServer::Create(options);
    ASSERT_TRUE(created.ok()) << created.status().ToString();
    server_ = std::move(created).value();
    server_->Route("/echo", [](const HttpExchangePtr& ex) {
      const std::string* key = ex->args().Get("key");
      ex->AddHeader("X-Echo", "yes");
      ex->Reply(200, (key ? *key : std::string("<none>")) + "|" + ex->body());
    });
    server_->Route("/json", [](const HttpExchangePtr& ex) { ex->ReplyJson({{"n", 42}}); }, kGet);
    server_->Route("/jsontext", [](const HttpExchangePtr& ex) { ex->ReplyJsonData(R"({"n":42})"); }, kGet);
    server_->Route("/fail", [](const HttpExchangePtr& ex) {
      ex->ReplyError(Status::InvalidArgument("key is required", "MISSING_ARG_KEY"));
    });
    server_->Route("/async", [this](const HttpExchangePtr& ex) {
      // Answer from another thread through RunInLoop, as the oplog does.
      std::thread([this, ex] { server_->RunInLoop([ex] { ex->Reply(200, "later"); }); }).detach();
    });
    server_->Route("/stream", [](const HttpExchangePtr& ex) {
      testing::StreamPieces(ex, 50, [](int i) { return std::string(1000, static_cast<char>('a' + i % 26)) + "\n"; });
    });
    server_->AdminRoute("/admin", [](const HttpExchangePtr& ex) { ex->Reply(200, "done"); });
    // Starts a stream and leaves it open in held_ (loop thread only): the
    // test writes the rest.
    server_->Route("/drip", [this](const HttpExchangePtr& ex) {
      ex->StartStream(200, "text/plain");
      ex->SendChunk("first\n", nullptr);
      held_.push_back(ex);
    });
    port_ = server_->port();
    ASSERT_NE(port_, 0);
    thread_ = std::thread([this] { ASSERT_TRUE(server_->Run().ok()); });
  }
  void TearDown() override {
    server_->Stop();
    thread_.join();
  }
  HttpResponse Get(const std::string& target) { return testing::HttpGet(Loopback(port_), target); }

  // Runs `fn` on the server's loop thread and returns its result.
  template <typename Fn>
  auto OnLoop(Fn fn) {
    std::promise<decltype(fn())> done;
    auto result = done.get_future();
    server_->RunInLoop([&] { done.set_value(fn()); });
    return result.get();
  }

  std::unique_ptr<HttpServer> server_;
  std::vector<HttpExchangePtr> held_;  // /drip's exchanges, touched on the loop thread only
  uint16_t port_ = 0;
  std::thread thread_;
};

TEST_F(HttpServerTest, RoutesAndParsesRawPipesInQueries) {
  auto r = Get("/echo?key=u|jehiah.c3hh");
  ASSERT_TRUE(r.ok()) << r.transport.ToString();
  EXPECT_EQ(r.status_code, 200);
  EXPECT_EQ(r.body, "u|jehiah.c3hh|");
  EXPECT_EQ(r.Header("x-echo"), "yes");
}

// As forms and every standard client library encode: '+' is a space, %2B a '+'.
TEST_F(HttpServerTest, DecodesPercentEscapesAndPlusAsSpace) {
  auto r = Get("/echo?key=a%20b+c%7Cd%2Be");
  EXPECT_EQ(r.body, "a b c|d+e|");
}

TEST_F(HttpServerTest, BadEscapeIs400WithReason) {
  auto r = Get("/echo?key=%zz");
  EXPECT_EQ(r.status_code, 400);
  auto j = nlohmann::json::parse(r.body);
  EXPECT_EQ(j["status_txt"], "BAD_QUERY");
  EXPECT_TRUE(j["data"].is_null());
}

TEST_F(HttpServerTest, TooManyArgsIs400) {
  std::string target = "/echo?";
  for (int i = 0; i < 9; ++i) target += "a=" + std::to_string(i) + "&";
  auto r = Get(target);
  EXPECT_EQ(r.status_code, 400);
  EXPECT_EQ(nlohmann::json::parse(r.body)["status_txt"], "TOO_MANY_ARGS");
}

TEST_F(HttpServerTest, UnknownPathIs404AndWrongMethodIs405) {
  EXPECT_EQ(Get("/nope").status_code, 404);
  auto r = testing::HttpPost(Loopback(port_), "/json", "x");
  EXPECT_EQ(r.status_code, 405);
  EXPECT_EQ(nlohmann::json::parse(r.body)["status_txt"], "METHOD_NOT_ALLOWED");
  EXPECT_EQ(r.Header("allow"), "GET, HEAD");  // RFC 9110 15.5.6: which methods it takes
}

TEST_F(HttpServerTest, JsonEnvelope) {
  auto j = nlohmann::json::parse(Get("/json").body);
  EXPECT_EQ(j["status_code"], 200);
  EXPECT_EQ(j["status_txt"], "OK");
  EXPECT_EQ(j["data"]["n"], 42);
  // Data written as text gets the same envelope, byte for byte.
  auto text = Get("/jsontext");
  EXPECT_EQ(text.Header("content-type"), "application/json");
  EXPECT_EQ(text.body, Get("/json").body);
}

// Every answer names the second it was made in one Date header (RFC 1123,
// as HTTP/1.1 asks), including the streamed ones: the server writes it from
// a per-second copy instead of libevent's per-answer formatting.
TEST_F(HttpServerTest, AnswersCarryOneDateOfTheirSecond) {
  for (const std::string target : {"/json", "/stream", "/nope"}) {
    const time_t before = std::time(nullptr);
    auto r = Get(target);
    const time_t after = std::time(nullptr);
    ASSERT_TRUE(r.ok()) << target;
    int dates = 0;
    for (const auto& [name, value] : r.headers) dates += strcasecmp(name.c_str(), "date") == 0 ? 1 : 0;
    EXPECT_EQ(dates, 1) << target;
    struct tm utc {};
    const std::string date = r.Header("date");
    const char* end = strptime(date.c_str(), "%a, %d %b %Y %H:%M:%S GMT", &utc);
    ASSERT_NE(end, nullptr) << target << ": " << date;
    EXPECT_EQ(*end, '\0') << date;
    const time_t stamped = timegm(&utc);
    EXPECT_GE(stamped, before) << date;
    EXPECT_LE(stamped, after) << date;
  }
}

TEST_F(HttpServerTest, ErrorEnvelopeCarriesReasonAndStatus) {
  auto r = Get("/fail");
  EXPECT_EQ(r.status_code, 400);
  auto j = nlohmann::json::parse(r.body);
  EXPECT_EQ(j["status_code"], 400);
  EXPECT_EQ(j["status_txt"], "MISSING_ARG_KEY");
  EXPECT_TRUE(j["data"].is_null());
}

TEST_F(HttpServerTest, BodyWithinLimitIsDeliveredAndOversizedIs413) {
  auto ok = testing::HttpPost(Loopback(port_), "/echo", std::string(4000, 'x'));
  EXPECT_EQ(ok.status_code, 200);
  EXPECT_EQ(ok.body.size(), std::string("<none>|").size() + 4000);
  auto big = testing::HttpPost(Loopback(port_), "/echo", std::string(10000, 'x'));
  EXPECT_EQ(big.status_code, 413);
  // The server keeps serving after refusing.
  EXPECT_EQ(Get("/ping").status_code, 200);
}

TEST_F(HttpServerTest, AdminRouteNeedsBearerToken) {
  EXPECT_EQ(testing::HttpPost(Loopback(port_), "/admin", "").status_code, 401);
  EXPECT_EQ(testing::HttpPost(Loopback(port_), "/admin", "", 5000, "wrong").status_code, 401);
  EXPECT_EQ(testing::HttpPost(Loopback(port_), "/admin", "", 5000, "sekrit").status_code, 200);
}

// What a route with a refusal body of its own (the Influx write doors)
// refuses before the request's URI is parsed is in that shape too: two
// Content-Lengths, a raw byte in the URI (a probe got the envelope).
std::string InfluxLikeRefusal(int, std::string_view reason, std::string_view) {
  return "{\"influx_like\":\"" + std::string(reason) + "\"}";
}

TEST_F(HttpServerTest, RefusalsBeforeTheUriIsParsedTakeTheRoutesShape) {
  SetRefusalBody("/shaped-write", &InfluxLikeRefusal);
  auto raw = [&](const std::string& request) {
    const int fd = testing::ConnectLoopback(port_);
    EXPECT_GE(fd, 0);
    EXPECT_EQ(::send(fd, request.data(), request.size(), MSG_NOSIGNAL), static_cast<ssize_t>(request.size()));
    std::string got;
    char buf[4096];
    timeval tv{10, 0};
    ::setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof tv);
    for (ssize_t n; (n = ::recv(fd, buf, sizeof buf, 0)) > 0;) got.append(buf, static_cast<size_t>(n));
    ::close(fd);
    return got;
  };
  const std::string two_lengths = raw(
      "POST /shaped-write?db=x HTTP/1.1\r\nHost: t\r\nContent-Length: 2\r\nContent-Length: 3\r\n"
      "Connection: close\r\n\r\nab");
  EXPECT_NE(two_lengths.find("400"), std::string::npos) << two_lengths;
  EXPECT_NE(two_lengths.find("{\"influx_like\":\"BAD_REQUEST\"}"), std::string::npos) << two_lengths;
  const std::string raw_byte =
      raw("POST /shaped-write?db=\x01 HTTP/1.1\r\nHost: t\r\nContent-Length: 0\r\nConnection: close\r\n\r\n");
  EXPECT_NE(raw_byte.find("{\"influx_like\":\"BAD_URI\"}"), std::string::npos) << raw_byte;
  // Another path keeps the envelope.
  const std::string plain = raw(
      "POST /echo HTTP/1.1\r\nHost: t\r\nContent-Length: 2\r\nContent-Length: 3\r\nConnection: close\r\n\r\nab");
  EXPECT_NE(plain.find("\"status_txt\":\"BAD_REQUEST\""), std::string::npos) << plain;
  SetRefusalBody("/shaped-write", nullptr);
}

// The scheme is any case (RFC 9110 11.1: a probe's "bearer TOKEN" was
// refused as "a header of another scheme"); the token is exact.
TEST_F(HttpServerTest, TheBearerSchemeIsTakenInAnyCase) {
  auto admin = [&](const std::string& authorization) {
    BlockingHttpClient client;
    HttpRequestSpec spec;
    spec.method = "POST";
    spec.target = "/admin";
    spec.headers = {{"Authorization", authorization}};
    return client.Fetch(Loopback(port_), spec);
  };
  for (const std::string ok : {"Bearer sekrit", "bearer sekrit", "BEARER sekrit", "bEaReR sekrit"}) {
    EXPECT_EQ(admin(ok).status_code, 200) << ok;
  }
  for (const std::string bad : {"bearer Sekrit", "bearer  sekrit", "Bearersekrit", "Basic c2Vrcml0"}) {
    EXPECT_EQ(admin(bad).status_code, 401) << bad;
  }
  EXPECT_NE(admin("bearer").body.find("no token was sent after Bearer"), std::string::npos);
  EXPECT_NE(admin("Basic c2Vrcml0").body.find("another scheme"), std::string::npos);
  EXPECT_NE(admin("BEARER wrong").body.find("the token sent is not it"), std::string::npos);
}

TEST_F(HttpServerTest, AsyncAnswerFromAnotherThread) {
  auto r = Get("/async");
  EXPECT_EQ(r.status_code, 200);
  EXPECT_EQ(r.body, "later");
}

TEST_F(HttpServerTest, StreamsChunkedBodyInOrder) {
  auto r = Get("/stream");
  ASSERT_EQ(r.status_code, 200);
  ASSERT_EQ(r.body.size(), 50u * 1001);
  for (int i = 0; i < 50; ++i) {
    char expected = static_cast<char>('a' + (49 - i) % 26);
    EXPECT_EQ(r.body[static_cast<size_t>(i) * 1001], expected) << "chunk " << i;
  }
}

TEST_F(HttpServerTest, StatsCountRequestsAndErrorsPerEndpoint) {
  for (int i = 0; i < 3; ++i) Get("/json");
  Get("/fail");
  auto j = nlohmann::json::parse(Get("/stats").body);
  EXPECT_EQ(j["data"]["daemon"], "test-daemon");
  EXPECT_EQ(j["data"]["endpoints"]["/json"]["requests"], 3);
  EXPECT_EQ(j["data"]["endpoints"]["/json"]["errors"], 0);
  EXPECT_EQ(j["data"]["endpoints"]["/fail"]["errors"], 1);
  EXPECT_GE(j["data"]["endpoints"]["/json"]["p99_us"].get<uint64_t>(),
            j["data"]["endpoints"]["/json"]["p50_us"].get<uint64_t>());
}

TEST_F(HttpServerTest, MetricsArePrometheusText) {
  Get("/json");
  auto r = Get("/metrics");
  EXPECT_EQ(r.status_code, 200);
  EXPECT_NE(r.body.find("# TYPE clickatron_http_requests_total counter"), std::string::npos);
  EXPECT_NE(r.body.find("clickatron_http_requests_total{daemon=\"test-daemon\",member=\"t-0\",endpoint=\"/json\"} 1"),
            std::string::npos);
}

TEST_F(HttpServerTest, KeepAliveServesManyRequestsOnOneClient) {
  BlockingHttpClient client;
  for (int i = 0; i < 200; ++i) {
    HttpRequestSpec spec;
    spec.target = "/echo?key=" + std::to_string(i);
    auto r = client.Fetch(Loopback(port_), spec);
    ASSERT_EQ(r.status_code, 200);
    ASSERT_EQ(r.body, std::to_string(i) + "|");
  }
}

// A client that goes away in the middle of a streamed answer (a timeout, a
// closed tab during an export) must cost nothing once its exchange is let
// go. libevent detaches the request from the failed connection and leaves it
// to whoever was answering; if nobody frees it, every departure leaks the
// request's headers and buffers: 1,000 departures with 3 KB of headers each
// would hold >= 3 MB.
TEST_F(HttpServerTest, AClientThatLeavesAStreamCostsNoMemory) {
  const std::string request = "GET /drip HTTP/1.1\r\nHost: t\r\nX-Pad: " + std::string(3000, 'p') + "\r\n\r\n";
  const std::string chunk(16384, 'c');
  auto depart = [&](int clients) {
    std::vector<int> fds;
    for (int i = 0; i < clients; ++i) {
      const int fd = testing::ConnectLoopback(port_);
      ASSERT_GE(fd, 0);
      ASSERT_EQ(::send(fd, request.data(), request.size(), MSG_NOSIGNAL), static_cast<ssize_t>(request.size()));
      fds.push_back(fd);
    }
    // Every stream has started (headers and a first chunk are on their way).
    ASSERT_TRUE(testing::WaitFor([&] { return OnLoop([&] { return held_.size(); }) == static_cast<size_t>(clients); }));
    for (int fd : fds) ::close(fd);
    // The server learns of a departure when a write fails: keep writing.
    ASSERT_TRUE(testing::WaitFor([&] {
      return OnLoop([&] {
        bool all_gone = true;
        for (const auto& ex : held_) {
          if (ex->alive()) {
            ex->SendChunk(chunk, nullptr);
            all_gone = false;
          }
        }
        return all_gone;
      });
    })) << "the server did not notice its clients leave";
    OnLoop([&] {
      held_.clear();
      return true;
    });
  };
  depart(100);  // warm up: arenas, connection tables
  const size_t before = mallinfo2().uordblks;
  for (int round = 0; round < 10; ++round) depart(100);
  const size_t after = mallinfo2().uordblks;
  EXPECT_LT(after, before + (1u << 20)) << "in use grew from " << before << " to " << after << " bytes";
}

TEST(HttpServerCreate, TakenAddressFailsAtCreate) {
  HttpServerOptions options;
  options.listen = HostPort{"127.0.0.1", 0};
  auto first = HttpServer::Create(options);
  ASSERT_TRUE(first.ok());
  options.listen.port = (*first)->port();
  auto second = HttpServer::Create(options);
  EXPECT_FALSE(second.ok());
  EXPECT_EQ(second.status().code(), StatusCode::kIoError);
}

// A listen host that does not resolve is named as such (libevent's bind
// left a stale errno: "No such file or directory"), with or without a
// shared port.
TEST(HttpServerCreate, AHostThatDoesNotResolveIsNamedAsSuch) {
  for (const bool share_port : {false, true}) {
    HttpServerOptions options;
    options.listen = HostPort{"no-such-host.invalid", 0};
    options.share_port = share_port;
    errno = ENOENT;  // what a failed open before it leaves
    auto server = HttpServer::Create(options);
    ASSERT_FALSE(server.ok());
    const std::string text = server.status().ToString();
    EXPECT_NE(text.find("cannot listen on no-such-host.invalid:0"), std::string::npos) << text;
    EXPECT_EQ(text.find("No such file"), std::string::npos) << text;
  }
}

// After() timers: each runs once, in deadline order whatever the order they
// were set in, never before its delay; one set from a callback runs too.
TEST(HttpServerTimers, AfterRunsEachOnceInDeadlineOrderNeverEarly) {
  HttpServerOptions options;
  options.listen = HostPort{"127.0.0.1", 0};
  auto created = HttpServer::Create(options);
  ASSERT_TRUE(created.ok());
  HttpServer& server = **created;
  using Clock = std::chrono::steady_clock;
  struct Fired {
    int id;
    std::chrono::microseconds late_by;  // elapsed - delay: never negative
  };
  std::vector<Fired> fired;  // loop thread only, read after Run returns
  const Clock::time_point start = Clock::now();
  const auto set = [&](int id, std::chrono::microseconds delay) {
    const Clock::time_point set_at = Clock::now();
    server.After(delay, [&, id, delay, set_at] {
      fired.push_back({id, std::chrono::duration_cast<std::chrono::microseconds>(Clock::now() - set_at) - delay});
    });
  };
  set(3, std::chrono::microseconds(3000));
  set(1, std::chrono::microseconds(700));
  set(2, std::chrono::microseconds(1500));
  // From a callback: a timer set while timers fire, then the stop.
  server.After(std::chrono::microseconds(3500), [&] {
    set(4, std::chrono::microseconds(250));
    server.After(std::chrono::microseconds(5000), [&] { server.Stop(); });
  });
  ASSERT_TRUE(server.Run().ok());
  ASSERT_EQ(fired.size(), 4u);
  for (size_t i = 0; i < fired.size(); ++i) {
    EXPECT_EQ(fired[i].id, static_cast<int>(i) + 1);
    EXPECT_GE(fired[i].late_by.count(), 0) << "timer " << fired[i].id << " ran early";
  }
  EXPECT_GE(Clock::now() - start, std::chrono::microseconds(8500));
}

TEST(HttpClientTest, RefusedConnectionIsTransportError) {
  BlockingHttpClient client;
  HttpRequestSpec spec;
  spec.target = "/ping";
  spec.timeout_ms = 2000;
  auto r = client.Fetch(Loopback(testing::FreePort()), spec);
  EXPECT_FALSE(r.ok());
  EXPECT_EQ(r.status_code, 0);
}

}  // namespace
}  // namespace clickatron
