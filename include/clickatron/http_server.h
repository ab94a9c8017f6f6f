// HttpServer: the one HTTP core every daemon shares (simplehttp's idea).
//
// libevent evhttp underneath, HTTP/1.1 keep-alive, one event loop thread
// per server; sibling servers (NewSibling) serve the same port on loops of
// their own.
// Built in: /ping, /stats (JSON), /metrics (Prometheus text), per-endpoint
// counts and latency percentiles, limits on headers/body/idle time, bearer
// token on admin routes, cluster signatures on internal routes, SIGINT/SIGTERM stop, signals delivered as ordinary
// loop callbacks (never work inside a signal handler).
//
// Thread-safety: everything runs on the loop thread except RunInLoop() and
// Stop(), which any thread may call, and stats() (HttpStats is thread-safe).
// The set-up calls (Route, InternalRoute, AdminRoute, SetStatsProvider,
// OnSignal, OnStop, OnStopDrain, Every, After) are made before Run() by the thread that
// will call it, or later on the loop thread. An HttpExchange must be answered
// on the loop thread; work done elsewhere posts its answer back with
// RunInLoop().
#pragma once

#include <chrono>
#include <cstdint>
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <string_view>

#include <nlohmann/json.hpp>

#include "clickatron/config.h"
#include "clickatron/http_stats.h"
#include "clickatron/query_string.h"
#include "clickatron/status.h"

struct event_base;

namespace clickatron {

class HttpServer;
class TlsContext;

// The JSON envelope every answer uses:
// {"status_code": 200, "status_txt": "OK", "data": …}.
nlohmann::json Envelope(int status_code, std::string_view status_txt, nlohmann::json data);

// One request and its (single) answer. Held by shared_ptr so an async handler
// can answer later; if the client went away meanwhile, alive() is false and
// answering does nothing. An exchange dropped unanswered gets a 500.
class HttpExchange {
 public:
  virtual ~HttpExchange() = default;

  virtual const std::string& method() const = 0;  // "GET", "POST", …
  virtual const std::string& path() const = 0;    // without the query
  // The path a refusal is shaped by (SetRefusalBody): path(), or the
  // request's own target while that is not parsed (a refusal of the
  // request's framing or URI comes before it is).
  virtual std::string_view refusal_target() const { return path(); }
  virtual const QueryArgs& args() const = 0;      // the query string's parameters
  virtual const std::string& body() const = 0;
  // A request header's value; nullopt when absent (an empty one is "").
  virtual std::optional<std::string> find_header(std::string_view name) const = 0;
  std::string header(std::string_view name) const { return find_header(name).value_or(std::string()); }
  virtual bool alive() const = 0;
  virtual bool answered() const = 0;
  // Adds a response header; call before Reply/StartStream.
  virtual void AddHeader(std::string_view name, std::string_view value) = 0;

  // A plain answer. Errors (>= 400) count as errors in /stats.
  virtual void Reply(int status, std::string_view body, std::string_view content_type = "text/plain") = 0;
  // 200 with the envelope around `data`.
  void ReplyJson(nlohmann::json data);
  // The same, with `data_json` already serialized (valid JSON): hot read
  // paths write their answer as text instead of building a DOM per query.
  void ReplyJsonData(std::string_view data_json);
  // The envelope with data null, status_txt = reason, and a "message" for
  // people; on a path with a refusal body of its own (SetRefusalBody), that.
  void ReplyError(int status, std::string_view reason, std::string_view message);
  void ReplyError(const Status& status);

  // Streaming (chunked) answers for large bodies. SendChunk's `on_sent` runs
  // when the chunk has left the buffer: produce the next one then, so memory
  // stays bounded whatever the client's speed. It never runs if the client
  // has gone (check alive()).
  virtual void StartStream(int status, std::string_view content_type) = 0;
  virtual void SendChunk(std::string_view data, std::function<void()> on_sent = nullptr) = 0;
  virtual void EndStream() = 0;
};
using HttpExchangePtr = std::shared_ptr<HttpExchange>;
using HttpHandler = std::function<void(const HttpExchangePtr&)>;

// Methods a route takes. HEAD is answered wherever GET is (the GET's headers
// and Content-Length, no body), except on routes marked kUnsafeGet: their GET
// changes state (GET /incr counts), and HEAD, which clients and proxies send
// as a harmless probe, must not run them (405).
// kBoundedAnswers: the route's answers are small (an increment's
// acknowledgement) or streamed with back-pressure (exports, whole files), so
// it is served even while slow readers hold [http] max_answer_bytes_queued;
// other routes then answer 503 SLOW_READERS. Admin routes always are.
// kLongStreams: the route's streamed answers may run for minutes (a whole
// file to a replica): once one has begun, a stop lets it be written for the
// answers' grace (2 s), not to its end, so that it never holds a restart.
// Other routes' streams (queries) are owed to their end, as any answer,
// within stop_drain_timeout.
enum HttpMethods : unsigned {
  kGet = 1,
  kPost = 2,
  kGetOrPost = 3,
  kUnsafeGet = 4,
  kBoundedAnswers = 8,
  kLongStreams = 16,
};

struct HttpServerOptions {
  std::string daemon;    // "clickatron-archive": names the process in /stats and /metrics
  std::string member;    // the cluster member name
  HostPort listen;       // port 0: pick a free port (see port())
  HttpLimits limits;
  std::string admin_token;     // empty: admin routes are open
  std::string cluster_secret;  // empty: internal routes are open (clickatron/cluster_auth.h)
  std::string client_token;    // non-empty: public routes need "Authorization: Bearer TOKEN"
  std::shared_ptr<const TlsContext> tls;  // set: serve TLS only (clickatron/tls.h)
  // A daemon stops on SIGINT/SIGTERM (and ignores them while it closes). A
  // server inside a command-line tool leaves the signals to the process.
  bool stop_on_signals = true;
  // How long a stop waits for OnStopDrain hooks and the requests it took
  // before the loop ends anyway.
  std::chrono::milliseconds stop_drain_timeout{10000};
  // After a stop's drain and answers, how long it may still wait for its
  // clients to close their kept connections, answering what they send 503
  // STOPPING with Connection: close (0: not at all). Without it a request
  // sent on a kept connection while the loop ends finds it closed with no
  // answer, and its client cannot tell whether it was taken.
  std::chrono::milliseconds stop_linger{0};
  // Sibling servers (NewSibling) may listen on this port too, each on a loop
  // of its own; the kernel spreads new connections over them (SO_REUSEPORT).
  // A port that anything else holds at start is still refused; afterwards
  // another process of the same user could join the port as SO_REUSEPORT
  // allows (so only the daemons' user may run anything on their host).
  bool share_port = false;
};

// The body of every error answer (HttpExchange::ReplyError, and refusals a
// server makes on a request's head, before a handler runs: 413
// BODY_TOO_LARGE for a body declared over the bound, 503 STOPPING) for
// requests to exactly `path`: by default the JSON envelope; routes whose
// clients parse another error shape (the Influx write doors) register
// theirs. libevent's own error pages use it too when they still know the
// request's path (not for its 400 and 413: it drops the path first), and
// 503 TOO_MANY_BYTES_IN_FLIGHT, which may come before the head, never does.
// Process-wide (libevent's error pages know no server); set before any
// server runs, read-only after.
using RefusalBody = std::string (*)(int status, std::string_view reason, std::string_view message);
void SetRefusalBody(std::string path, RefusalBody body);

class HttpServer {
 public:
  // Binds the socket (fails here, not later, if the address is taken).
  static Result<std::unique_ptr<HttpServer>> Create(HttpServerOptions options);
  virtual ~HttpServer() = default;

