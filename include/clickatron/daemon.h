// What every daemon's main() does first: parse `--config FILE --member NAME`,
// load the cluster file, find the member (checking its role), set up logging,
// and build the HttpServerOptions from the member's part of the file.
#pragma once

#include <string>

#include "clickatron/config.h"
#include "clickatron/http_server.h"
#include "clickatron/status.h"

namespace clickatron {

struct DaemonContext {
  ClusterConfig cluster;
  MemberConfig member;
  HttpServerOptions http;  // listen, limits, admin token, names
};

// On error prints a usage/config message to stderr; the caller exits non-zero.
Result<DaemonContext> StartDaemon(int argc, char** argv, const std::string& daemon, MemberRole role);

}  // namespace clickatron
