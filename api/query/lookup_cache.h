// Hash -> full value, least recently used out first. A lookup record never
// changes (the hash is a function of the value), so a cached value is never
// stale; the bound only limits memory.
//
// Thread-safety: none; one instance belongs to the loop thread.
#pragma once

#include <cstddef>
#include <string>

#include "clickatron/lru_map.h"

namespace clickatron::api {

class LookupCache {
 public:
  explicit LookupCache(size_t capacity) : values_(capacity) {}
  // nullptr when absent. The pointer is valid until the next Put.
  const std::string* Get(const std::string& hash) { return values_.Find(hash); }
  void Put(const std::string& hash, std::string value) { values_.Put(hash, std::move(value), 1); }
  size_t size() const { return values_.size(); }

 private:
  LruMap<std::string> values_;  // each entry charged 1: the capacity counts entries
};

}  // namespace clickatron::api
