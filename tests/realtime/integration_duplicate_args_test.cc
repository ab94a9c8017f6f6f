// Issue 53 §4: a realtime shard refuses a parameter that must not repeat
// when it is given twice, on its internal and admin routes alike; and every
// file and directory it creates is its owner's alone.
#include <sys/stat.h>

#include <gtest/gtest.h>

#include <filesystem>

#include "daemon_fixture.h"

namespace clickatron::realtime::testing {
namespace {

TEST(RealtimeDuplicateArgsTest, AParameterGivenTwiceIsRefused) {
  RealtimeDaemon daemon;
  std::string error;
  ASSERT_TRUE(daemon.Start(&error)) << error;
  const std::string today = Date(daemon.Today());
  const std::string yesterday = Date(daemon.Today() - 1);
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
  for (const Case& c : cases) {
    EXPECT_EQ(c.answer.status_code, 400) << c.answer.body;
    auto j = nlohmann::json::parse(c.answer.body, nullptr, false);
    EXPECT_EQ(j.is_discarded() ? "" : j.value("status_txt", ""), c.reason) << c.answer.body;
  }
  // Given once, the same requests are answered.
  EXPECT_EQ(daemon.Get("/fwmatch?key=u%7Ca&unite=day").status_code, 200);
  EXPECT_EQ(daemon.AdminPost("/archived?through=" + Date(daemon.Today() - 5)).status_code, 200);
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
