// docs/openapi.yaml against the real API node: a cluster takes increments
// (with sub= and uniq=), then real answers of every public endpoint —
// successes in each shape (series, rollup, compare, per unit, uniques) and
// errors — are written to files and checked by openapi_validate.py against
// the response schema the spec gives for their path, method and status. The
// node serves the spec byte for byte; the validator is shown to refuse wrong
// answers; Redocly's recommended rules find no error in the spec.
#include <gtest/gtest.h>

#include <fstream>
#include <iterator>

#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include "clickatron/key_codec.h"
#include "clickatron/query_string.h"
#include "integration/cluster_fixture.h"

// A namespace of this file's own: its names beside those of the other files
// compiled with it in one unity file (tests/CMakeLists.txt).
namespace clickatron::integration::openapi_test {
namespace {

using clickatron::testing::HttpGet;
using clickatron::testing::HttpPost;
using clickatron::testing::RunCommand;
using clickatron::testing::TempDir;
using clickatron::testing::WaitFor;

const std::string kDay = "2024-06-04";
const std::string kSpec = std::string(CLICKATRON_SOURCE_DIR) + "/docs/openapi.yaml";
const std::string kValidator = std::string(CLICKATRON_SOURCE_DIR) + "/tests/integration/openapi_validate.py";
const std::string kPython = "/usr/bin/python3";
const std::string kKey = "oa-link";
// 12 bytes or longer: stored as its hash, expanded by /breakdown and /lookup.
const std::string kReferrer = "http://example.com/a/long/page?x=1";

std::string ReadFile(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  return std::string(std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>());
}

// Answers written to files, and the list openapi_validate.py reads.
class AnswerLog {
 public:
  explicit AnswerLog(std::string dir) : dir_(std::move(dir)) {}

  void Add(const std::string& name, const std::string& method, const std::string& path, int status,
           const std::string& content_type, const std::string& body) {
    const std::string file = dir_ + "/" + name + ".body";
    std::ofstream(file, std::ios::binary) << body;
    cases_.push_back({{"name", name},
                      {"method", method},
                      {"path", path},
                      {"status", status},
                      {"content_type", content_type},
                      {"body_file", file}});
  }
  size_t size() const { return cases_.size(); }

  // Runs the validator over every answer; its exit code, output in *output.
  int Validate(std::string* output) const {
    const std::string list = dir_ + "/cases.json";
    std::ofstream(list) << cases_.dump(2);
    return RunCommand({kPython, kValidator, kSpec, list}, output);
  }

 private:
  std::string dir_;
  nlohmann::json cases_ = nlohmann::json::array();
};

class OpenApiTest : public StartedClusterTest {
 protected:
  OpenApiTest() : StartedClusterTest(kDay), answers_(dir_.path()) {}

  // Sends the request, checks its status, and logs the answer under `name`.
  void Ask(const std::string& name, const std::string& method, const std::string& target, int expected_status,
           const std::string& body = "", const std::string& bearer = "") {
    HttpResponse r;
    if (method == "GET" && !bearer.empty()) {
      BlockingHttpClient client(clickatron::testing::kTestClusterSecret);
      HttpRequestSpec spec;
      spec.target = target;
      spec.bearer_token = bearer;
      spec.timeout_ms = 15000;
      r = client.Fetch(cluster_.api(), spec);
    } else {
      r = method == "GET" ? HttpGet(cluster_.api(), target, 15000)
                          : HttpPost(cluster_.api(), target, body, 15000, bearer);
    }
    ASSERT_TRUE(r.ok()) << name << ": " << r.transport.ToString();
    EXPECT_EQ(r.status_code, expected_status) << name << ": " << method << " " << target << " → " << r.body;
    answers_.Add(name, method, target.substr(0, target.find('?')), r.status_code, r.Header("Content-Type"), r.body);
    last_ = nlohmann::json::parse(r.body, nullptr, false);
  }

  int64_t Ref() const { return UnixOfDate(kDay) + 12 * 3600; }
  // A query of kKey with the window ending in kDay, plus `more`.
  std::string Query(const std::string& endpoint, const std::string& more) const {
    return fmt::format("/{}?ns=u&key={}&unit_reference_ts={}{}", endpoint, kKey, Ref(), more);
  }

