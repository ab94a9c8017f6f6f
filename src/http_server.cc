#include "clickatron/http_server.h"

#include <event2/bufferevent.h>
#include <event2/bufferevent_ssl.h>
#include <event2/event.h>
#include <event2/http.h>
#include <event2/keyvalq_struct.h>
#include <event2/listener.h>
#include <event2/thread.h>
#include <event2/util.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <strings.h>
#include <sys/socket.h>
#include <fmt/format.h>
#include <spdlog/spdlog.h>

#include <algorithm>
#include <atomic>
#include <cerrno>
#include <chrono>
#include <csignal>
#include <cstring>
#include <cstdlib>
#include <ctime>
#include <map>
#include <mutex>
#include <set>
#include <unordered_map>
#include <unordered_set>
#include <vector>

#include "clickatron/answer_pieces.h"
#include "clickatron/cluster_auth.h"
#include "clickatron/key_codec.h"
#include "clickatron/metrics_table.h"
#include "clickatron/tls.h"
#include "clickatron/unique_fd.h"
#include "forwarded_exchange.h"
#include "libevent_ptr.h"
#include "loop_mailbox.h"
#include "http_error_page.h"
#include "connection_limits.h"
#include "raw_answer.h"
#include "request_deadline.h"
#include "precise_timers.h"

namespace clickatron {

void EnableLibeventThreads() {
  static std::once_flag once;
  std::call_once(once, [] {
    evthread_use_pthreads();
    std::signal(SIGPIPE, SIG_IGN);
  });
}

namespace {

// The Date header, formatted once a second per thread. libevent formats it
// for every answer that has none (gmtime and a printf: ~4% of an API node's
// instructions answering short queries, by callgrind); an answer names the
// second it was made in either way.
const char* HttpDateNow() {
  thread_local time_t second = -1;
  thread_local char text[64] = "";
  const time_t now = std::time(nullptr);
  if (now != second) {
    struct tm utc;
    if (gmtime_r(&now, &utc) == nullptr || evutil_date_rfc1123(text, sizeof(text), &utc) <= 0) return nullptr;
    second = now;
  }
  return text;
}

void AddDateHeader(evkeyvalq* headers) {
  if (const char* date = HttpDateNow()) evhttp_add_header(headers, "Date", date);
}

}  // namespace

nlohmann::json Envelope(int status_code, std::string_view status_txt, nlohmann::json data) {
  nlohmann::json out = nlohmann::json::object();
  out["status_code"] = status_code;
  out["status_txt"] = status_txt;
  out["data"] = std::move(data);
  return out;
}

void HttpExchange::ReplyJson(nlohmann::json data) {
  Reply(200, Envelope(200, "OK", std::move(data)).dump(-1, ' ', false, nlohmann::json::error_handler_t::replace) + "\n",
        "application/json");
}

void HttpExchange::ReplyJsonData(std::string_view data_json) {
  // Envelope's keys in the order ReplyJson's DOM dumps them (sorted).
  std::string body;
  body.reserve(data_json.size() + 48);
  body.append("{\"data\":").append(data_json).append(",\"status_code\":200,\"status_txt\":\"OK\"}\n");
  Reply(200, body, "application/json");
}

namespace {

// A 500 is the daemon's own failure (a damaged store, a disk error), not the
// client's: it goes to the log too, whose reader may never see the answer.
// At most one line a second, with a count of those left out.
void LogServerError(std::string_view path, std::string_view reason, std::string_view message) {
  // No lock: every loop may answer 500s at once (a failing disk), and none
  // waits on another's log write.
  static std::atomic<int64_t> last_ms{-1000};
  static std::atomic<uint64_t> left_out{0};
  const int64_t now_ms = std::chrono::duration_cast<std::chrono::milliseconds>(
                             std::chrono::steady_clock::now().time_since_epoch())
                             .count();
  int64_t last = last_ms.load(std::memory_order_relaxed);
  if (now_ms - last < 1000 || !last_ms.compare_exchange_strong(last, now_ms, std::memory_order_relaxed)) {
    left_out.fetch_add(1, std::memory_order_relaxed);
    return;
  }
  const uint64_t skipped = left_out.exchange(0, std::memory_order_relaxed);
  spdlog::error("answered 500 {} to {}: {}{}", reason, path, message,
                skipped == 0 ? std::string() : fmt::format(" ({} more 500s since the last such line)", skipped));
}

// A request that reaches a stopping server: nothing of it is taken, and
// the client should try again (another node, or this one once it is back).
constexpr std::string_view kStoppingMessage = "the daemon is stopping; nothing of this request was taken; retry";

void RefuseStopping(HttpExchange& ex) {
  ex.AddHeader("Retry-After", "1");
  ex.ReplyError(503, "STOPPING", kStoppingMessage);
}

}  // namespace

void HttpExchange::ReplyError(int status, std::string_view reason, std::string_view message) {
  if (status == 500) LogServerError(path(), reason, message);
  if (RefusalBody shape = RefusalBodyFor(refusal_target())) {
    Reply(status, shape(status, reason, message), "application/json");
    return;
  }
  nlohmann::json env = Envelope(status, reason, nullptr);
  env["message"] = message;
  Reply(status, env.dump(-1, ' ', false, nlohmann::json::error_handler_t::replace) + "\n", "application/json");
}

void HttpExchange::ReplyError(const Status& status) {
  ReplyError(status.HttpStatus(), status.reason().empty() ? "ERROR" : status.reason(), status.message());
}

namespace {

using Clock = std::chrono::steady_clock;

// A request target as a path and query. RFC 9112 3.2.2: a server must
// accept the absolute-form ("http://host:port/path?query", what clients
// send to proxies) as well as the origin-form ("/path?query"); it names the
// same resource here (the authority is this server).
std::string_view OriginForm(std::string_view target) {
  if (target.empty() || target.front() == '/') return target;
  const auto scheme_is = [&](std::string_view scheme) {
    return target.size() > scheme.size() && strncasecmp(target.data(), scheme.data(), scheme.size()) == 0;
  };
  size_t authority = 0;
  if (scheme_is("http://")) {
    authority = 7;
  } else if (scheme_is("https://")) {
    authority = 8;
  } else {
    return target;
  }
  const size_t path = target.find('/', authority);
  // "http://host" or "http://host?q" has no path: nothing here is routed at
  // an empty one, and the answer is 404 as for any unknown path.
  if (path == std::string_view::npos || target.find('?', authority) < path) return std::string_view();
  return target.substr(path);
}

// Answers larger than this are not queued while slow readers hold
// [http] max_answer_bytes_queued (503 SLOW_READERS instead); smaller ones
// (acknowledgements, errors, health checks) always are.
constexpr size_t kLargeAnswerBytes = 16 << 10;

class HttpServerImpl;

// State shared between an exchange and the connection close callback, so an
// answer for a client that has gone is dropped instead of touching freed memory.
class ExchangeImpl : public HttpExchange, public std::enable_shared_from_this<ExchangeImpl> {
 public:
  ExchangeImpl(HttpServerImpl* server, evhttp_request* req, std::string endpoint)
      : server_(server),
        req_(req),
        endpoint_(std::move(endpoint)),
        start_(Clock::now()),
        head_(evhttp_request_get_command(req) == EVHTTP_REQ_HEAD) {}
  ~ExchangeImpl() override;

  Status Parse(size_t max_args);
  const std::string& method() const override { return method_; }
  const std::string& path() const override { return path_; }
  // The Influx write doors answer in Influx's shape also what is refused
  // before the URI is parsed (two Content-Lengths, a bad byte in the URI).
  std::string_view refusal_target() const override {
    if (!path_.empty() && path_ != "(bad uri)") return path_;
    const char* uri = req_ != nullptr ? evhttp_request_get_uri(req_) : nullptr;
    return uri != nullptr ? std::string_view(uri) : std::string_view(path_);
  }
  const QueryArgs& args() const override { return args_; }
  const std::string& body() const override { return body_; }
  std::optional<std::string> find_header(std::string_view name) const override;
  bool alive() const override { return req_ != nullptr; }
  bool answered() const override { return answered_; }
  // Its route's answers are bounded (kBoundedAnswers, built-ins): never
  // refused as SLOW_READERS.
  void set_bounded_answers(bool bounded) { bounded_answers_ = bounded; }
  // Its route's streams may run for minutes (kLongStreams): once begun,
  // not owed to a stop.
  void set_long_streams(bool long_streams) { long_streams_ = long_streams; }
  void AddHeader(std::string_view name, std::string_view value) override {
    if (req_ && !answered_ && !streaming_) {
      evhttp_add_header(evhttp_request_get_output_headers(req_), std::string(name).c_str(), std::string(value).c_str());
    }
  }

