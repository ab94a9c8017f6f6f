// An exchange received by one loop and handled on another: a sibling server
// (HttpServer::NewSibling) takes the request off its connection and hands
// it to its primary's loop, whose handler sees this copy of it. Everything
// the handler says (headers, the answer, a stream's chunks) is posted back to
// the receiving loop in order and written to the client there, so neither
// loop ever touches the other's libevent objects.
//
// The original exchange is only ever used and released on its own loop:
// when this copy goes away unanswered, the original is dropped there and
// answers 500 like any exchange a handler forgot.
//
// Thread-safety: the handler's loop uses this object; the constructor runs on
// the receiving loop. The request itself (method, path, args, body) is read
// from the original, which no loop changes once it is parsed.
#pragma once

#include <atomic>
#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "clickatron/http_server.h"
#include "loop_mailbox.h"

namespace clickatron {

using HeaderList = std::vector<std::pair<std::string, std::string>>;

class ForwardedExchange : public HttpExchange {
 public:
  // `origin` as received on the loop behind `origin_loop`, with its request
  // headers; `handler_loop` is the loop this copy is handled on (a stream's
  // on_sent runs there).
  ForwardedExchange(HttpExchangePtr origin, HeaderList request_headers, LoopMailboxPtr origin_loop,
                    LoopMailboxPtr handler_loop);
  ~ForwardedExchange() override;

  // The original's: set when it was parsed, never changed after, and read
  // here only after the post that handed it over (no copy of a large body).
  const std::string& method() const override { return origin_->method(); }
  const std::string& path() const override { return origin_->path(); }
  const QueryArgs& args() const override { return origin_->args(); }
  const std::string& body() const override { return origin_->body(); }
  std::optional<std::string> find_header(std::string_view name) const override;
  // True until an answer posted back found the client gone.
  bool alive() const override { return !gone_->load(std::memory_order_relaxed); }
  bool answered() const override { return answered_; }
  void AddHeader(std::string_view name, std::string_view value) override;

  void Reply(int status, std::string_view body, std::string_view content_type) override;
  void StartStream(int status, std::string_view content_type) override;
  void SendChunk(std::string_view data, std::function<void()> on_sent) override;
  void EndStream() override;

 private:
  // Runs `fn(origin)` on the origin's loop while the client is there.
  void OnOrigin(std::function<void(HttpExchange&)> fn);

  HttpExchangePtr origin_;
  HeaderList request_headers_;
  LoopMailboxPtr origin_loop_;
  LoopMailboxPtr handler_loop_;
  HeaderList reply_headers_;
  bool answered_ = false;
  bool streaming_ = false;
  std::shared_ptr<std::atomic<bool>> gone_ = std::make_shared<std::atomic<bool>>(false);
};

}  // namespace clickatron
