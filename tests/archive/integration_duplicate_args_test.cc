// Issue 53 §4: an archive replica refuses a parameter given twice (it took
// the first of two shard= silently) instead of answering another question.
#include <gtest/gtest.h>

#include "replica_fixture.h"

namespace clickatron::archive::testing {
namespace {

class DuplicateArgsTest : public ReplicaTest {};

TEST_F(DuplicateArgsTest, AParameterGivenTwiceIsRefusedOnEveryRoute) {
  StartReplica();
  EXPECT_EQ(Get("/manifest?shard=0").status_code, 200);
  for (const char* target : {"/manifest?shard=0&shard=1", "/manifest?shard=1&shard=0", "/file?shard=0&shard=0"}) {
    HttpResponse r = Get(target);
    EXPECT_EQ(r.status_code, 400) << target << ": " << r.body;
    EXPECT_EQ(Json(r)["status_txt"], "INVALID_SHARD") << target;
  }
  for (const char* target : {"/get?key=a&key=b", "/fwmatch?key=a&key=b"}) {
    HttpResponse r = Get(target);
    EXPECT_EQ(r.status_code, 400) << target << ": " << r.body;
    EXPECT_EQ(Json(r)["status_txt"], "INVALID_KEY") << target;
  }
  // An empty shard= is no shard (it was "WRONG_SHARD … not ").
  HttpResponse empty_shard = Get("/manifest?shard=");
  EXPECT_EQ(empty_shard.status_code, 400) << empty_shard.body;
  EXPECT_EQ(Json(empty_shard)["status_txt"], "INVALID_SHARD") << empty_shard.body;
  // The first of two limits was taken (probe 10a).
  HttpResponse limits = Get("/fwmatch?key=a&limit=2&limit=3");
  EXPECT_EQ(limits.status_code, 400) << limits.body;
  EXPECT_EQ(Json(limits)["status_txt"], "INVALID_LIMIT") << limits.body;
}

// An operator's misspelt parameter on /fetch or /reload is refused before
// anything is done (probe 10a: /fetch?source=…&generaton=2 answered 200
// and fetched the source's older generation, a rollback), and a source with
// a space in it is not tried as a host.
TEST_F(DuplicateArgsTest, AnUnknownParameterOnFetchOrReloadIsRefusedAndNothingIsDone) {
  StartReplica();
  const HttpResponse before = Get("/manifest?shard=0");
  ASSERT_EQ(before.status_code, 200);
  struct Case {
    const char* target;
    const char* reason;
  };
  for (const Case& c : {Case{"/fetch?source=127.0.0.1:9&generaton=2", "UNKNOWN_PARAMETER"},
                        Case{"/fetch?source=127.0.0.1:9&generation=2&generation=3", "INVALID_GENERATION"},
                        Case{"/fetch?source=%20127.0.0.1:9&generation=2", "INVALID_SOURCE"},
                        Case{"/reload?generation=5", "UNKNOWN_PARAMETER"}}) {
    HttpResponse r = clickatron::testing::HttpPost(peer(), c.target, "", 20000, "");
    EXPECT_EQ(r.status_code, 400) << c.target << ": " << r.body;
    EXPECT_EQ(Json(r)["status_txt"], c.reason) << c.target << ": " << r.body;
  }
  EXPECT_EQ(Get("/manifest?shard=0").body, before.body);
}

}  // namespace
}  // namespace clickatron::archive::testing
