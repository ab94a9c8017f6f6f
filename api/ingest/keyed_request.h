// An /incr request's Idempotency-Key header (docs/protocols.md, "Retries and
// idempotency keys"): read and checked, with the digest that tells a retry
// of the same request from another request reusing its key.
#pragma once

#include <cstdint>
#include <optional>
#include <string>

#include "clickatron/http_server.h"
#include "clickatron/status.h"

namespace clickatron::api {

inline constexpr std::string_view kIdempotencyKeyHeader = "Idempotency-Key";

struct KeyedRequest {
  std::string key;
  std::string digest;  // XXH3-128 (hex) of the method, path, query parameters and body
};

// The key as sent, without the draft's structured-field quotes ("K" is K).
std::string_view BareIdempotencyKey(std::string_view header);

// nullopt without the header; INVALID_ARGUMENT INVALID_IDEMPOTENCY_KEY when it
// is not 1-255 printable ASCII characters.
Result<std::optional<KeyedRequest>> ReadIdempotencyKey(const HttpExchange& ex);

}  // namespace clickatron::api
