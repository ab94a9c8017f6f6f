#include "connection_limits.h"

#include <sys/socket.h>
#include <sys/stat.h>

#include <chrono>
#include <string>
#include <vector>

#include <event2/bufferevent_ssl.h>
#include <nlohmann/json.hpp>
#include <spdlog/spdlog.h>

#include "clickatron/http_server.h"

namespace clickatron {
namespace {

constexpr timeval kSweepPeriod{0, 100 * 1000};

std::string TooManyBytesAnswer(uint64_t bound) {
  nlohmann::json env = Envelope(503, "TOO_MANY_BYTES_IN_FLIGHT", nullptr);
  env["message"] = "the requests being received hold more than [http] max_request_bytes_in_flight (" +
                   std::to_string(bound) + " bytes); nothing of this request was taken; retry later";
  std::string body = env.dump() + "\n";
  return "HTTP/1.1 503 Service Unavailable\r\nContent-Type: application/json\r\nRetry-After: 1\r\n"
         "Connection: close\r\nContent-Length: " +
         std::to_string(body.size()) + "\r\n\r\n" + body;
}

bool SameOpenSocket(evutil_socket_t fd, ino_t inode) {
  struct stat st {};
  return fd >= 0 && ::fstat(fd, &st) == 0 && S_ISSOCK(st.st_mode) && st.st_ino == inode;
}

}  // namespace

ConnectionLimits::ConnectionLimits(event_base* base, Options options) : base_(base), options_(options) {
  sweep_ = event_new(base_, -1, EV_PERSIST, &ConnectionLimits::OnSweep, this);
  if (sweep_) event_add(sweep_, &kSweepPeriod);
  refuse_ = event_new(base_, -1, 0, &ConnectionLimits::OnRefuse, this);
}

ConnectionLimits::~ConnectionLimits() {
  if (sweep_) event_free(sweep_);
  if (refuse_) event_free(refuse_);
}

bool ConnectionLimits::Alive(const Connection& c) {
  if (!SameOpenSocket(c.fd, c.inode)) return false;
  // The socket is open, so the bufferevent's memory is (it closes the
  // socket when freed); evhttp clears its callbacks when it lets go.
  bufferevent_event_cb event_cb = nullptr;
  bufferevent_getcb(c.bev, nullptr, nullptr, &event_cb, nullptr);
  return event_cb != nullptr;
}

void ConnectionLimits::Watch(bufferevent* bev) {
  evbuffer* in = bufferevent_get_input(bev);
  evbuffer* out = bufferevent_get_output(bev);
  // The socket is given to the bufferevent only after this (evhttp's
  // bevcb): the connection is identified by its first bytes either way.
  by_bev_.insert_or_assign(bev, Connection{bev, -1, 0, true, 0, Clock::now()});
  by_input_[in] = bev;
  by_output_[out] = bev;
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
  if (c == nullptr || c->refusing) return;
  c->request_bytes += info->n_added;
  self->request_bytes_ += info->n_added;
  if (self->request_bytes_ > self->options_.max_request_bytes_in_flight) self->Refuse(*c);
}

void ConnectionLimits::OnOutput(evbuffer* buf, const evbuffer_cb_info* info, void* arg) {
  auto* self = static_cast<ConnectionLimits*>(arg);
  auto b = self->by_output_.find(buf);
  if (b == self->by_output_.end()) return;
  self->Identify(b->second);
  // Added when a handler answers (AnswerQueued: this callback is deferred,
  // and would come too late); taken off as the socket takes it. Resynced
  // from the live connections by every sweep: a closed connection's buffer
  // goes without a callback.
  self->answer_bytes_ -= std::min<uint64_t>(self->answer_bytes_, info->n_deleted);
}

void ConnectionLimits::RequestRead(bufferevent* bev) {
  auto it = by_bev_.find(bev);
  if (it == by_bev_.end()) return;
  request_bytes_ -= std::min(request_bytes_, it->second.request_bytes);
  it->second.request_bytes = 0;
}

void ConnectionLimits::Refuse(Connection& c) {
  ++stats_.refused_bytes_in_flight;
  request_bytes_ -= std::min(request_bytes_, c.request_bytes);
  c.request_bytes = 0;
  c.refusing = true;
  to_refuse_.push_back(c.bev);
  if (refuse_) event_active(refuse_, EV_TIMEOUT, 0);
}

void ConnectionLimits::OnRefuse(evutil_socket_t, short, void* arg) {
  static_cast<ConnectionLimits*>(arg)->RefusePending();
}

void ConnectionLimits::RefusePending() {
  std::vector<bufferevent*> pending;
  pending.swap(to_refuse_);
  for (bufferevent* bev : pending) {
    auto it = by_bev_.find(bev);
    if (it == by_bev_.end() || !Alive(it->second)) continue;  // closed meanwhile
    const Connection& c = it->second;
    if (c.plain && evbuffer_get_length(bufferevent_get_output(bev)) == 0) {
      const std::string answer = TooManyBytesAnswer(options_.max_request_bytes_in_flight);
      ::send(c.fd, answer.data(), answer.size(), MSG_NOSIGNAL | MSG_DONTWAIT);
      ::shutdown(c.fd, SHUT_WR);
    }
    evbuffer* in = bufferevent_get_input(bev);
    evbuffer_drain(in, evbuffer_get_length(in));
    // evhttp takes it as a read error: it drops the request and frees the
    // connection, with the body it had buffered.
    bufferevent_trigger_event(bev, BEV_EVENT_READING | BEV_EVENT_ERROR, 0);
  }
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
    std::erase_if(by_output_, [&](const auto& e) { return !by_bev_.count(e.second); });
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

ConnectionLimitStats ConnectionLimits::stats() const {
  ConnectionLimitStats s = stats_;
  s.connections = by_bev_.size();
  s.request_bytes_in_flight = request_bytes_;
  s.answer_bytes_queued = answer_bytes_;
  return s;
}

}  // namespace clickatron
