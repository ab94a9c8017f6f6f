// What a realtime shard's ring holds, as GET /ring answers it: the nightly
// run asks which days to export, a restatement which days are closed.
#pragma once

#include <map>
#include <string>

#include "clickatron/config.h"
#include "clickatron/status.h"

namespace clickatron::rebuild {

// Its today, and each day it holds with its export state ("open",
// "sealed", "exported").
struct RingDays {
  std::string today;
  std::map<std::string, std::string> states;
  // The oldest day it holds (today when it holds none).
  std::string oldest() const { return states.empty() ? today : states.begin()->first; }
};

// Errors: EXPORT_FAILED when the shard does not answer; Corruption when
// its answer is not /ring's JSON.
Result<RingDays> ReadRing(const ClusterConfig& cluster, int shard, int timeout_ms);

}  // namespace clickatron::rebuild
