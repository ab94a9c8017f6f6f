#include "connection_limits.h"

#include <fcntl.h>
#include <sys/socket.h>

#include <cerrno>
#include <charconv>
#include <chrono>
#include <cstdlib>
#include <limits>
#include <string>
#include <vector>

#include <event2/bufferevent_ssl.h>
#include <spdlog/spdlog.h>

#include "clickatron/http_server.h"
#include "raw_answer.h"

namespace clickatron {
namespace {

// Each sweep stats every connection's socket: twice a second keeps that cheap
// with thousands open.
constexpr timeval kSweepPeriod{0, 500 * 1000};

// Enough of a buffer to hold any request head the server takes.
constexpr size_t kHeadPeekBytes = 64 << 10;

}  // namespace

ConnectionLimits::ConnectionLimits(event_base* base, Options options)
    : base_(base), options_(options), lingering_(base, LingeringCloses::Options{}) {
  sweep_ = event_new(base_, -1, EV_PERSIST, &ConnectionLimits::OnSweep, this);
  if (sweep_) event_add(sweep_, &kSweepPeriod);
  refuse_ = event_new(base_, -1, 0, &ConnectionLimits::OnRefuse, this);
  hand_over_ = evtimer_new(base_, &ConnectionLimits::OnHandOver, this);
}

ConnectionLimits::~ConnectionLimits() {
  if (sweep_) event_free(sweep_);
  if (refuse_) event_free(refuse_);
  if (hand_over_) event_free(hand_over_);
}

bool ConnectionLimits::Alive(const Connection& c) { return SameOpenSocket(c.fd, c.inode) && EvhttpStillOwns(c.bev); }

void ConnectionLimits::Watch(bufferevent* bev) {
  evbuffer* in = bufferevent_get_input(bev);
  evbuffer* out = bufferevent_get_output(bev);
  // The socket is given to the bufferevent only after this (evhttp's
  // bevcb): the connection is identified by its first bytes either way.
  Connection c{};
  c.bev = bev;
  c.fd = -1;
  c.plain = true;
  c.accepted = Clock::now();
  by_bev_.insert_or_assign(bev, std::move(c));
  by_input_[in] = bev;
  evbuffer_add_cb(in, &ConnectionLimits::OnInput, this);
  evbuffer_add_cb(out, &ConnectionLimits::OnOutput, this);
  ++stats_.accepted;
  UpdateListener();
}

ConnectionLimits::Connection* ConnectionLimits::Identify(bufferevent* bev) {
  auto it = by_bev_.find(bev);
  if (it == by_bev_.end()) return nullptr;
  Connection& c = it->second;
  if (c.fd < 0) {
    // Called back by its buffers, so the bufferevent is alive: name it by
    // its socket from now on (the sweep checks that socket is still open).
    struct stat st {};
    const evutil_socket_t fd = bufferevent_getfd(bev);
    if (fd < 0 || ::fstat(fd, &st) != 0) return &c;
    c.fd = fd;
    c.inode = st.st_ino;
    c.plain = bufferevent_openssl_get_ssl(bev) == nullptr;
  }
  return &c;
}

void ConnectionLimits::OnInput(evbuffer* buf, const evbuffer_cb_info* info, void* arg) {
  auto* self = static_cast<ConnectionLimits*>(arg);
  if (info->n_added == 0) return;  // evhttp taking what it parsed
  auto b = self->by_input_.find(buf);
  if (b == self->by_input_.end()) return;
  Connection* c = self->Identify(b->second);
  if (c == nullptr || c->refusing || c->discarding) return;
  c->request_bytes += info->n_added;
  self->request_bytes_ += info->n_added;
  if (self->request_bytes_ > self->options_.max_request_bytes_in_flight) {
    self->Refuse(*c,
                 RawJsonAnswer(503, "Service Unavailable", "TOO_MANY_BYTES_IN_FLIGHT",
                               "the requests being received hold more than [http] max_request_bytes_in_flight (" +
                                   std::to_string(self->options_.max_request_bytes_in_flight) +
                                   " bytes); nothing of this request was taken; retry later",
                               "Retry-After: 1\r\n"),
                 &self->stats_.refused_bytes_in_flight);
    return;
  }
  if (c->request_bytes > 2 * (self->options_.max_body_bytes + self->options_.max_header_bytes)) {
    self->RefuseTooLarge(*c, {});
    return;
  }
  if (!c->head_checked) self->CheckHead(*c, buf);
}

void ConnectionLimits::RefuseTooLarge(Connection& c, std::string_view target) {
  Refuse(c,
         RawRefusal(target, 413, "Content Too Large", "BODY_TOO_LARGE",
                    "the request body is larger than [http] max_body_bytes (" +
                        std::to_string(options_.max_body_bytes) + " bytes); nothing of this request was taken"),
         &stats_.refused_too_large);
}

void ConnectionLimits::OnOutput(evbuffer* /*buf*/, const evbuffer_cb_info* info, void* arg) {
  auto* self = static_cast<ConnectionLimits*>(arg);
  // One total for all connections (a connection is named by its input).
  // Resynced from the live connections by every sweep: a closed
  // connection's buffer goes without a callback.
  self->answer_bytes_ += info->n_added;
  self->answer_bytes_ -= std::min<uint64_t>(self->answer_bytes_, info->n_deleted);
}

void ConnectionLimits::RequestRead(bufferevent* bev) {
  auto it = by_bev_.find(bev);
  if (it == by_bev_.end()) return;
  request_bytes_ -= std::min(request_bytes_, it->second.request_bytes);
  it->second.request_bytes = 0;
  it->second.head_checked = false;  // the next request's head is checked again
  it->second.discarding = false;
  // Whole before a refusal was carried out: its handler answers it.
  it->second.refusing = false;
}

void ConnectionLimits::CheckHead(Connection& c, evbuffer* input) {
  // evhttp takes the head off the buffer line by line as it parses it, so
  // what is here starts with the request line only while the head is
  // still arriving whole in one read: the usual case, and the one a large
  // body follows. Otherwise the head is not checked here (the signature is
  // still checked before the handler runs).
  // Every request's head passes here (each daemon refuses an oversized
  // body on it), so the blank line is searched for in place, and only the
  // head is made contiguous: a pipelining client's buffer can hold many
  // requests.
  const size_t have = std::min(evbuffer_get_length(input), kHeadPeekBytes);
  evbuffer_ptr limit;
  if (evbuffer_ptr_set(input, &limit, have, EVBUFFER_PTR_SET) != 0) return;
  const evbuffer_ptr found = evbuffer_search_range(input, "\r\n\r\n", 4, nullptr, &limit);
  if (found.pos < 0) {
    if (have == kHeadPeekBytes) c.head_checked = true;  // too long to be a head: evhttp refuses it
    return;
  }
  c.head_checked = true;
  const size_t end = static_cast<size_t>(found.pos);
  const char* data = reinterpret_cast<const char*>(evbuffer_pullup(input, static_cast<ev_ssize_t>(end + 4)));
  if (data == nullptr) return;
  // Only a body still to come is worth refusing early: a request already
  // whole goes to evhttp, which answers it with the usual checks.
  const std::string_view head(data, end + 2);
  const std::optional<std::string_view> length_text = RawHeadHeader(head, "Content-Length");
  if (!length_text) return;
  // Parsed in place: every request with a body passes here. A length past
  // uint64 is over any bound; one that is not a number, evhttp refuses.
  uint64_t length = 0;
  if (std::from_chars(length_text->data(), length_text->data() + length_text->size(), length).ec ==
      std::errc::result_out_of_range) {
    length = std::numeric_limits<uint64_t>::max();
  }
  if (evbuffer_get_length(input) - (end + 4) >= length) return;
  if (length > options_.max_body_bytes) {
    if (!c.plain) {
      // Under TLS no raw answer can be written: evhttp reads the body to
      // throw it away and then answers 413. Those bytes are not held, so
      // they are not counted against the other clients' bound.
      ++stats_.refused_too_large;
      ForgetBytes(c);
      c.discarding = true;
      return;
    }
    // Answered now, before the body: a client that waits for 100 Continue
    // sends nothing more (RFC 9110 10.1.1), and one already sending has
    // what it sends thrown away uncounted while the socket lingers
    // (lingering_close.h), so it reads the answer instead of a reset.
    RefuseTooLarge(c, RawHeadTarget(head));
    return;
  }
  if (!head_check_) return;
  if (std::string answer = head_check_(head); !answer.empty()) {
    Refuse(c, std::move(answer), &stats_.refused_on_headers);
  }
}

void ConnectionLimits::Refuse(Connection& c, std::string answer, uint64_t* counter) {
  ++*counter;
  c.answer = std::move(answer);
  ForgetBytes(c);
  c.refusing = true;
  to_refuse_.push_back(c.bev);
  if (refuse_) event_active(refuse_, EV_TIMEOUT, 0);
}

void ConnectionLimits::ForgetBytes(Connection& c) {
  request_bytes_ -= std::min(request_bytes_, c.request_bytes);
  c.request_bytes = 0;
}

void ConnectionLimits::OnRefuse(evutil_socket_t, short, void* arg) {
  static_cast<ConnectionLimits*>(arg)->RefusePending();
}

void ConnectionLimits::RefusePending() {
  std::vector<bufferevent*> pending;
  pending.swap(to_refuse_);
  for (bufferevent* bev : pending) {
    auto it = by_bev_.find(bev);
    // Closed meanwhile, or its request reached a handler first.
    if (it == by_bev_.end() || !it->second.refusing || !Alive(it->second)) continue;
    const Connection& c = it->second;
    if (c.plain && evbuffer_get_length(bufferevent_get_output(bev)) == 0 && hand_over_ != nullptr) {
      // The answer, then end of stream. The socket will linger on a
      // descriptor of its own, once the loop has taken the connection's
      // out of epoll: with EPOLL_USE_CHANGELIST (http_server.cc) a removal
      // is applied at the next dispatch, and one applied after evhttp has
      // closed the descriptor would fail and leave the socket, kept open by
      // the copy, in epoll under the old number (another connection's soon).
      SendAnswerAndShutdown(c.fd, c.answer);
      bufferevent_disable(bev, EV_READ | EV_WRITE);
      to_hand_over_.push_back(bev);
      const timeval now{0, 0};
      event_add(hand_over_, &now);  // timers run after the dispatch that applies the removal
      continue;
    }
    Close(bev);
  }
}

void ConnectionLimits::OnHandOver(evutil_socket_t, short, void* arg) {
  auto* self = static_cast<ConnectionLimits*>(arg);
  std::vector<bufferevent*> pending;
  pending.swap(self->to_hand_over_);
  for (bufferevent* bev : pending) {
    auto it = self->by_bev_.find(bev);
    if (it == self->by_bev_.end() || !Alive(it->second)) continue;  // gone meanwhile: nothing to linger
    const int lingering = ::fcntl(it->second.fd, F_DUPFD_CLOEXEC, 0);
    if (lingering >= 0) self->lingering_.Take(lingering);
    self->Close(bev);
  }
}

void ConnectionLimits::Close(bufferevent* bev) {
  evbuffer* in = bufferevent_get_input(bev);
  evbuffer_drain(in, evbuffer_get_length(in));
  // evhttp takes it as a read error: it drops the request and frees the
  // connection, with the body it had buffered.
  bufferevent_trigger_event(bev, BEV_EVENT_READING | BEV_EVENT_ERROR, 0);
}

void ConnectionLimits::OnSweep(evutil_socket_t, short, void* arg) { static_cast<ConnectionLimits*>(arg)->Sweep(); }

void ConnectionLimits::Sweep() {
  // A connection that never sent a byte is unnamed; evhttp closes it after
  // its idle timeout, so after that long it is taken to be gone.
  const Clock::time_point unnamed_gone = Clock::now() - options_.idle_timeout - std::chrono::seconds(1);
  uint64_t request_bytes = 0;
  uint64_t answer_bytes = 0;
  std::vector<bufferevent*> gone;
  for (auto& [bev, c] : by_bev_) {
    const bool alive = c.fd < 0 ? c.accepted > unnamed_gone : Alive(c);
    if (!alive) {
      gone.push_back(bev);
      continue;
    }
    request_bytes += c.request_bytes;
    if (c.fd >= 0) answer_bytes += evbuffer_get_length(bufferevent_get_output(bev));
  }
  for (bufferevent* bev : gone) by_bev_.erase(bev);
  if (!gone.empty()) {
    // The buffers of the connections that went, and any a new connection
    // reused the address of (Watch put those back).
    std::erase_if(by_input_, [&](const auto& e) { return !by_bev_.count(e.second); });
  }
  request_bytes_ = request_bytes;
  answer_bytes_ = answer_bytes;
  UpdateListener();
}

void ConnectionLimits::UpdateListener() {
  if (listener_ == nullptr) return;
  const size_t open = by_bev_.size();
  if (!paused_ && open >= options_.max_connections) {
    paused_ = true;
    ++stats_.accept_pauses;
    evconnlistener_disable(listener_);
    spdlog::warn("{} connections open ([http] max_connections): not accepting more until some close", open);
  } else if (paused_ && open < options_.max_connections) {
    paused_ = false;
    evconnlistener_enable(listener_);
  }
}

void ConnectionLimits::AnswerQueued(evutil_socket_t listen_fd, std::string_view answer) {
  while (true) {
    const int fd = ::accept4(listen_fd, nullptr, nullptr, SOCK_NONBLOCK | SOCK_CLOEXEC);
    if (fd < 0) {
      if (errno == EINTR || errno == ECONNABORTED) continue;
      return;  // EAGAIN: the queue is empty (or the listener is unusable: nothing to answer)
    }
    SendAnswerAndShutdown(fd, answer);
    lingering_.Take(fd);
  }
}

size_t ConnectionLimits::OpenConnections() {
  Sweep();
  return by_bev_.size();
}

ConnectionLimitStats ConnectionLimits::stats() const {
  ConnectionLimitStats s = stats_;
  s.connections = by_bev_.size();
  s.request_bytes_in_flight = request_bytes_;
  s.answer_bytes_queued = answer_bytes_;
  s.lingering = lingering_.lingering();
  s.lingering_closed_at_once = lingering_.closed_at_once();
  return s;
}

}  // namespace clickatron
