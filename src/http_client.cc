#include "clickatron/http_client.h"

#include <event2/bufferevent.h>
#include <event2/bufferevent_ssl.h>
#include <event2/event.h>
#include <event2/http.h>
#include <event2/keyvalq_struct.h>
#include <fmt/format.h>

#include <strings.h>

#include <chrono>
#include <cstdio>
#include <functional>
#include <cstdlib>
#include <ctime>
#include <map>
#include <vector>

#include <nlohmann/json.hpp>

#include "clickatron/cluster_auth.h"
#include "clickatron/key_codec.h"
#include "clickatron/tls.h"
#include "libevent_ptr.h"

namespace clickatron {
namespace {

using EvconPtr = CPtr<evhttp_connection, evhttp_connection_free>;

constexpr size_t kMaxSingleWrite = 64u << 20;
// Longer than any request deadline (the longest are hours: a deploy's
// transfer timeout): libevent's own timeout must never end a request first.
constexpr int kConnectionTimeoutSeconds = 7 * 24 * 3600;
// How often a request that may be cancelled asks (HttpRequestSpec::cancelled).
constexpr int kCancelPollMs = 200;

const char* RequestErrorText(evhttp_request_error e) {
  switch (e) {
    case EVREQ_HTTP_TIMEOUT: return "timed out";
    case EVREQ_HTTP_EOF: return "connection closed by peer";
    case EVREQ_HTTP_INVALID_HEADER: return "invalid header";
    case EVREQ_HTTP_BUFFER_ERROR: return "connection failed";
    case EVREQ_HTTP_REQUEST_CANCEL: return "cancelled";
    case EVREQ_HTTP_DATA_TOO_LONG: return "answer too long";
  }
  return "failed";
}

class HttpClientImpl;

HttpResponse TransportError(Status status) {
  HttpResponse r;
  r.transport = std::move(status);
  return r;
}

// One request in flight. Owned by itself: deleted once `done` has run.
struct Pending {
  HttpClientImpl* owner = nullptr;
  std::string peer;
  HttpResponseCallback done;
  std::function<Status(std::string_view)> sink;
  Status sink_status;
  EventPtr timer;
  evhttp_request* req = nullptr;
  evhttp_request_error error = EVREQ_HTTP_EOF;
  bool had_error = false;
  evhttp_connection* conn = nullptr;  // the pool's: it outlives the request
  std::string tls_failure;            // why the TLS connection failed, when OpenSSL says
  std::string body;
  std::function<bool()> cancelled;                // see HttpRequestSpec
  std::chrono::steady_clock::time_point deadline;  // when `cancelled` is polled

  void Complete(HttpResponse response) {
    auto fn = std::move(done);
    delete this;
    fn(std::move(response));
  }
};

class HttpClientImpl : public HttpClient {
 public:
  HttpClientImpl(event_base* base, Options options) : base_(base), options_(std::move(options)) {}

  void Send(const HostPort& peer, HttpRequestSpec spec, HttpResponseCallback done) override {
    SendWithSink(peer, std::move(spec), std::move(done), nullptr);
  }

