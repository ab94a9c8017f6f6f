// Query parameters of internal and admin routes, read one way by every
// daemon: a parameter that must not repeat is refused when it does (400
// INVALID_<NAME>), as the API's public routes refuse it. Taking the first of
// two silently (`/manifest?shard=0&shard=1`) answers a question nobody asked.
#pragma once

#include <initializer_list>
#include <string>
#include <string_view>

#include "clickatron/http_server.h"

namespace clickatron {

// Sets *out to the parameter's one value (nullptr when absent) and returns
// true; false after answering 400 INVALID_<NAME> when it is given twice.
bool SingleArg(const HttpExchangePtr& ex, std::string_view name, const std::string** out);

// For routes that change state (an operator's POST /fetch, /rotate,
// /exported …): true when every parameter is one of `known` and none is
// given twice; otherwise answers 400 UNKNOWN_PARAMETER (naming it and the
// route's parameters) or INVALID_<NAME>, and returns false before anything
// is done. Ignored, a misspelt parameter changes what is done: POST
// /fetch?generaton=2 fetched whatever generation the source had, an older
// one included.
bool OnlyArgs(const HttpExchangePtr& ex, std::initializer_list<std::string_view> known);

}  // namespace clickatron
