// A scripted HttpClient; see fake_http_client.h.
#include "testutil/fake_http_client.h"

#include <event2/event.h>
#include <gtest/gtest.h>

namespace clickatron::testing {

FakeHttpClient::Answer FakeHttpClient::Answer::TransportError(std::string reason) {
  Answer answer;
  answer.status = 0;
  answer.transport = Status::Unavailable("fake peer: no answer (" + reason + ")", std::move(reason));
  return answer;
}

FakeHttpClient::Answer FakeHttpClient::Answer::Http(int status, std::string body,
                                                    std::vector<std::pair<std::string, std::string>> headers) {
  Answer answer;
  answer.status = status;
  answer.body = std::move(body);
  answer.headers = std::move(headers);
  return answer;
}

std::string FakeHttpClient::Request::path() const { return target.substr(0, target.find('?')); }

std::string FakeHttpClient::Request::query() const {
  const size_t q = target.find('?');
  return q == std::string::npos ? std::string() : target.substr(q + 1);
}

HttpResponse ToResponse(const FakeHttpClient::Answer& answer) {
  HttpResponse response;
  response.transport = answer.transport;
  if (!answer.transport.ok()) return response;  // no HTTP answer: status 0, nothing else
  response.status_code = answer.status;
  response.body = answer.body;
  response.headers = answer.headers;
  return response;
}

FakeHttpClient::FakeHttpClient(event_base* base) : base_(base) {
  // One timer for all answers (not one event per answer): answers due
  // together are then delivered in the order they were sent, which libevent
  // does not promise for timers of equal deadlines.
  wake_ = evtimer_new(base_, &FakeHttpClient::OnWake, this);
}

FakeHttpClient::~FakeHttpClient() {
  if (wake_ != nullptr) event_free(wake_);
}

std::string FakeHttpClient::ScriptKey(const HostPort& peer, std::string_view path) {
  return peer.ToString() + " " + std::string(path);
}

void FakeHttpClient::Script(const HostPort& peer, std::string_view path, Answer answer) {
  scripts_[ScriptKey(peer, path)].always = [answer = std::move(answer)](const Request&) { return answer; };
}

void FakeHttpClient::ScriptOnce(const HostPort& peer, std::string_view path, Answer answer) {
  scripts_[ScriptKey(peer, path)].once.push_back(std::move(answer));
}

void FakeHttpClient::Handle(const HostPort& peer, std::string_view path, Handler handler) {
  scripts_[ScriptKey(peer, path)].always = std::move(handler);
}

void FakeHttpClient::Forget(const HostPort& peer) {
  const std::string prefix = peer.ToString() + " ";
  std::erase_if(scripts_, [&](const auto& entry) { return entry.first.starts_with(prefix); });
}

FakeHttpClient::Answer FakeHttpClient::Lookup(const Request& request) {
  auto it = scripts_.find(ScriptKey(request.peer, request.path()));
  if (it != scripts_.end()) {
    PathScript& script = it->second;
    if (!script.once.empty()) {
      Answer answer = std::move(script.once.front());
      script.once.pop_front();
      return answer;
    }
    if (script.always) return script.always(request);
  }
  ADD_FAILURE() << "FakeHttpClient: no answer scripted for " << request.method << " " << request.target << " to "
                << request.peer.ToString();
  return Answer::TransportError("UNSCRIPTED");
}

void FakeHttpClient::Send(const HostPort& peer, HttpRequestSpec spec, HttpResponseCallback done) {
  Request request{peer, spec.method, spec.target, spec.body, spec.headers};
  // Answered now (the script as it stands when the request is sent, as a
  // peer would), delivered later through the loop.
  HttpResponse response = ToResponse(Lookup(request));
  requests_.push_back(std::move(request));
  pending_.push_back(Pending{std::move(response), std::move(done)});
  Arm();
}

void FakeHttpClient::Arm() {
  if (held_ || pending_.empty() || evtimer_pending(wake_, nullptr)) return;
  const timeval now{0, 0};
  evtimer_add(wake_, &now);
}

void FakeHttpClient::OnWake(int, short, void* self) { static_cast<FakeHttpClient*>(self)->DeliverDue(); }

void FakeHttpClient::DeliverDue() {
  // Only the answers due when the timer fired: those of requests the
  // callbacks send wait for the next turn of the loop, as a network answer would.
  size_t due = pending_.size();
  while (due-- > 0 && !held_ && !pending_.empty()) {
    Pending next = std::move(pending_.front());
    pending_.pop_front();
    next.done(std::move(next.response));
  }
  Arm();
}

void FakeHttpClient::Release() {
  held_ = false;
  Arm();
}

void FakeHttpClient::RunUntilIdle() {
  // The loop returns once no event is pending: every answer due is delivered
  // (the caller's own events, if any, run too).
  while (!pending_.empty() && !held_) event_base_loop(base_, EVLOOP_ONCE);
}

std::vector<FakeHttpClient::Request> FakeHttpClient::RequestsTo(const HostPort& peer, std::string_view path) const {
  std::vector<Request> out;
  for (const Request& r : requests_) {
    if (r.peer.host == peer.host && r.peer.port == peer.port && (path.empty() || r.path() == path)) out.push_back(r);
  }
  return out;
}

}  // namespace clickatron::testing