  TempDir dir_;
  AnswerLog answers_;
  nlohmann::json last_;  // the last answer, parsed (discarded when not JSON)
};

TEST_F(OpenApiTest, EveryAnswerMatchesTheSchemaTheSpecGivesForIt) {
  const int64_t day = UnixOfDate(kDay);
  // Twelve hours of a batch: countries, a hashed referrer, four visitors.
  std::string batch;
  const char* countries[] = {"US", "JP", "US"};
  for (int h = 0; h < 12; ++h) {
    batch += fmt::format("ns=u&key={}&ts={}&sub={}&sub={}&uniq=visitor-{}\n", kKey, day + 3600 * h + 5,
                         PercentEncode(std::string("c:") + countries[h % 3]), PercentEncode("r:" + kReferrer), h % 4);
  }
  ASSERT_NO_FATAL_FAILURE(Ask("incr_batch", "POST", "/incr", 200, batch));
  ASSERT_NO_FATAL_FAILURE(Ask("incr_single", "GET",
                              fmt::format("/incr?ns=u&key={}&ts={}&value=3&sub=c%3ADE&uniq=visitor-9", kKey,
                                          day + 3600 * 13),
                              200));
  ASSERT_NO_FATAL_FAILURE(
      Ask("incr_post_query", "POST", fmt::format("/incr?ns=u&key=oa-other&ts={}", day + 60), 200));
  ASSERT_NO_FATAL_FAILURE(Ask("incr_blank_lines", "POST", "/incr", 200, "\n\r\n"));
  // Answered increments reach the realtime shard asynchronously.
  ASSERT_TRUE(WaitFor([&] { return cluster_.DayTotal(kKey, kDay) == 15; })) << cluster_.DayTotal(kKey, kDay);

  // /incr refusals.
  Ask("incr_missing_ns", "GET", "/incr?key=x", 400);
  Ask("incr_unknown_parameter", "GET", "/incr?ns=u&key=x&vaule=3", 400);
  Ask("delete_unknown_parameter", "POST", "/delete?ns=u&keys=x", 400, "", kToken);
  Ask("incr_bad_uniq", "GET", "/incr?ns=u&key=x&uniq=", 400);
  Ask("incr_body_and_query", "POST", "/incr?ns=u", 400, "ns=u&key=x\n");
  Ask("incr_bad_line", "POST", "/incr", 400, "ns=u&key=a\nns=u&key=b&value=0\n");

  // /clicks in each shape.
  Ask("clicks_series", "GET", Query("clicks", "&unit=day&units=3"), 200);
  Ask("clicks_rollup", "GET", Query("clicks", "&unit=day&units=3&rollup=true"), 200);
  Ask("clicks_hours_zone", "GET", Query("clicks", "&unit=hour&units=24&timezone=America%2FNew_York"), 200);
  Ask("clicks_compare_series", "GET", Query("clicks", "&unit=day&units=2&compare=previous"), 200);
  Ask("clicks_compare_rollup", "GET", Query("clicks", "&units=1&rollup=1&compare=year"), 200);
  // Six hours (7..12) beside the six before (1..6), both with clicks: a change that is a number.
  Ask("clicks_compare_hours", "GET", Query("clicks", "&unit=hour&units=6&rollup=true&compare=previous"), 200);
  EXPECT_TRUE(last_["data"]["compare"]["change"].is_number()) << last_.dump();
  Ask("clicks_units_over_data", "GET", Query("clicks", "&unit=week&tz_offset=-5"), 200);
  Ask("clicks_no_data", "GET",
      fmt::format("/clicks?ns=u&key=never-counted&unit_reference_ts={}", Ref()), 200);
  Ask("clicks_missing_key", "GET", "/clicks?ns=u", 400);
  Ask("clicks_bad_unit", "GET", Query("clicks", "&unit=minute"), 400);
  Ask("clicks_half_hour_zone", "GET", Query("clicks", "&timezone=Asia%2FKolkata"), 400);
  Ask("clicks_bad_escape", "GET", "/clicks?ns=u&key=%zz", 400);

  // /breakdown, with visitors, per unit, compared, hashed values expanded.
  Ask("breakdown_uniques", "GET", Query("breakdown", "&sns=c&unit=day&units=1&uniques=true"), 200);
  Ask("breakdown_hashed", "GET", Query("breakdown", "&sns=r&limit=5"), 200);
  Ask("breakdown_per_unit_compare", "GET",
      Query("breakdown", "&sns=c&unit=day&units=2&rollup=false&compare=previous&uniques=1"), 200);
  Ask("breakdown_compare_rollup", "GET", Query("breakdown", "&sns=c&units=1&compare=year"), 200);
  Ask("breakdown_compare_hours", "GET", Query("breakdown", "&sns=c&unit=hour&units=6&compare=previous"), 200);
  Ask("breakdown_missing_sns", "GET", Query("breakdown", ""), 400);
  Ask("breakdown_bad_limit", "GET", Query("breakdown", "&sns=c&limit=0"), 400);
  Ask("breakdown_bad_uniques", "GET", Query("breakdown", "&sns=c&uniques=maybe"), 400);

  // /uniques.
  Ask("uniques_series", "GET", Query("uniques", "&unit=hour&units=24"), 200);
  Ask("uniques_rollup", "GET", Query("uniques", "&unit=day&units=2&rollup=true"), 200);
  Ask("uniques_subtotal", "GET", Query("uniques", "&sns=c&skey=US&units=1"), 200);
  Ask("uniques_compare_series", "GET", Query("uniques", "&unit=day&units=2&compare=previous"), 200);
  Ask("uniques_compare_rollup", "GET", Query("uniques", "&units=1&rollup=true&compare=year"), 200);
  Ask("uniques_compare_hours", "GET", Query("uniques", "&unit=hour&units=6&compare=previous"), 200);
  EXPECT_TRUE(last_["data"]["compare"]["change"].is_number()) << last_.dump();
  Ask("uniques_sns_without_skey", "GET", Query("uniques", "&sns=c"), 400);

  // /lookup.
  Ask("lookup_found", "GET", "/lookup?hash=" + PercentEncode(Hash12(kReferrer)), 200);
  Ask("lookup_not_found", "GET", "/lookup?hash=AAAAAAAAAAA%3D", 404);
  Ask("lookup_missing_hash", "GET", "/lookup", 400);
  Ask("lookup_bad_hash", "GET", "/lookup?hash=abc", 400);

  // Operations and pages.
  Ask("ping", "GET", "/ping", 200);
  Ask("ping_bad_escape", "GET", "/ping?x=%zz", 400);
  Ask("stats", "GET", "/stats", 200);
  Ask("metrics", "GET", "/metrics", 200);
  Ask("dashboard", "GET", "/", 200);
  Ask("dashboard_script", "GET", "/dashboard.js", 200);
  Ask("openapi", "GET", "/openapi.yaml", 200);
  Ask("delete_without_token", "POST", "/delete?ns=u&key=nobody", 401);
  Ask("delete_without_ns", "POST", "/delete?key=nobody", 400, "", kToken);
  ASSERT_NO_FATAL_FAILURE(Ask("delete", "POST", "/delete?ns=u&key=nobody&from=3600&to=7200", 202, "", kToken));
  Ask("delete_status", "GET", "/delete/" + last_["data"]["id"].get<std::string>(), 200, "", kToken);
  Ask("delete_status_unknown", "GET", "/delete/del-1-00000000", 404, "", kToken);
  Ask("seal_without_token", "POST", "/late/seal", 401);
  Ask("seal", "POST", "/late/seal", 200, "", kToken);

  // Late data over HTTP: an increment for a day the ring does not hold goes
  // to a late file, sealed, listed, fetched and marked done.
  ASSERT_NO_FATAL_FAILURE(Ask("incr_late", "GET",
                              fmt::format("/incr?ns=u&key={}&ts={}", kKey, day - 30 * 86400), 200));
  ASSERT_TRUE(WaitFor([&] {
    auto s = HttpGet(cluster_.api(), "/stats");
    auto j = nlohmann::json::parse(s.body, nullptr, false);
    return !j.is_discarded() && j["data"]["write"].value("late_lines_written", 0) > 0;
  }));
  Ask("seal_late", "POST", "/late/seal", 200, "", kToken);
  Ask("late_files_without_token", "GET", "/late/files", 401);
  ASSERT_NO_FATAL_FAILURE(Ask("late_files", "GET", "/late/files", 200, "", kToken));
  ASSERT_EQ(last_["data"]["files"].size(), 1u) << last_.dump();
  const std::string late_name = last_["data"]["files"][0]["name"].get<std::string>();
  Ask("late_file", "GET", "/late/file?name=" + late_name, 200, "", kToken);
  Ask("late_file_bad_name", "GET", "/late/file?name=..%2Flate-1.sealed", 400, "", kToken);
  Ask("late_file_no_name", "GET", "/late/file", 400, "", kToken);
  Ask("late_file_unknown", "GET", "/late/file?name=late-1.sealed", 404, "", kToken);
  Ask("late_done_without_token", "POST", "/late/done?name=" + late_name, 401);
  Ask("late_done", "POST", "/late/done?name=" + late_name, 200, "", kToken);
  Ask("late_done_again", "POST", "/late/done?name=" + late_name, 200, "", kToken);
  EXPECT_EQ(last_["data"]["already_done"], true) << last_.dump();
  Ask("late_done_unknown", "POST", "/late/done?name=late-1.sealed", 404, "", kToken);
  Ask("late_done_bad_name", "POST", "/late/done?name=late-1.open", 400, "", kToken);
  Ask("late_files_empty", "GET", "/late/files", 200, "", kToken);
  EXPECT_TRUE(last_["data"]["files"].empty()) << last_.dump();

  std::string output;
  const int rc = answers_.Validate(&output);
  EXPECT_EQ(rc, 0) << output;
  EXPECT_NE(output.find(fmt::format("{0} of {0} answers match", answers_.size())), std::string::npos) << output;
}

TEST_F(OpenApiTest, ServesTheSpecItWasBuiltWithByteForByte) {
  const std::string spec = ReadFile(kSpec);
  ASSERT_FALSE(spec.empty()) << kSpec;
  auto r = HttpGet(cluster_.api(), "/openapi.yaml");
  ASSERT_EQ(r.status_code, 200) << r.body;
  EXPECT_EQ(r.Header("Content-Type"), "application/yaml");
  EXPECT_EQ(r.body.size(), spec.size());
  EXPECT_TRUE(r.body == spec) << "GET /openapi.yaml differs from docs/openapi.yaml (rebuild clickatron-api?)";
}

// The check itself can fail: answers that break the spec in different ways
// are each refused, while a right one passes.
TEST(OpenApiValidatorTest, RefusesAnswersTheSpecDoesNotAllow) {
  TempDir dir;
  AnswerLog log(dir.path());
  const std::string series_ok =
      R"({"data":{"clicks":[{"clicks":2,"dt":1717459200}],"tz_offset":0,"unit":"day","unit_reference_ts":"now",)"
      R"("units":1},"status_code":200,"status_txt":"OK"})";
  log.Add("right", "GET", "/clicks", 200, "application/json", series_ok);
  // A count as a string.
  log.Add("wrong_count_type", "GET", "/clicks", 200, "application/json",
          R"({"data":{"clicks":[{"clicks":"2","dt":1717459200}],"tz_offset":0,"unit":"day",)"
          R"("unit_reference_ts":"now","units":1},"status_code":200,"status_txt":"OK"})");
  // A field the spec does not have.
  log.Add("wrong_extra_field", "GET", "/clicks", 200, "application/json",
          R"({"data":{"clicks":3,"total":3,"tz_offset":0,"unit":"day","unit_reference_ts":"now","units":1},)"
          R"("status_code":200,"status_txt":"OK"})");
  // No envelope.
  log.Add("wrong_no_envelope", "GET", "/lookup", 200, "application/json", R"({"hash":"h0aMB8AuNw4=","value":"x"})");
  // An error without its message, and a reason /clicks never gives.
  log.Add("wrong_error_no_message", "GET", "/clicks", 400, "application/json",
          R"({"data":null,"status_code":400,"status_txt":"MISSING_ARG_KEY"})");
  log.Add("wrong_error_reason", "GET", "/clicks", 400, "application/json",
          R"({"data":null,"message":"m","status_code":400,"status_txt":"INVALID_HASH"})");
  // A status, a media type and a body the spec does not describe.
  log.Add("wrong_status", "GET", "/clicks", 418, "application/json", series_ok);
  log.Add("wrong_media_type", "GET", "/clicks", 200, "text/plain", series_ok);
  log.Add("wrong_ping", "GET", "/ping", 200, "text/plain", "PONG\n");
  log.Add("wrong_not_json", "GET", "/stats", 200, "application/json", "{\"data\":");
  std::string output;
  EXPECT_EQ(log.Validate(&output), 1) << output;
  EXPECT_NE(output.find("ok right\n"), std::string::npos) << output;
  for (const char* name : {"wrong_count_type", "wrong_extra_field", "wrong_no_envelope", "wrong_error_no_message",
                           "wrong_error_reason", "wrong_status", "wrong_media_type", "wrong_ping",
                           "wrong_not_json"}) {
    EXPECT_NE(output.find(fmt::format("FAIL {}:", name)), std::string::npos) << name << "\n" << output;
  }
  EXPECT_NE(output.find("1 of 10 answers match"), std::string::npos) << output;
}

// Redocly CLI's recommended rules over the spec (scripts/check-openapi
// installs a pinned Redocly with npm on first use). No registry, no pass.
TEST(OpenApiLintTest, RedoclyRecommendedRulesFindNoError) {
  std::string output;
  const int rc = RunCommand({std::string(CLICKATRON_SOURCE_DIR) + "/scripts/check-openapi"}, &output);
  EXPECT_EQ(rc, 0) << (rc == 3 ? "could not install Redocly CLI (npm registry unreachable?):\n"
                               : "Redocly lint of docs/openapi.yaml failed:\n")
                   << output;
}

}  // namespace
}  // namespace clickatron::integration::openapi_test
