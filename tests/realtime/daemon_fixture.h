// Helpers for the realtime integration tests: one clickatron-realtime
// member of a test cluster (testutil/cluster.h) with a manual clock, and
// small HTTP/JSON conveniences.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include "clickatron/config.h"
#include "clickatron/http_client.h"
#include "testutil/cluster.h"

namespace clickatron::realtime::testing {

inline constexpr const char* kAdminToken = "test-admin-token";

class RealtimeDaemon {
 public:
  // Writes the cluster file (clock "manual" or "system"; `realtime`, `http`:
  // more keys for its [realtime] and [http] tables); does not start.
  explicit RealtimeDaemon(const std::string& clock = "manual",
                          const clickatron::testing::TomlTable& realtime = {},
                          const clickatron::testing::TomlTable& http = {});
  // Starts (or restarts) the daemon and waits for /ping. Errors: *error.
  bool Start(std::string* error) { return cluster_.Start(kMember, error); }
  void Kill() { cluster_.Kill(kMember); }          // SIGKILL
  int Stop() { return cluster_.Stop(kMember); }    // SIGTERM
  bool running() const { return cluster_.Running(kMember); }
  std::string LogTail() const { return cluster_.LogTail(kMember); }

  HostPort address() const { return cluster_.Address(kMember); }
  pid_t pid() const { return cluster_.Pid(kMember); }
  std::string data_dir() const { return cluster_.DataDir(kMember); }
  HttpResponse Get(const std::string& target) const;
  HttpResponse Post(const std::string& target, const std::string& body = "") const;
  // Admin routes, with the bearer token.
  HttpResponse AdminGet(const std::string& target) const;
  HttpResponse AdminPost(const std::string& target) const;
  // POST /incr; the parsed answer (the whole envelope), or null JSON on a transport error.
  nlohmann::json Incr(const std::string& source, uint64_t seq, const std::string& body, int* status = nullptr) const;
  // GET /ring's data.
  nlohmann::json Ring() const;
  // Today by /ring (days since epoch).
  int64_t Today() const;

 private:
  static constexpr const char* kMember = "realtime-0";
  clickatron::testing::Cluster cluster_;
};

// A test with the daemon started and its Today read (`realtime`, `http`:
// more keys for the cluster file's tables).
class StartedDaemonTest : public ::testing::Test {
 protected:
  explicit StartedDaemonTest(const clickatron::testing::TomlTable& realtime = {},
                             const clickatron::testing::TomlTable& http = {})
      : daemon_("manual", realtime, http) {}

  void SetUp() override {
    std::string error;
    ASSERT_TRUE(daemon_.Start(&error)) << error;
    today_ = daemon_.Today();
    ASSERT_GT(today_, 0);
  }

  RealtimeDaemon daemon_;
  int64_t today_ = 0;
};

// "u|tkey.YMDH" for `hour` of `day` (core codec).
std::string TotalKey(const std::string& tkey, int64_t day, int hour);
// "sns.u|tkey.skey.YMDH".
std::string SubtotalKey(const std::string& sns, const std::string& tkey, const std::string& skey, int64_t day,
                        int hour);
std::string Date(int64_t day);
// Splits "a\nb\n" into {"a", "b"}.
std::vector<std::string> Lines(const std::string& text);
// Percent-encodes for a query string.
std::string Q(const std::string& value);

}  // namespace clickatron::realtime::testing