  void SendWithSink(const HostPort& peer, HttpRequestSpec spec, HttpResponseCallback done,
                    std::function<Status(std::string_view)> sink) {
    auto* p = new Pending;
    p->owner = this;
    p->peer = peer.ToString();
    p->done = std::move(done);
    p->sink = std::move(sink);
    evhttp_connection* conn = Connection(peer);
    p->conn = conn;
    p->req = evhttp_request_new(&OnDone, p);
    evhttp_request_set_error_cb(p->req, &OnError);
    if (p->sink) evhttp_request_set_chunked_cb(p->req, &OnChunk);
    evkeyvalq* headers = evhttp_request_get_output_headers(p->req);
    evhttp_add_header(headers, "Host", p->peer.c_str());
    evhttp_add_header(headers, "Connection", "keep-alive");
    if (!spec.bearer_token.empty()) {
      evhttp_add_header(headers, "Authorization", ("Bearer " + spec.bearer_token).c_str());
    }
    for (const auto& [name, value] : spec.headers) evhttp_add_header(headers, name.c_str(), value.c_str());
    if (!options_.cluster_secret.empty()) {
      const std::string signature = SignRequest(options_.cluster_secret, p->peer, spec.method, spec.target, spec.body,
                                                static_cast<int64_t>(std::time(nullptr)));
      evhttp_add_header(headers, std::string(kSignatureHeader).c_str(), signature.c_str());
    }
    if (!spec.body.empty()) {
      evbuffer_add(evhttp_request_get_output_buffer(p->req), spec.body.data(), spec.body.size());
    }
    // Our own timer gives each request its own deadline (libevent's timeout
    // is per connection); on expiry the request is cancelled. A request that
    // may be cancelled polls instead, until its deadline.
    if (spec.cancelled) {
      p->cancelled = std::move(spec.cancelled);
      p->deadline = std::chrono::steady_clock::now() + std::chrono::milliseconds(spec.timeout_ms);
      p->timer.reset(event_new(base_, -1, EV_PERSIST, &OnPoll, p));
      const timeval poll{0, kCancelPollMs * 1000};
      evtimer_add(p->timer.get(), &poll);
    } else {
      p->timer.reset(evtimer_new(base_, &OnTimeout, p));
      timeval tv{spec.timeout_ms / 1000, (spec.timeout_ms % 1000) * 1000};
      evtimer_add(p->timer.get(), &tv);
    }
    evhttp_cmd_type cmd = spec.method == "POST" ? EVHTTP_REQ_POST : EVHTTP_REQ_GET;
    if (evhttp_make_request(conn, p->req, cmd, spec.target.c_str()) != 0) {
      // libevent has freed the request already.
      p->req = nullptr;
      p->Complete(TransportError(Status::Unavailable(fmt::format("{}: cannot send request", p->peer))));
    }
  }

 private:
  evhttp_connection* Connection(const HostPort& peer) {
    auto& pool = pools_[peer.ToString()];
    if (pool.conns.size() < static_cast<size_t>(options_.connections_per_peer)) {
      pool.conns.push_back(NewConnection(peer));
      return pool.conns.back().get();
    }
    // A closed connection is reopened by libevent on its next request (a TLS
    // one too: tests/integration/tls_test.cc restarts a shard under load).
    return pool.conns[pool.next++ % pool.conns.size()].get();
  }

  // A connection to `peer`: plain TCP, or TLS with its own SSL session.
  EvconPtr NewConnection(const HostPort& peer) {
    EvconPtr c;
    if (options_.tls) {
      SSL* ssl = options_.tls->NewClientSsl(peer.host);
      bufferevent* bev = ssl ? bufferevent_openssl_socket_new(base_, -1, ssl, BUFFEREVENT_SSL_CONNECTING,
                                                              BEV_OPT_CLOSE_ON_FREE | BEV_OPT_DEFER_CALLBACKS)
                             : nullptr;
      if (bev == nullptr) {
        // Never fall back to plain HTTP; only memory exhaustion gets here.
        std::fprintf(stderr, "cannot create a TLS session to %s (out of memory?)\n", peer.ToString().c_str());
        std::abort();
      }
      // A peer that closes without a TLS close_notify (a restart) is an
      // ordinary closed connection here, not an error to report.
      bufferevent_openssl_set_allow_dirty_shutdown(bev, 1);
      c.reset(evhttp_connection_base_bufferevent_new(base_, nullptr, bev, peer.host.c_str(), peer.port));
    } else {
      c.reset(evhttp_connection_base_new(base_, nullptr, peer.host.c_str(), peer.port));
    }
    evhttp_connection_set_retries(c.get(), 0);
    // Each request has its own deadline (our timer, in Send). libevent's
    // per-connection read and write timeouts default to 50 s, which cut
    // every longer request short: a replica's fetch of a large shard, or a
    // deploy waiting on `--transfer-timeout`, failed at 50 s whatever its
    // deadline. They are set beyond any deadline we give.
    evhttp_connection_set_timeout(c.get(), kConnectionTimeoutSeconds);
    // Not EVHTTP_CON_READ_ON_WRITE_ERROR (which would read a 413 a server
    // sends on the head of an oversized body): in libevent 2.1 a peer that
    // ends while part of a chunk is buffered then leaves the request
    // waiting until its deadline (a replica's 10-minute fetch from a killed
    // nightly run: FetchToFile.ASourceThatDiesMidAnswerFailsTheFetchAtOnce).
    // libevent writes at most 16 KiB per write() by default, so a larger
    // request leaves as a 16 KiB segment plus a small tail that Nagle holds
    // until the peer's delayed ACK: ~40 ms per request (a 1000-line batch
    // to a realtime shard ran at half speed). One write per request avoids it.
    bufferevent_set_max_single_write(evhttp_connection_get_bufferevent(c.get()), kMaxSingleWrite);
    return c;
  }

