// UDP and TCP line listeners on libevent (see line_listeners.h).
#include "clickatron/line_listeners.h"

#include <arpa/inet.h>
#include <event2/buffer.h>
#include <event2/bufferevent.h>
#include <event2/event.h>
#include <event2/listener.h>
#include <event2/util.h>
#include <netinet/in.h>
#include <sys/socket.h>

#include <cerrno>
#include <cstring>
#include <string>
#include <unordered_map>

#include <fmt/format.h>

#include "clickatron/file_util.h"
#include "clickatron/unique_fd.h"
#include "libevent_ptr.h"

namespace clickatron {
namespace {

using ListenerPtr = CPtr<evconnlistener, evconnlistener_free>;
using BuffereventPtr = CPtr<bufferevent, bufferevent_free>;

// Datagrams read per wakeup: a busy socket does not starve the loop's other
// work (the next wakeup reads on).
constexpr int kDatagramsPerWakeup = 64;
// Larger than any UDP payload (65,507 bytes over IPv4, 65,527 over IPv6);
// a datagram cut anyway (MSG_TRUNC) is dropped whole rather than have its
// last line read short.
constexpr size_t kMaxDatagramBytes = 65536;

Result<sockaddr_storage> SocketAddress(const HostPort& where, int* length) {
  sockaddr_storage address{};
  *length = sizeof address;
  const std::string text = where.ToString();
  if (evutil_parse_sockaddr_port(text.c_str(), reinterpret_cast<sockaddr*>(&address), length) != 0) {
    return Status::InvalidArgument(fmt::format("{} is not an IP address and port", text));
  }
  return address;
}

uint16_t BoundPort(int fd) {
  sockaddr_storage address{};
  socklen_t length = sizeof address;
  if (::getsockname(fd, reinterpret_cast<sockaddr*>(&address), &length) != 0) return 0;
  if (address.ss_family == AF_INET6) return ntohs(reinterpret_cast<sockaddr_in6*>(&address)->sin6_port);
  return ntohs(reinterpret_cast<sockaddr_in*>(&address)->sin_port);
}

class LineListenersImpl : public LineListeners {
 public:
  LineListenersImpl(event_base* base, Options options, Handler handler)
      : base_(base), options_(options), handler_(std::move(handler)), datagram_(kMaxDatagramBytes, '\0') {}

  ~LineListenersImpl() override {
    // Connections first: their callbacks point here.
    connections_.clear();
    listener_.reset();
    udp_event_.reset();
  }

  Status Init() {
    if (options_.udp) CLICKATRON_RETURN_IF_ERROR(OpenUdp(*options_.udp));
    if (options_.tcp) CLICKATRON_RETURN_IF_ERROR(OpenTcp(*options_.tcp));
    return Status::Ok();
  }

  LineListenerStats stats() const override {
    LineListenerStats s = stats_;
    s.connections_open = connections_.size();
    return s;
  }
  uint16_t udp_port() const override { return udp_fd_.valid() ? BoundPort(udp_fd_.get()) : 0; }
  uint16_t tcp_port() const override {
    return listener_ ? BoundPort(evconnlistener_get_fd(listener_.get())) : 0;
  }

 private:
  struct Connection {
    LineListenersImpl* owner;
    BuffereventPtr bev;
  };

  Status OpenUdp(const HostPort& where) {
    int length = 0;
    auto address = SocketAddress(where, &length);
    if (!address.ok()) return address.status();
    udp_fd_ = UniqueFd(::socket(address->ss_family, SOCK_DGRAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0));
    if (!udp_fd_.valid()) return ErrnoStatus("socket (UDP)", where.ToString());
    const int size = options_.udp_receive_buffer_bytes;
    ::setsockopt(udp_fd_.get(), SOL_SOCKET, SO_RCVBUF, &size, sizeof size);  // best effort: capped by the kernel
    if (::bind(udp_fd_.get(), reinterpret_cast<const sockaddr*>(&*address), static_cast<socklen_t>(length)) != 0) {
      return ErrnoStatus("bind (UDP)", where.ToString());
    }
    udp_event_.reset(event_new(base_, udp_fd_.get(), EV_READ | EV_PERSIST, &LineListenersImpl::OnDatagram, this));
    if (!udp_event_ || event_add(udp_event_.get(), nullptr) != 0) return Status::Internal("event_add (UDP)");
    return Status::Ok();
  }

  Status OpenTcp(const HostPort& where) {
    int length = 0;
    auto address = SocketAddress(where, &length);
    if (!address.ok()) return address.status();
    listener_.reset(evconnlistener_new_bind(base_, &LineListenersImpl::OnAccept, this,
                                            LEV_OPT_CLOSE_ON_FREE | LEV_OPT_CLOSE_ON_EXEC | LEV_OPT_REUSEABLE, -1,
                                            reinterpret_cast<const sockaddr*>(&*address), length));
    if (!listener_) return ErrnoStatus("listen (TCP)", where.ToString());
    return Status::Ok();
  }

