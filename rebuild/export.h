// Step: export one day from one realtime shard to a file.
//
// GET /export?date=D (admin) seals D on the shard and streams its records,
// sorted. The body goes straight to `path + ".tmp"` chunk by chunk (nothing is
// held in memory); only a complete 200 answer whose stream did not end in the
// realtime daemon's "!ERROR …" line is fsynced and renamed to `path`. So the
// file existing under its final name means the export is done, and a rerun
// skips it.
#pragma once

#include <cstdint>
#include <string>

#include "clickatron/config.h"
#include "clickatron/status.h"
#include "sortmerge/progress.h"

namespace clickatron::rebuild {

struct ExportOptions {
  HostPort peer;
  std::string member_name;  // for messages
  std::string date;         // YYYY-MM-DD
  std::string admin_token;
  std::string cluster_secret;  // signs the request (the shard checks it)
  std::shared_ptr<const TlsContext> tls;  // set: connect with TLS
  std::string path;
  int timeout_ms = 3600 * 1000;  // the whole transfer
  Progress* progress = nullptr;
};

struct ExportResult {
  uint64_t bytes = 0;
  uint64_t lines = 0;
  // X-Tombstone-Epoch: the export holds no record of a deletion whose
  // tombstone on this shard has an epoch up to it (0: not said, so any may
  // be in it). The rebuild takes the later ones' records out.
  uint64_t tombstone_epoch = 0;
};

Result<ExportResult> ExportDay(const ExportOptions& options);

}  // namespace clickatron::rebuild
