// Query parameters of internal and admin routes, read one way by every
// daemon: a parameter that must not repeat is refused when it does (400
// INVALID_<NAME>), as the API's public routes refuse it. Taking the first of
// two silently (`/manifest?shard=0&shard=1`) answers a question nobody asked.
#pragma once

#include <string>
#include <string_view>

#include "clickatron/http_server.h"

namespace clickatron {

// Sets *out to the parameter's one value (nullptr when absent) and returns
// true; false after answering 400 INVALID_<NAME> when it is given twice.
bool SingleArg(const HttpExchangePtr& ex, std::string_view name, const std::string** out);

}  // namespace clickatron
