// The OpenAPI description of the API node's public endpoints
// (docs/openapi.yaml), served at GET /openapi.yaml. The YAML is compiled into
// the binary (api/CMakeLists.txt turns it into openapi_spec.cc at build time,
// again whenever it changes), so an installed clickatron-api needs no file
// and always describes itself as it was built.
#pragma once

#include <string_view>

#include "clickatron/http_server.h"

namespace clickatron::api {

// The bytes of docs/openapi.yaml (the generated openapi_spec.cc).
std::string_view OpenApiYaml();

// GET /openapi.yaml : 200 application/yaml with those bytes. Stateless; safe
// on the loop thread.
void ServeOpenApi(const HttpExchangePtr& ex);

}  // namespace clickatron::api
