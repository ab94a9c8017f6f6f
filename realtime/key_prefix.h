// The part of a realtime key a scan never splits: the record up to its key,
// "ns|tkey." of "ns|tkey.YMDH", "c.ns|tkey." of "c.ns|tkey.skey.YMDH" (and
// the same behind a unique record's '~'). Every prefix the read path scans
// (a key's hours, a subtotal namespace's values, one value's hours) is that
// part or longer, so the store keeps a Bloom filter of it per file
// (shard_store.cc): a scan seeks only the files holding its key, where it
// seeked every file of the day before (the checkpoints' L0 files, up to
// 20). A lookup ("l|HASH") has no such part (not in the domain): it is
// found by its whole key's filter, as before.
//
// Thread-safety: pure functions; any thread.
#pragma once

#include <memory>
#include <string_view>

namespace rocksdb {
class SliceTransform;
}

namespace clickatron::realtime {

// The key part of `key`, or nullopt-like empty view when the key has none
// (no '|', or no '.' after it).
std::string_view KeyPrefixOf(std::string_view key);
// Whether a scan of `prefix` may seek with the store's prefix filters: the
// prefix holds its whole key part (it ends at or after the '.' after '|').
inline bool ScansByKeyPrefix(std::string_view prefix) { return !KeyPrefixOf(prefix).empty(); }

// KeyPrefixOf as RocksDB's prefix extractor, for the day families.
std::shared_ptr<const rocksdb::SliceTransform> NewKeyPrefixTransform();

}  // namespace clickatron::realtime
