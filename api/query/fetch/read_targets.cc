#include "query/fetch/read_targets.h"

#include "clickatron/query_string.h"

namespace clickatron::api {

namespace {

std::string OneKeyTarget(std::string_view path, std::string_view key) {
  std::string target(path);
  target.reserve(path.size() + key.size() * 3);
  AppendPercentEncoded(&target, key);
  return target;
}

}  // namespace

std::string GetTarget(std::string_view key) { return OneKeyTarget("/get?key=", key); }

std::string FwmatchTarget(std::string_view prefix) { return OneKeyTarget("/fwmatch?key=", prefix); }

std::vector<MGetBatch> MGetTargets(const std::vector<std::string>& keys, size_t max_target_bytes, size_t max_keys) {
  std::vector<MGetBatch> batches;
  MGetBatch current;
  for (size_t i = 0; i < keys.size(); ++i) {
    const size_t added = PercentEncodedSize(keys[i]) + 5;  // "?key=" or "&key="
    if (current.keys > 0 && (current.target.size() + added > max_target_bytes || current.keys >= max_keys)) {
      batches.push_back(std::move(current));
      current = MGetBatch{};
    }
    if (current.keys == 0) current.first_key = i;
    current.target += current.keys == 0 ? "/mget?key=" : "&key=";
    AppendPercentEncoded(&current.target, keys[i]);
    ++current.keys;
  }
  if (current.keys > 0) batches.push_back(std::move(current));
  return batches;
}

}  // namespace clickatron::api
