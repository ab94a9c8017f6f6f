// [api] client_token: when set, the API node's public routes want
// "Authorization: Bearer CLIENT_TOKEN" (401 otherwise, nothing counted), while
// /ping, /stats and /metrics stay open for probes and scrapers.
#include <ctime>
#include <string>

#include "api/ingest/cluster_fixture.h"

namespace clickatron::api::write_testing {
namespace {

constexpr const char* kClientToken = "client-token-for-tests";

HttpResponse GetWithToken(const HostPort& api, const std::string& target, const std::string& token) {
  BlockingHttpClient client;
  HttpRequestSpec spec;
  spec.target = target;
  spec.bearer_token = token;
  spec.timeout_ms = 10000;
  return client.Fetch(api, std::move(spec));
}

TEST(IntegrationWriteClientTokenTest, PublicRoutesWantTheClientTokenAndProbesStayOpen) {
  ClusterSpec spec = WriteCluster::Spec(1);
  spec.api.SetString("client_token", kClientToken);
  WriteCluster c(spec);
  c.StartAll();
  const int64_t ts = static_cast<int64_t>(std::time(nullptr));
  const std::string incr = fmt::format("/incr?ns=t&key=guarded&ts={}", ts);

  for (const std::string& token : {std::string(), std::string("wrong-token")}) {
    for (const std::string& target : {incr, std::string("/clicks?ns=t&key=guarded"),
                                      std::string("/breakdown?sns=c&ns=t&key=guarded"),
                                      std::string("/uniques?ns=t&key=guarded"), std::string("/lookup?hash=x"),
                                      std::string("/?ns=t&key=guarded")}) {
      const HttpResponse r = GetWithToken(c.Api(), target, token);
      EXPECT_EQ(r.status_code, 401) << target << " with \"" << token << "\": " << r.body;
      EXPECT_EQ(r.Header("WWW-Authenticate"), "Bearer") << target;
    }
  }
  for (const char* open : {"/ping", "/stats", "/metrics"}) {
    EXPECT_EQ(GetWithToken(c.Api(), open, "").status_code, 200) << open;
  }
  // Nothing was counted by the refused increments; with the token it counts.
  auto stats = nlohmann::json::parse(GetWithToken(c.Api(), "/stats", "").body);
  EXPECT_EQ(stats["data"]["write"]["increments_in"], 0) << stats.dump();
  const HttpResponse ok = GetWithToken(c.Api(), incr, kClientToken);
  ASSERT_EQ(ok.status_code, 200) << ok.body;
  stats = nlohmann::json::parse(GetWithToken(c.Api(), "/stats", "").body);
  EXPECT_EQ(stats["data"]["write"]["increments_in"], 1) << stats.dump();
}

}  // namespace
}  // namespace clickatron::api::write_testing
