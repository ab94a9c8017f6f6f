#include "openapi/openapi.h"

namespace clickatron::api {

void ServeOpenApi(const HttpExchangePtr& ex) {
  ex->AddHeader("X-Content-Type-Options", "nosniff");
  // Compiled in, like the dashboard: a new binary's description is never
  // hidden behind an old cached one.
  ex->AddHeader("Cache-Control", "no-cache");
  ex->Reply(200, OpenApiYaml(), "application/yaml");
}

}  // namespace clickatron::api
