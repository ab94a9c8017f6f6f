#include "block_stream.h"

#include <algorithm>
#include <utility>

namespace clickatron::archive {

BlockStream::BlockStream(HttpExchangePtr exchange, SortedFilePtr file, LineRange range, size_t chunk_bytes)
    : exchange_(std::move(exchange)),
      file_(std::move(file)),
      pos_(range.begin),
      end_(range.end),
      chunk_bytes_(std::max<size_t>(chunk_bytes, 1)) {}

void BlockStream::Start(HttpExchangePtr exchange, SortedFilePtr file, LineRange range, size_t chunk_bytes) {
  std::shared_ptr<BlockStream> stream(new BlockStream(std::move(exchange), std::move(file), range, chunk_bytes));
  stream->exchange_->StartStream(200, "text/plain");
  stream->SendNext();
}

void BlockStream::SendNext() {
  if (!exchange_->alive()) return;  // the client went away: drop everything
  if (pos_ == end_) {
    exchange_->EndStream();
    return;
  }
  std::string_view data = file_->data();
  size_t n = std::min(chunk_bytes_, end_ - pos_);
  std::string_view chunk = data.substr(pos_, n);
  pos_ += n;
  bool last = pos_ == end_;
  // The exchange keeps the callback (and through it this stream) until the
  // chunk is sent; it drops it if the connection closes first.
  auto self = shared_from_this();
  if (last && chunk.back() != '\n') {
    // The file's last line has no newline; answers are whole lines.
    std::string with_newline(chunk);
    with_newline.push_back('\n');
    exchange_->SendChunk(with_newline, [self] { self->SendNext(); });
    return;
  }
  exchange_->SendChunk(chunk, [self] { self->SendNext(); });
}

}  // namespace clickatron::archive
