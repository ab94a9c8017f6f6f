#include "ingest/write_door.h"

#include <fmt/format.h>
#include <nlohmann/json.hpp>

namespace clickatron::api {
namespace {

// InfluxDB 2's error codes for the statuses this door answers with.
std::string_view InfluxCode(int status) {
  switch (status) {
    case 400: return "invalid";
    case 401: return "unauthorized";
    case 404: return "not found";
    case 405: return "method not allowed";
    case 409: return "conflict";
    case 413: return "request too large";
    case 422: return "unprocessable entity";
    case 503: return "unavailable";
    default: return "internal error";
  }
}

}  // namespace

void ReplyTaken(HttpExchange& ex, WriteDoor door, uint64_t increments, bool replayed) {
  if (replayed) ex.AddHeader("Idempotent-Replayed", "true");
  if (door == WriteDoor::kInflux) {
    ex.Reply(204, "");
    return;
  }
  ex.ReplyJson({{"increments", increments}});
}

std::string InfluxErrorBody(int status, std::string_view reason, std::string_view message) {
  const nlohmann::json body = {{"code", InfluxCode(status)}, {"message", fmt::format("{}: {}", reason, message)}};
  return body.dump();
}

void RegisterInfluxRefusalBodies() {
  for (const char* path : {"/api/v2/write", "/write"}) SetRefusalBody(path, &InfluxErrorBody);
}

}  // namespace clickatron::api
