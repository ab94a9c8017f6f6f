// Members authenticate each other (docs/protocols.md, "Authentication
// between members"): every internal endpoint wants a valid cluster
// signature, every admin endpoint the admin token, a shard takes batches
// only from the cluster file's API members, and an outsider's probe changes
// nothing. The cluster runs with a secret and an admin token, as users run it.
#include <gtest/gtest.h>

#include <sys/stat.h>

#include <ctime>
#include <string>
#include <vector>

#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include "clickatron/cluster_auth.h"
#include "clickatron/file_util.h"
#include "clickatron/query_string.h"
#include "clickatron/ymdh.h"
#include "integration/cluster_fixture.h"

namespace clickatron::integration {
namespace {

using clickatron::testing::HttpGet;
using clickatron::testing::HttpPost;
using clickatron::testing::kTestClusterSecret;
using clickatron::testing::WaitFor;

const std::string kDay = "2024-06-01";

struct Call {
  std::string method;
  std::string target;
  std::string body;
};

// A request with exactly the credentials given: a signature from `secret`
// (none when empty), a bearer token (none when empty), extra headers.
HttpResponse Send(const HostPort& peer, const Call& call, const std::string& secret, const std::string& bearer = "",
                  std::vector<std::pair<std::string, std::string>> headers = {}) {
  BlockingHttpClient client(secret);
  HttpRequestSpec spec;
  spec.method = call.method;
  spec.target = call.target;
  spec.body = call.body;
  spec.bearer_token = bearer;
  spec.headers = std::move(headers);
  spec.timeout_ms = 10000;
  return client.Fetch(peer, std::move(spec));
}

std::string StatusTxt(const HttpResponse& r) {
  auto j = nlohmann::json::parse(r.body, nullptr, false);
  return j.is_discarded() ? "(not JSON: " + r.body.substr(0, 80) + ")" : j.value("status_txt", "");
}

// The shard's applied watermark for `source`, read with a valid signature.
uint64_t Watermark(const HostPort& shard, const std::string& source) {
  auto r = HttpGet(shard, "/watermark?source=" + PercentEncode(source));
  auto j = nlohmann::json::parse(r.body, nullptr, false);
  if (r.status_code != 200 || j.is_discarded()) return UINT64_MAX;
  return j["data"]["applied_seq"].get<uint64_t>();
}

class AuthTest : public StartedClusterTest {
 protected:
  AuthTest() : StartedClusterTest(kDay) {}

