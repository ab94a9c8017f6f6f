#include "dashboard/dashboard.h"

namespace clickatron::api {
namespace {

// Headers both assets carry.
void AddAssetHeaders(const HttpExchangePtr& ex) {
  // The page loads nothing but its own script and this node's JSON, and
  // builds its DOM with textContent/setAttribute only; the policy makes that
  // a rule the browser enforces. The script is a file of this node's, so no
  // inline script runs; the style is inline in the page.
  ex->AddHeader("Content-Security-Policy",
                "default-src 'none'; script-src 'self'; style-src 'unsafe-inline'; "
                "connect-src 'self'; img-src data:; base-uri 'none'; form-action 'none'; frame-ancestors 'none'");
  ex->AddHeader("X-Content-Type-Options", "nosniff");
  ex->AddHeader("Referrer-Policy", "no-referrer");
  // Small and compiled in: revalidating costs little and a new binary's page
  // is never hidden behind an old cached one.
  ex->AddHeader("Cache-Control", "no-cache");
}

}  // namespace

void ServeDashboard(const HttpExchangePtr& ex) {
  AddAssetHeaders(ex);
  ex->Reply(200, DashboardPage(), "text/html; charset=utf-8");
}

void ServeDashboardScript(const HttpExchangePtr& ex) {
  AddAssetHeaders(ex);
  ex->Reply(200, DashboardScript(), "text/javascript; charset=utf-8");
}

}  // namespace clickatron::api