  void Reply(int status, std::string_view body, std::string_view content_type) override;
  void StartStream(int status, std::string_view content_type) override;
  void SendChunk(std::string_view data, std::function<void()> on_sent) override;
  void EndStream() override;

  void ConnectionClosed();
  const std::string& endpoint() const { return endpoint_; }
  HeaderList RequestHeaders() const;

 private:
  static void ChunkSent(evhttp_connection*, void* arg);
  void Finish(int status);
  // Hands the answer to libevent, which owns and frees the request from here.
  void Send(int status, std::string_view body, std::string_view content_type, bool length_known = true);

  HttpServerImpl* server_;
  evhttp_request* req_;
  std::string endpoint_;
  Clock::time_point start_;
  bool head_;  // HEAD: every answer goes without its body
  std::string method_;
  std::string path_;
  QueryArgs args_;
  std::string body_;
  bool answered_ = false;
  bool streaming_ = false;
  bool bounded_answers_ = false;
  bool long_streams_ = false;
  int stream_status_ = 0;
  std::function<void()> on_sent_;
  std::shared_ptr<ExchangeImpl> self_while_streaming_;
};

enum class Access { kPublic, kInternal, kAdmin };

struct RouteEntry {
  HttpHandler handler;
  unsigned methods;
  Access access;
};

using RouteMap = std::map<std::string, RouteEntry, std::less<>>;

// The route (or forwarded path) for `path`: its exact entry, else the
// longest entry ending in '/' that it starts with (a prefix route:
// "/delete/" takes "/delete/ID"), else end().
template <typename Container>
typename Container::const_iterator FindPath(const Container& c, std::string_view path) {
  auto it = c.find(path);
  if (it != c.end()) return it;
  for (size_t slash = path.rfind('/'); slash != std::string_view::npos && slash > 0;
       slash = path.rfind('/', slash - 1)) {
    if (slash + 1 == path.size()) continue;  // "/delete/" itself was looked up exactly
    it = c.find(path.substr(0, slash + 1));
    if (it != c.end()) return it;
  }
  return c.end();
}

class HttpServerImpl : public HttpServer {
 public:
  explicit HttpServerImpl(HttpServerOptions options) : options_(std::move(options)) {}
  ~HttpServerImpl() override {
    // Every event goes before the base it belongs to (event_free takes the
    // base's lock).
    // evhttp first: freeing its connections runs close callbacks, which
    // may post to the loop (RunInLoop needs wake_).
    http_.reset();
    deadlines_.reset();  // after evhttp has let go of its connections
    limits_.reset();
    for (auto& e : events_) e.reset();
    // Work still posted is dropped here, while the server is whole; later
    // posts (a sibling's forwarded answer) are refused by the mailbox.
    if (mailbox_) mailbox_->Close();
    wake_.reset();
    timers_.clear();
    precise_.reset();
    base_.reset();
  }

  Status Init();
  void Route(std::string path, HttpHandler handler, unsigned methods) override {
    routes_[std::move(path)] = RouteEntry{std::move(handler), methods, Access::kPublic};
  }
  void InternalRoute(std::string path, HttpHandler handler, unsigned methods) override {
    routes_[std::move(path)] = RouteEntry{std::move(handler), methods, Access::kInternal};
  }
  void AdminRoute(std::string path, HttpHandler handler, unsigned methods) override {
    // Operators' routes (a token needed): small answers, or exports streamed
    // with back-pressure; never refused as SLOW_READERS.
    routes_[std::move(path)] = RouteEntry{std::move(handler), methods | kBoundedAnswers, Access::kAdmin};
  }
  void SetStatsProvider(std::function<nlohmann::json()> json, std::function<std::string()> prom) override {
    stats_json_ = std::move(json);
    stats_prom_ = std::move(prom);
  }
  void OnSignal(int signo, std::function<void()> fn) override;
  void OnStop(std::function<void()> fn) override { stop_hooks_.push_back(std::move(fn)); }
  void OnStopDrain(std::function<void(std::function<void()>)> fn) override { drain_hooks_.push_back(std::move(fn)); }
  void Every(std::chrono::milliseconds period, std::function<void()> fn) override { AddTimer(period, std::move(fn), true); }
  void After(std::chrono::microseconds delay, std::function<void()> fn) override {
    precise_->After(delay, std::move(fn));
  }
  Status Run() override;
  void Stop() override;
  void RunInLoop(std::function<void()> fn) override;
  Result<std::unique_ptr<HttpServer>> NewSibling() override;
  event_base* base() override { return base_.get(); }
  uint16_t port() const override { return port_; }
  HttpStats& stats() override { return *stats_; }
  const HttpServerOptions& options() const override { return options_; }

  // Called by exchanges.
  // A request taken on `conn`; `owed`: a stop waits for its answer (not an
  // admin route's). Requests taken once the stop began are refused at once.
  void Track(evhttp_connection* conn, const std::shared_ptr<ExchangeImpl>& ex, bool owed) {
    open_[conn] = OpenRequest{ex, owed && !stopping_};
  }
  // The request on `conn` was answered (or its connection closed).
  void Untrack(evhttp_connection* conn);
  // A stop no longer waits for the request on `conn`: answered, its
  // connection closed, or its streamed answer begun (then only its writing
  // is waited for, within the grace).
  void NoLongerOwed(evhttp_connection* conn);
  // An answer handed to libevent: its connection is remembered until the
  // answer has been written (or the connection closed), so a stop lets it
  // leave before the loop ends.
  bool AnswerFits() const { return !limits_->AnswersOverBudget(); }
  bool stopping() const { return stopping_; }
  // 503 SLOW_READERS, counted.
  void RefuseForSlowReaders(HttpExchange& ex);
  void AnswerLeaving(evhttp_request* req) {
    if (evhttp_connection* conn = evhttp_request_get_connection(req)) answering_.insert(conn);
    evhttp_request_set_on_complete_cb(req, &HttpServerImpl::OnAnswerSent, this);
  }

 private:
  struct Timer {
    HttpServerImpl* server;
    std::function<void()> fn;
    bool repeat;
    EventPtr ev;
  };
  static void OnRequest(evhttp_request* req, void* arg);
  static void OnConnectionClose(evhttp_connection* conn, void* arg);
  static void OnWake(evutil_socket_t, short, void* arg);
  static void OnSignalEvent(evutil_socket_t signo, short, void* arg);
  static void OnTimer(evutil_socket_t, short, void* arg);
  static void OnAnswerSent(evhttp_request*, void* arg);
  // Stop(), on the loop: no new connections or requests, the drain hooks
  // run; FinishStop() once they are done (or stop_drain_timeout passed)
  // waits for the answers being written, then EndLoop() runs the stop hooks
  // and ends the loop.
  void BeginStop();
  // A drain (a hook's, or the requests taken before the stop) is done.
  void Drained();
  void FinishStop();
  // After the answers: lingers while clients hold connections (see
  // HttpServerOptions::stop_linger), then EndLoop().
  void Linger();
  void LingerCheck();  // every 10 ms while lingering
  void EndLoop();
  // An answer was written, or its connection closed.
  void AnswerGone(evhttp_connection* conn);
  void AddTimer(std::chrono::microseconds period, std::function<void()> fn, bool repeat);
  void Dispatch(evhttp_request* req);
  // Routes a parsed exchange (received here, or forwarded by a sibling).
  // `route`: routes_.find(ex->path()), found by the caller.
  void Handle(const HttpExchangePtr& ex, std::string_view uri, RouteMap::const_iterator route);
  // A sibling hands `ex` to its primary's loop.
  void Forward(const std::shared_ptr<ExchangeImpl>& ex, std::string_view uri);
  void Builtin(const HttpExchangePtr& ex);
  // An unsigned request to an internal route is refused on its head, before
  // its body is kept (connection_limits.h); the signature itself is
  // checked with the whole request, before its handler.
  std::string CheckHead(std::string_view head) const;
  // /stats' "connections" and its /metrics (connection_limits.h).
  nlohmann::json ConnectionsJson() const;
  std::string ConnectionsPrometheus(const std::string& labels) const;
  // A sibling (primary_ set) joins its primary's bound address.
  Result<evhttp_bound_socket*> Listen();
  // SO_REUSEPORT on exactly `addr`.
  Result<evhttp_bound_socket*> ListenOn(const sockaddr_storage& addr, size_t addr_len);
  // evhttp's bufferevent factory: a socket, or TLS with one SSL per
  // connection, watched for the request deadline.
  static bufferevent* NewBufferevent(event_base* base, void* arg);
  // Whether the request may use a route of this access kind (401 if not).
  Status Authorize(Access access, std::string_view uri, const HttpExchange& ex) const;
  void RunStopHooks();

