// Bounds on what clients can make an HTTP server hold ([http]
// max_connections, max_request_bytes_in_flight, max_answer_bytes_queued),
// so that a client who opens many connections, sends most of a large body
// and stalls, or asks for large answers and never reads them, meets
// back-pressure or a 503 instead of growing the daemon until the kernel
// kills it (issue 51's probe: 3.1 GB from 3,000 connections that never
// read, 3.25 GB from 60 stalled 59 MB bodies).
//
//  - Connections: past max_connections the listener stops accepting (new
//    connections wait in the kernel's backlog) until some close.
//  - Request bytes in flight: the bytes received of requests not yet whole
//    (bodies are buffered before a handler runs), summed over connections.
//    A connection whose bytes push the sum past the bound is answered 503
//    TOO_MANY_BYTES_IN_FLIGHT and closed, before more of its body is kept.
//  - Answer bytes queued: bytes written by handlers and not yet taken by
//    the socket, summed over connections. Past the bound, requests for
//    routes that may answer large (all but those marked kBoundedAnswers)
//    get 503 SLOW_READERS until readers catch up. A connection holds at
//    most one answer at a time (evhttp reads the next request only when the
//    previous answer is written), so this bounds the total.
//
// Like RequestDeadlines (request_deadline.h), connections are watched from
// evhttp's bevcb through their buffers' callbacks and known by socket and
// inode; a sweep every 500 ms forgets closed ones and recounts the sums
// from the live ones (a closed connection's buffers leave without a
// callback).
//
// Thread-safety: loop thread only, like the server that owns it.
#pragma once

#include <sys/types.h>

#include <chrono>
#include <cstdint>
#include <functional>
#include <string>
#include <string_view>
#include <unordered_map>
#include <vector>

#include <event2/buffer.h>
#include <event2/bufferevent.h>
#include <event2/event.h>
#include <event2/listener.h>

#include "lingering_close.h"

namespace clickatron {

struct ConnectionLimitStats {
  uint64_t connections = 0;              // open (as of the last sweep, plus those accepted since)
  uint64_t accepted = 0;
  uint64_t accept_pauses = 0;            // times the listener stopped accepting at max_connections
  uint64_t request_bytes_in_flight = 0;
  uint64_t answer_bytes_queued = 0;
  uint64_t refused_bytes_in_flight = 0;  // connections closed with 503 TOO_MANY_BYTES_IN_FLIGHT
  uint64_t refused_slow_readers = 0;     // requests answered 503 SLOW_READERS
  uint64_t refused_on_headers = 0;       // requests refused on their head (an unsigned internal request)
  uint64_t refused_too_large = 0;        // requests answered 413 here: body declared over max_body_bytes, or sent far past it
  uint64_t lingering = 0;                // refused sockets whose input is being thrown away (lingering_close.h)
  uint64_t lingering_closed_at_once = 0; // refused sockets closed at once: max lingering reached
};

class ConnectionLimits {
 public:
  struct Options {
    size_t max_connections = 4096;
    uint64_t max_request_bytes_in_flight = 256u << 20;
    uint64_t max_answer_bytes_queued = 256u << 20;
    std::chrono::seconds idle_timeout{30};  // evhttp's: a silent connection is closed after it
    // [http] max_body_bytes and max_header_bytes. A request whose head
    // declares a longer body is answered 413 on its head; a connection
    // that has sent more than twice both for one request (a chunked body
    // that evhttp has not yet refused) is closed with 413. Either way what
    // the client still sends is thrown away uncounted (lingering_close.h).
    uint64_t max_body_bytes = 64u << 20;
    uint64_t max_header_bytes = 64u << 10;
  };
  ConnectionLimits(event_base* base, Options options);
  ~ConnectionLimits();
  ConnectionLimits(const ConnectionLimits&) = delete;
  ConnectionLimits& operator=(const ConnectionLimits&) = delete;

