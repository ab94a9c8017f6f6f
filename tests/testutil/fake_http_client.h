// FakeHttpClient: an HttpClient whose peers are scripted by the test, for
// unit tests of code that talks to cluster members (ArchiveReader,
// RealtimeReader) without starting any daemon.
//
// Scripting: answers are set per peer and path (the target before '?'):
//   - ScriptOnce(peer, path, answer): consumed by the next matching request
//     (several queue, first in first out);
//   - Script(peer, path, answer): every matching request after the queued
//     ones are used up;
//   - Handle(peer, path, fn): fn computes the answer from the request (a
//     replica that answers per key), used like Script.
// A request nothing matches is a test bug: it fails the test (ADD_FAILURE)
// and is answered with a transport error.
//
// Every request is recorded (peer, method, target, body) before it is
// answered, so a test can assert what went where and in which order.
//
// Answers are delivered asynchronously, on the event loop the client was made
// with, in the order the requests were sent: Send never calls back before it
// returns (the real client cannot either, and a synchronous answer would hide
// re-entrancy bugs in the caller). A test drives them with RunUntilIdle().
// Hold() keeps answers back until Release(), for a test that must act while
// requests are out.
//
// Destruction drops answers not delivered yet without calling back, as the
// real client does with its loop stopped.
//
// Thread-safety: loop thread only, like HttpClient.
#pragma once

#include <cstddef>
#include <deque>
#include <functional>
#include <map>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "clickatron/config.h"
#include "clickatron/http_client.h"
#include "clickatron/status.h"

struct event;
struct event_base;

namespace clickatron::testing {

class FakeHttpClient : public HttpClient {
 public:
  // What a scripted peer answers: an HTTP answer, or no answer at all
  // (transport not ok: refused, reset, timed out).
  struct Answer {
    int status = 200;
    std::string body;
    std::vector<std::pair<std::string, std::string>> headers;
    Status transport;

    // No HTTP answer; `reason` as the real client says it ("UNAVAILABLE",
    // "TIMEOUT").
    static Answer TransportError(std::string reason = "UNAVAILABLE");
    static Answer Http(int status, std::string body = "",
                       std::vector<std::pair<std::string, std::string>> headers = {});
  };

  struct Request {
    HostPort peer;
    std::string method;
    std::string target;  // path and query, as sent
    std::string body;
    std::vector<std::pair<std::string, std::string>> headers;
    std::string path() const;   // the target before '?'
    std::string query() const;  // after '?', "" when none
  };
  using Handler = std::function<Answer(const Request&)>;

  explicit FakeHttpClient(event_base* base);
  ~FakeHttpClient() override;
  FakeHttpClient(const FakeHttpClient&) = delete;
  FakeHttpClient& operator=(const FakeHttpClient&) = delete;

  void Script(const HostPort& peer, std::string_view path, Answer answer);
  void ScriptOnce(const HostPort& peer, std::string_view path, Answer answer);
  void Handle(const HostPort& peer, std::string_view path, Handler handler);
  // Forgets every script of `peer` (queued ones too); requests already
  // answered but not delivered keep their answers.
  void Forget(const HostPort& peer);

  void Send(const HostPort& peer, HttpRequestSpec request, HttpResponseCallback done) override;

  // Delivers answers (and those of requests their callbacks send) until none
  // is due; held answers stay held.
  void RunUntilIdle();
  void Hold() { held_ = true; }
  void Release();
  size_t pending() const { return pending_.size(); }

  const std::vector<Request>& requests() const { return requests_; }
  // The recorded requests to `peer` whose path is `path` (any path: "").
  std::vector<Request> RequestsTo(const HostPort& peer, std::string_view path = "") const;
  void ClearRequests() { requests_.clear(); }

 private:
  struct PathScript {
    std::deque<Answer> once;
    Handler always;  // empty: none
  };
  struct Pending {
    HttpResponse response;
    HttpResponseCallback done;
  };
  static std::string ScriptKey(const HostPort& peer, std::string_view path);
  Answer Lookup(const Request& request);
  void Arm();
  static void OnWake(int fd, short what, void* self);
  void DeliverDue();

  event_base* base_;
  event* wake_ = nullptr;
  bool held_ = false;
  std::map<std::string, PathScript> scripts_;  // by ScriptKey
  std::vector<Request> requests_;
  std::deque<Pending> pending_;
};

// The answer as the real client hands it to the caller.
HttpResponse ToResponse(const FakeHttpClient::Answer& answer);

}  // namespace clickatron::testing