  HttpServerOptions options_;
  EventBasePtr base_;
  EvhttpPtr http_;
  uint16_t port_ = 0;
  std::string signed_address_;  // "HOST:PORT" that signatures to this server name
  RouteMap routes_;
  std::shared_ptr<HttpStats> stats_ = std::make_shared<HttpStats>();  // a sibling's is its primary's
  // A sibling's primary (only ever used through its mailbox, on its loop)
  // and its routes, handed to it (with the built-in ones): their methods'
  // flags (kBoundedAnswers, kLongStreams) and access (a stop does not wait
  // for an admin route's request), as Dispatch reads a local route's.
  HttpServerImpl* primary_ = nullptr;
  LoopMailboxPtr primary_mailbox_;
  struct ForwardedRoute {
    unsigned methods;
    Access access;
  };
  std::map<std::string, ForwardedRoute, std::less<>> forwarded_;
  std::function<nlohmann::json()> stats_json_;
  std::function<std::string()> stats_prom_;
  std::vector<std::function<void()>> stop_hooks_;
  std::vector<std::function<void(std::function<void()>)>> drain_hooks_;
  size_t drains_left_ = 0;
  // The owed requests (open_) a stop still waits for, counted when it
  // begins: every route's but an admin one's (an operator's job, such as a
  // replica's fetch, is given up by a stop).
  size_t owed_left_ = 0;
  bool lingering_ = false;
  Clock::time_point linger_until_;
  bool finishing_ = false;       // FinishStop() began
  bool stop_hooks_ran_ = false;  // EndLoop() (or Run() ending by itself) ran them
  std::unordered_set<evhttp_connection*> answering_;  // AnswerLeaving, not yet written
  evhttp_bound_socket* listening_ = nullptr;  // closed when a stop begins
  std::map<int, std::function<void()>> signal_handlers_;
  std::vector<EventPtr> events_;
  std::vector<std::unique_ptr<Timer>> timers_;
  struct OpenRequest {
    std::weak_ptr<ExchangeImpl> exchange;
    bool owed;  // a stop waits for its answer (Track, NoLongerOwed)
  };
  std::unordered_map<evhttp_connection*, OpenRequest> open_;
  // `request` is no longer owed; the last owed one of a stop ends its drain.
  void Release(OpenRequest& request);
  EventPtr wake_;
  LoopMailboxPtr mailbox_;  // RunInLoop's work, woken by wake_
  std::unique_ptr<PreciseTimers> precise_;
  std::unique_ptr<RequestDeadlines> deadlines_;
  std::unique_ptr<ConnectionLimits> limits_;
  Clock::time_point started_ = Clock::now();
  bool stopping_ = false;
  // The address listened on (share_port): siblings bind exactly it.
  sockaddr_storage bound_{};
  size_t bound_len_ = 0;
};

ExchangeImpl::~ExchangeImpl() {
  if (!answered_ && req_ != nullptr) {
    // A handler dropped the request without answering: a bug, but the client
    // still deserves an answer rather than a hang.
    spdlog::error("{} {}: handler returned no answer", method_, path_);
    Reply(500, "{\"status_code\":500,\"status_txt\":\"INTERNAL_ERROR\",\"data\":null}\n", "application/json");
  }
}

void ExchangeImpl::ConnectionClosed() {
  // When a client leaves before its answer is complete (a streamed answer's
  // write fails), libevent takes the request off the failed connection
  // (its connection becomes null) and leaves it to whoever would have
  // finished it; nobody will now, so free it here or it leaks. A request
  // still on its connection is freed by libevent with the connection.
  if (req_ != nullptr && evhttp_request_get_connection(req_) == nullptr) evhttp_request_free(req_);
  req_ = nullptr;
  on_sent_ = nullptr;
  if (self_while_streaming_) {
    // The stream's producer waits for an on_sent that will never come: let go.
    auto keep = std::move(self_while_streaming_);
    server_->RunInLoop([keep] {});
  }
}

Status ExchangeImpl::Parse(size_t max_args) {
  switch (evhttp_request_get_command(req_)) {
    case EVHTTP_REQ_GET: method_ = "GET"; break;
    case EVHTTP_REQ_POST: method_ = "POST"; break;
    case EVHTTP_REQ_HEAD: method_ = "HEAD"; break;
    case EVHTTP_REQ_PUT: method_ = "PUT"; break;
    case EVHTTP_REQ_DELETE: method_ = "DELETE"; break;
    default: method_ = "OTHER"; break;
  }
  std::string_view uri = OriginForm(evhttp_request_get_uri(req_));
  // RFC 3986: spaces, control and non-ASCII bytes travel percent-encoded.
  // libevent passes some through; refuse them rather than guess a meaning.
  for (size_t i = 0; i < uri.size(); ++i) {
    const auto b = static_cast<unsigned char>(uri[i]);
    if (b <= 0x20 || b >= 0x7f) {
      path_ = "(bad uri)";
      return Status::InvalidArgument(
          fmt::format("the URI has a raw byte 0x{:02x} at offset {}: percent-encode it", b, i), "BAD_URI");
    }
  }
  size_t q = uri.find('?');
  path_ = std::string(uri.substr(0, q));
  evbuffer* in = evhttp_request_get_input_buffer(req_);
  size_t len = evbuffer_get_length(in);
  if (len > 0) {
    body_.resize(len);
    evbuffer_remove(in, body_.data(), len);
  }
  if (q != std::string_view::npos) return ParseQueryString(uri.substr(q + 1), &args_, max_args);
  return Status::Ok();
}

HeaderList ExchangeImpl::RequestHeaders() const {
  HeaderList out;
  if (!req_) return out;
  const evkeyvalq* headers = evhttp_request_get_input_headers(req_);
  for (const evkeyval* h = headers->tqh_first; h != nullptr; h = h->next.tqe_next) out.emplace_back(h->key, h->value);
  return out;
}

std::optional<std::string> ExchangeImpl::find_header(std::string_view name) const {
  if (!req_) return std::nullopt;
  const char* v = evhttp_find_header(evhttp_request_get_input_headers(req_), std::string(name).c_str());
  if (v == nullptr) return std::nullopt;
  return std::string(v);
}

void ExchangeImpl::Finish(int status) {
  answered_ = true;
  auto us = std::chrono::duration_cast<std::chrono::microseconds>(Clock::now() - start_).count();
  server_->stats().Record(endpoint_, static_cast<uint64_t>(us), status >= 400);
}

// An answer given while the server stops ends its connection: the client
// sends its next request elsewhere instead of on a connection about to close.
// (The request's own Connection header goes: libevent would answer an
// HTTP/1.0 keep-alive request "Connection: keep-alive" beside it.)
void CloseAfterAnswerWhenStopping(const HttpServerImpl& server, evhttp_request* req) {
  if (!server.stopping()) return;
  evhttp_remove_header(evhttp_request_get_input_headers(req), "Connection");
  evkeyvalq* headers = evhttp_request_get_output_headers(req);
  if (evhttp_find_header(headers, "Connection") == nullptr) evhttp_add_header(headers, "Connection", "close");
}

void ExchangeImpl::Send(int status, std::string_view body, std::string_view content_type, bool length_known) {
  evkeyvalq* headers = evhttp_request_get_output_headers(req_);
  evhttp_add_header(headers, "Content-Type", std::string(content_type).c_str());
  AddDateHeader(headers);
  CloseAfterAnswerWhenStopping(*server_, req_);
  EvbufferPtr buf(evbuffer_new());
  // libevent 2.1 writes a HEAD answer's body after its headers, and without
  // a Content-Length: a keep-alive client would read that body as the start
  // of its next answer. The GET's length goes in the header instead.
  if (head_) {
    if (length_known) evhttp_add_header(headers, "Content-Length", std::to_string(body.size()).c_str());
  } else {
    AddInPieces(buf.get(), body);
  }
  server_->Untrack(evhttp_request_get_connection(req_));
  server_->AnswerLeaving(req_);
  evhttp_send_reply(req_, status, nullptr, buf.get());
  req_ = nullptr;
}

void ExchangeImpl::Reply(int status, std::string_view body, std::string_view content_type) {
  if (answered_ || streaming_) return;
  // Handlers answer asynchronously, so the check at dispatch lets through
  // every request that arrived before the first answers were queued; this
  // one holds: a large answer that does not fit is not queued.
  if (body.size() > kLargeAnswerBytes && !bounded_answers_ && !server_->AnswerFits()) {
    server_->RefuseForSlowReaders(*this);
    return;
  }
  Finish(status);
  if (!req_) return;
  Send(status, body, content_type);
}

void ExchangeImpl::StartStream(int status, std::string_view content_type) {
  if (answered_ || streaming_ || !req_) return;
  if (head_) {
    // The length of a stream is not known before it is produced, so a HEAD
    // answer says none. Answered here, the producer's chunks are dropped
    // (SendChunk: not streaming) and it lets go at once.
    Finish(status);
    Send(status, {}, content_type, /*length_known=*/false);
    return;
  }
  streaming_ = true;
  stream_status_ = status;
  self_while_streaming_ = shared_from_this();
  evkeyvalq* headers = evhttp_request_get_output_headers(req_);
  evhttp_add_header(headers, "Content-Type", std::string(content_type).c_str());
  AddDateHeader(headers);
  CloseAfterAnswerWhenStopping(*server_, req_);
  server_->AnswerLeaving(req_);
  // A stream that may run for minutes (a replica serving its file): once it
  // has begun, a stop gives it the answers' write grace, as any answer
  // being written, rather than its whole drain. A query's stays owed until
  // it ends (EndStream).
  if (long_streams_) server_->NoLongerOwed(evhttp_request_get_connection(req_));
  evhttp_send_reply_start(req_, status, nullptr);
}

void ExchangeImpl::ChunkSent(evhttp_connection*, void* arg) {
  auto* self = static_cast<ExchangeImpl*>(arg);
  auto fn = std::move(self->on_sent_);
  self->on_sent_ = nullptr;
  if (fn && self->req_) fn();
}

void ExchangeImpl::SendChunk(std::string_view data, std::function<void()> on_sent) {
  if (!streaming_ || answered_ || !req_) return;
  EvbufferPtr buf(evbuffer_new());
  evbuffer_add(buf.get(), data.data(), data.size());
  on_sent_ = std::move(on_sent);
  evhttp_send_reply_chunk_with_cb(req_, buf.get(), on_sent_ ? &ExchangeImpl::ChunkSent : nullptr, this);
}

void ExchangeImpl::EndStream() {
  if (!streaming_ || answered_) return;
  Finish(stream_status_);
  if (req_) {
    server_->Untrack(evhttp_request_get_connection(req_));
    evhttp_send_reply_end(req_);
    req_ = nullptr;
  }
  // Keep *this alive until the loop is done with this call stack.
  auto keep = std::move(self_while_streaming_);
  server_->RunInLoop([keep] {});
}

Status HttpServerImpl::Init() {
  EnableLibeventThreads();
  // The epoll changelist batches the enable/disable calls libevent makes per
  // request into one epoll_ctl each loop turn: with short keep-alive
  // exchanges epoll_ctl was ~18% of a busy API node's CPU. (Its caveat, fds
  // shared through dup(), is met: ConnectionLimits copies a refused socket's
  // descriptor only after the loop has taken the original out of epoll.)
  CPtr<event_config, event_config_free> cfg(event_config_new());
  event_config_set_flag(cfg.get(), EVENT_BASE_FLAG_EPOLL_USE_CHANGELIST);
  // No EVENT_BASE_FLAG_PRECISE_TIMER: After() has timers of its own to the
  // microsecond (precise_timers.h), without a syscall on every loop turn.
  base_.reset(event_base_new_with_config(cfg.get()));
  if (!base_) return Status::Internal("event_base_new failed");
  auto precise = PreciseTimers::Create(base_.get());
  if (!precise.ok()) return precise.status();
  precise_ = std::move(precise).value();
  http_.reset(evhttp_new(base_.get()));
  if (!http_) return Status::Internal("evhttp_new failed");
  const HttpLimits& l = options_.limits;
  evhttp_set_max_headers_size(http_.get(), static_cast<ev_ssize_t>(l.max_header_bytes));
  evhttp_set_max_body_size(http_.get(), static_cast<ev_ssize_t>(l.max_body_bytes));
  evhttp_set_timeout(http_.get(), l.timeout_seconds);
  // Read and discard an oversized body before answering 413, so the client
  // sees the answer instead of a reset connection.
  evhttp_set_flags(http_.get(), EVHTTP_SERVER_LINGERING_CLOSE);
  evhttp_set_allowed_methods(http_.get(), EVHTTP_REQ_GET | EVHTTP_REQ_POST | EVHTTP_REQ_HEAD | EVHTTP_REQ_PUT |
                                              EVHTTP_REQ_DELETE);
  evhttp_set_gencb(http_.get(), &HttpServerImpl::OnRequest, this);
  (void)JsonErrorPagesLinked();  // links http_error_page.o (see there); nothing to check at run time
  deadlines_ = std::make_unique<RequestDeadlines>(base_.get(), std::chrono::seconds(l.request_deadline_seconds),
                                                  std::chrono::seconds(l.timeout_seconds));
  limits_ = std::make_unique<ConnectionLimits>(
      base_.get(), ConnectionLimits::Options{.max_connections = l.max_connections,
                                             .max_request_bytes_in_flight = l.max_request_bytes_in_flight,
                                             .max_answer_bytes_queued = l.max_answer_bytes_queued,
                                             .idle_timeout = std::chrono::seconds(l.timeout_seconds),
                                             .max_body_bytes = l.max_body_bytes,
                                             .max_header_bytes = l.max_header_bytes});
  evhttp_set_bevcb(http_.get(), &HttpServerImpl::NewBufferevent, this);
  auto bound = Listen();
  if (!bound.ok()) return bound.status();
  evhttp_bound_socket* sock = *bound;
  listening_ = sock;
  limits_->SetListener(evhttp_bound_socket_get_listener(sock));
  // Only a server that checks signatures has anything to refuse on a head.
  if (!options_.cluster_secret.empty()) {
    limits_->SetHeadCheck([this](std::string_view head) { return CheckHead(head); });
  }
  // TCP_NODELAY, inherited by every accepted connection (Linux): libevent
  // writes an answer in pieces of at most 16 KiB, and with Nagle on, the
  // last piece waits for the ACK of the first, which the client delays by
  // ~40 ms. Answers larger than 16 KiB (archive lines of hot keys) would
  // each take 40 ms.
  int nodelay = 1;
  setsockopt(evhttp_bound_socket_get_fd(sock), IPPROTO_TCP, TCP_NODELAY, &nodelay, sizeof(nodelay));
  sockaddr_storage ss{};
  ev_socklen_t len = sizeof(ss);
  getsockname(evhttp_bound_socket_get_fd(sock), reinterpret_cast<sockaddr*>(&ss), &len);
  port_ = ntohs(reinterpret_cast<sockaddr_in*>(&ss)->sin_port);
  // Signatures name the address members dial, with the port bound (port 0 picks one).
  signed_address_ = HostPort{options_.listen.host, port_}.ToString();

  wake_.reset(event_new(base_.get(), -1, EV_PERSIST, &HttpServerImpl::OnWake, this));
  event_add(wake_.get(), nullptr);
  mailbox_ = std::make_shared<LoopMailbox>(wake_.get());
  if (options_.stop_on_signals) {
    for (int signo : {SIGINT, SIGTERM}) {
      signal_handlers_[signo] = [this, signo] {
        spdlog::info("signal {}: stopping", signo);
        Stop();
      };
    }
  }
  return Status::Ok();
}

Result<evhttp_bound_socket*> HttpServerImpl::Listen() {
  const HostPort& at = options_.listen;
  auto refused = [&](std::string_view why) {
    return Status::IoError(fmt::format("cannot listen on {}: {}", at.ToString(), why));
  };
  if (primary_ != nullptr) {
    // The primary's own address: a name that resolves differently now must
    // not put a sibling somewhere else.
    return ListenOn(bound_, bound_len_);
  }
  evutil_addrinfo hints{};
  hints.ai_family = AF_UNSPEC;
  hints.ai_socktype = SOCK_STREAM;
  // As evhttp's own bind asks (no AI_ADDRCONFIG: ::1 binds on a host
  // without a global IPv6 address).
  hints.ai_flags = EVUTIL_AI_PASSIVE;
  if (options_.share_port) hints.ai_flags |= EVUTIL_AI_ADDRCONFIG;
  evutil_addrinfo* found = nullptr;
  const std::string port_text = std::to_string(at.port);
  // Resolved here on both paths: evhttp's own bind reports a name that does
  // not resolve with whatever errno was left ("No such file or directory").
  if (int rc = evutil_getaddrinfo(at.host.c_str(), port_text.c_str(), &hints, &found); rc != 0) {
    return refused(evutil_gai_strerror(rc));
  }
  std::unique_ptr<evutil_addrinfo, void (*)(evutil_addrinfo*)> owned(found, evutil_freeaddrinfo);
  if (!options_.share_port) {
    evhttp_bound_socket* sock = evhttp_bind_socket_with_handle(http_.get(), at.host.c_str(), at.port);
    if (!sock) return refused(evutil_socket_error_to_string(EVUTIL_SOCKET_ERROR()));
    return sock;
  }
  sockaddr_storage addr{};
  std::memcpy(&addr, found->ai_addr, found->ai_addrlen);
  const size_t addr_len = found->ai_addrlen;
  auto* port_field = addr.ss_family == AF_INET6 ? &reinterpret_cast<sockaddr_in6*>(&addr)->sin6_port
                                                : &reinterpret_cast<sockaddr_in*>(&addr)->sin_port;
  {
    // SO_REUSEPORT would let this socket join any group already on the
    // port (another daemon of the same user): first bind without it, which
    // fails if anything holds the port, and learns the port that 0 picks.
    UniqueFd probe(socket(addr.ss_family, SOCK_STREAM | SOCK_CLOEXEC, 0));
    int on = 1;
    if (!probe.valid() || setsockopt(probe.get(), SOL_SOCKET, SO_REUSEADDR, &on, sizeof(on)) != 0 ||
        bind(probe.get(), reinterpret_cast<sockaddr*>(&addr), static_cast<socklen_t>(addr_len)) != 0) {
      return refused(std::strerror(errno));
    }
    sockaddr_storage picked{};
    socklen_t picked_len = sizeof(picked);
    getsockname(probe.get(), reinterpret_cast<sockaddr*>(&picked), &picked_len);
    *port_field = picked.ss_family == AF_INET6 ? reinterpret_cast<sockaddr_in6*>(&picked)->sin6_port
                                               : reinterpret_cast<sockaddr_in*>(&picked)->sin_port;
  }
  bound_ = addr;
  bound_len_ = addr_len;
  return ListenOn(addr, addr_len);
}

Result<evhttp_bound_socket*> HttpServerImpl::ListenOn(const sockaddr_storage& addr, size_t addr_len) {
  auto refused = [&](std::string_view why) {
    return Status::IoError(fmt::format("cannot listen on {}: {}", options_.listen.ToString(), why));
  };
  evconnlistener* listener = evconnlistener_new_bind(
      base_.get(), nullptr, nullptr,
      LEV_OPT_REUSEABLE | LEV_OPT_REUSEABLE_PORT | LEV_OPT_CLOSE_ON_FREE | LEV_OPT_CLOSE_ON_EXEC, -1,
      reinterpret_cast<const sockaddr*>(&addr), static_cast<int>(addr_len));
  if (listener == nullptr) return refused(evutil_socket_error_to_string(EVUTIL_SOCKET_ERROR()));
  evhttp_bound_socket* sock = evhttp_bind_listener(http_.get(), listener);  // owns the listener from here
  if (sock == nullptr) {
    evconnlistener_free(listener);
    return refused("evhttp_bind_listener failed");
  }
  return sock;
}

Result<std::unique_ptr<HttpServer>> HttpServerImpl::NewSibling() {
  if (!options_.share_port) return Status::FailedPrecondition("NewSibling needs a server made with share_port");
  HttpServerOptions options = options_;
  options.listen.port = port_;
  options.stop_on_signals = false;  // the primary stops on signals; the siblings' owner stops them
  auto sibling = std::make_unique<HttpServerImpl>(std::move(options));
  sibling->primary_ = this;
  sibling->bound_ = bound_;
  sibling->bound_len_ = bound_len_;
  sibling->primary_mailbox_ = mailbox_;
  sibling->stats_ = stats_;
  for (const auto& [path, entry] : routes_) {
    sibling->forwarded_[path] = ForwardedRoute{.methods = entry.methods, .access = entry.access};
  }
  CLICKATRON_RETURN_IF_ERROR(sibling->Init());
  return std::unique_ptr<HttpServer>(std::move(sibling));
}

void HttpServerImpl::OnSignal(int signo, std::function<void()> fn) { signal_handlers_[signo] = std::move(fn); }

void HttpServerImpl::OnSignalEvent(evutil_socket_t signo, short, void* arg) {
  auto* self = static_cast<HttpServerImpl*>(arg);
  auto it = self->signal_handlers_.find(static_cast<int>(signo));
  if (it != self->signal_handlers_.end()) it->second();
}

void HttpServerImpl::AddTimer(std::chrono::microseconds period, std::function<void()> fn, bool repeat) {
  auto t = std::make_unique<Timer>();
  t->server = this;
  t->fn = std::move(fn);
  t->repeat = repeat;
  t->ev.reset(event_new(base_.get(), -1, repeat ? EV_PERSIST : 0, &HttpServerImpl::OnTimer, t.get()));
  timeval tv{static_cast<time_t>(period.count() / 1000000), static_cast<suseconds_t>(period.count() % 1000000)};
  event_add(t->ev.get(), &tv);
  timers_.push_back(std::move(t));
}

void HttpServerImpl::OnTimer(evutil_socket_t, short, void* arg) {
  auto* t = static_cast<Timer*>(arg);
  HttpServerImpl* self = t->server;
  t->fn();
  if (!t->repeat) {
    for (auto it = self->timers_.begin(); it != self->timers_.end(); ++it) {
      if (it->get() == t) {
        self->timers_.erase(it);
        break;
      }
    }
  }
}

Status HttpServerImpl::Run() {
  for (auto& [signo, fn] : signal_handlers_) {
    EventPtr ev(evsignal_new(base_.get(), signo, &HttpServerImpl::OnSignalEvent, this));
    event_add(ev.get(), nullptr);
    events_.push_back(std::move(ev));
  }
  spdlog::info("{} {} listening on {}:{}", options_.daemon, options_.member, options_.listen.host, port_);
  int rc = event_base_dispatch(base_.get());
  // The loop no longer delivers signals: a second Ctrl-C or SIGTERM while the
  // daemon closes its stores must not kill it half-way.
  events_.clear();
  if (options_.stop_on_signals) {
    std::signal(SIGINT, SIG_IGN);
    std::signal(SIGTERM, SIG_IGN);
  }
  stopping_ = true;
  if (!stop_hooks_ran_) RunStopHooks();  // the loop ended without Stop(): no drain
  if (rc < 0) return Status::Internal("event loop failed");
  return Status::Ok();
}

void HttpServerImpl::RunStopHooks() {
  stop_hooks_ran_ = true;
  for (auto& fn : stop_hooks_) fn();
}

void HttpServerImpl::Stop() {
  RunInLoop([this] { BeginStop(); });
}

// How long a stop waits, after its drain, for the answers being written.
constexpr std::chrono::seconds kAnswerWriteGrace{2};

void HttpServerImpl::BeginStop() {
  if (stopping_) return;
  stopping_ = true;
  // New connections are refused (a client tries another node, or again
  // later); the open ones are served until the loop ends, new requests on
  // them answered 503 STOPPING (Dispatch).
  if (listening_ != nullptr) {
    limits_->SetListener(nullptr);  // freed with the socket
    // The connections the kernel took and this loop has not accepted yet
    // would be reset by the close, a request already sent on one left
    // unanswered: each is answered 503 STOPPING instead. (A TLS one is
    // still reset: it would need its handshake first.)
    if (options_.tls == nullptr) {
      limits_->AnswerQueued(evhttp_bound_socket_get_fd(listening_),
                            RawJsonAnswer(503, "Service Unavailable", "STOPPING", kStoppingMessage, "Retry-After: 1\r\n"));
    }
    evhttp_del_accept_socket(http_.get(), listening_);
    listening_ = nullptr;
  }
  After(options_.stop_drain_timeout, [this] {
    if (finishing_) return;
    spdlog::warn("stopping: {} of the work owed an answer did not finish within {} ms; stopping anyway",
                 drains_left_, options_.stop_drain_timeout.count());
    FinishStop();
  });
  // The requests taken before the stop are one more drain: a query waiting
  // for its shards' answers is answered, not cut off when the loop ends (a
  // client would see its connection closed with no answer at all).
  owed_left_ = static_cast<size_t>(
      std::count_if(open_.begin(), open_.end(), [](const auto& entry) { return entry.second.owed; }));
  drains_left_ = drain_hooks_.size() + (owed_left_ > 0 ? 1 : 0);
  if (drains_left_ == 0) return FinishStop();
  for (auto& hook : drain_hooks_) {
    hook([this, called = std::make_shared<bool>(false)] {
      if (*called) return;
      *called = true;
      Drained();
    });
  }
}

void HttpServerImpl::Drained() {
  if (--drains_left_ == 0 && !finishing_) FinishStop();
}

void HttpServerImpl::Untrack(evhttp_connection* conn) {
  auto it = open_.find(conn);
  if (it == open_.end()) return;
  Release(it->second);
  open_.erase(it);
}

void HttpServerImpl::NoLongerOwed(evhttp_connection* conn) {
  auto it = open_.find(conn);
  if (it != open_.end()) Release(it->second);
}

void HttpServerImpl::Release(OpenRequest& request) {
  if (!request.owed) return;
  request.owed = false;
  if (!stopping_ || owed_left_ == 0 || --owed_left_ > 0) return;
  // Later, on the loop: the last answer is handed to libevent after this
  // (Send), and FinishStop must see it leaving.
  RunInLoop([this] { Drained(); });
}

void HttpServerImpl::FinishStop() {
  if (finishing_) return;
  finishing_ = true;
  // The answers given meanwhile are written before the loop ends: a client
  // that got no answer would send again what was taken. A client that does
  // not read its answer is not waited for past the grace.
  if (answering_.empty()) return Linger();
  After(kAnswerWriteGrace, [this] {
    if (lingering_) return;
    spdlog::warn("stopping: {} answers were still being written after {} s; stopping anyway", answering_.size(),
                 kAnswerWriteGrace.count());
    Linger();
  });
}

void HttpServerImpl::Linger() {
  if (lingering_ || stop_hooks_ran_) return;
  lingering_ = true;
  // A client that sends on a kept connection while the stop ends gets 503
  // STOPPING with Connection: close (Dispatch, ExchangeImpl::Send), not a
  // connection closed under its request: it cannot tell whether such a
  // request was taken. Ends once every client has closed its connection,
  // and read its answer if it got one at the door (AnswerQueued).
  if (options_.stop_linger.count() <= 0) return EndLoop();
  linger_until_ = Clock::now() + options_.stop_linger;
  LingerCheck();
}

void HttpServerImpl::LingerCheck() {
  if (stop_hooks_ran_) return;
  const bool clients_gone = limits_->OpenConnections() == 0 && limits_->stats().lingering == 0;
  if (clients_gone || Clock::now() >= linger_until_) return EndLoop();
  After(std::chrono::milliseconds(10), [this] { LingerCheck(); });
}

void HttpServerImpl::EndLoop() {
  if (stop_hooks_ran_) return;
  // The stop hooks run last (they close what the handlers use), and nothing
  // runs on this loop after them: loopbreak, not loopexit, which would still
  // run the timers and requests of this turn.
  RunStopHooks();
  event_base_loopbreak(base_.get());
}

void HttpServerImpl::OnAnswerSent(evhttp_request* req, void* arg) {
  static_cast<HttpServerImpl*>(arg)->AnswerGone(evhttp_request_get_connection(req));
}

void HttpServerImpl::AnswerGone(evhttp_connection* conn) {
  if (answering_.erase(conn) == 0 || !answering_.empty() || !finishing_) return;
  // Not from inside libevent's callback: the hooks may close connections.
  RunInLoop([this] { Linger(); });
}

void HttpServerImpl::RunInLoop(std::function<void()> fn) { mailbox_->Post(std::move(fn)); }

void HttpServerImpl::OnWake(evutil_socket_t, short, void* arg) {
  auto* self = static_cast<HttpServerImpl*>(arg);
  for (auto& fn : self->mailbox_->Take()) fn();
}

void HttpServerImpl::OnConnectionClose(evhttp_connection* conn, void* arg) {
  auto* self = static_cast<HttpServerImpl*>(arg);
  // An answer cut off (the client left, or stopped reading past evhttp's
  // timeout): libevent never reports it written.
  self->AnswerGone(conn);
  auto it = self->open_.find(conn);
  if (it == self->open_.end()) return;
  if (auto ex = it->second.exchange.lock()) ex->ConnectionClosed();
  self->Untrack(conn);
}

bufferevent* HttpServerImpl::NewBufferevent(event_base* base, void* arg) {
  auto* self = static_cast<HttpServerImpl*>(arg);
  if (!self->options_.tls) {
    bufferevent* bev = bufferevent_socket_new(base, -1, BEV_OPT_CLOSE_ON_FREE);
    if (bev) {
      self->deadlines_->Watch(bev);
      self->limits_->Watch(bev);
    }
    return bev;
  }
  SSL* ssl = self->options_.tls->NewServerSsl();
  bufferevent* bev = ssl ? bufferevent_openssl_socket_new(base, -1, ssl, BUFFEREVENT_SSL_ACCEPTING,
                                                          BEV_OPT_CLOSE_ON_FREE)
                         : nullptr;
  if (bev == nullptr) {
    // evhttp would fall back to a plain socket: never serve plain HTTP
    // where TLS is configured. Only memory exhaustion gets here.
    spdlog::critical("cannot create a TLS session for a new connection (out of memory?): stopping");
    std::abort();
  }
  bufferevent_openssl_set_allow_dirty_shutdown(bev, 1);
  self->deadlines_->Watch(bev);
  self->limits_->Watch(bev);
  return bev;
}

void HttpServerImpl::OnRequest(evhttp_request* req, void* arg) { static_cast<HttpServerImpl*>(arg)->Dispatch(req); }

bool IsBuiltin(std::string_view path) { return path == "/ping" || path == "/stats" || path == "/metrics"; }

// What the request's headers say that refuses it before any handler runs,
// read in one pass over them (every request pays it).
struct HeadFraming {
  // RFC 9112 section 6.3: two different Content-Length values, or a
  // Content-Length beside a Transfer-Encoding, can be framed one way by a
  // proxy in front and another way here (request smuggling). libevent reads
  // the first header it finds; such a request is refused instead.
  bool ambiguous_length = false;
  // A Transfer-Encoding other than plain "chunked", the only transfer coding
  // libevent frames: it reads any other as none, so a "gzip, chunked" body
  // would be taken undecoded. RFC 9112 section 6.1: 501 (null: none).
  const char* unknown_coding = nullptr;
  // A header read with find_header (the first line) that came twice: the
  // second would be ignored without a word (two Idempotency-Keys: a retry
  // sent with the second counted again). RFC 9112 section 3.2 asks a 400 for
  // a repeated Host. Null: none repeated.
  const char* repeated = nullptr;
};

HeadFraming ReadFraming(const evkeyvalq* headers) {
  static constexpr const char* kSingle[] = {"Host", "Authorization", "Idempotency-Key"};
  HeadFraming f;
  const char* length = nullptr;
  bool transfer_encoding = false;
  int seen[std::size(kSingle)] = {};
  for (const evkeyval* h = headers->tqh_first; h != nullptr; h = h->next.tqe_next) {
    if (strcasecmp(h->key, "Content-Length") == 0) {
      if (length != nullptr && std::strcmp(length, h->value) != 0) f.ambiguous_length = true;
      length = h->value;
    } else if (strcasecmp(h->key, "Transfer-Encoding") == 0) {
      transfer_encoding = true;
      if (f.unknown_coding == nullptr && strcasecmp(h->value, "chunked") != 0) f.unknown_coding = h->value;
    } else {
      for (size_t i = 0; i < std::size(kSingle); ++i) {
        if (strcasecmp(h->key, kSingle[i]) == 0 && ++seen[i] > 1 && f.repeated == nullptr) f.repeated = kSingle[i];
      }
    }
  }
  if (length != nullptr && transfer_encoding) f.ambiguous_length = true;
  return f;
}

void HttpServerImpl::Dispatch(evhttp_request* req) {
  std::string_view uri = OriginForm(evhttp_request_get_uri(req));
  std::string_view path = uri.substr(0, uri.find('?'));
  const auto route = FindPath(routes_, path);
  const bool local = route != routes_.end();
  // A sibling hands over its primary's routes and the built-in ones (/ping
  // too: a health check asks the loop that takes increments).
  const auto forwarded = local ? forwarded_.end() : FindPath(forwarded_, path);
  const bool handed_over = forwarded != forwarded_.end();
  const bool forward = !local && primary_ != nullptr && (IsBuiltin(path) || handed_over);
  // Stats are per route: a prefix route counts under its prefix, not per id.
  std::string endpoint = local                            ? route->first
                         : forward && handed_over         ? forwarded->first
                         : (forward || IsBuiltin(path))   ? std::string(path)
                                                          : std::string("(unknown)");
  evhttp_connection* conn = evhttp_request_get_connection(req);
  deadlines_->RequestRead(evhttp_connection_get_bufferevent(conn));
  limits_->RequestRead(evhttp_connection_get_bufferevent(conn));
  auto ex = std::make_shared<ExchangeImpl>(this, req, std::move(endpoint));
  // The route's flags and access, whichever loop holds it (none: not found).
  const unsigned methods = local ? route->second.methods : handed_over ? forwarded->second.methods : 0;
  const bool admin = (local ? route->second.access : handed_over ? forwarded->second.access : Access::kPublic) ==
                     Access::kAdmin;
  Track(conn, ex, /*owed=*/!admin);
  evhttp_connection_set_closecb(conn, &HttpServerImpl::OnConnectionClose, this);
  const HeadFraming framing = ReadFraming(evhttp_request_get_input_headers(req));
  if (framing.ambiguous_length) {
    // Where the next request on this connection starts is unknown: close.
    ex->AddHeader("Connection", "close");
    return ex->ReplyError(400, "BAD_REQUEST",
                          "the request has two different Content-Length headers, or a Content-Length beside a "
                          "Transfer-Encoding: its length is ambiguous");
  }
  if (const char* coding = framing.unknown_coding) {
    ex->AddHeader("Connection", "close");
    return ex->ReplyError(501, "UNSUPPORTED_TRANSFER_ENCODING",
                          fmt::format("Transfer-Encoding {} is not supported: send chunked or a Content-Length (a "
                                      "compressed body: Content-Encoding: gzip)",
                                      QuoteForMessage(coding)));
  }
  if (const char* name = framing.repeated) {
    return ex->ReplyError(400, "BAD_REQUEST", fmt::format("the request has more than one {} header", name));
  }
  if (Status st = ex->Parse(options_.limits.max_query_args); !st.ok()) {
    ex->ReplyError(st);
    return;
  }
  if (stopping_) return RefuseStopping(*ex);
  const bool bounded = IsBuiltin(path) || (methods & kBoundedAnswers) != 0;
  ex->set_bounded_answers(bounded);
  ex->set_long_streams((methods & kLongStreams) != 0);
  if (limits_->AnswersOverBudget() && !bounded) return RefuseForSlowReaders(*ex);
  if (forward) return Forward(ex, uri);
  Handle(ex, uri, route);
}

void HttpServerImpl::Forward(const std::shared_ptr<ExchangeImpl>& ex, std::string_view uri) {
  auto forwarded = std::make_shared<ForwardedExchange>(ex, ex->RequestHeaders(), mailbox_, primary_mailbox_);
  const bool posted = primary_mailbox_->Post([primary = primary_, forwarded, uri = std::string(uri)] {
    // Once the primary's stop has begun (the write path drains into the
    // oplog, then closes), a request handed over meanwhile is refused, not
    // half taken.
    if (primary->stopping_) return RefuseStopping(*forwarded);
    primary->Handle(forwarded, uri, FindPath(primary->routes_, forwarded->path()));
  });
  if (!posted) RefuseStopping(*ex);
}

void HttpServerImpl::Handle(const HttpExchangePtr& ex, std::string_view uri, RouteMap::const_iterator route) {
  const std::string& path = ex->path();
  if (IsBuiltin(path) && route == routes_.end()) {
    Builtin(ex);
    return;
  }
  if (route == routes_.end()) {
    ex->ReplyError(404, "NOT_FOUND", fmt::format("no endpoint {}", path));
    return;
  }
  const RouteEntry& entry = route->second;
  const std::string& method = ex->method();
  const unsigned m = method == "GET"                                        ? unsigned{kGet}
                     : method == "POST"                                     ? unsigned{kPost}
                     : method == "HEAD" && (entry.methods & kUnsafeGet) == 0 ? unsigned{kGet}
                                                                            : 0u;
  if ((entry.methods & m) == 0) {
    // RFC 9110 15.5.6: a 405 says which methods the target takes.
    std::string allow;
    if ((entry.methods & kGet) != 0) allow = (entry.methods & kUnsafeGet) != 0 ? "GET" : "GET, HEAD";
    if ((entry.methods & kPost) != 0) allow += allow.empty() ? "POST" : ", POST";
    ex->AddHeader("Allow", allow);
    ex->ReplyError(405, "METHOD_NOT_ALLOWED", fmt::format("{} does not take {}", path, ex->method()));
    return;
  }
  if (Status st = Authorize(entry.access, uri, *ex); !st.ok()) {
    ex->AddHeader("WWW-Authenticate", entry.access == Access::kInternal ? "Clickatron-HMAC" : "Bearer");
    ex->ReplyError(st);
    return;
  }
  entry.handler(ex);
}

namespace {

// The scheme and its space, in any case (RFC 9110 11.1: a client's
// "bearer TOKEN" is the same header).
constexpr std::string_view kBearerScheme = "Bearer ";
bool StartsWithBearer(std::string_view header, size_t length = kBearerScheme.size()) {
  return header.size() >= length && ::strncasecmp(header.data(), kBearerScheme.data(), length) == 0;
}

// "Authorization: Bearer TOKEN" with exactly `token`, compared in constant
// time and without building the expected header per request.
bool BearerIs(const std::string& header, std::string_view token) {
  return header.size() == kBearerScheme.size() + token.size() && StartsWithBearer(header) &&
         ConstantTimeEquals(std::string_view(header).substr(kBearerScheme.size()), token);
}

// What was wrong with a refused Authorization header (never the token).
std::string_view WhatWasSent(const std::string& header) {
  if (header.empty()) return "none was sent";
  // "Bearer" alone, or with its space and nothing after it.
  if ((header.size() == kBearerScheme.size() - 1 || header.size() == kBearerScheme.size()) &&
      StartsWithBearer(header, header.size())) {
    return "no token was sent after Bearer";
  }
  if (!StartsWithBearer(header)) {
    return "a header of another scheme was sent (a client's Basic or Token header takes the place of the Bearer one)";
  }
  return "the token sent is not it";
}

}  // namespace

Status HttpServerImpl::Authorize(Access access, std::string_view uri, const HttpExchange& ex) const {
  switch (access) {
    case Access::kPublic:
      if (!options_.client_token.empty() && !BearerIs(ex.header("Authorization"), options_.client_token)) {
        return Status::Unauthorized(fmt::format("{} needs Authorization: Bearer <[api] client_token>; {}", ex.path(),
                                                WhatWasSent(ex.header("Authorization"))));
      }
      return Status::Ok();
    case Access::kInternal:
      if (options_.cluster_secret.empty()) return Status::Ok();
      return VerifyRequest(options_.cluster_secret, signed_address_, ex.header(kSignatureHeader), ex.method(), uri,
                           ex.body(),
                           static_cast<int64_t>(std::time(nullptr)));
    case Access::kAdmin:
      if (!options_.admin_token.empty() && !BearerIs(ex.header("Authorization"), options_.admin_token)) {
        return Status::Unauthorized(
            fmt::format("{} is an admin endpoint: send Authorization: Bearer <admin_token>; {}", ex.path(),
                        WhatWasSent(ex.header("Authorization"))));
      }
      return Status::Ok();
  }
  return Status::Internal("unknown access kind");
}

void HttpServerImpl::Builtin(const HttpExchangePtr& ex) {
  if (ex->path() == "/ping") {
    ex->Reply(200, "OK\n");
    return;
  }
  auto uptime = std::chrono::duration_cast<std::chrono::seconds>(Clock::now() - started_).count();
  if (ex->path() == "/stats") {
    nlohmann::json data = {{"daemon", options_.daemon}, {"member", options_.member}, {"uptime_s", uptime},
                           {"endpoints", stats_->ToJson()}, {"connections", ConnectionsJson()}};
    if (stats_json_) {
      nlohmann::json extra = stats_json_();
      if (extra.is_object()) data.update(extra);
    }
    ex->ReplyJson(std::move(data));
    return;
  }
  const std::string labels = BaseLabels(options_.daemon, options_.member);
  std::string text = stats_->ToPrometheus(labels);
  text += "# HELP clickatron_uptime_seconds Seconds since the daemon started.\n# TYPE clickatron_uptime_seconds gauge\n";
  text += fmt::format("clickatron_uptime_seconds{{{}}} {}\n", labels, uptime);
  text += ConnectionsPrometheus(labels);
  if (stats_prom_) text += stats_prom_();
  ex->Reply(200, text, "text/plain; version=0.0.4");
}

std::string HttpServerImpl::CheckHead(std::string_view head) const {
  // "METHOD TARGET HTTP/1.x": anything else (a head whose start evhttp has
  // already taken) is left to the checks that run with the whole request.
  const std::string_view line = head.substr(0, head.find("\r\n"));
  const size_t sp1 = line.find(' ');
  const size_t sp2 = line.rfind(' ');
  if (sp1 == std::string_view::npos || sp2 <= sp1 || line.substr(sp2 + 1).rfind("HTTP/1.", 0) != 0) return {};
  const std::string_view target = OriginForm(line.substr(sp1 + 1, sp2 - sp1 - 1));
  const auto route = FindPath(routes_, target.substr(0, target.find('?')));
  if (route == routes_.end() || route->second.access != Access::kInternal) return {};
  if (RawHeadHeader(head, kSignatureHeader)) return {};
  return RawJsonAnswer(401, "Unauthorized", "UNAUTHORIZED",
                       fmt::format("{} is for cluster members: the request carries no {} header (refused on its "
                                   "head, before its body)",
                                   route->first, kSignatureHeader),
                       "WWW-Authenticate: Clickatron-HMAC\r\n");
}

void HttpServerImpl::RefuseForSlowReaders(HttpExchange& ex) {
  limits_->CountSlowReaderRefusal();
  ex.AddHeader("Retry-After", "1");
  ex.ReplyError(503, "SLOW_READERS",
                "clients that do not read their answers hold [http] max_answer_bytes_queued; retry later");
}

nlohmann::json HttpServerImpl::ConnectionsJson() const {
  const ConnectionLimitStats c = limits_->stats();
  const HttpLimits& l = options_.limits;
  return {{"open", c.connections},
          {"max", l.max_connections},
          {"accepted", c.accepted},
          {"accept_pauses", c.accept_pauses},
          {"request_bytes_in_flight", c.request_bytes_in_flight},
          {"max_request_bytes_in_flight", l.max_request_bytes_in_flight},
          {"answer_bytes_queued", c.answer_bytes_queued},
          {"max_answer_bytes_queued", l.max_answer_bytes_queued},
          {"refused_bytes_in_flight", c.refused_bytes_in_flight},
          {"refused_slow_readers", c.refused_slow_readers},
          {"refused_on_headers", c.refused_on_headers},
          {"refused_too_large", c.refused_too_large},
          {"lingering", c.lingering},
          {"lingering_closed_at_once", c.lingering_closed_at_once}};
}

std::string HttpServerImpl::ConnectionsPrometheus(const std::string& labels) const {
  const ConnectionLimitStats c = limits_->stats();
  const HttpLimits& l = options_.limits;
  std::string out;
  auto family = [&](std::string_view name, std::string_view type, std::string_view help, auto value) {
    out += fmt::format("# HELP {0} {1}\n# TYPE {0} {2}\n{0}{{{3}}} {4}\n", name, help, type, labels, value);
  };
  family("clickatron_http_connections", "gauge", "Client connections open.", c.connections);
  family("clickatron_http_max_connections", "gauge", "[http] max_connections.", l.max_connections);
  family("clickatron_http_connections_accepted_total", "counter", "Connections accepted.", c.accepted);
  family("clickatron_http_accept_pauses_total", "counter", "Times accepting stopped at max_connections.",
         c.accept_pauses);
  family("clickatron_http_request_bytes_in_flight", "gauge", "Bytes of requests still being received.",
         c.request_bytes_in_flight);
  family("clickatron_http_max_request_bytes_in_flight", "gauge", "[http] max_request_bytes_in_flight.",
         l.max_request_bytes_in_flight);
  family("clickatron_http_answer_bytes_queued", "gauge", "Answer bytes not yet taken by their readers.",
         c.answer_bytes_queued);
  family("clickatron_http_max_answer_bytes_queued", "gauge", "[http] max_answer_bytes_queued.",
         l.max_answer_bytes_queued);
  family("clickatron_http_refused_bytes_in_flight_total", "counter",
         "Connections closed with 503 TOO_MANY_BYTES_IN_FLIGHT.", c.refused_bytes_in_flight);
  family("clickatron_http_refused_slow_readers_total", "counter", "Requests answered 503 SLOW_READERS.",
         c.refused_slow_readers);
  family("clickatron_http_refused_on_headers_total", "counter",
         "Requests refused on their head before their body (unsigned, to an internal route).", c.refused_on_headers);
  family("clickatron_http_refused_too_large_total", "counter",
         "Requests answered 413 BODY_TOO_LARGE on their head (a body declared over max_body_bytes), or closed "
         "past twice the bound.",
         c.refused_too_large);
  family("clickatron_http_lingering_connections", "gauge",
         "Refused connections whose input is read and thrown away until the client closes.", c.lingering);
  family("clickatron_http_lingering_closed_at_once_total", "counter",
         "Refused connections closed at once because 256 were lingering already.", c.lingering_closed_at_once);
  return out;
}

}  // namespace

Result<std::unique_ptr<HttpServer>> HttpServer::Create(HttpServerOptions options) {
  auto server = std::make_unique<HttpServerImpl>(std::move(options));
  CLICKATRON_RETURN_IF_ERROR(server->Init());
  return std::unique_ptr<HttpServer>(std::move(server));
}

}  // namespace clickatron
