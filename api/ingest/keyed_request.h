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
  std::string digest;  // RequestDigest
};

// The key as sent, without the draft's structured-field quotes ("K" is K).
std::string_view BareIdempotencyKey(std::string_view header);

// The key (bare); nullopt without the header; INVALID_ARGUMENT
// INVALID_IDEMPOTENCY_KEY when it is not 1-255 printable ASCII characters.
// Loop thread only (it reads a header).
Result<std::optional<std::string>> ReadIdempotencyKey(const HttpExchange& ex);

// XXH3-128 (hex) of the method, path, query parameters and `content`: the
// body as sent, or as it inflates when it came compressed. A client that
// compresses its retry again sends other bytes for the same content (gzip
// writes the time into its header), and that retry must be replayed, not
// refused as another request.
std::string RequestDigest(const HttpExchange& ex, std::string_view content);

}  // namespace clickatron::api