  static void OnError(evhttp_request_error error, void* arg) {
    auto* p = static_cast<Pending*>(arg);
    p->had_error = true;
    p->error = error;
    // Our side refusing the peer's certificate looks like the peer closing:
    // say which it was, while the session still holds it.
    if (bufferevent* bev = p->conn ? evhttp_connection_get_bufferevent(p->conn) : nullptr) {
      if (SSL* ssl = bufferevent_openssl_get_ssl(bev)) {
        p->tls_failure = DescribeTlsFailure(ssl, bufferevent_get_openssl_error(bev));
      }
    }
  }

  static void OnChunk(evhttp_request* req, void* arg) {
    auto* p = static_cast<Pending*>(arg);
    evbuffer* in = evhttp_request_get_input_buffer(req);
    while (evbuffer_get_length(in) > 0) {
      evbuffer_iovec vec;
      if (evbuffer_peek(in, -1, nullptr, &vec, 1) < 1) break;
      size_t n = vec.iov_len;
      if (p->sink_status.ok()) p->sink_status = p->sink(std::string_view(static_cast<char*>(vec.iov_base), n));
      evbuffer_drain(in, n);
    }
  }

  static void OnTimeout(evutil_socket_t, short, void* arg) {
    auto* p = static_cast<Pending*>(arg);
    End(p, Status::Unavailable(fmt::format("{}: timed out", p->peer), "TIMEOUT"));
  }

  static void OnPoll(evutil_socket_t, short, void* arg) {
    auto* p = static_cast<Pending*>(arg);
    if (p->cancelled()) {
      End(p, Status::Unavailable(fmt::format("{}: cancelled", p->peer), "CANCELLED"));
    } else if (std::chrono::steady_clock::now() >= p->deadline) {
      End(p, Status::Unavailable(fmt::format("{}: timed out", p->peer), "TIMEOUT"));
    }
  }

  // Ends a request still out with `why`.
  static void End(Pending* p, Status why) {
    evhttp_request* req = p->req;
    p->req = nullptr;
    // Cancelling frees the request without calling OnDone.
    if (req) evhttp_cancel_request(req);
    p->Complete(TransportError(std::move(why)));
  }

  static void OnDone(evhttp_request* req, void* arg) {
    auto* p = static_cast<Pending*>(arg);
    p->req = nullptr;
    int code = req ? evhttp_request_get_response_code(req) : 0;
    if (!req || code == 0) {
      const std::string why = !p->tls_failure.empty() ? p->tls_failure
                              : p->had_error           ? RequestErrorText(p->error)
                                                       : "no answer";
      // libevent's own timeout (its connection timeout) is a timeout too.
      const bool timed_out = p->had_error && p->error == EVREQ_HTTP_TIMEOUT;
      p->Complete(TransportError(
          Status::Unavailable(fmt::format("{}: {}", p->peer, why), timed_out ? "TIMEOUT" : "UNAVAILABLE")));
      return;
    }
    HttpResponse r;
    r.status_code = code;
    evkeyvalq* hdrs = evhttp_request_get_input_headers(req);
    for (evkeyval* kv = hdrs->tqh_first; kv != nullptr; kv = kv->next.tqe_next) {
      r.headers.emplace_back(kv->key, kv->value);
    }
    evbuffer* in = evhttp_request_get_input_buffer(req);
    if (p->sink) {
      OnChunk(req, p);
      if (!p->sink_status.ok()) r.transport = p->sink_status;
    } else {
      size_t len = evbuffer_get_length(in);
      r.body.resize(len);
      evbuffer_remove(in, r.body.data(), len);
    }
    p->Complete(std::move(r));
  }

