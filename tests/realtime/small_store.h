// A realtime store small enough for unit tests (4 MB write buffer and block
// cache) in `dir`, for the tests that drive a Ring over real RocksDB.
#pragma once

#include <memory>
#include <string>

#include "clickatron/status.h"
#include "shard_store.h"

namespace clickatron::realtime::testing {

inline Result<std::unique_ptr<ShardStore>> OpenSmallStore(const std::string& dir) {
  StoreOptions options;
  options.write_buffer_mb = 4;
  options.block_cache_mb = 4;
  return ShardStore::Open(dir, options);
}

}  // namespace clickatron::realtime::testing
