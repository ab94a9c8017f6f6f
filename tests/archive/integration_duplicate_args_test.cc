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
}

}  // namespace
}  // namespace clickatron::archive::testing
