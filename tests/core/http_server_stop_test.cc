// How an HTTP server stops (HttpServer::OnStopDrain, Stop): work owed an
// answer is finished and answered before Run() returns, the OnStop hooks run
// after it, and neither a client that left mid-answer nor a drain that never
// finishes keeps the process from exiting.
//
// The drain timeouts here are long (60 s) where the test shows that the stop
// does NOT wait for them: the bound asserted is half of that, a check that
// the stop did not hang on the timeout, not a measure of speed.
#include "clickatron/http_server.h"

#include <gtest/gtest.h>

#include <sys/socket.h>
#include <sys/time.h>
#include <unistd.h>

#include <atomic>
#include <chrono>
#include <memory>
#include <string>
#include <thread>
#include <vector>

#include "testutil/testutil.h"

namespace clickatron {
namespace {

using Clock = std::chrono::steady_clock;
using testing::Loopback;

std::unique_ptr<HttpServer> NewServer(std::chrono::milliseconds drain_timeout,
                                      std::chrono::milliseconds linger = std::chrono::milliseconds(0),
                                      size_t max_connections = 4096) {
  HttpServerOptions options;
  options.daemon = "test-daemon";
  options.member = "t-0";
  options.listen = HostPort{"127.0.0.1", 0};
  options.stop_on_signals = false;
  options.stop_drain_timeout = drain_timeout;
  options.stop_linger = linger;
  options.limits.max_connections = max_connections;
  auto created = HttpServer::Create(options);
  EXPECT_TRUE(created.ok()) << created.status().ToString();
  if (!created.ok()) return nullptr;
  (*created)->Route("/hello", [](const HttpExchangePtr& ex) { ex->Reply(200, "hi"); });  // answered at once
  return std::move(created).value();
}

// Whether a new connection to `port` is refused (one that is taken is
// closed again: left open, a stop would answer and wait for it).
bool Refused(uint16_t port) {
  const int fd = testing::ConnectLoopback(port);
  if (fd >= 0) ::close(fd);
  return fd < 0;
}

// got->size() clients, each asking `path` on a connection of its own, on
// threads of their own (joined by the caller).
std::vector<std::thread> AskAtOnce(uint16_t port, const std::string& path, std::vector<HttpResponse>* got) {
  std::vector<std::thread> clients;
  for (size_t i = 0; i < got->size(); ++i) {
    clients.emplace_back([port, path, got, i] { (*got)[i] = testing::HttpGet(Loopback(port), path, 30000); });
  }
  return clients;
}

// One request written by hand on an open connection, and its answer: the
// status line, headers and a Content-Length body ("" if none came in 10 s).
std::string RawExchange(int fd, const std::string& request) {
  if (::send(fd, request.data(), request.size(), MSG_NOSIGNAL) != static_cast<ssize_t>(request.size())) return "";
  timeval tv{10, 0};
  ::setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof tv);
  std::string got;
  char buf[4096];
  while (true) {
    const size_t head_end = got.find("\r\n\r\n");
    if (head_end != std::string::npos) {
      const size_t at = got.find("Content-Length: ");
      const size_t length = at == std::string::npos ? 0 : std::stoul(got.substr(at + 16));
      if (got.size() >= head_end + 4 + length) return got;
    }
    const ssize_t n = ::recv(fd, buf, sizeof buf, 0);
    if (n <= 0) return got;
    got.append(buf, static_cast<size_t>(n));
  }
}

// Requests held by a handler are answered by the drain hook, after Stop(),
// and their clients get those answers; the OnStop hooks run after the drain.
// While the drain runs, new connections are refused and a new request on a
// connection already open is answered 503 STOPPING.
std::string ShapedRefusal(int, std::string_view reason, std::string_view) {
  return "{\"shaped\":\"" + std::string(reason) + "\"}";
}

TEST(HttpServerStop, DrainAnswersHeldRequestsBeforeRunReturns) {
  SetRefusalBody("/held-shaped", &ShapedRefusal);
  auto server = NewServer(std::chrono::seconds(60));
  ASSERT_TRUE(server);
  std::vector<HttpExchangePtr> held;  // loop thread only
  std::atomic<int> arrived{0};
  std::vector<std::string> order;  // loop thread only; read after Run returns
  std::function<void()> drained;   // set on the loop by the drain hook
  std::atomic<bool> draining{false};
  server->Route("/held", [&](const HttpExchangePtr& ex) {
    held.push_back(ex);
    ++arrived;
  });
  server->OnStopDrain([&](std::function<void()> done) {
    order.push_back("drain");
    drained = std::move(done);
    draining = true;
  });
  server->OnStop([&] { order.push_back("stop hook"); });
  const uint16_t port = server->port();
  std::thread loop([&] { EXPECT_TRUE(server->Run().ok()); });

  constexpr int kClients = 3;
  std::vector<HttpResponse> got(kClients);
  std::vector<std::thread> clients = AskAtOnce(port, "/held", &got);
  // Keep-alive connections the server has taken (one answered request each).
  const int open_fd = testing::ConnectLoopback(port);
  ASSERT_GE(open_fd, 0);
  ASSERT_NE(RawExchange(open_fd, "GET /ping HTTP/1.1\r\nHost: t\r\n\r\n").find(" 200 "), std::string::npos);
  const int shaped_fd = testing::ConnectLoopback(port);
  ASSERT_GE(shaped_fd, 0);
  ASSERT_NE(RawExchange(shaped_fd, "GET /ping HTTP/1.1\r\nHost: t\r\n\r\n").find(" 200 "), std::string::npos);
  ASSERT_TRUE(testing::WaitFor([&] { return arrived.load() == kClients; }));

  const Clock::time_point stop_at = Clock::now();
  server->Stop();
  ASSERT_TRUE(testing::WaitFor([&] { return draining.load(); }));
  EXPECT_LT(testing::ConnectLoopback(port), 0) << "a new connection was taken during the stop";
  const std::string refused = RawExchange(open_fd, "GET /held HTTP/1.1\r\nHost: t\r\n\r\n");
  EXPECT_NE(refused.find(" 503 "), std::string::npos) << refused;
  EXPECT_NE(refused.find("STOPPING"), std::string::npos) << refused;
  EXPECT_NE(refused.find("Retry-After: 1\r\n"), std::string::npos) << "a try-again refusal says when" << refused;
  ::close(open_fd);
  // A path whose clients parse an error shape of their own (the Influx
  // write doors) gets its refusal in that shape.
  const std::string shaped = RawExchange(shaped_fd, "GET /held-shaped HTTP/1.1\r\nHost: t\r\n\r\n");
  EXPECT_NE(shaped.find(" 503 "), std::string::npos) << shaped;
  EXPECT_NE(shaped.find("{\"shaped\":\"STOPPING\"}"), std::string::npos) << shaped;
  EXPECT_NE(shaped.find("Retry-After: 1\r\n"), std::string::npos) << shaped;
  ::close(shaped_fd);
  // The drain answers what it holds, on the loop, as an oplog commit does.
  server->RunInLoop([&] {
    for (const auto& ex : held) ex->Reply(200, "drained");
    held.clear();
    order.push_back("answered");
    drained();
  });
  loop.join();
  EXPECT_LT(Clock::now() - stop_at, std::chrono::seconds(30)) << "the stop waited for its drain timeout";
  for (auto& c : clients) c.join();
  for (int i = 0; i < kClients; ++i) {
    EXPECT_EQ(got[i].status_code, 200) << i << ": " << got[i].transport.message();
    EXPECT_EQ(got[i].body, "drained") << i;
  }
  EXPECT_EQ(order, (std::vector<std::string>{"drain", "answered", "stop hook"}));
}

// A client that leaves in the middle of a streamed answer: libevent never
// reports that answer written, and the stop must not wait for it.
TEST(HttpServerStop, AClientThatLeftMidAnswerDoesNotHoldTheStop) {
  auto server = NewServer(std::chrono::seconds(60));
  ASSERT_TRUE(server);
  std::vector<HttpExchangePtr> held;  // loop thread only
  std::atomic<int> started{0};
  server->Route("/drip", [&](const HttpExchangePtr& ex) {
    ex->StartStream(200, "text/plain");
    ex->SendChunk("first\n", nullptr);
    held.push_back(ex);
    ++started;
  });
  const uint16_t port = server->port();
  std::thread loop([&] { EXPECT_TRUE(server->Run().ok()); });

  const int fd = testing::ConnectLoopback(port);
  ASSERT_GE(fd, 0);
  const std::string request = "GET /drip HTTP/1.1\r\nHost: t\r\n\r\n";
  ASSERT_EQ(::send(fd, request.data(), request.size(), MSG_NOSIGNAL), static_cast<ssize_t>(request.size()));
  ASSERT_TRUE(testing::WaitFor([&] { return started.load() == 1; }));
  ::close(fd);
  // The server learns of the departure when a write fails: keep writing.
  const std::string chunk(16384, 'c');
  std::atomic<bool> gone{false};
  ASSERT_TRUE(testing::WaitFor([&] {
    server->RunInLoop([&] {
      bool all_gone = true;
      for (const auto& ex : held) {
        if (ex->alive()) {
          ex->SendChunk(chunk, nullptr);
          all_gone = false;
        }
      }
      gone = all_gone;
    });
    return gone.load();
  })) << "the server did not notice its client leave";

  const Clock::time_point stop_at = Clock::now();
  server->Stop();
  loop.join();
  EXPECT_LT(Clock::now() - stop_at, std::chrono::seconds(30)) << "the stop waited for an answer nobody reads";
}

// A drain that never reports done is given stop_drain_timeout, then the
// stop goes on: the OnStop hooks run and Run() returns.
TEST(HttpServerStop, ADrainThatNeverFinishesEndsAtItsTimeout) {
  auto server = NewServer(std::chrono::milliseconds(200));
  ASSERT_TRUE(server);
  bool drain_ran = false, stop_hook_ran = false;  // loop thread; read after Run
  std::function<void()> never_called;
  server->OnStopDrain([&](std::function<void()> drained) {
    drain_ran = true;
    never_called = std::move(drained);  // kept, never called
  });
  server->OnStop([&] { stop_hook_ran = true; });
  std::thread loop([&] { EXPECT_TRUE(server->Run().ok()); });
  server->Stop();
  loop.join();
  EXPECT_TRUE(drain_ran);
  EXPECT_TRUE(stop_hook_ran);
}

// A request taken before the stop whose handler answers later (a query
// waiting for its shards) is answered before Run() returns, with no drain
// hook of its own: a client must not see its connection closed unanswered.
// One never answered holds the stop for stop_drain_timeout at most.
// The requests to a path, kept unanswered (`held`: loop thread only).
struct Holder {
  std::vector<HttpExchangePtr> held;
  std::atomic<int> arrived{0};
  void Hold(HttpServer& server, const std::string& path) {
    server.Route(path, [this](const HttpExchangePtr& ex) {
      held.push_back(ex);
      ++arrived;
    });
  }
};

TEST(HttpServerStop, RequestsTakenBeforeTheStopAreAnsweredBeforeRunReturns) {
  auto server = NewServer(std::chrono::seconds(60));
  ASSERT_TRUE(server);
  Holder later;
  later.Hold(*server, "/later");
  const uint16_t port = server->port();
  std::thread loop([&] { EXPECT_TRUE(server->Run().ok()); });
  constexpr int kClients = 3;
  std::vector<HttpResponse> got(kClients);
  std::vector<std::thread> clients = AskAtOnce(port, "/later", &got);
  ASSERT_TRUE(testing::WaitFor([&] { return later.arrived.load() == kClients; }));
  server->Stop();
  // The stop has begun (new connections refused); the loop still runs.
  ASSERT_TRUE(testing::WaitFor([&] { return Refused(port); }));
  server->RunInLoop([&] {
    for (const auto& ex : later.held) ex->Reply(200, "late answer");
    later.held.clear();
  });
  loop.join();
  for (auto& c : clients) c.join();
  for (int i = 0; i < kClients; ++i) {
    EXPECT_EQ(got[i].status_code, 200) << i << ": " << got[i].transport.message();
    EXPECT_EQ(got[i].body, "late answer") << i;
  }
}

// A route streaming `chunks` lines "chunk I", one every `every` (its
// answer begun at once), and whether one has begun.
struct SlowStreams {
  std::atomic<int> begun{0};
  struct Stream : std::enable_shared_from_this<Stream> {
    HttpServer* server = nullptr;
    HttpExchangePtr ex;
    int chunks = 0, sent = 0;
    std::chrono::milliseconds every{0};
    void Next() {
      if (!ex->alive()) return;
      if (sent == chunks) return ex->EndStream();
      ex->SendChunk("chunk " + std::to_string(sent++) + "\n");
      server->After(every, [self = shared_from_this()] { self->Next(); });
    }
  };
  void Route(HttpServer& server, const std::string& path, int chunks, std::chrono::milliseconds every,
             unsigned methods) {
    server.Route(
        path,
        [this, &server, chunks, every](const HttpExchangePtr& ex) {
          auto stream = std::make_shared<Stream>();
          stream->server = &server;
          stream->ex = ex;
          stream->chunks = chunks;
          stream->every = every;
          ex->StartStream(200, "text/plain");
          ++begun;
          stream->Next();
        },
        methods);
  }
};

// A query's streamed answer begun before the stop is owed to its end, as
// any answer (a realtime shard's SIGTERM cut an API node's reads after the
// 2 s write grace): 3 s of chunks arrive whole.
TEST(HttpServerStop, AStreamedAnswerBegunBeforeTheStopIsWrittenToItsEnd) {
  auto server = NewServer(std::chrono::seconds(60));
  ASSERT_TRUE(server);
  SlowStreams streams;
  streams.Route(*server, "/query", 12, std::chrono::milliseconds(250), kGet);
  const uint16_t port = server->port();
  std::thread loop([&] { EXPECT_TRUE(server->Run().ok()); });
  HttpResponse got;
  std::thread client([&] { got = testing::HttpGet(Loopback(port), "/query", 30000); });
  ASSERT_TRUE(testing::WaitFor([&] { return streams.begun.load() == 1; }));
  server->Stop();
  loop.join();
  client.join();
  EXPECT_EQ(got.status_code, 200) << got.transport.message();
  std::string want;
  for (int i = 0; i < 12; ++i) want += "chunk " + std::to_string(i) + "\n";
  EXPECT_EQ(got.body, want);
}

// A route marked kLongStreams (a replica's whole file) is not waited for
// past the write grace: its 30 s stream does not hold the stop.
TEST(HttpServerStop, ALongStreamDoesNotHoldTheStop) {
  auto server = NewServer(std::chrono::seconds(60));
  ASSERT_TRUE(server);
  SlowStreams streams;
  streams.Route(*server, "/file", 120, std::chrono::milliseconds(250), kGet | kLongStreams);
  const uint16_t port = server->port();
  std::thread loop([&] { EXPECT_TRUE(server->Run().ok()); });
  HttpResponse got;
  std::thread client([&] { got = testing::HttpGet(Loopback(port), "/file", 60000); });
  ASSERT_TRUE(testing::WaitFor([&] { return streams.begun.load() == 1; }));
  const Clock::time_point stop_at = Clock::now();
  server->Stop();
  loop.join();
  EXPECT_LT(Clock::now() - stop_at, std::chrono::seconds(20)) << "the stop waited for the stream";
  server.reset();
  client.join();
  EXPECT_EQ(got.body.find("chunk 119"), std::string::npos) << "the whole stream was written";
}

TEST(HttpServerStop, ARequestNeverAnsweredEndsTheStopAtItsTimeout) {
  auto server = NewServer(std::chrono::milliseconds(500));
  ASSERT_TRUE(server);
  Holder never;  // freed after Run
  never.Hold(*server, "/never");
  const uint16_t port = server->port();
  std::thread loop([&] { EXPECT_TRUE(server->Run().ok()); });
  HttpResponse got;
  std::thread client([&] { got = testing::HttpGet(Loopback(port), "/never", 30000); });
  ASSERT_TRUE(testing::WaitFor([&] { return never.arrived.load() == 1; }));
  const Clock::time_point stop_at = Clock::now();
  server->Stop();
  loop.join();
  // It was waited for (the drain timeout, not a stop at once), and no longer.
  EXPECT_GE(Clock::now() - stop_at, std::chrono::milliseconds(400)) << "the stop did not wait for the request";
  EXPECT_LT(Clock::now() - stop_at, std::chrono::seconds(30)) << "the stop waited past its timeout";
  never.held.clear();
  server.reset();  // closes the connection: the client gives up
  client.join();
  EXPECT_NE(got.status_code, 200);
}

// A client that keeps its connection and sends on it while the stop ends
// (nothing held: the stop would end at once) gets 503 STOPPING with
// Connection: close, not a connection closed under its request; the stop
// ends once its clients have closed their connections, well before
// stop_linger.
TEST(HttpServerStop, AKeptConnectionIsAnsweredStoppingWhileTheStopLingers) {
  std::unique_ptr<HttpServer> server = NewServer(std::chrono::seconds(60), std::chrono::seconds(60));
  ASSERT_TRUE(server);
  const uint16_t port = server->port();
  std::thread loop([&] { EXPECT_TRUE(server->Run().ok()); });
  const int fd = testing::ConnectLoopback(port);
  ASSERT_GE(fd, 0);
  const std::string first = RawExchange(fd, "GET /hello HTTP/1.1\r\nHost: t\r\n\r\n");
  ASSERT_NE(first.find(" 200 "), std::string::npos) << first;
  EXPECT_EQ(first.find("Connection: close"), std::string::npos) << "a kept connection before the stop: " << first;
  // An HTTP/1.0 client that asks for keep-alive: during the stop its answer
  // must say close alone (libevent would add "keep-alive" beside it, and a
  // client taking the last header would send again on a closing connection).
  const int fd10 = testing::ConnectLoopback(port);
  ASSERT_GE(fd10, 0);
  const std::string request10 = "GET /hello HTTP/1.0\r\nConnection: keep-alive\r\n\r\n";
  const std::string first10 = RawExchange(fd10, request10);
  ASSERT_NE(first10.find("Connection: keep-alive"), std::string::npos) << "kept before the stop: " << first10;

  const Clock::time_point stop_at = Clock::now();
  server->Stop();
  ASSERT_TRUE(testing::WaitFor([&] { return Refused(port); }));
  const std::string refused = RawExchange(fd, "GET /hello HTTP/1.1\r\nHost: t\r\n\r\n");
  EXPECT_NE(refused.find(" 503 "), std::string::npos) << refused;
  EXPECT_NE(refused.find("STOPPING"), std::string::npos) << refused;
  EXPECT_NE(refused.find("Connection: close"), std::string::npos) << refused;
  const std::string refused10 = RawExchange(fd10, request10);
  EXPECT_NE(refused10.find(" 503 "), std::string::npos) << refused10;
  EXPECT_NE(refused10.find("Connection: close"), std::string::npos) << refused10;
  EXPECT_EQ(refused10.find("keep-alive"), std::string::npos) << refused10;
  ::close(fd10);
  // The server closes it after that answer; then the stop ends.
  char byte;
  EXPECT_EQ(::recv(fd, &byte, 1, 0), 0) << "the connection stayed open after Connection: close";
  ::close(fd);
  loop.join();
  EXPECT_LT(Clock::now() - stop_at, std::chrono::seconds(30)) << "the stop lingered after its clients left";
}

// A client that keeps an idle connection open holds the stop for
// stop_linger at most.
TEST(HttpServerStop, AnIdleKeptConnectionHoldsTheStopForTheLingerAtMost) {
  std::unique_ptr<HttpServer> server = NewServer(std::chrono::seconds(60), std::chrono::milliseconds(500));
  ASSERT_TRUE(server);
  std::thread loop([&] { EXPECT_TRUE(server->Run().ok()); });
  const int fd = testing::ConnectLoopback(server->port());
  ASSERT_GE(fd, 0);
  ASSERT_NE(RawExchange(fd, "GET /hello HTTP/1.1\r\nHost: t\r\n\r\n").find(" 200 "), std::string::npos);
  const Clock::time_point stop_at = Clock::now();
  server->Stop();
  loop.join();
  EXPECT_GE(Clock::now() - stop_at, std::chrono::milliseconds(400)) << "the stop did not linger for its client";
  EXPECT_LT(Clock::now() - stop_at, std::chrono::seconds(5)) << "the stop lingered far past stop_linger (500 ms)";
  server.reset();  // as the daemon exits
  char byte;
  EXPECT_EQ(::recv(fd, &byte, 1, 0), 0) << "the idle connection is closed with the server";
  ::close(fd);
}

// A connection the kernel took that the loop has not accepted yet (here it
// waits behind max_connections = 1) when the stop closes the listening
// socket: answered 503 STOPPING, not reset under the request it sent.
TEST(HttpServerStop, AConnectionWaitingToBeAcceptedIsAnsweredStopping) {
  std::unique_ptr<HttpServer> server = NewServer(std::chrono::seconds(60), std::chrono::milliseconds(0), 1);
  ASSERT_TRUE(server);
  const uint16_t port = server->port();
  std::thread loop([&] { EXPECT_TRUE(server->Run().ok()); });
  const int taken = testing::ConnectLoopback(port);
  ASSERT_GE(taken, 0);
  ASSERT_NE(RawExchange(taken, "GET /hello HTTP/1.1\r\nHost: t\r\n\r\n").find(" 200 "), std::string::npos);
  // The one connection allowed is open: the listener pauses, and the next
  // one waits in the kernel's queue.
  const std::string stats = RawExchange(taken, "GET /stats HTTP/1.1\r\nHost: t\r\n\r\n");
  ASSERT_NE(stats.find("\"accept_pauses\":1"), std::string::npos) << stats;
  const int waiting = testing::ConnectLoopback(port);
  ASSERT_GE(waiting, 0);
  const std::string request = "GET /hello HTTP/1.1\r\nHost: t\r\n\r\n";
  ASSERT_EQ(::send(waiting, request.data(), request.size(), MSG_NOSIGNAL), static_cast<ssize_t>(request.size()));
  server->Stop();
  const std::string answer = RawExchange(waiting, "");
  EXPECT_NE(answer.find(" 503 "), std::string::npos) << "'" << answer << "'";
  EXPECT_NE(answer.find("STOPPING"), std::string::npos) << answer;
  EXPECT_NE(answer.find("Retry-After: 1"), std::string::npos) << answer;
  ::close(waiting);
  ::close(taken);
  loop.join();
}

}  // namespace
}  // namespace clickatron
