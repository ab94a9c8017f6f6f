// The newest archive generation an API node has seen, kept across restarts.
#include "query/fetch/known_generation.h"

#include <gtest/gtest.h>

#include "clickatron/file_util.h"
#include "testutil/testutil.h"

namespace clickatron::api {
namespace {

using clickatron::testing::TempDir;

TEST(KnownGenerationTest, NewestSurvivesARestartAndNeverGoesBack) {
  TempDir dir;
  const std::string path = dir / "archive-generation";
  {
    KnownGeneration known(path);
    EXPECT_EQ(known.newest(), 0u);  // no file yet
    known.Saw(0);
    EXPECT_FALSE(FileExists(path));  // nothing worth keeping
    known.Saw(7);
    known.Saw(5);  // an older replica answering: not a step back
    EXPECT_EQ(known.newest(), 7u);
  }
  KnownGeneration restarted(path);
  EXPECT_EQ(restarted.newest(), 7u);
  EXPECT_EQ(ReadFileToString(path).value(), "7\n");
}

TEST(KnownGenerationTest, UnreadableContentStartsFromNothing) {
  TempDir dir;
  const std::string path = dir / "archive-generation";
  for (const char* bad : {"", "seven\n", "7x\n", "-1\n"}) {
    ASSERT_TRUE(WriteFileAtomically(path, bad).ok());
    KnownGeneration known(path);
    EXPECT_EQ(known.newest(), 0u) << bad;
    known.Saw(2);  // and the file is good again
    EXPECT_EQ(KnownGeneration(path).newest(), 2u) << bad;
  }
}

TEST(KnownGenerationTest, WithoutAPathItIsMemoryOnly) {
  KnownGeneration known("");
  known.Saw(4);
  EXPECT_EQ(known.newest(), 4u);
}

}  // namespace
}  // namespace clickatron::api
