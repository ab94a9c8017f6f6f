#include "line_stream.h"

#include <spdlog/spdlog.h>

namespace clickatron::realtime {
namespace {

constexpr std::string_view kContentType = "text/plain";

class LineStream : public std::enable_shared_from_this<LineStream> {
 public:
  LineStream(HttpExchangePtr exchange, std::unique_ptr<LineSource> source,
             std::function<void(const Status&, uint64_t)> done)
      : exchange_(std::move(exchange)), source_(std::move(source)), done_(std::move(done)) {}

  ~LineStream() {
    if (!finished_) Finish(Status::Unavailable("the client went away before the end of the answer"));
  }

  void Start() {
    const bool more = source_->Fill(&buffer_, kStreamChunkBytes);
    if (!more) {
      if (Status st = source_->status(); !st.ok()) {
        exchange_->ReplyError(st);
        Finish(st);
        return;
      }
      exchange_->Reply(200, buffer_, kContentType);
      Finish(Status::Ok());
      return;
    }
    exchange_->StartStream(200, kContentType);
    Send(more);
  }

 private:
  // Sends buffer_; with more to come, continues when it has left.
  void Send(bool more) {
    if (more) {
      std::shared_ptr<LineStream> self = shared_from_this();
      exchange_->SendChunk(buffer_, [self] { self->Next(); });
      return;
    }
    Status st = source_->status();
    if (!st.ok()) {
      spdlog::error("{} {}: stream failed after it started: {}", exchange_->method(), exchange_->path(),
                    st.ToString());
      buffer_ += "!ERROR " + st.ToString() + "\n";
    }
    if (!buffer_.empty()) exchange_->SendChunk(buffer_);
    exchange_->EndStream();
    Finish(st);
  }

  void Next() {
    if (!exchange_->alive()) return;  // ~LineStream reports it
    buffer_.clear();
    const bool more = source_->Fill(&buffer_, kStreamChunkBytes);
    Send(more);
  }

  void Finish(const Status& st) {
    finished_ = true;
    if (done_) {
      auto done = std::move(done_);
      done_ = nullptr;
      done(st, source_->lines());
    }
  }

  HttpExchangePtr exchange_;
  std::unique_ptr<LineSource> source_;
  std::function<void(const Status&, uint64_t)> done_;
  std::string buffer_;
  bool finished_ = false;
};

}  // namespace

void StreamLines(const HttpExchangePtr& exchange, std::unique_ptr<LineSource> source,
                 std::function<void(const Status&, uint64_t lines)> done) {
  auto stream = std::make_shared<LineStream>(exchange, std::move(source), std::move(done));
  stream->Start();
}

}  // namespace clickatron::realtime
