// RocksDB's own log, written to the daemon's log instead of a LOG file in
// the store's directory. Why: a LOG file is one more file RocksDB writes on
// every open, column family change and compaction, and on a full disk the
// packaged RocksDB (7.8, built with assertions) aborts the whole daemon on
// the append after a failed one (WritableFileWriter's "sync_without_flush_
// called_" assertion), where the store's real writes fail cleanly with
// IO_ERROR. Warnings and errors go to the log at their level; RocksDB's
// chatty INFO (options, compaction summaries) at debug.
//
// Thread-safety: RocksDB calls it from its background threads; spdlog's
// loggers are thread-safe.
#pragma once

#include <memory>

#include <rocksdb/env.h>

namespace clickatron::realtime {

std::shared_ptr<rocksdb::Logger> NewDaemonLogForRocks();

}  // namespace clickatron::realtime
