// Requests libevent refuses before any handler runs, and requests that never
// arrive whole: every answer is the JSON envelope with a reason, sent over a
// raw socket so the bytes are exactly what a broken or hostile client sends.
#include <arpa/inet.h>
#include <netinet/in.h>
#include <poll.h>
#include <sys/socket.h>
#include <unistd.h>

#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include <atomic>
#include <chrono>
#include <string>
#include <thread>
#include <utility>

#include "clickatron/http_server.h"

namespace clickatron {
namespace {

using Clock = std::chrono::steady_clock;

// One TCP connection to the server under test.
class RawConnection {
 public:
  explicit RawConnection(uint16_t port) {
    fd_ = ::socket(AF_INET, SOCK_STREAM, 0);
    sockaddr_in addr{};
    addr.sin_family = AF_INET;
    addr.sin_port = htons(port);
    addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    connected_ = ::connect(fd_, reinterpret_cast<sockaddr*>(&addr), sizeof(addr)) == 0;
  }
  ~RawConnection() { ::close(fd_); }
  bool connected() const { return connected_; }
  bool Send(const std::string& bytes) {
    return ::send(fd_, bytes.data(), bytes.size(), MSG_NOSIGNAL) == static_cast<ssize_t>(bytes.size());
  }
  // Everything the server sends until it closes the connection, or until
  // `limit` passes (then timed_out is set).
  std::string ReadUntilClose(std::chrono::milliseconds limit, bool* timed_out) {
    std::string out;
    *timed_out = false;
    const auto end = Clock::now() + limit;
    while (true) {
      auto left = std::chrono::duration_cast<std::chrono::milliseconds>(end - Clock::now()).count();
      if (left <= 0) {
        *timed_out = true;
        return out;
      }
      pollfd p{fd_, POLLIN, 0};
      if (::poll(&p, 1, static_cast<int>(left)) <= 0) continue;
      char buf[4096];
      ssize_t n = ::recv(fd_, buf, sizeof(buf), 0);
      if (n <= 0) return out;
      out.append(buf, static_cast<size_t>(n));
    }
  }
  // Reads until `count` complete responses with Content-Length have arrived.
  std::string ReadResponses(int count, std::chrono::milliseconds limit) {
    std::string out;
    const auto end = Clock::now() + limit;
    while (Clock::now() < end) {
      int complete = 0;
      size_t pos = 0;
      while (true) {
        size_t head_end = out.find("\r\n\r\n", pos);
        if (head_end == std::string::npos) break;
        size_t cl = out.find("Content-Length: ", pos);
        if (cl == std::string::npos || cl > head_end) break;
        size_t length = std::stoul(out.substr(cl + 16));
        if (out.size() < head_end + 4 + length) break;
        pos = head_end + 4 + length;
        ++complete;
      }
      if (complete >= count) return out;
      pollfd p{fd_, POLLIN, 0};
      if (::poll(&p, 1, 50) <= 0) continue;
      char buf[4096];
      ssize_t n = ::recv(fd_, buf, sizeof(buf), 0);
      if (n <= 0) return out;
      out.append(buf, static_cast<size_t>(n));
    }
    return out;
  }

 private:
  int fd_ = -1;
  bool connected_ = false;
};

struct Answer {
  int status = 0;
  nlohmann::json body;
  bool closes = false;  // "Connection: close"
  bool json = false;    // "Content-Type: application/json"
};

Answer ParseAnswer(const std::string& raw) {
  Answer a;
  if (raw.rfind("HTTP/1.1 ", 0) != 0) return a;
  a.status = std::stoi(raw.substr(9, 3));
  size_t head_end = raw.find("\r\n\r\n");
  if (head_end == std::string::npos) return a;
  std::string head = raw.substr(0, head_end);
  a.closes = head.find("Connection: close") != std::string::npos;
  a.json = head.find("Content-Type: application/json") != std::string::npos;
  a.body = nlohmann::json::parse(raw.substr(head_end + 4), nullptr, false);
  return a;
}

// Everything the server sends for `requests` (written in one go) until it
// closes the connection: the last request asks it to, or it closes by itself.
std::string Exchange(uint16_t port, const std::string& requests) {
  RawConnection c(port);
  EXPECT_TRUE(c.connected());
  EXPECT_TRUE(c.Send(requests));
  bool timed_out = false;
  std::string raw = c.ReadUntilClose(std::chrono::seconds(20), &timed_out);
  EXPECT_FALSE(timed_out) << "no close after: " << raw;
  return raw;
}

class HttpErrorsTest : public ::testing::Test {
 protected:
  static constexpr int kDeadlineSeconds = 1;

