// Sharding (docs/protocols.md): shard = crc32(shard_key) % shard_count, with zlib's
// crc32 (the same number as Python's zlib.crc32). The shard key of a total or
// subtotal record is "ns|tkey" (stored forms), so every hour and every subtotal
// namespace of one key live on one shard; a lookup's shard key is its HASH.
//
// Thread-safety: pure functions of their arguments; any thread may call them.
#pragma once

#include <cstdint>
#include <string_view>

#include "clickatron/status.h"

namespace clickatron {

uint32_t Crc32(std::string_view data);
uint32_t Crc32Extend(uint32_t crc, std::string_view data);
uint32_t ShardOf(std::string_view shard_key, uint32_t shard_count);

// The shard key of a realtime key or an archive key (or of a whole line of
// either format: the part after the first comma is ignored).
Result<std::string_view> ShardKeyOfRealtimeKey(std::string_view key);
Result<std::string_view> ShardKeyOfArchiveKey(std::string_view key);

}  // namespace clickatron
