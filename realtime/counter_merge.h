// Counters in the realtime stores: an int64 kept as 8 bytes little-endian,
// incremented with a RocksDB merge operand (the delta, same encoding), so an
// increment never reads before it writes.
//
// The merge operator adds int64s. A value or operand that is not exactly 8
// bytes, or a sum that overflows int64, makes Merge return false: RocksDB then
// reports Corruption for that key (reads) or fails the compaction. Corruption
// is never turned into a plausible number (RocksDB's example uint64add treats
// it as 0; we must not). Failures are counted process-wide for /stats.
//
// Unique records ("~" keys) hold a binary UniqueSketch instead; for them the
// same operator unites sketches (an operand that does not decode fails the
// merge the same way). A merge takes all of a key's operands at once
// (FullMergeV2, PartialMergeMulti), so a sketch is decoded once per operand
// and the union encoded once.
//
// This header keeps RocksDB types out: the operator is handed over as an
// opaque shared_ptr that only shard_store.cc unwraps.
#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <string_view>

namespace rocksdb {
class MergeOperator;
}

namespace clickatron::realtime {

inline constexpr size_t kCounterBytes = 8;

// Appends the 8-byte little-endian encoding of `value`.
void AppendCounter(int64_t value, std::string* out);
std::string EncodeCounter(int64_t value);
// False unless `bytes` is exactly kCounterBytes long.
bool DecodeCounter(std::string_view bytes, int64_t* value);

std::shared_ptr<rocksdb::MergeOperator> NewCounterMergeOperator();

// How many merges failed (bad operand or overflow) since the process started.
uint64_t CounterMergeFailures();

}  // namespace clickatron::realtime
