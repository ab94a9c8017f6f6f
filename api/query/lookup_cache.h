// Hash -> full value, least recently used out first. A lookup record never
// changes (the hash is a function of the value), so a cached value is never
// stale; the bound only limits memory.
//
// Entries are charged their bytes (a lookup's value is a URL of any length
// up to the body limit): a count of entries bounded nothing, as 200,000
// entries of 64 KiB values are 13 GB.
//
// Thread-safety: none; one instance belongs to the loop thread.
#pragma once

#include <cstddef>
#include <string>

#include "clickatron/lru_map.h"

namespace clickatron::api {

class LookupCache {
 public:
  explicit LookupCache(size_t budget_bytes) : values_(budget_bytes) {}
  // What an entry is charged: its key and value, and the list and index
  // nodes and string headers that hold them.
  static size_t Charge(const std::string& hash, const std::string& value) {
    return hash.size() + value.size() + kEntryOverhead;
  }
  // nullptr when absent. The pointer is valid until the next Put.
  const std::string* Get(const std::string& hash) { return values_.Find(hash); }
  // A value charged more than the whole budget is not kept.
  void Put(const std::string& hash, std::string value) {
    const size_t charge = Charge(hash, value);
    values_.Put(hash, std::move(value), charge);
  }
  size_t size() const { return values_.size(); }
  size_t bytes() const { return values_.charged(); }

 private:
  static constexpr size_t kEntryOverhead = 128;
  LruMap<std::string> values_;
};

}  // namespace clickatron::api
