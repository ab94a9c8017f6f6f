// Archive answers kept per key and file; see archive_reply_cache.h.
#include "query/cache/archive_reply_cache.h"

#include <cstring>
#include <utility>

namespace clickatron::api {
namespace {

template <typename T>
void AppendFixed(std::string* out, T v) {
  char bytes[sizeof v];
  std::memcpy(bytes, &v, sizeof v);
  out->append(bytes, sizeof v);
}

}  // namespace

std::string_view ArchiveReplyCache::KeyOf(int shard, std::string_view key, const ServedFile& file, int shard_count) {
  // Built in a per-thread buffer: every lookup of a busy read path makes one.
  thread_local std::string out;
  out.clear();
  AppendFixed(&out, static_cast<int32_t>(shard));
  AppendFixed(&out, static_cast<int32_t>(shard_count));
  AppendFixed(&out, file.generation);
  AppendFixed(&out, file.crc32);
  out.append(key);
  return out;
}

size_t ArchiveReplyCache::Charge(const ArchiveReply& reply) {
  return sizeof(ArchiveReply) + reply.body.size();
}

std::optional<ServedFile> ArchiveReplyCache::FileOf(const ArchiveView& view) {
  if (!view.file_crc32) return std::nullopt;
  return ServedFile{view.generation, *view.file_crc32};
}

std::shared_ptr<const ArchiveReply> ArchiveReplyCache::Find(int shard, std::string_view key, const ServedFile& file,
                                                            int shard_count) {
  if (!enabled() || shard < 0) return nullptr;
  return cache_.Find<ArchiveReply>(CacheKind::kArchiveReply, KeyOf(shard, key, file, shard_count));
}

void ArchiveReplyCache::Forget(int shard, std::string_view key, const ServedFile& file, int shard_count) {
  if (!enabled() || shard < 0) return;
  cache_.Erase(CacheKind::kArchiveReply, KeyOf(shard, key, file, shard_count));
}

bool ArchiveReplyCache::Insert(int shard, std::string_view key, ArchiveReply reply, int shard_count) {
  if (!enabled() || shard < 0) return false;
  const std::optional<ServedFile> file = FileOf(reply.view);
  if (!file) return false;
  auto kept = std::make_shared<ArchiveReply>(std::move(reply));
  kept->kept = true;
  const size_t charge = Charge(*kept);
  return cache_.Insert<ArchiveReply>(CacheKind::kArchiveReply, KeyOf(shard, key, *file, shard_count),
                                     std::move(kept), charge);
}

}  // namespace clickatron::api
