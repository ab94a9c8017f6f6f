// BlockStream: sends a large fwmatch block as a chunked answer, one chunk at
// a time. The next chunk is produced only when the previous one has left the
// socket buffer, so memory stays bounded whatever the client's speed.
//
// It holds the SortedFilePtr it reads from: a reload during the stream swaps
// the server's file, but this stream finishes on the old mapping, which is
// unmapped when the stream ends (or the client goes away).
//
// Thread-safety: loop thread only.
#pragma once

#include <cstddef>
#include <memory>

#include "clickatron/http_server.h"
#include "line_search.h"
#include "sorted_file.h"

namespace clickatron::archive {

class BlockStream : public std::enable_shared_from_this<BlockStream> {
 public:
  // Starts a 200 chunked answer with the lines of `range`. Keeps itself alive
  // until the last chunk is sent or the client disconnects.
  static void Start(HttpExchangePtr exchange, SortedFilePtr file, LineRange range, size_t chunk_bytes);

 private:
  BlockStream(HttpExchangePtr exchange, SortedFilePtr file, LineRange range, size_t chunk_bytes);
  void SendNext();

  HttpExchangePtr exchange_;
  SortedFilePtr file_;
  size_t pos_;
  size_t end_;
  size_t chunk_bytes_;
};

}  // namespace clickatron::archive
