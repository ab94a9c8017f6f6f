// A whole-request read deadline for evhttp connections.
//
// libevent's own timeout is an idle timeout: it restarts with every byte, so
// a client that trickles a byte every few seconds, or declares a longer body
// than it sends and waits, holds a connection (and its buffers) as long as
// it likes, and the idle timeout then closes it without an answer.
// libevent 2.1 has no hook when a request starts (2.2's evhttp_set_newreqcb
// is not in Debian 12), and a bufferevent filter in between, the other way
// to see a connection's bytes, stalls evhttp's write completion in 2.1.12.
//
// So: every connection's socket bufferevent (made in evhttp's bevcb) gets a
// callback on its input buffer. The first byte of a request starts the
// deadline; the server stops it when the request reaches a handler. A
// request still incomplete at its deadline, or one whose bytes stopped
// coming (a body shorter than its Content-Length) for a stall limit a
// little under the idle timeout, gets 408 REQUEST_TIMEOUT in the JSON
// envelope, written straight to the socket (over TLS the connection is only
// closed: the TLS layer owns the bytes), and evhttp closes it as on its own
// read timeout. Without the stall limit, a deadline longer than the idle
// timeout (60 s against 30 by default) never reached such a request: the
// idle timeout closed it first, without a word.
//
// Connections are known by socket: a connection's socket is closed when its
// bufferevent is destroyed, so a socket still open with the inode it had at
// its first byte means the bufferevent's memory is still there; whether
// evhttp still uses it is then asked of the bufferevent itself (its event
// callback is cleared when evhttp frees it). Nothing of ours has to hear
// about the free.
//
// Over TLS no request byte comes before the handshake is done, so the
// handshake starts the deadline itself (an OpenSSL info callback on the
// connection's session, OnTlsInfo): a client that trickles its ClientHello a
// byte at a time would otherwise hold the connection, unanswered and never
// timed, for as long as it likes, and a few thousand of them fill
// max_connections.
//
// Not covered: the bytes of a pipelined request that arrived with the one
// before it start no deadline until more bytes come (the idle timeout still
// applies).
//
// Thread-safety: loop thread only, like the server that owns it.
#pragma once

#include <sys/types.h>

#include <chrono>
#include <cstdint>
#include <unordered_map>

#include <event2/buffer.h>
#include <event2/bufferevent.h>
#include <event2/event.h>

typedef struct ssl_st SSL;

namespace clickatron {

class RequestDeadlines {
 public:
  // `idle_timeout`: libevent's (evhttp_set_timeout), which the stall limit
  // must come before.
  RequestDeadlines(event_base* base, std::chrono::seconds deadline, std::chrono::seconds idle_timeout);
  ~RequestDeadlines();
  RequestDeadlines(const RequestDeadlines&) = delete;
  RequestDeadlines& operator=(const RequestDeadlines&) = delete;

  // A new connection's bufferevent (a socket or TLS), from evhttp's bevcb
  // (on this base).
  void Watch(bufferevent* bev);
  // This connection's request has been read whole (it reached a handler):
  // no deadline until its next request starts.
  void RequestRead(bufferevent* bev);
  // The same for whichever server owns `bev`'s event base: libevent's own
  // error answers (http_error_page.cc) know only the request.
  static void Answered(bufferevent* bev);

 private:
  using Clock = std::chrono::steady_clock;
  struct Connection {
    bufferevent* bev;  // touched only while fd is open with `inode` (see Expire)
    ino_t inode;
    bool plain;
    bool armed = false;
    Clock::time_point started;
    Clock::time_point last_bytes;  // of the armed request
  };
  static void OnFirstInput(evbuffer* buf, const evbuffer_cb_info* info, void* bev);
  // OpenSSL's info callback (void (*)(const SSL*, int, int)): the first
  // handshake's start arms the deadline, its end disarms it.
  static void OnTlsInfo(const ::ssl_st* ssl, int where, int ret);
  static void OnInput(evbuffer* buf, const evbuffer_cb_info* info, void* bev);
  static void OnSweep(evutil_socket_t fd, short what, void* arg);
  void Started(bufferevent* bev, bool first_bytes);
  void Sweep();
  void Expire(evutil_socket_t fd, const Connection& c, bool stalled);

  event_base* base_;
  std::chrono::seconds deadline_;
  std::chrono::seconds idle_timeout_;
  // A quarter under the idle timeout, at most 2 s under it: the sweep (at
  // most a quarter of it apart) answers before libevent closes. 0: none.
  std::chrono::milliseconds stall_limit_;
  // No timer per request (adding and deleting one per request cost ~7% of
  // a /ping's throughput): one sweep every quarter of the shorter limit (at
  // most 1 s) closes what is overdue, so a request gets its limit plus at
  // most that.
  event* sweep_ = nullptr;
  // One entry per socket that has started a request; a reused fd number
  // replaces its entry.
  std::unordered_map<evutil_socket_t, Connection> by_fd_;
};

}  // namespace clickatron
