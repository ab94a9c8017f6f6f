#include "clickatron/byte_stream.h"

#include <algorithm>
#include <string>
#include <utility>

namespace clickatron {
namespace {

class ByteStream : public std::enable_shared_from_this<ByteStream> {
 public:
  ByteStream(HttpExchangePtr exchange, std::shared_ptr<const void> owner, std::string_view bytes,
             const ByteStreamOptions& options)
      : exchange_(std::move(exchange)),
        owner_(std::move(owner)),
        rest_(bytes),
        chunk_bytes_(std::max<size_t>(options.chunk_bytes, 1)),
        end_with_newline_(options.end_with_newline) {}

  void SendNext() {
    if (!exchange_->alive()) return;  // the client went away: drop everything
    if (rest_.empty()) {
      exchange_->EndStream();
      return;
    }
    const std::string_view chunk = rest_.substr(0, chunk_bytes_);
    rest_.remove_prefix(chunk.size());
    // The exchange keeps the callback (and through it this stream) until the
    // chunk is sent; it drops it if the connection closes first.
    auto self = shared_from_this();
    if (rest_.empty() && end_with_newline_ && chunk.back() != '\n') {
      std::string with_newline(chunk);
      with_newline.push_back('\n');
      exchange_->SendChunk(with_newline, [self] { self->SendNext(); });
      return;
    }
    exchange_->SendChunk(chunk, [self] { self->SendNext(); });
  }

 private:
  HttpExchangePtr exchange_;
  std::shared_ptr<const void> owner_;
  std::string_view rest_;
  size_t chunk_bytes_;
  bool end_with_newline_;
};

}  // namespace

void StreamBytes(HttpExchangePtr exchange, std::shared_ptr<const void> owner, std::string_view bytes,
                 ByteStreamOptions options) {
  auto stream = std::make_shared<ByteStream>(exchange, std::move(owner), bytes, options);
  exchange->StartStream(200, options.content_type);
  stream->SendNext();
}

}  // namespace clickatron
