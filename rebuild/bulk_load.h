// Step: take historical data in (the door for history).
//
// Files in realtime format (key,delta) or archive format, gzip or plain, in
// any order, for any dates, with duplicates (they are counts: they sum), are
// converted and sorted into work_dir/queue/ID/sorted.csv. Bad lines are listed
// in queue/ID/rejects.txt as FILE:LINE: reason; above rebuild.max_bad_line_ratio
// the load fails and nothing is queued (no queued.done marker). The marker
// names the input files by content; a load of content already loaded is
// refused or taken as the earlier load (load_identity.h). A queued load
// touches nothing the cluster serves: the next generation folds it in (the
// nightly run, or `load --now`), and marks it folded once deployed.
#pragma once

#include <functional>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "clickatron/config.h"
#include "clickatron/status.h"
#include "sort_inputs.h"
#include "work_dir.h"

namespace clickatron::rebuild {

struct BulkLoadOptions {
  std::vector<std::string> files;
  InputFormat format = InputFormat::kRealtime;  // kRealtime or kArchive
  // This load's bound on bad lines; unset: [rebuild] max_bad_line_ratio.
  std::optional<double> max_bad_line_ratio;
  // Queue it even when an earlier load has the same content (load_identity.h);
  // exactly the files of a load still queued are still taken as that load.
  bool force = false;
  // For a restatement (restate.h): no check against earlier loads (a
  // restatement replaces, so the same one twice is harmless), a guard every
  // converted line must pass (a line failing it refuses the whole load,
  // named FILE:LINE), and a step that runs on the sorted output before the
  // queued.done marker makes the entry complete.
  bool check_prior = true;
  std::function<Status(std::string_view archive_line)> accept;
  std::function<Status(const std::string& id)> before_marker;
};

struct QueuedLoad {
  std::string id;
  SortInputsResult figures;
  std::string rejects_path;  // "" when there were no bad lines
  // The same files as a load already queued and not yet folded: that load's
  // id, and nothing was queued again (figures and rejects_path unset).
  bool already_queued = false;
};

Result<QueuedLoad> QueueBulkLoad(const ClusterConfig& cluster, const BulkLoadOptions& options);

// Removes what loads without a queued.done marker left (their sort runs
// under work_dir/tmp/ID, partial outputs), keeping failed.txt and
// rejects.txt; one with no failed.txt (killed, or its host went down while
// it sorted) gets one saying it was interrupted. Call it holding the queue
// lock: a load being queued has no marker yet either.
Status SweepUnqueuedLoads(const WorkDir& work);

// Ids of loads queued (complete) and not yet folded, oldest first.
Result<std::vector<std::string>> PendingLoads(const WorkDir& work_dir);

}  // namespace clickatron::rebuild
