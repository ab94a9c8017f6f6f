// Streaming one HTTP GET's answer into a file, the way every whole-file
// transfer between members lands (an export, a late-data file, an archive
// generation): into PATH + temp_suffix (created, written as it arrives,
// fsynced), checked, then renamed durably over PATH. So PATH is either what
// it was or the whole new answer, never part of one; a failure removes the
// temporary file.
//
// Thread-safety: as the client (one thread at a time).
#pragma once

#include <cstdint>
#include <functional>
#include <string>
#include <string_view>

#include "clickatron/http_client.h"
#include "clickatron/status.h"

namespace clickatron {

struct FetchToFileOptions {
  std::string temp_suffix = ".part";
  // Each chunk of the answer as it arrives (an error answer's too: its
  // status is known only at the end), with the bytes before it; an error
  // stops the transfer and is what FetchToFile returns.
  std::function<Status(std::string_view chunk, uint64_t offset)> on_chunk;
  // Once the whole 200 answer is on disk (`temp_path`, fsynced, `bytes`
  // long), before the rename: the last word on whether it is right.
  std::function<Status(const HttpResponse& response, const std::string& temp_path, uint64_t bytes)> check;
};

// GET `request` from `peer` into `path`; the bytes written. `who` names the
// transfer in messages. UNAVAILABLE when the transfer failed or the answer
// was not 200 (with the answer's own error message); otherwise what a hook
// returned, or IO_ERROR from the disk.
Result<uint64_t> FetchToFile(BlockingHttpClient& client, const HostPort& peer, HttpRequestSpec request,
                             const std::string& path, std::string_view who, const FetchToFileOptions& options = {});

}  // namespace clickatron
