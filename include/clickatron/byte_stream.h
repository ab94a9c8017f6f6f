// StreamBytes: sends a large run of bytes as a chunked 200 answer, one chunk
// at a time. The next chunk is produced only when the previous one has left
// the socket buffer, so memory stays bounded whatever the client's speed.
//
// `owner` keeps the bytes alive (a mapping, usually) until the stream ends or
// the client goes away: an archive replica that reloads during a stream
// swaps its file, but the stream finishes on the old mapping.
//
// Thread-safety: loop thread only.
#pragma once

#include <cstddef>
#include <memory>
#include <string_view>

#include "clickatron/http_server.h"

namespace clickatron {

struct ByteStreamOptions {
  size_t chunk_bytes = 64 << 10;
  std::string_view content_type = "text/plain";
  // Ends the answer with '\n' when the bytes do not (answers of whole lines
  // from a file whose last line has no newline).
  bool end_with_newline = false;
};

void StreamBytes(HttpExchangePtr exchange, std::shared_ptr<const void> owner, std::string_view bytes,
                 ByteStreamOptions options);

}  // namespace clickatron
