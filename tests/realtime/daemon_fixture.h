// Helpers for the realtime integration tests: a clickatron-realtime child
// process on a free loopback port with a temp data dir and a manual clock,
// and small HTTP/JSON conveniences.
#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "clickatron/config.h"
#include "clickatron/http_client.h"
#include "testutil/testutil.h"

namespace clickatron::realtime::testing {

inline constexpr const char* kAdminToken = "test-admin-token";

class RealtimeDaemon {
 public:
  // Writes the cluster file (clock "manual" or "system"; `realtime_extra`:
  // more lines for its [realtime] table); does not start.
  explicit RealtimeDaemon(const std::string& clock = "manual", const std::string& realtime_extra = "");
  // Starts (or restarts) the daemon and waits for /ping. Errors: *error.
  bool Start(std::string* error);
  void Kill() { process_.Kill(); }      // SIGKILL
  int Stop() { return process_.Stop(); }  // SIGTERM
  bool running() const { return process_.running(); }
  std::string LogTail() const { return process_.LogTail(); }

  const HostPort& address() const { return member_.listen; }
  const std::string& data_dir() const { return member_.data_dir; }
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
  clickatron::testing::TempDir dir_;
  std::string config_path_;
  MemberConfig member_;
  clickatron::testing::DaemonProcess process_;
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
