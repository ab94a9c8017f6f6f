// LingeringCloses: the last part of refusing a connection that may still be
// sending. A server that answers before it has read a request's body (413 on
// the head, 503 past the bytes-in-flight bound) and then closes a socket with
// unread input makes the kernel send a reset, and a client still sending
// loses the answer it was sent: it sees a broken pipe instead (RFC 9112
// section 9.6 describes this; urllib sending a large body under
// `Expect: 100-continue` without waiting met it 7 times in 10).
//
// So the answer is written, the write side shut (the client reads the
// answer, then end of stream), and the socket is handed here on a descriptor
// of its own while evhttp lets go of the connection: its input is read and
// thrown away, not held or counted, until the client closes, `quiet` passes
// without a byte, or `longest` has passed since it came; then it is closed.
// A client must read the answer while or after it sends; one that takes the
// end of stream while sending for a failure (libevent's own client, unless
// it sets EVHTTP_CON_READ_ON_WRITE_ERROR, as ours does) loses it.
// At most `max_sockets` linger at once; past that one is closed at once
// (the reset then is the price of the bound).
//
// Thread-safety: the loop thread of `base` only.
#pragma once

#include <chrono>
#include <cstddef>
#include <cstdint>
#include <unordered_map>

#include <event2/event.h>

namespace clickatron {

class LingeringCloses {
 public:
  struct Options {
    size_t max_sockets = 256;
    std::chrono::seconds quiet{5};
    std::chrono::seconds longest{30};
  };
  LingeringCloses(event_base* base, Options options);
  ~LingeringCloses();  // closes every socket still lingering
  LingeringCloses(const LingeringCloses&) = delete;
  LingeringCloses& operator=(const LingeringCloses&) = delete;

  // Takes ownership of `fd`, a socket whose write side is already shut.
  void Take(evutil_socket_t fd);
  size_t lingering() const { return sockets_.size(); }
  uint64_t closed_at_once() const { return closed_at_once_; }

 private:
  struct Socket {
    event* readable;
    std::chrono::steady_clock::time_point until;
  };
  static void OnReadable(evutil_socket_t fd, short what, void* arg);
  void Close(evutil_socket_t fd);

  event_base* base_;
  const Options options_;
  std::unordered_map<evutil_socket_t, Socket> sockets_;
  uint64_t closed_at_once_ = 0;
};

}  // namespace clickatron
