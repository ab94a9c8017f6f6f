// The dashboard: one HTML page at the API node's "/" and its script at
// "/dashboard.js", which chart a key's clicks and its top subtotal values by
// calling /clicks and /breakdown from the browser. Both are plain files in
// api/dashboard/assets/ (HTML and CSS, vanilla JavaScript, no build step, no
// external resources), compiled into the binary at build time, so an
// installed clickatron-api needs no asset files and loads nothing from
// outside the API node (the network may be closed).
//
// Contract with tests/api/dashboard/integration_dashboard_test.cc (keep stable):
// - body[data-state] is "idle" (no key yet), "loading", then "ready" or
//   "error" once a render has finished;
// - svg#chart holds one rect.bar per unit, oldest first, with data-dt (unit
//   start, unix s) and data-clicks;
// - tr.breakdown-row per breakdown entry with data-value and data-clicks;
// - with compare=previous|year: svg#chart also holds one circle.compare-point
//   per unit (data-dt: the earlier unit's start, data-clicks), #compare-total
//   has data-total and data-change (the API's change, "" when null), and each
//   tr.breakdown-row a td.change with data-compare-clicks and data-change;
// - #error shows each API error as .error-reason and .error-message (the
//   envelope's status_txt and message).
// The page's query string uses the API's own parameter names (ns, key, unit,
// units, timezone, sns, limit, compare, and unit_reference_ts passed through), so
// /?ns=u&key=jehiah&unit=day&units=30&timezone=-5&sns=c opens a chart.
#pragma once

#include <string_view>

#include "clickatron/http_server.h"

namespace clickatron::api {

// The page, UTF-8 HTML (assets/dashboard.html, embedded by api/CMakeLists.txt).
std::string_view DashboardPage();
// Its script (assets/dashboard.js, embedded the same way).
std::string_view DashboardScript();

// GET / : 200 text/html with the page. Stateless; safe on the loop thread.
void ServeDashboard(const HttpExchangePtr& ex);
// GET /dashboard.js : 200 text/javascript with the script. The same.
void ServeDashboardScript(const HttpExchangePtr& ex);

}  // namespace clickatron::api
