// Step: restate (replace) a namespace's closed days from an authoritative
// batch: `clickatron-rebuild restate` (docs/protocols.md, "Restatements").
//
// The files are taken in like a bulk load (bulk_load.h: same line formats,
// same bad-line rules) into the queue, with queue/ID/restate.json saying what
// they replace: namespace NS over the hours of [FROM 00:00Z, TO+1 00:00Z),
// every key or (keys_in_file) only the keys in the files (queue/ID/keys.txt).
// The generation that folds it takes those hours out of the previous
// generation and out of every input acknowledged before it (drop_rules.h),
// then adds the files' lines, so a read answers exactly what they say.
//
// "Before" is the queue's order for loads (a load queued earlier is
// superseded, a later one adds on top) and, for late data, the seal: every
// API node seals its open late file when the restatement is queued, and the
// files sealed then (listed in restate.json) are superseded; late lines
// taken after it land in later files and add on top.
//
// Refused before anything is queued:
// - a line of another namespace, or of an hour outside the range (it names
//   FILE:LINE): a stray row must never replace a range nobody meant;
// - a day the archive does not hold yet (after its last_day: still open in
//   the realtime ring), naming the first such day;
// - an API node that does not answer the seal (the late data before the
//   restatement could not be told from the late data after it).
#pragma once

#include <map>
#include <optional>
#include <set>
#include <string>
#include <vector>

#include "bulk_load.h"
#include "clickatron/config.h"
#include "clickatron/manifest.h"
#include "clickatron/status.h"
#include "drop_rules.h"
#include "sort_inputs.h"
#include "work_dir.h"

namespace clickatron::rebuild {

struct RestateOptions {
  std::string ns;
  std::string from_day;  // YYYY-MM-DD (UTC), inclusive
  std::string to_day;    // YYYY-MM-DD (UTC), inclusive
  bool keys_in_file = false;
  std::vector<std::string> files;
  InputFormat format = InputFormat::kRealtime;
  std::optional<double> max_bad_line_ratio;  // unset: [rebuild] max_bad_line_ratio
  int http_timeout_ms = 10000;
};

Result<QueuedLoad> QueueRestatement(const ClusterConfig& cluster, const RestateOptions& options);

// RESTATE_ROLLED_UP_DAYS when hours of namespace `ns` in [from, to) are in
// days `serving` (the archive's manifest; null: none) rolled up in a zone
// other than UTC: a restatement replaces UTC days, which would cut such a
// day in two. Checked when one is queued, and again when a build folds it
// (a build in progress when it was queued may have rolled its days up).
Status CheckNotInOtherZonesDays(const Manifest* serving, const std::string& ns, int64_t from, int64_t to);

// The files that make queue entry `id` a restatement (keys.txt with
// keys_in_file, then restate.json), written before its marker; `late_before`:
// the sealed late files per API member (SealAndListLateFiles). For
// QueueRestatement, and for the rebuild benchmark, which has no API nodes.
Status WriteRestatementFiles(const WorkDir& work, const std::string& id, const RestateOptions& options,
                             const std::map<std::string, std::set<std::string>>& late_before);

struct PendingRestatement {
  DropRule rule;  // keys_file: the queue entry's keys.txt in `work` (or "")
  // API member -> the late files it had sealed when the restatement was queued.
  std::map<std::string, std::set<std::string>> late_before;
};

// The restatement queued as `id`; nullopt when that entry is a load.
Result<std::optional<PendingRestatement>> ReadRestatement(const WorkDir& work, const std::string& id);

}  // namespace clickatron::rebuild
