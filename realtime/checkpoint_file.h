// A checkpoint's records for one column family, written as one sorted SST
// file that ShardStore::Write then ingests with the other families' files in
// one atomic step (shard_store.h; docs/protocols.md, "Realtime shard: memory
// and checkpoints").
//
// With shard_store.cc, counter_merge.cc and rocks_status.h, the only code
// that includes RocksDB.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include <rocksdb/db.h>
#include <rocksdb/options.h>

#include "clickatron/status.h"
#include "shard_store.h"

namespace clickatron::realtime {

// The records of one family, in any order. The pointers (and what all of
// them view) must outlive WriteCheckpointFile.
struct FamilyRecords {
  SortableCounters counters;
  std::vector<const StoreWrite::Put*> puts;
  std::vector<const StoreWrite::Unite*> sketches;
  bool empty() const { return counters.empty() && puts.empty() && sketches.empty(); }
};

// Writes `records` (its counters and puts sorted here, its counters freed
// once written, hence not const) into a new SST file at
// `path` made with `options` for `family`: a merge operand per counter and
// per unique record ("~" + its counter key), a put per lookup. The file
// takes each key once, so records of one key are folded first: counters
// summed, sketches united, the last put kept (the in-memory table never
// repeats a key; other writers may). Counter and lookup keys must sort
// before every "~" key, as valid keys do. Errors: a folded counter past
// int64, keys out of that order, I/O.
Status WriteCheckpointFile(const rocksdb::Options& options, rocksdb::ColumnFamilyHandle* family,
                           const std::string& path, FamilyRecords& records);

}  // namespace clickatron::realtime
