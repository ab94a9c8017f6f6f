// Bulk loads are counts: the same data loaded twice is counted twice. This
// names each load's input files by content (size and SHA-256) in its queue
// marker, so that a later load of the same bytes is seen for what it is:
//
// - the same files, in the same format, as a load that is queued and not
//   yet folded (a rerun of `load --now` after its deploy failed, a cron
//   entry run twice): that load is taken as this one, nothing is queued
//   again (with --force too);
// - any file whose content an earlier load already has (queued or folded,
//   under any name): refused, ALREADY_LOADED, naming that load; `--force`
//   loads it again on purpose.
// Empty files are in neither check: they add nothing. Inputs must be
// regular files (a pipe could not be read twice: digest, then lines).
//
// A file's content is its lines: a gzip file's digest is of its
// decompressed bytes (`zcat F | sha256sum`), any other's of its bytes
// (`sha256sum F`), so a file, its gzip form and the same data compressed
// again are one content. (Loads queued before this rule named a gzip file by
// its compressed bytes.) The memory is the rebuild's work dir: a load made
// from another work dir, or before inputs were recorded, is not known.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "clickatron/status.h"
#include "work_dir.h"

namespace clickatron::rebuild {

struct LoadInput {
  std::string file;
  uint64_t bytes = 0;
  std::string sha256;  // lowercase hex, of the content (a gzip file's decompressed)
};

// Each file's size and digest, in order. Refused before any work:
// - not a regular file (a pipe, a FIFO, a directory): NOT_A_FILE;
// - a plain (not gzip) file whose last byte is not a newline: CUT_FILE,
//   since a file cut short mid-line would load a wrong last count (a cut
//   gzip file fails by its trailer instead);
// - unless `force`, two of the files with the same (non-empty) content:
//   ALREADY_LOADED.
Result<std::vector<LoadInput>> IdentifyLoadInputs(const std::vector<std::string>& files, bool force = false);

nlohmann::json LoadInputsJson(const std::vector<LoadInput>& inputs);

struct PriorLoad {
  std::string id;
  std::string created;                  // when it was queued (ISO 8601)
  std::string format;                   // "realtime" or "archive"
  std::optional<int64_t> folded_into;   // the generation that folded it; nullopt: still queued
  std::vector<LoadInput> inputs;        // empty for loads queued before inputs were recorded
};

// Every complete load in the work dir's queue, oldest first.
Result<std::vector<PriorLoad>> ReadPriorLoads(const WorkDir& work);

// nullopt: a new load. A load id: `inputs` are exactly a queued, unfolded
// load's, in the same `format` (take it as this one). ALREADY_LOADED
// (FAILED_PRECONDITION), unless `force`: some non-empty input's content is
// an earlier load's.
Result<std::optional<std::string>> MatchPriorLoads(const std::vector<LoadInput>& inputs, const std::string& format,
                                                    const std::vector<PriorLoad>& prior, bool force = false);

}  // namespace clickatron::rebuild
