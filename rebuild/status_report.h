// `clickatron-rebuild status`: the serving generation per archive shard, an
// unfinished generation, which steps are done per day, queued loads and
// late-data files waiting. Reads files only; changes nothing.
#pragma once

#include <string>

#include "clickatron/config.h"
#include "clickatron/status.h"

namespace clickatron::rebuild {

Result<std::string> StatusReport(const ClusterConfig& cluster);

}  // namespace clickatron::rebuild
