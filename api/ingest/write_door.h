// The HTTP doors increments come in by, and how each one answers: /incr
// with Clickatron's JSON envelope, the InfluxDB line-protocol endpoints
// (/api/v2/write, /write) as Influx clients expect (204 on success, errors
// as {"code": …, "message": …}). Everything between the door and the
// answer (idempotency keys, flow control, the oplog) is the same for all.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>

#include "clickatron/http_server.h"

namespace clickatron::api {

enum class WriteDoor { kIncr, kInflux };

// The request's increments are durable (or, `replayed`, were by an earlier
// request with its Idempotency-Key).
void ReplyTaken(HttpExchange& ex, WriteDoor door, uint64_t increments, bool replayed);

// An Influx door's error body: {"code": Influx's code, "message": "REASON: message"}.
std::string InfluxErrorBody(int status, std::string_view reason, std::string_view message);
// Registers it as /api/v2/write's and /write's error body (SetRefusalBody):
// every error answered on them (HttpExchange::ReplyError), the door's own
// refusals and what the HTTP server refuses before the handler (an oversized
// body, a stop), is in the shape Influx clients parse.
void RegisterInfluxRefusalBodies();

}  // namespace clickatron::api
