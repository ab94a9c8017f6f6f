// Hash -> full value, least recently used out first. A lookup record never
// changes (the hash is a function of the value), so a cached value is never
// stale; the bound only limits memory.
//
// Thread-safety: none; one instance belongs to the loop thread.
#pragma once

#include <cstddef>
#include <list>
#include <string>
#include <string_view>
#include <unordered_map>
#include <utility>

namespace clickatron::api {

class LookupCache {
 public:
  explicit LookupCache(size_t capacity) : capacity_(capacity) {}
  // nullptr when absent. The pointer is valid until the next Put.
  const std::string* Get(const std::string& hash);
  void Put(const std::string& hash, std::string value);
  size_t size() const { return index_.size(); }

 private:
  using Entry = std::pair<std::string, std::string>;  // hash, value
  size_t capacity_;
  std::list<Entry> order_;  // most recent first
  std::unordered_map<std::string, std::list<Entry>::iterator> index_;
};

}  // namespace clickatron::api
