// HttpClient: asynchronous HTTP/1.1 requests to cluster peers over a pool of
// keep-alive connections per peer, with per-request timeouts. Used by the API
// (to realtime and archive daemons) on its event loop.
//
// BlockingHttpClient: the same for tools, the rebuild and tests, which have no
// loop of their own; it can stream a large answer into a sink chunk by chunk.
//
// Destruction: freeing the client frees its connections, and libevent frees
// the requests queued on them without calling back. Each request's own state
// (its callback with whatever the callback captured, and its timeout event)
// is not freed: it is leaked, and nothing reports the request's end. So:
//   - with the loop stopped for good (daemons destroy it after Run()
//     returned), requests in flight are dropped silently and leaked; their
//     callbacks never run.
//   - with the loop still running, destroying it with requests in flight is
//     UNSAFE: each request's timeout still fires, cancels a request libevent
//     has already freed (use after free) and then runs the callback, which may
//     touch objects gone with the client's owner.
// There is no way to cancel requests in flight; a caller that must destroy
// the client early has to wait for every callback first. A BlockingHttpClient
// has nothing in flight between calls, so destroying it is always safe.
//
// Thread-safety: an HttpClient belongs to the thread running its event_base.
// A BlockingHttpClient belongs to one thread at a time.
#pragma once

#include <functional>
#include <memory>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "clickatron/config.h"
#include "clickatron/status.h"

struct event_base;

namespace clickatron {

class TlsContext;

struct HttpResponse {
  // ok() false: no HTTP answer at all (refused, reset, timed out); then
  // status_code is 0. An HTTP error answer (4xx/5xx) is ok() with its code.
  Status transport;
  int status_code = 0;
  std::string body;
  std::vector<std::pair<std::string, std::string>> headers;
  bool ok() const { return transport.ok(); }
  // The first header of that name (case-insensitive), "" when absent.
  std::string Header(std::string_view name) const;
};
using HttpResponseCallback = std::function<void(HttpResponse)>;

// For error messages: the transport error, or "HTTP 409 REASON: message"
// from an error envelope, or the status and the body's start.
std::string DescribeHttpAnswer(const HttpResponse& response);
// The error envelope's status_txt ("SHARD_RECOVERING"), "" when there is none:
// the reason a Status made of the answer carries, for callers to act on.
std::string AnswerReason(const HttpResponse& response);

struct HttpRequestSpec {
  std::string method = "GET";  // GET | POST
  std::string target;          // path and query: "/get?key=u%7Cjehiah"
  std::string body;
  std::string bearer_token;    // sent as Authorization: Bearer … when set
  std::vector<std::pair<std::string, std::string>> headers;  // more request headers, as given
  int timeout_ms = 5000;
  // Set: asked every 200 ms while the request is out; true ends it at once
  // as cancelled (UNAVAILABLE, CANCELLED), as its deadline would: a long
  // fetch a stopping daemon must not wait out.
  std::function<bool()> cancelled;
};

class HttpClient {
 public:
  struct Options {
    int connections_per_peer = 4;
    // Non-empty: every request is signed with it (clickatron/cluster_auth.h),
    // as requests to other members' internal endpoints must be.
    std::string cluster_secret;
    // Set: connect with TLS, verifying peers against its CA (clickatron/tls.h).
    std::shared_ptr<const TlsContext> tls;
  };
  static std::unique_ptr<HttpClient> Create(event_base* base, Options options);
  static std::unique_ptr<HttpClient> Create(event_base* base) { return Create(base, Options{}); }
  virtual ~HttpClient() = default;
  // `done` runs on the loop thread exactly once.
  virtual void Send(const HostPort& peer, HttpRequestSpec request, HttpResponseCallback done) = 0;
};

class BlockingHttpClient {
 public:
  // `cluster_secret` non-empty: every request is signed (see HttpClient::Options).
  explicit BlockingHttpClient(std::string cluster_secret = "", std::shared_ptr<const TlsContext> tls = nullptr);
  // Signs and connects as a member of `cluster` (its secret, its TLS).
  explicit BlockingHttpClient(const ClusterConfig& cluster);
  ~BlockingHttpClient();
  HttpResponse Fetch(const HostPort& peer, HttpRequestSpec request);
  // Streams the body into `sink` as it arrives (nothing buffered whole). The
  // returned body is empty. A sink error aborts the transfer.
  HttpResponse FetchStreaming(const HostPort& peer, HttpRequestSpec request,
                              std::function<Status(std::string_view chunk)> sink);
  // Every request from now on ends early once `cancelled` says so
  // (HttpRequestSpec::cancelled), unless it brings its own.
  void SetCancelled(std::function<bool()> cancelled);

 private:
  struct Impl;
  std::unique_ptr<Impl> impl_;
};

}  // namespace clickatron
