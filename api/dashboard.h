// The dashboard: one HTML page at the API node's "/" that charts a key's
// clicks and its top subtotal values by calling /clicks and /breakdown from
// the browser. The page (markup, CSS and script) is compiled into the binary,
// so an installed clickatron-api needs no asset files, and it loads nothing
// from outside the API node (the network may be closed).
#pragma once

#include <string_view>

#include "clickatron/http_server.h"

namespace clickatron::api {

// The whole page, UTF-8 HTML (api/dashboard_page.cc).
std::string_view DashboardPage();

// GET / : 200 text/html with the page. Stateless; safe on the loop thread.
void ServeDashboard(const HttpExchangePtr& ex);

}  // namespace clickatron::api
