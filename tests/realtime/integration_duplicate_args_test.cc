// Issue 53 §4: a realtime shard refuses a parameter that must not repeat
// when it is given twice, on its internal and admin routes alike; and every
// file and directory it creates is its owner's alone.
#include <sys/stat.h>

#include <gtest/gtest.h>

#include <filesystem>

#include "daemon_fixture.h"

namespace clickatron::realtime::testing {
namespace {

// A 400 with `reason`, before anything was done.
void ExpectRefused(const HttpResponse& answer, std::string_view reason) {
  EXPECT_EQ(answer.status_code, 400) << answer.body;
  auto j = nlohmann::json::parse(answer.body, nullptr, false);
  EXPECT_EQ(j.is_discarded() ? "" : j.value("status_txt", ""), reason) << answer.body;
}

// A shard started, and the names of its today and yesterday.
class RealtimeDuplicateArgsTest : public ::testing::Test {
 protected:
  void Start() {
    std::string error;
    ASSERT_TRUE(daemon.Start(&error)) << error;
    today = Date(daemon.Today());
    yesterday = Date(daemon.Today() - 1);
  }
  RealtimeDaemon daemon;
  std::string today, yesterday;
};

TEST_F(RealtimeDuplicateArgsTest, AParameterGivenTwiceIsRefused) {
  ASSERT_NO_FATAL_FAILURE(Start());
  struct Case {
    HttpResponse answer;
    const char* reason;
  };
  const Case cases[] = {
      {daemon.Get("/fwmatch?key=u%7Ca&unite=day&unite=day"), "INVALID_UNITE"},
      {daemon.Get("/fwmatch?key=u%7Ca&date=" + today + "&date=" + yesterday), "INVALID_DATE"},
      {daemon.AdminPost("/exported?date=" + yesterday + "&date=" + today), "INVALID_DATE"},
      {daemon.AdminPost("/archived?through=" + yesterday + "&through=" + yesterday), "INVALID_THROUGH"},
  };
  for (const Case& c : cases) ExpectRefused(c.answer, c.reason);
  // Given once, the same requests are answered.
  EXPECT_EQ(daemon.Get("/fwmatch?key=u%7Ca&unite=day").status_code, 200);
  EXPECT_EQ(daemon.AdminPost("/archived?through=" + Date(daemon.Today() - 5)).status_code, 200);
}

// An operator's misspelt parameter on a route that changes state is
// refused before anything is done (probe 10a: /exported?generaton=5 and
// /rotate?today=…&foo=1 answered 200, the misspelt part ignored), and so is
// a generation given twice (it took the larger, naming a generation that
// did not exist in every later answer).
TEST_F(RealtimeDuplicateArgsTest, AnUnknownParameterOnAnAdminRouteIsRefusedAndNothingIsDone) {
  ASSERT_NO_FATAL_FAILURE(Start());
  struct Case {
    std::string target;
    const char* reason;
  };
  const Case admin_cases[] = {
      {"/rotate?today=" + Date(daemon.Today() + 1) + "&foo=1", "UNKNOWN_PARAMETER"},
      {"/exported?date=" + yesterday + "&generaton=5", "UNKNOWN_PARAMETER"},
      {"/archived?through=" + yesterday + "&generation=12&generation=1", "INVALID_GENERATION"},
      {"/clear?date=" + yesterday + "&dates=" + today, "UNKNOWN_PARAMETER"},
      {"/watermark/reset?source=api-0&seq=1&expect=0&force=1", "UNKNOWN_PARAMETER"},
      {"/watermark/reset?source=&seq=1&expect=0", "MISSING_ARG_SOURCE"},
  };
  for (const Case& c : admin_cases) {
    SCOPED_TRACE(c.target);
    ExpectRefused(daemon.AdminPost(c.target), c.reason);
  }
  // Nothing was done: the day did not turn, no generation was noted.
  EXPECT_EQ(Date(daemon.Today()), today);
  HttpResponse read = daemon.Get("/fwmatch?key=u%7Ca");
  ASSERT_EQ(read.status_code, 200) << read.body;
  EXPECT_NE(read.Header("X-Realtime-Archive-Generation"), "12");
  EXPECT_NE(read.Header("X-Realtime-Archive-Generation"), "5");
}

TEST(RealtimeOwnerOnlyFilesTest, EveryFileAndDirectoryItCreatesIsItsOwnersAlone) {
  RealtimeDaemon daemon;
  std::string error;
  ASSERT_TRUE(daemon.Start(&error)) << error;
  int status = 0;
  daemon.Incr("api-0", 1, TotalKey("a", daemon.Today(), 3) + ",1\n", &status);
  ASSERT_EQ(status, 200);
  ASSERT_EQ(daemon.Stop(), 0);  // a clean stop checkpoints: the store's files exist
  size_t seen = 0;
  for (const auto& entry : std::filesystem::recursive_directory_iterator(daemon.data_dir())) {
    struct stat st {};
    ASSERT_EQ(::lstat(entry.path().c_str(), &st), 0) << entry.path();
    if (S_ISLNK(st.st_mode)) continue;
    EXPECT_EQ(st.st_mode & 077, 0u) << entry.path() << " has mode " << std::oct << (st.st_mode & 0777);
    ++seen;
  }
  EXPECT_GT(seen, 5u) << "the store's files were looked at";
}

}  // namespace
}  // namespace clickatron::realtime::testing
