#include "ingest/keyed_request.h"

#include <vector>

#include <fmt/format.h>

#include "clickatron/text_hash.h"
#include "ingest/idempotency_table.h"

namespace clickatron::api {

std::string_view BareIdempotencyKey(std::string_view header) {
  // The draft's key is a structured-field string: sent quoted ("…"), which
  // is the same key as the bare form most clients send.
  if (header.size() >= 2 && header.front() == '"' && header.back() == '"') header = header.substr(1, header.size() - 2);
  return header;
}

Result<std::optional<std::string>> ReadIdempotencyKey(const HttpExchange& ex) {
  // Present but empty is a malformed key, not none: a client that meant to
  // send one must not lose its retry protection without a word.
  const std::optional<std::string> header = ex.find_header(kIdempotencyKeyHeader);
  if (!header) return std::optional<std::string>();
  std::string key(BareIdempotencyKey(*header));
  if (!ValidIdempotencyKey(key)) {
    return Status::InvalidArgument(
        fmt::format("{} must be 1 to 255 printable ASCII characters (got {} bytes)", kIdempotencyKeyHeader,
                    key.size()),
        "INVALID_IDEMPOTENCY_KEY");
  }
  return std::optional<std::string>(std::move(key));
}

std::string RequestDigest(const HttpExchange& ex, std::string_view content) {
  std::vector<std::string_view> parts = {ex.method(), ex.path()};
  for (const auto& [name, value] : ex.args().items()) {
    parts.push_back(name);
    parts.push_back(value);
  }
  parts.push_back(content);
  return Hash128HexOfParts(parts);
}

}  // namespace clickatron::api
