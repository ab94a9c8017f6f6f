// IsAtomicWriteTempName (clickatron/file_util.h): the names a crash during
// WriteFileAtomically leaves behind, and only those, so that the rebuild's
// sweep of its work dir removes nothing else.
#include <gtest/gtest.h>

#include "clickatron/file_util.h"

namespace clickatron::atomic_write_temp_test {
namespace {

TEST(AtomicWriteTempNameTest, TellsTheTemporaryNameApart) {
  EXPECT_TRUE(IsAtomicWriteTempName("plan.json.tmp.4711"));
  EXPECT_TRUE(IsAtomicWriteTempName("a.tmp.1"));
  for (const char* other : {"plan.json", "plan.json.tmp.", "plan.json.tmp.47x1", ".tmp.12", "plan.tmp.json",
                            "export-2026-12-07.csv.tmp", "plan.json.tmp.-1"}) {
    EXPECT_FALSE(IsAtomicWriteTempName(other)) << other;
  }
}

}  // namespace
}  // namespace clickatron::atomic_write_temp_test
