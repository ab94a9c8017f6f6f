#include "forwarded_exchange.h"

#include <strings.h>

namespace clickatron {
namespace {

// A stream's on_sent, made on the handler's loop and called (or dropped, when
// the client went away) on the origin's: either way the callback itself runs
// and is destroyed on the handler's loop, where what it holds belongs.
class OnHandlerLoop {
 public:
  OnHandlerLoop(std::function<void()> fn, LoopMailboxPtr loop) : fn_(std::move(fn)), loop_(std::move(loop)) {}
  ~OnHandlerLoop() {
    if (fn_) loop_->Post([dropped = std::move(fn_)] {});
  }
  OnHandlerLoop(const OnHandlerLoop&) = delete;
  OnHandlerLoop& operator=(const OnHandlerLoop&) = delete;

  void Run() {
    std::function<void()> fn = std::move(fn_);
    fn_ = nullptr;
    if (fn) loop_->Post(std::move(fn));
  }

 private:
  std::function<void()> fn_;
  LoopMailboxPtr loop_;
};

}  // namespace

ForwardedExchange::ForwardedExchange(HttpExchangePtr origin, HeaderList request_headers, LoopMailboxPtr origin_loop,
                                     LoopMailboxPtr handler_loop)
    : origin_(std::move(origin)),
      request_headers_(std::move(request_headers)),
      origin_loop_(std::move(origin_loop)),
      handler_loop_(std::move(handler_loop)) {}

ForwardedExchange::~ForwardedExchange() {
  // The original's last reference goes on its own loop (a 500 if unanswered).
  origin_loop_->Post([origin = std::move(origin_)] {});
}

std::optional<std::string> ForwardedExchange::find_header(std::string_view name) const {
  for (const auto& [n, v] : request_headers_) {
    if (n.size() == name.size() && strncasecmp(n.data(), name.data(), n.size()) == 0) return v;
  }
  return std::nullopt;
}

void ForwardedExchange::AddHeader(std::string_view name, std::string_view value) {
  if (!answered_ && !streaming_) reply_headers_.emplace_back(name, value);
}

void ForwardedExchange::OnOrigin(std::function<void(HttpExchange&)> fn) {
  origin_loop_->Post([origin = origin_, gone = gone_, fn = std::move(fn)] {
    if (!origin->alive()) {
      gone->store(true, std::memory_order_relaxed);
      return;
    }
    fn(*origin);
  });
}

void ForwardedExchange::Reply(int status, std::string_view body, std::string_view content_type) {
  if (answered_ || streaming_) return;
  answered_ = true;
  OnOrigin([headers = std::move(reply_headers_), status, body = std::string(body),
            type = std::string(content_type)](HttpExchange& origin) {
    for (const auto& [n, v] : headers) origin.AddHeader(n, v);
    origin.Reply(status, body, type);
  });
}

void ForwardedExchange::StartStream(int status, std::string_view content_type) {
  if (answered_ || streaming_) return;
  streaming_ = true;
  OnOrigin([headers = std::move(reply_headers_), status, type = std::string(content_type)](HttpExchange& origin) {
    for (const auto& [n, v] : headers) origin.AddHeader(n, v);
    origin.StartStream(status, type);
  });
}

void ForwardedExchange::SendChunk(std::string_view data, std::function<void()> on_sent) {
  if (!streaming_ || answered_) return;
  auto sent = on_sent ? std::make_shared<OnHandlerLoop>(std::move(on_sent), handler_loop_) : nullptr;
  OnOrigin([data = std::string(data), sent](HttpExchange& origin) {
    origin.SendChunk(data, sent ? std::function<void()>([sent] { sent->Run(); }) : nullptr);
  });
}

void ForwardedExchange::EndStream() {
  if (!streaming_ || answered_) return;
  answered_ = true;
  OnOrigin([](HttpExchange& origin) { origin.EndStream(); });
}

}  // namespace clickatron
