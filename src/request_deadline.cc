#include "request_deadline.h"

#include <sys/socket.h>
#include <sys/stat.h>

#include <mutex>
#include <string>

#include <nlohmann/json.hpp>

#include "clickatron/http_server.h"

namespace clickatron {
namespace {

// The input callback's argument is the bufferevent (alive while its input
// buffer calls back); its owner is found through the event base it runs on.
std::mutex registry_mu;
std::unordered_map<event_base*, RequestDeadlines*>& Registry() {
  static auto* registry = new std::unordered_map<event_base*, RequestDeadlines*>();
  return *registry;
}

RequestDeadlines* OwnerOf(bufferevent* bev) {
  std::lock_guard lock(registry_mu);
  auto it = Registry().find(bufferevent_get_base(bev));
  return it == Registry().end() ? nullptr : it->second;
}

std::string RequestTimeoutAnswer(std::chrono::seconds deadline) {
  nlohmann::json env = Envelope(408, "REQUEST_TIMEOUT", nullptr);
  env["message"] = "the request did not arrive whole within [http] request_deadline_seconds (" +
                   std::to_string(deadline.count()) + " s)";
  std::string body = env.dump() + "\n";
  return "HTTP/1.1 408 Request Timeout\r\nContent-Type: application/json\r\nConnection: close\r\nContent-Length: " +
         std::to_string(body.size()) + "\r\n\r\n" + body;
}

}  // namespace

RequestDeadlines::RequestDeadlines(event_base* base, std::chrono::seconds deadline)
    : base_(base), deadline_(deadline) {
  std::lock_guard lock(registry_mu);
  Registry()[base_] = this;
}

RequestDeadlines::~RequestDeadlines() {
  {
    std::lock_guard lock(registry_mu);
    Registry().erase(base_);
  }
  for (auto& [fd, c] : by_fd_) event_free(c.timer);
}

void RequestDeadlines::Watch(bufferevent* bev, bool plain) {
  evbuffer_add_cb(bufferevent_get_input(bev), plain ? &OnPlainInput : &OnTlsInput, bev);
}

void RequestDeadlines::OnPlainInput(evbuffer*, const evbuffer_cb_info* info, void* bev) {
  if (info->n_added == 0) return;  // evhttp draining what it parsed
  if (RequestDeadlines* owner = OwnerOf(static_cast<bufferevent*>(bev))) owner->Started(static_cast<bufferevent*>(bev), true);
}

void RequestDeadlines::OnTlsInput(evbuffer*, const evbuffer_cb_info* info, void* bev) {
  if (info->n_added == 0) return;
  if (RequestDeadlines* owner = OwnerOf(static_cast<bufferevent*>(bev))) owner->Started(static_cast<bufferevent*>(bev), false);
}

void RequestDeadlines::Started(bufferevent* bev, bool plain) {
  const evutil_socket_t fd = bufferevent_getfd(bev);
  if (fd < 0) return;
  auto it = by_fd_.find(fd);
  if (it != by_fd_.end() && it->second.armed && it->second.bev == bev) return;  // more bytes of a timed request
  // A request starts. The socket's inode tells this connection from an
  // earlier one with the same fd number (and perhaps the same address for
  // its bufferevent, freed and reused): one fstat per request.
  struct stat st {};
  if (::fstat(fd, &st) != 0) return;
  if (it == by_fd_.end() || it->second.bev != bev || it->second.inode != st.st_ino) {
    if (it != by_fd_.end()) {
      event_free(it->second.timer);
      by_fd_.erase(it);
    }
    it = by_fd_.try_emplace(fd, Connection{this, fd, bev, st.st_ino, plain}).first;
    it->second.timer = evtimer_new(base_, &RequestDeadlines::OnDeadline, &it->second);
    if (it->second.timer == nullptr) {
      by_fd_.erase(it);
      return;  // out of memory: no deadline for this connection
    }
  }
  it->second.armed = true;
  timeval tv{static_cast<time_t>(deadline_.count()), 0};
  evtimer_add(it->second.timer, &tv);
}

void RequestDeadlines::RequestRead(bufferevent* bev) {
  auto it = by_fd_.find(bufferevent_getfd(bev));
  if (it == by_fd_.end() || it->second.bev != bev || !it->second.armed) return;
  it->second.armed = false;
  evtimer_del(it->second.timer);
}

void RequestDeadlines::Answered(bufferevent* bev) {
  if (bev == nullptr) return;
  if (RequestDeadlines* owner = OwnerOf(bev)) owner->RequestRead(bev);
}

bool RequestDeadlines::SameOpenSocket(evutil_socket_t fd, ino_t inode) {
  struct stat st {};
  return ::fstat(fd, &st) == 0 && S_ISSOCK(st.st_mode) && st.st_ino == inode;
}

void RequestDeadlines::OnDeadline(evutil_socket_t, short, void* arg) {
  auto* c = static_cast<Connection*>(arg);
  c->owner->Expire(c);
}

void RequestDeadlines::Expire(Connection* c) {
  const evutil_socket_t key = c->fd;
  if (!SameOpenSocket(key, c->inode)) {
    // The connection is gone (its socket closed, the number maybe reused by
    // a connection that has not sent a byte yet): forget it.
    event_free(c->timer);
    by_fd_.erase(key);
    return;
  }
  ++expired_;
  bufferevent* bev = c->bev;  // alive: evhttp closes the socket when it frees it
  // An answer still being written (a slow reader of the previous response)
  // is the write timeout's business; a 408 would interleave with it.
  if (c->plain && evbuffer_get_length(bufferevent_get_output(bev)) == 0) {
    const std::string answer = RequestTimeoutAnswer(deadline_);
    // Small enough for an idle socket's send buffer; if it does not fit,
    // the client is not reading and only the close matters.
    ::send(key, answer.data(), answer.size(), MSG_NOSIGNAL | MSG_DONTWAIT);
    ::shutdown(key, SHUT_WR);
  }
  event_free(c->timer);
  by_fd_.erase(key);
  // evhttp treats it as its own read timeout: it drops the request and
  // frees the connection.
  bufferevent_trigger_event(bev, BEV_EVENT_READING | BEV_EVENT_TIMEOUT, 0);
}

}  // namespace clickatron
