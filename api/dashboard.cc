#include "dashboard.h"

namespace clickatron::api {

void ServeDashboard(const HttpExchangePtr& ex) {
  // The page loads nothing from anywhere but this node and builds its DOM
  // with textContent/setAttribute only; the policy makes that a rule the
  // browser enforces. Inline script and style are the page itself.
  ex->AddHeader("Content-Security-Policy",
                "default-src 'none'; script-src 'unsafe-inline'; style-src 'unsafe-inline'; "
                "connect-src 'self'; img-src data:; base-uri 'none'; form-action 'none'; frame-ancestors 'none'");
  ex->AddHeader("X-Content-Type-Options", "nosniff");
  ex->AddHeader("Referrer-Policy", "no-referrer");
  // Small and compiled in: revalidating costs little and a new binary's page
  // is never hidden behind an old cached one.
  ex->AddHeader("Cache-Control", "no-cache");
  ex->Reply(200, DashboardPage(), "text/html; charset=utf-8");
}

}  // namespace clickatron::api
