// The API node's late-data files over HTTP, for the nightly rebuild, which
// reads no other host's disk (docs/protocols.md, "Late data"). Admin routes:
//
//   GET  /late/files                       sealed files not yet done: name, bytes
//   GET  /late/file?name=late-<unix>.sealed  the file's bytes, streamed
//   POST /late/done?name=late-<unix>.sealed  rename to late-<unix>.done (durable)
//
// A name must be exactly late-<digits>.sealed (400 INVALID_NAME otherwise); an
// unknown file is 404 NOT_FOUND. File work runs on LateData's thread; a file
// is streamed in 256 KiB chunks, the next read only once the previous chunk
// has left the socket buffer, so memory stays bounded whatever its size and
// the client's speed.
//
// Thread-safety: the handlers run on the loop thread.
#pragma once

#include <memory>

#include "clickatron/http_server.h"
#include "ingest/late_data.h"

namespace clickatron::api {

inline constexpr size_t kLateFileChunkBytes = 256u << 10;

// Each handler touches `late` only while *alive is true (it is the write
// path's liveness flag: LateData goes with it).
void HandleLateFiles(const HttpExchangePtr& ex, LateData& late, std::weak_ptr<bool> alive);
void HandleLateFile(const HttpExchangePtr& ex, LateData& late, std::weak_ptr<bool> alive);
void HandleLateDone(const HttpExchangePtr& ex, LateData& late, std::weak_ptr<bool> alive);

}  // namespace clickatron::api
