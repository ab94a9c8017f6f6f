#include "ingest/keyed_request.h"

#include <vector>

#include <fmt/format.h>

#include "clickatron/text_hash.h"
#include "ingest/idempotency_table.h"

namespace clickatron::api {

Result<std::optional<KeyedRequest>> ReadIdempotencyKey(const HttpExchange& ex) {
  std::string key = ex.header(kIdempotencyKeyHeader);
  if (key.empty()) return std::optional<KeyedRequest>();
  // The draft's key is a structured-field string: sent quoted ("…"), which
  // is the same key as the bare form most clients send.
  if (key.size() >= 2 && key.front() == '"' && key.back() == '"') key = key.substr(1, key.size() - 2);
  if (!ValidIdempotencyKey(key)) {
    return Status::InvalidArgument(
        fmt::format("{} must be 1 to 255 printable ASCII characters (got {} bytes)", kIdempotencyKeyHeader,
                    key.size()),
        "INVALID_IDEMPOTENCY_KEY");
  }
  std::vector<std::string_view> parts = {ex.method(), ex.path()};
  for (const auto& [name, value] : ex.args().items()) {
    parts.push_back(name);
    parts.push_back(value);
  }
  parts.push_back(ex.body());
  return std::optional<KeyedRequest>(KeyedRequest{std::move(key), Hash128HexOfParts(parts)});
}

void ReplyReplayed(HttpExchange& ex, uint64_t increments) {
  ex.AddHeader("Idempotent-Replayed", "true");
  ex.ReplyJson({{"increments", increments}});
}

}  // namespace clickatron::api
