// Shard selection (see shard.h).
#include "clickatron/shard.h"

#include <zlib.h>

#include "clickatron/record.h"

namespace clickatron {
namespace {

// The shard key inside an already validated key of either format. Works on
// the key's own bytes so callers get a view, not a copy:
//   ns|tkey[.…]            -> ns|tkey
//   sns.ns|tkey.…          -> ns|tkey
//   l|HASH                 -> HASH
//   ~…                     -> as without the '~' (uniques live beside their counters)
std::string_view ShardKeyOfValidKey(std::string_view key, RecordType type) {
  const size_t bar = key.find('|');
  if (type == RecordType::kLookup) return key.substr(bar + 1);
  const bool sub = type == RecordType::kSubtotal || type == RecordType::kDaySubtotal ||
                   type == RecordType::kUniqueSubtotal || type == RecordType::kDayUniqueSubtotal;
  const size_t begin = sub ? key.find('.') + 1 : IsUniqueType(type) ? 1 : 0;
  const size_t end = key.find('.', bar);  // npos for an archive total: the whole key
  return key.substr(begin, end == std::string_view::npos ? end : end - begin);
}

}  // namespace

uint32_t Crc32(std::string_view data) { return Crc32Extend(0, data); }

uint32_t Crc32Extend(uint32_t crc, std::string_view data) {
  // crc32_z takes a size_t length, so even a huge buffer is one call.
  return static_cast<uint32_t>(
      crc32_z(crc, reinterpret_cast<const Bytef*>(data.data()), data.size()));
}

uint32_t ShardOf(std::string_view shard_key, uint32_t shard_count) {
  // A count of 0 is a configuration error caught when the cluster file loads;
  // answer 0 rather than divide by zero if one slips through.
  if (shard_count == 0) return 0;
  return Crc32(shard_key) % shard_count;
}

Result<std::string_view> ShardKeyOfRealtimeKey(std::string_view key) {
  key = LineKey(key);
  Result<RealtimeKey> parsed = ParseRealtimeKey(key);
  if (!parsed.ok()) return parsed.status();
  return ShardKeyOfValidKey(key, parsed->type);
}

Result<std::string_view> ShardKeyOfArchiveKey(std::string_view key) {
  key = LineKey(key);
  Result<RealtimeKey> parsed = ParseArchiveKey(key);
  if (!parsed.ok()) return parsed.status();
  return ShardKeyOfValidKey(key, parsed->type);
}

}  // namespace clickatron
