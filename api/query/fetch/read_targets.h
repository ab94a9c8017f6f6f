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
// /mget requests covering `keys` in order, each at most max_target_bytes long
// (servers bound the request line) and holding at most max_keys keys. Empty
// for no keys.
std::vector<std::string> MGetTargets(const std::vector<std::string>& keys, size_t max_target_bytes, size_t max_keys);

}  // namespace clickatron::api