  void SetUp() override {
    HttpServerOptions options;
    options.daemon = "test-daemon";
    options.listen = HostPort{"127.0.0.1", 0};
    options.limits.max_body_bytes = 4096;
    options.limits.max_header_bytes = 2048;
    options.limits.timeout_seconds = limits_.timeout_seconds;
    options.limits.request_deadline_seconds = limits_.request_deadline_seconds;
    auto created = HttpServer::Create(options);
    ASSERT_TRUE(created.ok()) << created.status().ToString();
    server_ = std::move(created).value();
    server_->Route("/echo", [](const HttpExchangePtr& ex) { ex->Reply(200, ex->body()); });
    server_->Route("/hello", [](const HttpExchangePtr& ex) { ex->Reply(200, "hello world\n"); }, kGet);
    server_->Route("/stream", [](const HttpExchangePtr& ex) {
      ex->StartStream(200, "text/plain");
      ex->SendChunk("streamed\n");
      ex->EndStream();
    }, kGet);
    // A route whose GET changes state, as GET /incr does.
    server_->Route("/count", [this](const HttpExchangePtr& ex) {
      ++counted_;
      ex->Reply(200, "counted\n");
    }, kGetOrPost | kUnsafeGet);
    thread_ = std::thread([this] { ASSERT_TRUE(server_->Run().ok()); });
  }
  void TearDown() override {
    server_->Stop();
    thread_.join();
  }

  // Sends `request` on a new connection; the server must answer and close.
  Answer AnswerTo(const std::string& request) { return ParseAnswer(Exchange(server_->port(), request)); }

  void ExpectEnvelope(const Answer& a, int status, const std::string& reason) {
    EXPECT_EQ(a.status, status);
    EXPECT_TRUE(a.json);
    ASSERT_TRUE(a.body.is_object()) << a.body;
    EXPECT_EQ(a.body["status_code"], status);
    EXPECT_EQ(a.body["status_txt"], reason);
    EXPECT_TRUE(a.body["data"].is_null());
    EXPECT_TRUE(a.body["message"].is_string());
  }

  // Each of `refused` is answered `status` `reason` (and closed, with
  // `closes`) before the handler runs; then `served`, a request that differs
  // only where they are wrong, reaches it.
  void ExpectRefusedBeforeTheHandler(const std::vector<std::string>& refused, int status, const std::string& reason,
                                     bool closes, const std::string& served) {
    for (const std::string& request : refused) {
      SCOPED_TRACE(request.substr(0, 80));
      Answer a = AnswerTo(request);
      ExpectEnvelope(a, status, reason);
      if (closes) {
        EXPECT_TRUE(a.closes);
      }
    }
    EXPECT_EQ(counted_.load(), 0) << "a refused request reached its handler";
    Answer a = AnswerTo(served);
    EXPECT_EQ(a.status, 200);
    EXPECT_EQ(counted_.load(), 1);
  }

