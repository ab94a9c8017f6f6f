// Request targets for the sortdb-shaped read endpoints (get, mget, fwmatch)
// that the archive replicas and realtime shards both speak.
#pragma once

#include <cstddef>
#include <string>
#include <string_view>
#include <vector>

namespace clickatron::api {

std::string GetTarget(std::string_view key);
std::string FwmatchTarget(std::string_view prefix);
// One /mget request of MGetTargets: its target and which of the keys it asks
// (keys[first_key] .. keys[first_key + keys - 1]).
struct MGetBatch {
  std::string target;
  size_t first_key = 0;
  size_t keys = 0;
};

// /mget requests covering `keys` in order, each at most max_target_bytes long
// (servers bound the request line) and holding at most max_keys keys. Empty
// for no keys.
std::vector<MGetBatch> MGetTargets(const std::vector<std::string>& keys, size_t max_target_bytes, size_t max_keys);

}  // namespace clickatron::api
