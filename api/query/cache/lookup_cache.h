// Hash -> full value, kept in the node's read cache (read_cache.h, kind
// lookup). A lookup record never changes (the hash is a function of the
// value), so a kept value is never stale; the cache's capacity only limits
// memory. Entries are charged their bytes: a lookup's value is a URL of any
// length up to the body limit.
//
// Thread-safety: thread-safe (the read cache is).
#pragma once

#include <memory>
#include <string>

#include "query/cache/read_cache.h"

namespace clickatron::api {

class LookupCache {
 public:
  explicit LookupCache(ReadCache& cache) : cache_(cache) {}
  // Null when absent.
  std::shared_ptr<const std::string> Get(const std::string& hash) {
    return cache_.Find<std::string>(CacheKind::kLookup, hash);
  }
  void Put(const std::string& hash, std::string value) {
    const size_t charge = sizeof(std::string) + value.capacity();
    cache_.Insert<std::string>(CacheKind::kLookup, hash, std::make_shared<const std::string>(std::move(value)),
                               charge);
  }

 private:
  ReadCache& cache_;
};

}  // namespace clickatron::api
