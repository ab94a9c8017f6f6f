// What every daemon's main() does first: parse `--config FILE --member NAME`,
// load the cluster file, find the member (checking its role), set up logging,
// and build the HttpServerOptions from the member's part of the file.
//
// Thread-safety: called once, from main(), before any other thread starts.
#pragma once

#include <string>

#include "clickatron/config.h"
#include "clickatron/file_lock.h"
#include "clickatron/http_server.h"
#include "clickatron/status.h"

namespace clickatron {

struct DaemonContext {
  ClusterConfig cluster;
  MemberConfig member;
  HttpServerOptions http;  // listen, limits, admin token, names
  // An flock on DATA_DIR/daemon.lock while the daemon (any copy of its
  // context) lives: a second daemon on the same data_dir refuses to start.
  // Two API nodes on one oplog answered 200 for increments written into a
  // segment the other had already gzipped and unlinked.
  std::shared_ptr<FileLock> data_dir_lock;
};

// Refuses a member that other hosts can reach (any listen address but
// loopback) unless the cluster has a secret and an admin token: an open
// internal endpoint there lets anyone forge or drop counts.
Status CheckExposure(const ClusterConfig& cluster, const MemberConfig& member);

// On error prints a usage/config message to stderr; the caller exits non-zero.
Result<DaemonContext> StartDaemon(int argc, char** argv, const std::string& daemon, MemberRole role);

}  // namespace clickatron
