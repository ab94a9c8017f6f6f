// Sends a LineSource as an HTTP answer with bounded memory.
//
// A small answer (everything fits in the first chunk) goes out as a plain
// 200. A larger one is streamed chunked: the next ~256 KiB chunk is produced
// only when the previous one has left the socket buffer (HttpExchange's
// on_sent), so memory stays bounded whatever the client's speed, and a
// client that goes away releases the source (its iterator and snapshot).
//
// An error before the first byte is a 500 with the usual envelope. An error
// after the stream started cannot change the status any more: the stream
// then ends with one line "!ERROR <message>" — never a valid record line
// (no record key starts with '!'), so a reader that validates lines fails.
#pragma once

#include <cstdint>
#include <functional>
#include <memory>
#include <string>

#include "clickatron/http_server.h"
#include "record_scan.h"

namespace clickatron::realtime {

inline constexpr size_t kStreamChunkBytes = 256u << 10;

// `done` (optional) runs once with the final status and line count; an
// abandoned stream (client gone) reports UNAVAILABLE.
void StreamLines(const HttpExchangePtr& exchange, std::unique_ptr<LineSource> source,
                 std::function<void(const Status&, uint64_t lines)> done = nullptr);

}  // namespace clickatron::realtime
