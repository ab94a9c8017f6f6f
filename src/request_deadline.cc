#include "request_deadline.h"

#include <sys/socket.h>
#include <sys/stat.h>

#include <algorithm>
#include <atomic>
#include <mutex>
#include <string>
#include <vector>

#include <event2/bufferevent_ssl.h>
#include <openssl/ssl.h>
#include <nlohmann/json.hpp>

#include "clickatron/http_server.h"
#include "raw_answer.h"

namespace clickatron {
namespace {

// The input callback's argument is the bufferevent (alive while its input
// buffer calls back); its owner is found through the event base it runs on.
std::mutex registry_mu;
std::atomic<uint64_t> registry_version{0};
std::unordered_map<event_base*, RequestDeadlines*>& Registry() {
  static auto* registry = new std::unordered_map<event_base*, RequestDeadlines*>();
  return *registry;
}

RequestDeadlines* OwnerOf(bufferevent* bev) {
  // Every read asks: the loop thread keeps its last answer while the
  // registry has not changed.
  thread_local uint64_t cached_version = ~uint64_t{0};
  thread_local event_base* cached_base = nullptr;
  thread_local RequestDeadlines* cached_owner = nullptr;
  event_base* base = bufferevent_get_base(bev);
  const uint64_t version = registry_version.load(std::memory_order_acquire);
  if (version == cached_version && base == cached_base) return cached_owner;
  std::lock_guard lock(registry_mu);
  auto it = Registry().find(base);
  cached_version = registry_version.load(std::memory_order_relaxed);
  cached_base = base;
  cached_owner = it == Registry().end() ? nullptr : it->second;
  return cached_owner;
}

std::string RequestTimeoutAnswer(std::chrono::seconds deadline) {
  return RawJsonAnswer(408, "Request Timeout", "REQUEST_TIMEOUT",
                       "the request did not arrive whole within [http] request_deadline_seconds (" +
                           std::to_string(deadline.count()) + " s)");
}

std::string RequestStalledAnswer(std::chrono::seconds idle_timeout) {
  return RawJsonAnswer(408, "Request Timeout", "REQUEST_TIMEOUT",
                       "the request stopped arriving before it was whole (no byte for about [http] timeout_seconds, " +
                           std::to_string(idle_timeout.count()) + " s)");
}

// 0 (no stall limit) without an idle timeout.
std::chrono::milliseconds StallLimit(std::chrono::seconds idle_timeout) {
  if (idle_timeout.count() <= 0) return std::chrono::milliseconds(0);
  const auto idle = std::chrono::duration_cast<std::chrono::milliseconds>(idle_timeout);
  return idle - std::min<std::chrono::milliseconds>(idle / 4, std::chrono::seconds(2));
}

}  // namespace

RequestDeadlines::RequestDeadlines(event_base* base, std::chrono::seconds deadline, std::chrono::seconds idle_timeout)
    : base_(base), deadline_(deadline), idle_timeout_(idle_timeout), stall_limit_(StallLimit(idle_timeout)) {
  {
    std::lock_guard lock(registry_mu);
    Registry()[base_] = this;
    registry_version.fetch_add(1, std::memory_order_release);
  }
  const auto shorter = stall_limit_.count() > 0 ? std::min<std::chrono::milliseconds>(deadline_, stall_limit_)
                                                : std::chrono::milliseconds(deadline_);
  const auto period =
      std::clamp<std::chrono::milliseconds>(shorter / 4, std::chrono::milliseconds(100), std::chrono::seconds(1));
  sweep_ = event_new(base_, -1, EV_PERSIST, &RequestDeadlines::OnSweep, this);
  timeval tv{static_cast<time_t>(period.count() / 1000), static_cast<suseconds_t>(period.count() % 1000 * 1000)};
  if (sweep_) event_add(sweep_, &tv);
}

RequestDeadlines::~RequestDeadlines() {
  if (sweep_) event_free(sweep_);
  std::lock_guard lock(registry_mu);
  Registry().erase(base_);
  registry_version.fetch_add(1, std::memory_order_release);
}

void RequestDeadlines::Watch(bufferevent* bev) {
  evbuffer_add_cb(bufferevent_get_input(bev), &OnFirstInput, bev);
  if (SSL* ssl = bufferevent_openssl_get_ssl(bev)) {
    SSL_set_app_data(ssl, bev);  // the session lives and dies with the bufferevent
    SSL_set_info_callback(ssl, &RequestDeadlines::OnTlsInfo);
  }
}

void RequestDeadlines::OnTlsInfo(const SSL* ssl, int where, int) {
  auto* bev = static_cast<bufferevent*>(SSL_get_app_data(ssl));
  RequestDeadlines* owner = bev ? OwnerOf(bev) : nullptr;
  if (owner == nullptr) return;
  if ((where & SSL_CB_HANDSHAKE_START) != 0) {
    owner->Started(bev, true);
  } else if ((where & SSL_CB_HANDSHAKE_DONE) != 0) {
    // The request's own bytes start its deadline; later handshakes (TLS 1.3
    // key updates on a kept-alive connection) start none.
    owner->RequestRead(bev);
    SSL_set_info_callback(const_cast<SSL*>(ssl), nullptr);
  }
}

// The first bytes of a connection swap the callback for the later-bytes one:
// a new connection is told from a later one on the same fd number (and
// perhaps the same bufferevent address) without a syscall per request.
void RequestDeadlines::OnFirstInput(evbuffer* buf, const evbuffer_cb_info* info, void* bev) {
  if (info->n_added == 0) return;
  evbuffer_remove_cb(buf, &OnFirstInput, bev);  // safe inside the callback
  evbuffer_add_cb(buf, &OnInput, bev);
  if (RequestDeadlines* owner = OwnerOf(static_cast<bufferevent*>(bev))) owner->Started(static_cast<bufferevent*>(bev), true);
}

void RequestDeadlines::OnInput(evbuffer*, const evbuffer_cb_info* info, void* bev) {
  if (info->n_added == 0) return;  // evhttp draining what it parsed
  if (RequestDeadlines* owner = OwnerOf(static_cast<bufferevent*>(bev))) owner->Started(static_cast<bufferevent*>(bev), false);
}

void RequestDeadlines::Started(bufferevent* bev, bool first_bytes) {
  const evutil_socket_t fd = bufferevent_getfd(bev);
  if (fd < 0) return;
  auto it = by_fd_.find(fd);
  if (first_bytes || it == by_fd_.end() || it->second.bev != bev) {
    // A new connection (perhaps on a reused fd number, perhaps with a freed
    // bufferevent's address): the socket's inode names it from now on.
    struct stat st {};
    if (::fstat(fd, &st) != 0) return;
    // Raw bytes may be written to a plain socket only, not under TLS.
    const bool plain = bufferevent_openssl_get_ssl(bev) == nullptr;
    it = by_fd_.insert_or_assign(fd, Connection{bev, st.st_ino, plain, false, {}, {}}).first;
  }
  const Clock::time_point now = Clock::now();
  it->second.last_bytes = now;
  if (it->second.armed) return;  // more bytes of a request already timed
  it->second.armed = true;
  it->second.started = now;
}

void RequestDeadlines::RequestRead(bufferevent* bev) {
  auto it = by_fd_.find(bufferevent_getfd(bev));
  if (it == by_fd_.end() || it->second.bev != bev) return;
  it->second.armed = false;
}

void RequestDeadlines::Answered(bufferevent* bev) {
  if (bev == nullptr) return;
  if (RequestDeadlines* owner = OwnerOf(bev)) owner->RequestRead(bev);
}

void RequestDeadlines::OnSweep(evutil_socket_t, short, void* arg) { static_cast<RequestDeadlines*>(arg)->Sweep(); }

void RequestDeadlines::Sweep() {
  const Clock::time_point now = Clock::now();
  const Clock::time_point overdue = now - deadline_;
  const Clock::time_point stalled = now - stall_limit_;
  std::vector<std::pair<evutil_socket_t, bool>> expired;  // and whether it stalled
  for (const auto& [fd, c] : by_fd_) {
    if (!c.armed) continue;
    if (c.started <= overdue) {
      expired.emplace_back(fd, false);
    } else if (stall_limit_.count() > 0 && c.last_bytes <= stalled) {
      expired.emplace_back(fd, true);
    }
  }
  for (const auto& [fd, stall] : expired) {
    auto it = by_fd_.find(fd);
    const Connection c = it->second;
    by_fd_.erase(it);
    // The connection may be gone (its socket closed, the number maybe
    // reused by one that has not sent a byte yet): then only forget it.
    if (SameOpenSocket(fd, c.inode)) Expire(fd, c, stall);
  }
}

void RequestDeadlines::Expire(evutil_socket_t fd, const Connection& c, bool stalled) {
  bufferevent* bev = c.bev;
  // The socket is open, so the bufferevent's memory is (its destructor
  // closes the socket, BEV_OPT_CLOSE_ON_FREE). But evhttp may have freed it
  // earlier in this loop pass with the destructor still to run: then its
  // callbacks are gone, and it must not be touched further.
  if (!EvhttpStillOwns(bev)) return;
  // Reading is disabled from a request's dispatch until its answer is
  // written, so an overdue connection has no answer in its output; check
  // anyway rather than interleave bytes.
  if (c.plain && evbuffer_get_length(bufferevent_get_output(bev)) == 0) {
    SendAnswerAndShutdown(fd, stalled ? RequestStalledAnswer(idle_timeout_) : RequestTimeoutAnswer(deadline_));
  }
  // evhttp treats it as its own read timeout: it drops the request and
  // frees the connection.
  bufferevent_trigger_event(bev, BEV_EVENT_READING | BEV_EVENT_TIMEOUT, 0);
}

}  // namespace clickatron
