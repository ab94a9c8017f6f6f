// What a realtime shard's read answers say it has handed over to the archive
// (docs/protocols.md, "Realtime reads"): X-Realtime-Archived-Through (the
// newest day the archive holds for it) and X-Realtime-Archive-Generation (the
// generation the rebuild named on POST /archived or /exported), on every read
// route; both only rise; a generation that is not a number is refused.
#include <gtest/gtest.h>

#include <string>

#include "daemon_fixture.h"

// A namespace of this file's own: its names beside those of the other files
// compiled with it in one unity file (tests/CMakeLists.txt).
namespace clickatron::realtime::testing::integration_handover_headers_test {
namespace {

class RealtimeHandoverHeadersTest : public StartedDaemonTest {
 protected:
  // The answers of every read route, for a key that is not there.
  std::vector<HttpResponse> Reads() const {
    return {daemon_.Get("/get?key=u%7Ca"), daemon_.Get("/mget?key=u%7Ca&key=u%7Cb"),
            daemon_.Get("/fwmatch?key=u%7Ca."), daemon_.Get("/mfwmatch?key=u%7Ca.&key=u%7Cb.")};
  }
};

TEST_F(RealtimeHandoverHeadersTest, EveryReadSaysWhatTheArchiveHoldsAndOnlyHigher) {
  // Nothing handed over yet (no archive answered at start): neither header.
  for (const HttpResponse& r : Reads()) {
    ASSERT_TRUE(r.ok()) << r.transport.ToString();
    EXPECT_EQ(r.Header("X-Realtime-Archived-Through"), "") << r.body;
    EXPECT_EQ(r.Header("X-Realtime-Archive-Generation"), "") << r.body;
  }
  const std::string through = Date(today_ - 5);
  ASSERT_EQ(daemon_.AdminPost("/archived?through=" + through + "&generation=7").status_code, 200);
  for (const HttpResponse& r : Reads()) {
    EXPECT_EQ(r.Header("X-Realtime-Archived-Through"), through) << r.status_code << " " << r.body;
    EXPECT_EQ(r.Header("X-Realtime-Archive-Generation"), "7") << r.status_code << " " << r.body;
  }
  // An older day or generation told later lowers neither.
  ASSERT_EQ(daemon_.AdminPost("/archived?through=" + Date(today_ - 6) + "&generation=5").status_code, 200);
  for (const HttpResponse& r : Reads()) {
    EXPECT_EQ(r.Header("X-Realtime-Archived-Through"), through);
    EXPECT_EQ(r.Header("X-Realtime-Archive-Generation"), "7");
  }
  // A generation that is not a number is refused, and changes nothing.
  const HttpResponse bad = daemon_.AdminPost("/archived?through=" + Date(today_ - 4) + "&generation=7x");
  EXPECT_EQ(bad.status_code, 400) << bad.body;
  EXPECT_NE(bad.body.find("INVALID_GENERATION"), std::string::npos) << bad.body;
  EXPECT_EQ(daemon_.Get("/fwmatch?key=u%7Ca.").Header("X-Realtime-Archived-Through"), through);
  // Both outlive a restart: a shard restarted beside a cold API node still
  // names the deployed generation (it named none until the next deploy, so
  // a replica restored to an older file passed for the archive).
  ASSERT_EQ(daemon_.Stop(), 0);
  std::string error;
  ASSERT_TRUE(daemon_.Start(&error)) << error;
  for (const HttpResponse& r : Reads()) {
    EXPECT_EQ(r.Header("X-Realtime-Archived-Through"), through) << r.status_code << " " << r.body;
    EXPECT_EQ(r.Header("X-Realtime-Archive-Generation"), "7") << r.status_code << " " << r.body;
  }
}

}  // namespace
}  // namespace clickatron::realtime::testing::integration_handover_headers_test