  std::vector<const MemberConfig*> Realtimes() const { return cluster_.config().MembersWithRole(MemberRole::kRealtime); }
  std::vector<const MemberConfig*> Archives() const { return cluster_.config().MembersWithRole(MemberRole::kArchive); }
  std::string HourKey(const std::string& key) const { return "u|" + key + "." + *YmdhFromUnix(UnixOfDate(kDay)); }
};

TEST_F(AuthTest, InternalEndpointsRefuseMissingAndWrongSignaturesAndChangeNothing) {
  IncrementThroughApi("seen", 3);
  ASSERT_TRUE(WaitFor([&] { return cluster_.DayTotal("seen", kDay) == 3; }));
  std::vector<uint64_t> before;
  for (const MemberConfig* rt : Realtimes()) before.push_back(Watermark(rt->listen, "api-0"));

  const std::string forged = HourKey("seen") + ",1000000\n";
  const std::vector<Call> realtime_calls = {
      {"POST", "/incr?source=api-0&seq=1000000000", forged},
      {"GET", "/watermark?source=api-0", ""},
      {"GET", "/get?key=" + PercentEncode(HourKey("seen")), ""},
      {"GET", "/mget?key=" + PercentEncode(HourKey("seen")), ""},
      {"GET", "/fwmatch?key=u%7C", ""},
      {"GET", "/mfwmatch?key=u%7C", ""},
      {"GET", "/ring", ""},
  };
  const std::vector<Call> archive_calls = {
      {"GET", "/get?key=u%7Cseen", ""}, {"GET", "/mget?key=u%7Cseen", ""}, {"GET", "/fwmatch?key=u%7C", ""}};
  auto expect_refused = [&](const MemberConfig& m, const std::vector<Call>& calls) {
    for (const Call& call : calls) {
      for (const std::string& secret : {std::string(), std::string("another-cluster-secret-0123456789")}) {
        const HttpResponse r = Send(m.listen, call, secret);
        EXPECT_EQ(r.status_code, 401) << m.name << " " << call.target << (secret.empty() ? " unsigned" : " wrong secret");
        EXPECT_EQ(StatusTxt(r), "UNAUTHORIZED") << m.name << " " << call.target;
        EXPECT_EQ(r.Header("WWW-Authenticate"), "Clickatron-HMAC") << call.target;
      }
      // The admin token is no cluster credential either.
      EXPECT_EQ(Send(m.listen, call, "", kToken).status_code, 401) << m.name << " " << call.target;
    }
  };
  for (const MemberConfig* rt : Realtimes()) expect_refused(*rt, realtime_calls);
  for (const MemberConfig* ar : Archives()) expect_refused(*ar, archive_calls);

  // Nothing was applied: watermarks and counts are as they were.
  for (size_t i = 0; i < Realtimes().size(); ++i) EXPECT_EQ(Watermark(Realtimes()[i]->listen, "api-0"), before[i]);
  EXPECT_EQ(cluster_.DayTotal("seen", kDay), 3);
  // And the same calls, signed, are answered (so the 401s above were about credentials).
  for (const MemberConfig* rt : Realtimes()) EXPECT_EQ(HttpGet(rt->listen, "/ring").status_code, 200);
  for (const MemberConfig* ar : Archives()) EXPECT_NE(HttpGet(ar->listen, "/get?key=u%7Cseen").status_code, 401);
}

TEST_F(AuthTest, AdminEndpointsRefuseMissingAndWrongTokensAndChangeNothing) {
  const std::string next_day = "2024-06-02";
  const std::vector<Call> realtime_calls = {
      {"POST", "/rotate?today=" + next_day, ""},
      {"POST", "/exported?date=" + kDay, ""},
      {"POST", "/clear?date=" + kDay, ""},
      {"GET", "/export?date=" + kDay, ""},
      {"POST", "/watermark/reset?source=api-0&seq=0&expect=0", ""},
  };
  std::vector<std::string> rings;
  for (const MemberConfig* rt : Realtimes()) rings.push_back(HttpGet(rt->listen, "/ring").body);
  auto expect_refused = [&](const MemberConfig& m, const Call& call) {
    // No token; a wrong one; and a valid cluster signature without the
    // token: an API host holds the secret, never operator power.
    // The message says which: none sent, or not the token (never the token).
    const HttpResponse none = Send(m.listen, call, "");
    EXPECT_EQ(none.status_code, 401) << m.name << " " << call.target;
    EXPECT_NE(none.body.find("none was sent"), std::string::npos) << none.body;
    const HttpResponse wrong = Send(m.listen, call, "", "wrong-token");
    EXPECT_EQ(wrong.status_code, 401) << m.name << " " << call.target;
    EXPECT_NE(wrong.body.find("the token sent is not it"), std::string::npos) << wrong.body;
    const HttpResponse signed_only = Send(m.listen, call, kTestClusterSecret);
    EXPECT_EQ(signed_only.status_code, 401) << m.name << " " << call.target;
    EXPECT_EQ(StatusTxt(signed_only), "UNAUTHORIZED");
  };
  for (const MemberConfig* rt : Realtimes()) {
    for (const Call& call : realtime_calls) expect_refused(*rt, call);
  }
  for (const MemberConfig* ar : Archives()) expect_refused(*ar, {"POST", "/reload", ""});
  expect_refused(cluster_.member("api-0"), {"POST", "/late/seal", ""});

  // The ring did not turn, export or clear.
  for (size_t i = 0; i < Realtimes().size(); ++i) EXPECT_EQ(HttpGet(Realtimes()[i]->listen, "/ring").body, rings[i]);
}

TEST_F(AuthTest, ABatchFromASourceThatIsNoApiMemberIsForbiddenAndAppliesNothing) {
  const MemberConfig& shard = *Realtimes().front();
  const HttpResponse r = HttpPost(shard.listen, "/incr?source=evil&seq=1", HourKey("victim") + ",1000000\n");
  EXPECT_EQ(r.status_code, 403) << r.body;
  EXPECT_EQ(StatusTxt(r), "UNKNOWN_SOURCE");
  EXPECT_EQ(Watermark(shard.listen, "evil"), 0u);
  EXPECT_EQ(HttpGet(shard.listen, "/get?key=" + PercentEncode(HourKey("victim"))).status_code, 404);
  auto stats = nlohmann::json::parse(HttpGet(shard.listen, "/stats").body);
  EXPECT_EQ(stats["data"]["realtime"]["unknown_sources"], 1);
}

// An operator's watermark reset (admin token) is for the cluster file's API
// members only: another source is refused and nothing changes.
TEST_F(AuthTest, AWatermarkResetForASourceThatIsNoApiMemberIsForbiddenAndChangesNothing) {
  IncrementThroughApi("seen", 3);
  ASSERT_TRUE(WaitFor([&] { return cluster_.DayTotal("seen", kDay) == 3; }));
  for (const MemberConfig* rt : Realtimes()) {
    const uint64_t api0 = Watermark(rt->listen, "api-0");
    for (const std::string& target : {std::string("/watermark/reset?source=evil&seq=0&expect=0"),
                                      fmt::format("/watermark/reset?source=api-1&seq=0&expect={}", api0)}) {
      const HttpResponse r = Send(rt->listen, {"POST", target, ""}, kTestClusterSecret, kToken);
      EXPECT_EQ(r.status_code, 403) << rt->name << " " << target << ": " << r.body;
      EXPECT_EQ(StatusTxt(r), "UNKNOWN_SOURCE") << rt->name << " " << target;
    }
    EXPECT_EQ(Watermark(rt->listen, "api-0"), api0);
    auto stats = nlohmann::json::parse(HttpGet(rt->listen, "/stats").body);
    EXPECT_EQ(stats["data"]["realtime"]["watermark_resets"], 0) << rt->name;
    EXPECT_FALSE(stats["data"]["realtime"]["watermarks"].contains("evil")) << stats["data"]["realtime"].dump();
    EXPECT_FALSE(stats["data"]["realtime"]["durable_watermarks"].contains("evil")) << stats["data"]["realtime"].dump();
    // A member's reset is still taken (so the 403s above were about the source).
    const HttpResponse ok =
        Send(rt->listen, {"POST", fmt::format("/watermark/reset?source=api-0&seq={0}&expect={0}", api0), ""},
             kTestClusterSecret, kToken);
    EXPECT_EQ(ok.status_code, 200) << rt->name << ": " << ok.body;
  }
  EXPECT_EQ(cluster_.DayTotal("seen", kDay), 3);
}

// The probe an outsider ran against a cluster with only an admin token:
// raise api-0's watermark with an unsigned batch, then watch the API's
// acknowledged increments vanish as "duplicates". Now it is refused, and
// every acknowledged increment counts.
TEST_F(AuthTest, TheOutsidersWatermarkProbeIsRefusedAndEveryIncrementCounts) {
  for (const MemberConfig* rt : Realtimes()) {
    const HttpResponse r = Send(rt->listen, {"POST", "/incr?source=api-0&seq=1000000000", ""}, "");
    EXPECT_EQ(r.status_code, 401) << rt->name << ": " << r.body;
    const HttpResponse forged = Send(rt->listen, {"POST", "/incr?source=evil&seq=1", HourKey("victim") + ",1000000\n"}, "");
    EXPECT_EQ(forged.status_code, 401) << rt->name << ": " << forged.body;
  }
  IncrementThroughApi("victim", 10);
  ASSERT_TRUE(WaitFor([&] { return cluster_.DayTotal("victim", kDay) == 10; })) << cluster_.DayTotal("victim", kDay);
  for (const MemberConfig* rt : Realtimes()) EXPECT_LT(Watermark(rt->listen, "api-0"), 1000000000u);
  auto stats = nlohmann::json::parse(HttpGet(cluster_.api(), "/stats").body);
  for (const auto& s : stats["data"]["write"]["shards"]) EXPECT_EQ(s["duplicates"], 0) << s.dump();
}

// A captured signed batch replayed as it is is a duplicate; with its seq or
// its body changed the signature no longer fits. Either way the watermark
// stays at what the API node wrote.
TEST_F(AuthTest, AReplayedSignedBatchCannotRaiseAWatermarkOrAddCounts) {
  IncrementThroughApi("replayed", 4);
  ASSERT_TRUE(WaitFor([&] { return cluster_.DayTotal("replayed", kDay) == 4; }));
  for (const MemberConfig* rt : Realtimes()) {
    const uint64_t written = Watermark(rt->listen, "api-0");
    if (written == 0) continue;  // this shard got none of the key's batches
    const std::string target = "/incr?source=api-0&seq=" + std::to_string(written);
    const std::string body = HourKey("replayed") + ",1\n";
    const std::string captured =
        SignRequest(kTestClusterSecret, rt->listen.ToString(), "POST", target, body, std::time(nullptr));
    const std::vector<std::pair<std::string, std::string>> header = {{std::string(kSignatureHeader), captured}};

    const HttpResponse replay = Send(rt->listen, {"POST", target, body}, "", "", header);
    ASSERT_EQ(replay.status_code, 200) << replay.body;
    EXPECT_EQ(nlohmann::json::parse(replay.body)["data"]["duplicate"], true);

    const HttpResponse higher =
        Send(rt->listen, {"POST", "/incr?source=api-0&seq=1000000000", body}, "", "", header);
    EXPECT_EQ(higher.status_code, 401) << higher.body;
    const HttpResponse other_body = Send(rt->listen, {"POST", target, HourKey("replayed") + ",1000\n"}, "", "", header);
    EXPECT_EQ(other_body.status_code, 401) << other_body.body;
    const std::string stale =
        SignRequest(kTestClusterSecret, rt->listen.ToString(), "POST", target, body,
                    std::time(nullptr) - kMaxSignatureSkewSeconds - 60);
    EXPECT_EQ(Send(rt->listen, {"POST", target, body}, "", "", {{std::string(kSignatureHeader), stale}}).status_code,
              401);

    // Signed for this shard, sent to another: refused there.
    for (const MemberConfig* other : Realtimes()) {
      if (other == rt) continue;
      const uint64_t theirs = Watermark(other->listen, "api-0");
      EXPECT_EQ(Send(other->listen, {"POST", target, body}, "", "", header).status_code, 401) << other->name;
      EXPECT_EQ(Watermark(other->listen, "api-0"), theirs);
    }
    EXPECT_EQ(Watermark(rt->listen, "api-0"), written) << rt->name;
  }
  EXPECT_EQ(cluster_.DayTotal("replayed", kDay), 4);
}

// A daemon started where other hosts can reach it without a cluster secret,
// or with a secret file others may read, refuses to start and says why.
TEST(AuthStartTest, OpenListenWithoutSecretsAndReadableSecretFilesAreRefused) {
  // Deliberately insecure files, from the spec: the realtime member listens
  // on 0.0.0.0 (MemberOverride::listen_host), first with no secret at all.
  clickatron::testing::ClusterSpec spec;
  spec.api_nodes = 0;
  spec.cluster_secret = false;
  spec.members["realtime-0"].listen_host = "0.0.0.0";
  clickatron::testing::Cluster cluster;
  auto start = [&](std::string* out) { return cluster.RunToExit("realtime-0", out); };
  std::string out;
  ASSERT_TRUE(cluster.Write(spec).ok());
  EXPECT_NE(start(&out), 0);
  EXPECT_NE(out.find("INSECURE_LISTEN"), std::string::npos) << out;
  EXPECT_NE(out.find("cluster_secret_file"), std::string::npos) << out;

  spec.cluster_secret = true;
  ASSERT_TRUE(cluster.Write(spec).ok());
  EXPECT_NE(start(&out), 0);  // a secret, but no admin token
  EXPECT_NE(out.find("INSECURE_LISTEN"), std::string::npos) << out;
  EXPECT_NE(out.find("admin token"), std::string::npos) << out;

  ASSERT_EQ(::chmod((cluster / "cluster.secret").c_str(), 0644), 0);
  spec.cluster.SetString("admin_token", "an-admin-token-for-tests");
  // The harness's own load of the file refuses the readable secret as well;
  // the file is written all the same, and the daemon's refusal is tested.
  EXPECT_FALSE(cluster.Write(spec).ok());
  EXPECT_NE(start(&out), 0);
  EXPECT_NE(out.find("BAD_SECRET_FILE"), std::string::npos) << out;
  EXPECT_NE(out.find("chmod 600"), std::string::npos) << out;
}

}  // namespace
}  // namespace clickatron::integration