  // The idle timeout must not be what closes: a minute, against a 1 s deadline.
  struct Limits {
    int timeout_seconds = 60;
    int request_deadline_seconds = kDeadlineSeconds;
  } limits_;
  std::unique_ptr<HttpServer> server_;
  std::thread thread_;
  std::atomic<int> counted_{0};
};

// The header block of the answer starting at `raw`, and what follows it.
std::pair<std::string, std::string> SplitHead(const std::string& raw) {
  const size_t end = raw.find("\r\n\r\n");
  if (end == std::string::npos) return {raw, ""};
  return {raw.substr(0, end), raw.substr(end + 4)};
}

TEST_F(HttpErrorsTest, UnparsableRequestsAre400InTheEnvelopeAndClose) {
  for (const std::string& request : {std::string("GET /ping HTTP/2.7\r\n\r\n"), std::string("GET /ping\r\n\r\n"),
                                     std::string("GET /ping HTTP/1.1\r\nX-Long: ") + std::string(4000, 'a') + "\r\n\r\n",
                                     std::string("GET /") + std::string(4000, 'a') + " HTTP/1.1\r\n\r\n",
                                     std::string("GET /ping HTTP/1.1\r\nno colon here\r\n\r\n")}) {
    SCOPED_TRACE(request.substr(0, 40));
    Answer a = AnswerTo(request);
    ExpectEnvelope(a, 400, "BAD_REQUEST");
    EXPECT_TRUE(a.closes);
  }
}

TEST_F(HttpErrorsTest, RawSpacesControlAndNonAsciiBytesInTheUriAre400BadUri) {
  for (const std::string& uri : {std::string("/echo?key=a b"), std::string("/echo?key=\x01"),
                                 std::string("/echo?key=\xc3\xa9"), std::string("/e\x7f")}) {
    SCOPED_TRACE(uri);
    Answer a = AnswerTo("GET " + uri + " HTTP/1.1\r\nConnection: close\r\n\r\n");
    ExpectEnvelope(a, 400, "BAD_URI");
  }
}

TEST_F(HttpErrorsTest, UnservedMethodsAre501InTheEnvelope) {
  for (const std::string method : {"PATCH", "OPTIONS", "TRACE", "CONNECT", "BREW"}) {
    SCOPED_TRACE(method);
    Answer a = AnswerTo(method + " /echo HTTP/1.1\r\nHost: x\r\n\r\n");
    ExpectEnvelope(a, 501, "METHOD_NOT_IMPLEMENTED");
    EXPECT_TRUE(a.closes);
  }
}

// RFC 9112 3.2.2: a target in absolute-form (as clients send to proxies)
// names the same resource as its path; its query is read as usual.
TEST_F(HttpErrorsTest, ATargetInAbsoluteFormIsServedAsItsPath) {
  const std::string origin = "http://127.0.0.1:" + std::to_string(server_->port());
  std::string raw = Exchange(server_->port(), "GET " + origin + "/hello HTTP/1.1\r\nConnection: close\r\n\r\n");
  EXPECT_EQ(raw.rfind("HTTP/1.1 200", 0), 0u) << raw;
  EXPECT_NE(raw.find("\r\n\r\nhello world\n"), std::string::npos) << raw;
  raw = Exchange(server_->port(), "POST HTTP://127.0.0.1/echo?x=1 HTTP/1.1\r\nContent-Length: 4\r\n"
                                  "Connection: close\r\n\r\nbody");
  EXPECT_EQ(raw.rfind("HTTP/1.1 200", 0), 0u) << raw;
  EXPECT_NE(raw.find("\r\n\r\nbody"), std::string::npos) << raw;
  // No path at all: nothing is routed there.
  ExpectEnvelope(AnswerTo("GET " + origin + " HTTP/1.1\r\nConnection: close\r\n\r\n"), 404, "NOT_FOUND");
}

TEST_F(HttpErrorsTest, OversizedBodyIs413BodyTooLarge) {
  Answer a = AnswerTo("POST /echo HTTP/1.1\r\nContent-Length: 5000\r\n\r\n" + std::string(5000, 'x'));
  ExpectEnvelope(a, 413, "BODY_TOO_LARGE");
}

TEST_F(HttpErrorsTest, ABodyShorterThanItsContentLengthIs408AtTheDeadline) {
  const auto start = Clock::now();
  Answer a = AnswerTo("POST /echo HTTP/1.1\r\nContent-Length: 50\r\n\r\nabc");
  ExpectEnvelope(a, 408, "REQUEST_TIMEOUT");
  EXPECT_TRUE(a.closes);
  // Not before the deadline (the idle timeout is a minute away).
  EXPECT_GE(Clock::now() - start, std::chrono::seconds(kDeadlineSeconds));
}

// The defaults' shape: a whole-request deadline longer than the idle
// timeout. A body that stops short of its Content-Length still gets its
// 408, a little before the idle timeout would have closed it without one.
class HttpStallTest : public HttpErrorsTest {
 protected:
  static constexpr int kIdleSeconds = 4;
  void SetUp() override {
    limits_.timeout_seconds = kIdleSeconds;
    limits_.request_deadline_seconds = 60;
    HttpErrorsTest::SetUp();
  }
};

TEST_F(HttpStallTest, ABodyThatStopsShortIs408BeforeTheIdleTimeoutClosesIt) {
  const auto start = Clock::now();
  Answer a = AnswerTo("POST /echo HTTP/1.1\r\nContent-Length: 50\r\n\r\nabc");
  ExpectEnvelope(a, 408, "REQUEST_TIMEOUT");
  EXPECT_TRUE(a.closes);
  EXPECT_NE(a.body["message"].get<std::string>().find("timeout_seconds"), std::string::npos) << a.body;
  // Not before the bytes had stopped for a while (3 of the 4 idle seconds).
  EXPECT_GE(Clock::now() - start, std::chrono::seconds(kIdleSeconds - 1));
}

TEST_F(HttpErrorsTest, AClientTricklingBytesIsCutOffAtTheDeadline) {
  RawConnection c(server_->port());
  ASSERT_TRUE(c.connected());
  const std::string request = "GET /echo HTTP/1.1\r\nHost: x\r\nX-Pad: " + std::string(200, 'p') + "\r\n\r\n";
  // One byte every 20 ms: each byte restarts libevent's idle timeout, and
  // the whole request would take 5 s, beyond the 1 s deadline.
  std::string received;
  const auto start = Clock::now();
  for (char byte : request) {
    if (!c.Send(std::string(1, byte))) break;  // the server has closed
    bool timed_out = false;
    received += c.ReadUntilClose(std::chrono::milliseconds(20), &timed_out);
    if (!timed_out) break;  // closed
  }
  bool timed_out = false;
  received += c.ReadUntilClose(std::chrono::seconds(10), &timed_out);
  EXPECT_FALSE(timed_out);
  ExpectEnvelope(ParseAnswer(received), 408, "REQUEST_TIMEOUT");
  EXPECT_LT(Clock::now() - start, std::chrono::seconds(4));  // cut off, not served after 5 s
}

TEST_F(HttpErrorsTest, HeadGivesTheGetsLengthWithoutItsBodyAndTheNextAnswerFollowsAtOnce) {
  struct Case {
    std::string path;
    std::string status_line;
    std::string length;  // the Content-Length header expected; empty: none
  };
  // A plain answer (the GET's length), a streamed one (no length known, no
  // chunks) and an error answer.
  for (const Case& cs : {Case{"/hello", "HTTP/1.1 200", "Content-Length: 12"}, Case{"/stream", "HTTP/1.1 200", ""},
                         Case{"/nowhere", "HTTP/1.1 404", "Content-Length: "}}) {
    SCOPED_TRACE(cs.path);
    // Pipelined on one keep-alive connection: a body after the HEAD's
    // headers would be read by the client as the start of the GET's answer.
    const std::string raw = Exchange(server_->port(),
                                     "HEAD " + cs.path + " HTTP/1.1\r\nHost: x\r\n\r\n"
                                     "GET /hello HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n");
    auto [head, rest] = SplitHead(raw);
    EXPECT_EQ(head.rfind(cs.status_line, 0), 0u) << raw;
    if (cs.length.empty()) {
      EXPECT_EQ(head.find("Content-Length"), std::string::npos) << head;
    } else {
      EXPECT_NE(head.find(cs.length), std::string::npos) << head;
    }
    ASSERT_EQ(rest.rfind("HTTP/1.1 200", 0), 0u) << "bytes after the HEAD answer: " << rest;
    EXPECT_EQ(SplitHead(rest).second, "hello world\n");
  }
}

TEST_F(HttpErrorsTest, HeadIsRefusedWhereAGetChangesState) {
  Answer head = AnswerTo("HEAD /count HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n");
  EXPECT_EQ(head.status, 405);
  EXPECT_EQ(counted_.load(), 0) << "HEAD ran a handler whose GET changes state";
  Answer get = AnswerTo("GET /count HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n");
  EXPECT_EQ(get.status, 200);
  EXPECT_EQ(counted_.load(), 1);
}

TEST_F(HttpErrorsTest, AnAmbiguousBodyLengthIs400AndCloses) {
  // The same length twice is not ambiguous.
  ExpectRefusedBeforeTheHandler({"POST /count HTTP/1.1\r\nHost: x\r\nContent-Length: 3\r\nContent-Length: 5\r\n\r\nabcde",
                                 "POST /count HTTP/1.1\r\nHost: x\r\nContent-Length: 5\r\nTransfer-Encoding: chunked\r\n\r\n"
                                 "5\r\nabcde\r\n0\r\n\r\n"},
                                400, "BAD_REQUEST", /*closes=*/true,
                                "POST /count HTTP/1.1\r\nHost: x\r\nConnection: close\r\n"
                                "Content-Length: 3\r\nContent-Length: 3\r\n\r\nabc");
}

// libevent frames chunked bodies only and reads any other transfer coding
// as none: such a body would be taken undecoded, or its bytes read as the
// next request. RFC 9112 section 6.1: 501, and the connection closes.
TEST_F(HttpErrorsTest, ATransferCodingOtherThanChunkedIs501AndCloses) {
  auto with = [](const std::string& coding, const std::string& more = "") {
    return "POST /count HTTP/1.1\r\nHost: x\r\n" + more + "Transfer-Encoding: " + coding +
           "\r\n\r\n5\r\nabcde\r\n0\r\n\r\n";
  };
  ExpectRefusedBeforeTheHandler({with("gzip, chunked"), with("gzip"), with("identity")}, 501,
                                "UNSUPPORTED_TRANSFER_ENCODING", /*closes=*/true,
                                with("chunked", "Connection: close\r\n"));
}

// A handler reads the first of repeated header lines: a second Idempotency-Key
// (or Host, or Authorization) would be silently ignored.
TEST_F(HttpErrorsTest, ARepeatedHostAuthorizationOrIdempotencyKeyIs400) {
  std::vector<std::string> repeated;
  for (const std::string name : {"Host", "Authorization", "Idempotency-Key"}) {
    const std::string host = name == "Host" ? "" : "Host: x\r\n";
    repeated.push_back("GET /count HTTP/1.1\r\n" + host + name + ": a\r\n" + name + ": b\r\nConnection: close\r\n\r\n");
  }
  ExpectRefusedBeforeTheHandler(repeated, 400, "BAD_REQUEST", /*closes=*/false,
                                "GET /count HTTP/1.1\r\nHost: x\r\nIdempotency-Key: a\r\nConnection: close\r\n\r\n");
}

TEST_F(HttpErrorsTest, KeepAliveAndPipelinedRequestsAreServedAndAnIdleConnectionIsNotCutOff) {
  RawConnection c(server_->port());
  ASSERT_TRUE(c.connected());
  // Two requests in one write, then a third after the deadline has passed
  // on an idle connection: idle time between requests does not count.
  ASSERT_TRUE(c.Send("POST /echo HTTP/1.1\r\nContent-Length: 3\r\n\r\nonePOST /echo HTTP/1.1\r\nContent-Length: 3\r\n\r\ntwo"));
  std::string two = c.ReadResponses(2, std::chrono::seconds(10));
  EXPECT_NE(two.find("\r\n\r\none"), std::string::npos) << two;
  EXPECT_NE(two.find("\r\n\r\ntwo"), std::string::npos) << two;
  bool timed_out = false;
  std::string nothing = c.ReadUntilClose(std::chrono::milliseconds(kDeadlineSeconds * 1000 + 500), &timed_out);
  EXPECT_TRUE(timed_out) << "an idle keep-alive connection was closed: " << nothing;
  ASSERT_TRUE(c.Send("POST /echo HTTP/1.1\r\nContent-Length: 5\r\n\r\nthree"));
  std::string three = c.ReadResponses(1, std::chrono::seconds(10));
  EXPECT_NE(three.find("HTTP/1.1 200"), std::string::npos) << three;
  EXPECT_NE(three.find("\r\n\r\nthree"), std::string::npos) << three;
}

}  // namespace
}  // namespace clickatron