  struct Pool {
    std::vector<EvconPtr> conns;
    size_t next = 0;
  };
  event_base* base_;
  Options options_;
  std::map<std::string, Pool> pools_;
};

}  // namespace

std::string HttpResponse::Header(std::string_view name) const {
  for (const auto& [k, v] : headers) {
    if (k.size() == name.size() && strncasecmp(k.data(), name.data(), k.size()) == 0) return v;
  }
  return {};
}

std::unique_ptr<HttpClient> HttpClient::Create(event_base* base, Options options) {
  return std::make_unique<HttpClientImpl>(base, options);
}

struct BlockingHttpClient::Impl {
  EventBasePtr base;
  std::unique_ptr<HttpClientImpl> client;
  std::function<bool()> cancelled;  // SetCancelled
};

void BlockingHttpClient::SetCancelled(std::function<bool()> cancelled) { impl_->cancelled = std::move(cancelled); }

BlockingHttpClient::BlockingHttpClient(const ClusterConfig& cluster)
    : BlockingHttpClient(cluster.cluster_secret, cluster.client_tls) {}

BlockingHttpClient::BlockingHttpClient(std::string cluster_secret, std::shared_ptr<const TlsContext> tls)
    : impl_(std::make_unique<Impl>()) {
  EnableLibeventThreads();
  impl_->base.reset(event_base_new());
  HttpClient::Options options;
  options.connections_per_peer = 1;
  options.cluster_secret = std::move(cluster_secret);
  options.tls = std::move(tls);
  impl_->client = std::make_unique<HttpClientImpl>(impl_->base.get(), std::move(options));
}

BlockingHttpClient::~BlockingHttpClient() {
  impl_->client.reset();
  impl_->base.reset();
}

HttpResponse BlockingHttpClient::Fetch(const HostPort& peer, HttpRequestSpec request) {
  return FetchStreaming(peer, std::move(request), nullptr);
}

HttpResponse BlockingHttpClient::FetchStreaming(const HostPort& peer, HttpRequestSpec request,
                                                std::function<Status(std::string_view)> sink) {
  HttpResponse out;
  bool finished = false;
  event_base* base = impl_->base.get();
  if (!request.cancelled) request.cancelled = impl_->cancelled;
  impl_->client->SendWithSink(
      peer, std::move(request),
      [&](HttpResponse r) {
        out = std::move(r);
        finished = true;
        event_base_loopbreak(base);
      },
      std::move(sink));
  while (!finished) event_base_loop(base, EVLOOP_ONCE);
  return out;
}

std::string DescribeHttpAnswer(const HttpResponse& r) {
  if (!r.ok()) return r.transport.message();
  nlohmann::json j = nlohmann::json::parse(r.body, nullptr, /*allow_exceptions=*/false);
  if (j.is_object() && j.contains("message") && j["message"].is_string()) {
    return fmt::format("HTTP {} {}: {}", r.status_code, j.value("status_txt", ""), j["message"].get<std::string>());
  }
  return fmt::format("HTTP {}: {}", r.status_code, QuoteForMessage(r.body.substr(0, 300)));
}

std::string AnswerReason(const HttpResponse& r) {
  nlohmann::json j = nlohmann::json::parse(r.body, nullptr, /*allow_exceptions=*/false);
  if (!j.is_object() || !j.contains("status_txt") || !j["status_txt"].is_string()) return "";
  return j["status_txt"].get<std::string>();
}

}  // namespace clickatron
