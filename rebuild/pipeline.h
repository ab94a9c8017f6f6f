// The rebuild's steps in order, each skipped when its result is already in
// work_dir (work_dir.h), and nothing deployed unless every step before the
// deploy succeeded:
//
//   0. finish a generation a previous run built but did not finish
//   1. export day D from every realtime shard      days/D/export-S.csv
//   2. convert + external sort of the exports      days/D/sorted.csv
//   3. late data (fetched from each API node over HTTP) + queued loads,
//      merge with the previous generation, split
//      by shard, manifests, gzip backup            gen/G/
//   4. deploy (atomic rename, reload, verify)      gen/G/deployed.done
//   5. POST /exported?date=D to every realtime shard, POST /late/done for each
//      late file on its API node, loads marked folded
//                                                  gen/G/finished.done, days/D/complete.done
//
// One rebuild at a time: a lock file in work_dir makes a second one fail fast.
#pragma once

#include <optional>
#include <string>
#include <vector>

#include "clickatron/config.h"
#include "clickatron/status.h"
#include "restate.h"
#include "sort_inputs.h"

namespace clickatron::rebuild {

struct Timeouts {
  int http_ms = 10000;
  int export_ms = 6 * 3600 * 1000;  // a whole day's stream
  // A replica answers POST /fetch once it has fetched, checked and loaded
  // its file; a file is fetched whole within this too.
  int transfer_ms = 6 * 3600 * 1000;
};

struct RunOptions {
  std::string date;  // YYYY-MM-DD
  // Fold D even though the archive's last_day is D or later (normally a sign
  // that D is in the archive already and would be counted twice).
  bool force = false;
  // Build the generation and stop before its deploy: nothing the cluster
  // serves or holds changes; the next run without it deploys what was built.
  bool build_only = false;
  Timeouts timeouts;
};

// `clickatron-rebuild run`: the nightly job for one day.
Status RunDay(const ClusterConfig& cluster, const RunOptions& options);

struct LoadOptions {
  std::vector<std::string> files;
  InputFormat format = InputFormat::kRealtime;
  bool now = false;  // build and deploy a generation at once (no realtime export)
  Timeouts timeouts;
  std::optional<double> max_bad_line_ratio;  // unset: [rebuild] max_bad_line_ratio
  // Load files whose content an earlier load already has (load_identity.h).
  bool force = false;
};

// `clickatron-rebuild load`: queue historical data (and with `now`, deploy it).
Status LoadHistory(const ClusterConfig& cluster, const LoadOptions& options);

// `clickatron-rebuild restate`: queue a restatement (restate.h), and with
// `now` deploy it.
Status Restate(const ClusterConfig& cluster, const RestateOptions& options, bool now, const Timeouts& timeouts);

}  // namespace clickatron::rebuild
