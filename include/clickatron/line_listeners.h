// Plain-text line listeners on an event loop, for protocols that are lines
// and nothing else (statsd): UDP, where each datagram is handed over whole,
// and TCP, where each connection's bytes are handed over in runs of
// complete '\n'-ended lines (a line split across reads waits for its end).
// Nothing is answered: these protocols have no replies.
//
// Bounds, so a client cannot make the process grow: a TCP line longer than
// max_line_bytes closes its connection (counted), past max_connections new
// connections are closed at once (counted), and a connection silent for
// idle_timeout_seconds is closed, so idle ones cannot hold every slot. The UDP socket asks the
// kernel for a receive buffer of udp_receive_buffer_bytes (the kernel may
// cap it at net.core.rmem_max); datagrams beyond it are dropped by the
// kernel, as UDP allows.
//
// Thread-safety: created, used and destroyed on the loop's thread.
#pragma once

#include <cstddef>
#include <cstdint>
#include <functional>
#include <memory>
#include <optional>
#include <string_view>

#include "clickatron/config.h"
#include "clickatron/status.h"

struct event_base;

namespace clickatron {

struct LineListenerStats {
  uint64_t datagrams = 0;             // UDP datagrams received
  uint64_t connections_accepted = 0;  // TCP connections taken
  uint64_t connections_open = 0;
  uint64_t connections_refused = 0;   // closed at once: max_connections were open
  uint64_t lines_too_long = 0;        // TCP connections closed for a line over max_line_bytes
  uint64_t bytes = 0;                 // handed to the handler, both transports
};

class LineListeners {
 public:
  struct Options {
    std::optional<HostPort> udp;  // an IP address and port; port 0 picks a free one
    std::optional<HostPort> tcp;
    size_t max_line_bytes = 64 * 1024;
    size_t max_connections = 1024;
    int idle_timeout_seconds = 600;
    int udp_receive_buffer_bytes = 8 << 20;
  };
  // `lines`: one datagram, or complete lines of one TCP connection (its
  // last partial line too when the peer closes).
  using Handler = std::function<void(std::string_view lines)>;

  // Binds both sockets (fails here, naming the address, if one is taken).
  static Result<std::unique_ptr<LineListeners>> Open(event_base* base, Options options, Handler handler);
  virtual ~LineListeners() = default;

  virtual LineListenerStats stats() const = 0;
  // The bound ports (0 when that transport is off).
  virtual uint16_t udp_port() const = 0;
  virtual uint16_t tcp_port() const = 0;
};

}  // namespace clickatron