  static void OnDatagram(evutil_socket_t fd, short /*what*/, void* arg) {
    auto* self = static_cast<LineListenersImpl*>(arg);
    for (int i = 0; i < kDatagramsPerWakeup; ++i) {
      const ssize_t n = ::recv(fd, self->datagram_.data(), self->datagram_.size(), MSG_TRUNC);
      if (n < 0) return;  // EAGAIN: drained (other errors: the next wakeup tries again)
      if (static_cast<size_t>(n) > self->datagram_.size()) continue;
      ++self->stats_.datagrams;
      self->stats_.bytes += static_cast<uint64_t>(n);
      self->handler_(std::string_view(self->datagram_.data(), static_cast<size_t>(n)));
    }
  }

  static void OnAccept(evconnlistener* /*listener*/, evutil_socket_t fd, sockaddr* /*peer*/, int /*length*/,
                       void* arg) {
    auto* self = static_cast<LineListenersImpl*>(arg);
    if (self->connections_.size() >= self->options_.max_connections) {
      ++self->stats_.connections_refused;
      evutil_closesocket(fd);
      return;
    }
    BuffereventPtr bev(bufferevent_socket_new(self->base_, fd, BEV_OPT_CLOSE_ON_FREE));
    if (!bev) {
      evutil_closesocket(fd);
      return;
    }
    ++self->stats_.connections_accepted;
    bufferevent* raw = bev.get();
    auto& c = self->connections_[raw];
    c.owner = self;
    c.bev = std::move(bev);
    bufferevent_setcb(raw, &LineListenersImpl::OnReadable, nullptr, &LineListenersImpl::OnEvent, &c);
    const timeval idle{self->options_.idle_timeout_seconds, 0};
    bufferevent_set_timeouts(raw, &idle, nullptr);
    bufferevent_enable(raw, EV_READ);
  }

  // Hands over every complete line the connection has; keeps the rest.
  static void OnReadable(bufferevent* bev, void* arg) {
    auto* c = static_cast<Connection*>(arg);
    LineListenersImpl* self = c->owner;
    evbuffer* in = bufferevent_get_input(bev);
    const size_t have = evbuffer_get_length(in);
    evbuffer_ptr last = evbuffer_search_eol(in, nullptr, nullptr, EVBUFFER_EOL_LF);
    // Only the newest line can be incomplete: find the last '\n' by
    // scanning from the end of the linearised buffer.
    if (last.pos < 0) {
      if (have > self->options_.max_line_bytes) {
        ++self->stats_.lines_too_long;
        self->connections_.erase(bev);  // closes it
      }
      return;
    }
    const char* data = reinterpret_cast<const char*>(evbuffer_pullup(in, -1));
    const std::string_view all(data, have);
    const size_t end = all.rfind('\n') + 1;
    if (have - end > self->options_.max_line_bytes) {
      ++self->stats_.lines_too_long;
      self->connections_.erase(bev);
      return;
    }
    self->stats_.bytes += end;
    self->handler_(all.substr(0, end));
    evbuffer_drain(in, end);
  }

  static void OnEvent(bufferevent* bev, short what, void* arg) {
    if ((what & (BEV_EVENT_EOF | BEV_EVENT_ERROR | BEV_EVENT_TIMEOUT)) == 0) return;
    auto* c = static_cast<Connection*>(arg);
    LineListenersImpl* self = c->owner;
    // A last line without its '\n' is still a line.
    evbuffer* in = bufferevent_get_input(bev);
    if (const size_t have = evbuffer_get_length(in); have > 0 && (what & BEV_EVENT_EOF)) {
      const char* data = reinterpret_cast<const char*>(evbuffer_pullup(in, -1));
      self->stats_.bytes += have;
      self->handler_(std::string_view(data, have));
    }
    self->connections_.erase(bev);
  }

  event_base* base_;
  const Options options_;
  Handler handler_;
  std::string datagram_;
  UniqueFd udp_fd_;
  EventPtr udp_event_;
  ListenerPtr listener_;
  std::unordered_map<bufferevent*, Connection> connections_;
  LineListenerStats stats_;
};

}  // namespace

Result<std::unique_ptr<LineListeners>> LineListeners::Open(event_base* base, Options options, Handler handler) {
  auto listeners = std::make_unique<LineListenersImpl>(base, options, std::move(handler));
  CLICKATRON_RETURN_IF_ERROR(listeners->Init());
  return std::unique_ptr<LineListeners>(std::move(listeners));
}

}  // namespace clickatron
