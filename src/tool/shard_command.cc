// `clickatron shard`: which shard holds a key.
#include <fmt/format.h>

#include <memory>

#include "clickatron/key_codec.h"
#include "clickatron/record.h"
#include "clickatron/shard.h"
#include "commands.h"

namespace clickatron::tool {
namespace {

// Any key or whole line of either format; both formats share shard keys, and
// no text is a valid key in both, so trying one then the other is unambiguous.
Result<std::string_view> ShardKeyOfAnyKey(std::string_view key) {
  Result<std::string_view> realtime = ShardKeyOfRealtimeKey(key);
  if (realtime.ok()) return realtime;
  Result<std::string_view> archive = ShardKeyOfArchiveKey(key);
  if (archive.ok()) return archive;
  return Status::InvalidArgument(fmt::format("not a record key of either format: {}; {}",
                                             realtime.status().message(),
                                             archive.status().message()));
}

void AddShardCommand(Command& app) {
  Command sub = app.AddCommand("shard", "Print the shard number of each key");
  SetDetails(sub,
             "shard = crc32(shard key) % N (zlib's crc32). KEY is ns|tkey, any realtime or\n"
             "archive key, or a whole record line of either format; with --ns, KEY is a raw\n"
             "total key, hashed when needed as the API does. Examples:\n"
             "  clickatron shard -n 10 'u|jehiah' 'c.u|jehiah.US.c41l,4'   -> 4, 4\n"
             "  clickatron shard -n 10 --ns u jehiah                      -> 4");
  auto count = std::make_shared<uint32_t>(0);
  auto ns = std::make_shared<std::string>();
  auto keys = std::make_shared<std::vector<std::string>>();
  sub.Option("--count,-n", *count, "number of shards in the tier").Required().Range(1u, 1u << 30);
  sub.Option("--ns", *ns, "treat each KEY as a raw tkey in this namespace");
  sub.Option("KEY", *keys, "keys (default: one per line on stdin)");
  SetAction(sub, [count, ns, keys] {
    if (!ns->empty()) CLICKATRON_RETURN_IF_ERROR(ValidateNamespace(*ns, "--ns"));
    return ForEachArgOrStdinLine(*keys, [&](std::string_view key) {
      if (!ns->empty()) {
        CLICKATRON_RETURN_IF_ERROR(ValidateKeyPart(key, "key"));
        PrintLine(fmt::format("{}", ShardOf(TotalArchiveKey(*ns, StoreKeyPart(key).stored), *count)));
        return Status::Ok();
      }
      Result<std::string_view> shard_key = ShardKeyOfAnyKey(key);
      if (!shard_key.ok()) return shard_key.status();
      PrintLine(fmt::format("{}", ShardOf(*shard_key, *count)));
      return Status::Ok();
    });
  });
}

const bool kShardRegistered = RegisterCommand(30, AddShardCommand);

}  // namespace
}  // namespace clickatron::tool
