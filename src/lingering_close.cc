#include "lingering_close.h"

#include <sys/socket.h>
#include <unistd.h>

#include <cerrno>

namespace clickatron {

LingeringCloses::LingeringCloses(event_base* base, Options options) : base_(base), options_(options) {}

LingeringCloses::~LingeringCloses() {
  for (auto& [fd, socket] : sockets_) {
    event_free(socket.readable);
    ::close(fd);
  }
}

void LingeringCloses::Take(evutil_socket_t fd) {
  if (sockets_.size() >= options_.max_sockets) {
    ++closed_at_once_;
    ::close(fd);
    return;
  }
  event* readable = event_new(base_, fd, EV_READ | EV_PERSIST, &LingeringCloses::OnReadable, this);
  const timeval quiet{static_cast<time_t>(options_.quiet.count()), 0};
  if (readable == nullptr || event_add(readable, &quiet) != 0) {
    if (readable != nullptr) event_free(readable);
    ++closed_at_once_;
    ::close(fd);
    return;
  }
  sockets_[fd] = Socket{readable, std::chrono::steady_clock::now() + options_.longest};
}

void LingeringCloses::OnReadable(evutil_socket_t fd, short what, void* arg) {
  auto* self = static_cast<LingeringCloses*>(arg);
  auto it = self->sockets_.find(fd);
  if (it == self->sockets_.end()) return;
  if ((what & EV_TIMEOUT) != 0 || std::chrono::steady_clock::now() >= it->second.until) {
    self->Close(fd);
    return;
  }
  // What one wakeup reads is bounded, so that one fast sender cannot hold
  // the loop; the rest waits for the next turn.
  char discard[16384];
  for (int i = 0; i < 16; ++i) {
    const ssize_t n = ::recv(fd, discard, sizeof discard, MSG_DONTWAIT);
    if (n > 0) continue;
    if (n < 0 && (errno == EAGAIN || errno == EWOULDBLOCK || errno == EINTR)) return;
    self->Close(fd);  // the client closed (0) or the socket failed
    return;
  }
}

void LingeringCloses::Close(evutil_socket_t fd) {
  auto it = sockets_.find(fd);
  if (it == sockets_.end()) return;
  event_free(it->second.readable);
  sockets_.erase(it);
  ::close(fd);
}

}  // namespace clickatron
