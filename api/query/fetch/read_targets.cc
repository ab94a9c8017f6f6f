#include "query/fetch/read_targets.h"

#include "clickatron/query_string.h"

namespace clickatron::api {

std::string GetTarget(std::string_view key) { return "/get?key=" + PercentEncode(key); }

std::string FwmatchTarget(std::string_view prefix) { return "/fwmatch?key=" + PercentEncode(prefix); }

std::vector<std::string> MGetTargets(const std::vector<std::string>& keys, size_t max_target_bytes, size_t max_keys) {
  std::vector<std::string> targets;
  std::string current;
  size_t in_current = 0;
  for (const std::string& key : keys) {
    const std::string encoded = PercentEncode(key);
    const size_t added = encoded.size() + 5;  // "?key=" or "&key="
    if (in_current > 0 && (current.size() + added > max_target_bytes || in_current >= max_keys)) {
      targets.push_back(std::move(current));
      current.clear();
      in_current = 0;
    }
    current += in_current == 0 ? "/mget?key=" : "&key=";
    current += encoded;
    ++in_current;
  }
  if (in_current > 0) targets.push_back(std::move(current));
  return targets;
}

}  // namespace clickatron::api
