// Archive answers kept per key and generation; see archive_reply_cache.h.
#include "query/archive_reply_cache.h"

namespace clickatron::api {

ArchiveReplyCache::Index& ArchiveReplyCache::IndexOf(int shard) {
  // Shards are small numbers (a count grows only by re-partitioning).
  if (static_cast<size_t>(shard) >= shards_.size()) shards_.resize(static_cast<size_t>(shard) + 1);
  return shards_[static_cast<size_t>(shard)];
}

void ArchiveReplyCache::Erase(Index& index, Index::iterator it) {
  auto entry = it->second;
  figures_.bytes -= entry->Bytes();
  index.erase(it);  // before the entry: the map's key is a view into it
  order_.erase(entry);
  figures_.entries = order_.size();
}

std::optional<ServedFile> ArchiveReplyCache::FileOf(const ArchiveView& view) {
  if (!view.file_crc32) return std::nullopt;
  return ServedFile{view.generation, *view.file_crc32};
}

void ArchiveReplyCache::AttachTotalHours(int shard, std::string_view key, const ServedFile& file, int shard_count,
                                         std::shared_ptr<const ArchiveTotalHours> hours) {
  if (!enabled() || shard < 0 || static_cast<size_t>(shard) >= shards_.size() || !hours) return;
  Index& index = shards_[static_cast<size_t>(shard)];
  auto it = index.find(key);
  if (it == index.end()) return;
  Entry& entry = *it->second;
  if (FileOf(entry.reply.view) != file || entry.shard_count != shard_count || entry.reply.total_hours) return;
  const size_t before = entry.Bytes();
  entry.reply.total_hours = std::move(hours);
  if (entry.Bytes() > max_bytes_ / 8) {  // as Insert's rule: not worth what it would push out
    entry.reply.total_hours.reset();
    return;
  }
  figures_.bytes += entry.Bytes() - before;
  // The entry was just used: first in line, so the room is made by others.
  order_.splice(order_.begin(), order_, it->second);
  while (figures_.bytes > max_bytes_ && order_.size() > 1) {
    const Entry& last = order_.back();
    Index& owner = shards_[static_cast<size_t>(last.shard)];
    Erase(owner, owner.find(std::string_view(last.key)));
    ++figures_.evictions;
  }
}

ArchiveReply* ArchiveReplyCache::Find(int shard, std::string_view key, const ServedFile& file, int shard_count) {
  if (!enabled() || shard < 0) return nullptr;
  Index& index = IndexOf(shard);
  auto it = index.find(key);
  if (it == index.end()) {
    ++figures_.misses;
    return nullptr;
  }
  Entry& entry = *it->second;
  if (FileOf(entry.reply.view) != file || entry.shard_count != shard_count) {
    // Of an older file (or, with the same number, another one): it will not
    // be asked for again. Of a newer one: another replica is ahead.
    if (entry.reply.view.generation <= file.generation || entry.shard_count != shard_count) Erase(index, it);
    ++figures_.misses;
    return nullptr;
  }
  order_.splice(order_.begin(), order_, it->second);
  ++figures_.hits;
  return &it->second->reply;
}

bool ArchiveReplyCache::Insert(int shard, std::string_view key, const ArchiveReply& reply, int shard_count) {
  if (!enabled() || shard < 0 || !FileOf(reply.view)) return false;
  Entry entry{shard, shard_count, std::string(key), reply};
  entry.reply.kept = true;
  entry.reply.total_hours.reset();  // attached by AttachTotalHours, charged there
  const size_t bytes = entry.Bytes();
  if (bytes > max_bytes_ / 8) return false;  // one huge value would push out everything else
  Index& index = IndexOf(shard);
  if (auto it = index.find(key); it != index.end()) Erase(index, it);
  while (!order_.empty() && figures_.bytes + bytes > max_bytes_) {
    const Entry& last = order_.back();
    Index& owner = shards_[static_cast<size_t>(last.shard)];
    Erase(owner, owner.find(std::string_view(last.key)));
    ++figures_.evictions;
  }
  order_.push_front(std::move(entry));
  index.emplace(std::string_view(order_.front().key), order_.begin());
  figures_.bytes += bytes;
  figures_.entries = order_.size();
  return true;
}

}  // namespace clickatron::api
