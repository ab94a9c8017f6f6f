// A realtime store small enough for unit tests (4 MB write buffer and block
// cache) in `dir`, for the tests that drive a Ring over real RocksDB, and
// such a ring itself.
#pragma once

#include <memory>
#include <string>

#include "clickatron/status.h"
#include "ring.h"
#include "shard_store.h"

namespace clickatron::realtime::testing {

inline Result<std::unique_ptr<ShardStore>> OpenSmallStore(const std::string& dir) {
  StoreOptions options;
  options.write_buffer_mb = 4;
  options.block_cache_mb = 4;
  return ShardStore::Open(dir, options);
}

// A ring at Today = `today` over a small store in `dir` (*store first: the
// ring holds a pointer to it), with scan cache `cache`.
inline Status OpenSmallRing(const std::string& dir, int64_t today, ScanCacheOptions cache,
                            std::unique_ptr<ShardStore>* store, std::unique_ptr<Ring>* ring) {
  Result<std::unique_ptr<ShardStore>> opened_store = OpenSmallStore(dir);
  if (!opened_store.ok()) return opened_store.status();
  *store = std::move(opened_store).value();
  Result<std::unique_ptr<Ring>> opened_ring = Ring::Open(store->get(), today, {}, std::move(cache));
  if (!opened_ring.ok()) return opened_ring.status();
  *ring = std::move(opened_ring).value();
  return Status::Ok();
}

}  // namespace clickatron::realtime::testing