  // Asked with a request's line and headers (the bytes before its blank
  // line) as soon as they have arrived while its body is still to come,
  // before the body is kept: a non-empty answer (a whole raw HTTP answer,
  // raw_answer.h) is written and the connection closed. An internal
  // route's unsigned request is refused so (http_server.cc), not after a
  // 60 MB body.
  using HeadCheck = std::function<std::string(std::string_view head)>;
  void SetHeadCheck(HeadCheck check) { head_check_ = std::move(check); }
  // The listener to pause at max_connections (set once it is bound).
  void SetListener(evconnlistener* listener) { listener_ = listener; }
  // A new connection's bufferevent, from evhttp's bevcb.
  void Watch(bufferevent* bev);
  // The connection's request is whole (it reached a handler): its bytes are
  // no longer in flight.
  void RequestRead(bufferevent* bev);
  // Whether answers that may be large are refused now (SLOW_READERS).
  bool AnswersOverBudget() const { return answer_bytes_ > options_.max_answer_bytes_queued; }
  void CountSlowReaderRefusal() { ++stats_.refused_slow_readers; }
  // Accepts every connection waiting in `listen_fd`'s queue (a plain
  // listener about to close, which would reset them) and answers each
  // `answer` (a whole raw HTTP answer), its input then read and thrown away
  // until the client closes (lingering_close.h).
  void AnswerQueued(evutil_socket_t listen_fd, std::string_view answer);
  // Connections open now (swept first): also those that have sent no
  // request yet. One that never sent a byte counts until the idle timeout.
  size_t OpenConnections();
  ConnectionLimitStats stats() const;

 private:
  using Clock = std::chrono::steady_clock;
  struct Connection {
    bufferevent* bev;
    evutil_socket_t fd;  // -1 until its first bytes either way name it
    ino_t inode;
    bool plain;
    uint64_t request_bytes = 0;  // received since its last request reached a handler
    Clock::time_point accepted;
    bool refusing = false;       // refused: closed on the next loop turn
    bool head_checked = false;   // the current request's head was checked
    bool discarding = false;     // TLS, its declared body over the bound: evhttp throws it away, uncounted
    std::string answer;          // what it is answered when refusing
  };
  Connection* Identify(bufferevent* bev);
  static void OnInput(evbuffer* buf, const evbuffer_cb_info* info, void* arg);
  static void OnOutput(evbuffer* buf, const evbuffer_cb_info* info, void* arg);
  static void OnSweep(evutil_socket_t fd, short what, void* arg);
  static void OnRefuse(evutil_socket_t fd, short what, void* arg);
  // Whether the connection's bufferevent may still be touched.
  static bool Alive(const Connection& c);
  void Sweep();
  // Marks it (counted in *counter); RefusePending() writes `answer` and closes it.
  void Refuse(Connection& c, std::string answer, uint64_t* counter);
  // Its bytes are no longer counted in flight.
  void ForgetBytes(Connection& c);
  // The current request's head, once whole, through head_check_.
  void CheckHead(Connection& c, evbuffer* input);
  // Answers 413 BODY_TOO_LARGE (in the refusal body of `target`'s route,
  // raw_answer.h) and closes.
  void RefuseTooLarge(Connection& c, std::string_view target);
  void RefusePending();
  // The second step of refusing a plain connection: hands its socket to
  // lingering_ and lets evhttp free it.
  static void OnHandOver(evutil_socket_t fd, short what, void* arg);
  // Has evhttp free the connection (its buffered input dropped).
  void Close(bufferevent* bev);
  void UpdateListener();

  event_base* base_;
  const Options options_;
  evconnlistener* listener_ = nullptr;
  bool paused_ = false;
  event* sweep_ = nullptr;
  HeadCheck head_check_;
  // Refusals run outside the buffer callback that found them: freeing a
  // connection from inside its own buffer's callback would use it after.
  event* refuse_ = nullptr;
  // Refused plain connections waiting for their hand-over (OnHandOver).
  event* hand_over_ = nullptr;
  std::vector<bufferevent*> to_hand_over_;
  // Where refused connections end (after their bufferevents go).
  LingeringCloses lingering_;
  std::vector<bufferevent*> to_refuse_;
  std::unordered_map<bufferevent*, Connection> by_bev_;
  std::unordered_map<evbuffer*, bufferevent*> by_input_;
  uint64_t request_bytes_ = 0;
  uint64_t answer_bytes_ = 0;
  ConnectionLimitStats stats_;
};

}  // namespace clickatron
