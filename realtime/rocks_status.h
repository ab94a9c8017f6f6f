// RocksDB's status as ours, with what was being done. For the store's own
// files (shard_store.cc, checkpoint_file.cc; rocks_logger.cc its log): nothing
// else includes RocksDB.
#pragma once

#include <fmt/format.h>
#include <rocksdb/status.h>

#include <string_view>

#include "clickatron/status.h"

namespace clickatron::realtime {

inline Status FromRocks(const rocksdb::Status& s, std::string_view what) {
  if (s.ok()) return Status::Ok();
  if (s.IsCorruption()) return Status::Corruption(fmt::format("{}: {}", what, s.ToString()));
  if (s.IsIOError()) return Status::IoError(fmt::format("{}: {}", what, s.ToString()));
  return Status::Internal(fmt::format("{}: {}", what, s.ToString()));
}

}  // namespace clickatron::realtime
