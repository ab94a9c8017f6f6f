// Step: find the sealed late-data files to fold into the next generation.
//
// The API keeps increments for days no longer open in the ring in
// API_DATA_DIR/late/late-<unix>.sealed (framed logs; docs/protocols.md). A
// sealed file is taken when it is not listed in the deployed manifests'
// late_inputs (folded already, its rename to .done not yet done). After the
// generation that folded a file is deployed it is renamed to late-<unix>.done,
// which the API ignores.
#pragma once

#include <set>
#include <string>
#include <vector>

#include "clickatron/config.h"
#include "clickatron/status.h"

namespace clickatron::rebuild {

// The late-data directories: rebuild.oplog_dirs (each an API data dir), or by
// default every API member's data_dir; "/late" appended.
std::vector<std::string> LateDataDirs(const ClusterConfig& cluster);

struct LateInputsOptions {
  std::vector<std::string> dirs;
  std::set<std::string> already_folded;  // late_inputs of the deployed generation
};

// Sealed files not yet folded, as dir + "/" + name, oldest first. A missing
// directory is no error (an API node that never had late data).
Result<std::vector<std::string>> ListLateInputs(const LateInputsOptions& options);

// late-<unix>.sealed -> late-<unix>.done (durably). A file already renamed is
// not an error (a rerun after a crash).
Status MarkLateInputDone(const std::string& sealed_path);
std::string LateDonePath(const std::string& sealed_path);

}  // namespace clickatron::rebuild