  // Exact-path routes; a path ending in '/' is a prefix route, taking every
  // path under it that has no route of its own ("/delete/" takes
  // "/delete/ID"). A request with another method gets 405. Public
  // routes are for clients (closed only by a client token).
  virtual void Route(std::string path, HttpHandler handler, unsigned methods = kGetOrPost) = 0;
  // Routes for other cluster members: when a cluster secret is configured
  // the request must carry a valid signature (401 otherwise).
  virtual void InternalRoute(std::string path, HttpHandler handler, unsigned methods = kGetOrPost) = 0;
  // Routes that change state outside the counting path (docs/protocols.md): when an
  // admin token is configured they need "Authorization: Bearer TOKEN" (401).
  virtual void AdminRoute(std::string path, HttpHandler handler, unsigned methods = kPost) = 0;

  // Daemon-specific figures: merged into /stats data and appended to /metrics.
  virtual void SetStatsProvider(std::function<nlohmann::json()> json,
                                std::function<std::string()> prometheus) = 0;
  // Runs `fn` on the loop thread when `signo` arrives (SIGHUP reloads).
  virtual void OnSignal(int signo, std::function<void()> fn) = 0;
  // Runs `fn` on the loop thread just before Run() returns (flush, close).
  virtual void OnStop(std::function<void()> fn) = 0;
  // Work that clients are owed an answer for when the server stops (the
  // API's increments on their way into the oplog). On Stop() the server
  // stops accepting connections (those in the listen queue are answered
  // 503 STOPPING, on plain HTTP) and answers new requests 503 STOPPING; it
  // runs each drain hook on the loop thread, keeps the loop serving until
  // every hook has called its `drained` (once) and every request taken
  // before the stop is answered or has begun a streamed answer (but an
  // admin route's: an operator's job is given up), or stop_drain_timeout
  // passes; lets the answers given meanwhile be written (for at most 2 s
  // more); lingers while clients keep connections (stop_linger); runs the
  // OnStop hooks, and Run() returns.
  virtual void OnStopDrain(std::function<void(std::function<void()> drained)> fn) = 0;
  // Runs `fn` on the loop thread every `period`, first after one period.
  virtual void Every(std::chrono::milliseconds period, std::function<void()> fn) = 0;
  // Runs `fn` once on the loop thread after `delay`, to the microsecond (a
  // 1.4 ms delay is not rounded up to 2 ms; see src/precise_timers.h).
  virtual void After(std::chrono::microseconds delay, std::function<void()> fn) = 0;

  // Serves until Stop() or SIGINT/SIGTERM.
  virtual Status Run() = 0;
  virtual void Stop() = 0;                                // any thread
  virtual void RunInLoop(std::function<void()> fn) = 0;   // any thread

  // Another server on this server's port (which needs share_port) for a
  // loop of its own: another thread calls its Run(). It serves the routes
  // set on it (its handlers run on its loop); a request for any route of
  // this server, /ping, /stats or /metrics is handed to this server's
  // loop, handled there and answered through the sibling, so handlers that
  // are not thread-safe stay on one loop; once this server's stop has begun
  // they are answered 503 STOPPING. Endpoint figures are shared.
  // Make siblings once this server's routes are set.
  virtual Result<std::unique_ptr<HttpServer>> NewSibling() = 0;

  virtual event_base* base() = 0;
  virtual uint16_t port() const = 0;  // the bound port
  virtual HttpStats& stats() = 0;
  virtual const HttpServerOptions& options() const = 0;
};

}  // namespace clickatron
