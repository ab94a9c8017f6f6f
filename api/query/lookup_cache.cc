#include "query/lookup_cache.h"

namespace clickatron::api {

const std::string* LookupCache::Get(const std::string& hash) {
  auto it = index_.find(hash);
  if (it == index_.end()) return nullptr;
  order_.splice(order_.begin(), order_, it->second);
  return &it->second->second;
}

void LookupCache::Put(const std::string& hash, std::string value) {
  if (capacity_ == 0) return;
  auto it = index_.find(hash);
  if (it != index_.end()) {
    it->second->second = std::move(value);
    order_.splice(order_.begin(), order_, it->second);
    return;
  }
  order_.emplace_front(hash, std::move(value));
  index_.emplace(hash, order_.begin());
  if (index_.size() > capacity_) {
    index_.erase(order_.back().first);
    order_.pop_back();
  }
}

}  // namespace clickatron::api
