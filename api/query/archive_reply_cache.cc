// Archive answers kept per key and file; see archive_reply_cache.h.
#include "query/archive_reply_cache.h"

namespace clickatron::api {

ArchiveReplyCache::Index& ArchiveReplyCache::IndexOf(int shard) {
  // Shards are small numbers (a count grows only by re-partitioning).
  if (static_cast<size_t>(shard) >= shards_.size()) shards_.resize(static_cast<size_t>(shard) + 1);
  return shards_[static_cast<size_t>(shard)];
}

void ArchiveReplyCache::Erase(Index& index, Index::iterator it) {
  auto entry = it->second;
  bytes_ -= entry->Bytes();
  index.erase(it);  // before the entry: the map's key is a view into it
  order_.erase(entry);
}

void ArchiveReplyCache::MakeRoom(size_t budget, size_t keep) {
  while (order_.size() > keep && bytes_ > budget) {
    const Entry& last = order_.back();
    Index& owner = shards_[static_cast<size_t>(last.shard)];
    Erase(owner, owner.find(std::string_view(last.key)));
    ++evictions_;
  }
}

std::optional<ServedFile> ArchiveReplyCache::FileOf(const ArchiveView& view) {
  if (!view.file_crc32) return std::nullopt;
  return ServedFile{view.generation, *view.file_crc32};
}

bool ArchiveReplyCache::Entry::Of(const ServedFile& file, int count) const {
  return FileOf(reply.view) == file && shard_count == count;
}

template <typename Decoded>
void ArchiveReplyCache::Attach(int shard, std::string_view key, const ServedFile& file, int shard_count,
                               std::shared_ptr<const Decoded> ArchiveReply::*decoded,
                               std::shared_ptr<const Decoded> value) {
  if (!enabled() || shard < 0 || static_cast<size_t>(shard) >= shards_.size() || !value) return;
  Index& index = shards_[static_cast<size_t>(shard)];
  auto it = index.find(key);
  if (it == index.end() || !it->second->Of(file, shard_count) || it->second->reply.*decoded) return;
  Entry& entry = *it->second;
  const size_t before = entry.Bytes();
  entry.reply.*decoded = std::move(value);
  if (entry.Bytes() > max_bytes_ / 8) {  // as Insert's rule: not worth what it would push out
    (entry.reply.*decoded).reset();
    return;
  }
  bytes_ += entry.Bytes() - before;
  // The entry was just used: first in line, so the room is made by others.
  order_.splice(order_.begin(), order_, it->second);
  MakeRoom(max_bytes_, 1);
}

void ArchiveReplyCache::AttachTotalHours(int shard, std::string_view key, const ServedFile& file, int shard_count,
                                         std::shared_ptr<const ArchiveTotalHours> hours) {
  Attach(shard, key, file, shard_count, &ArchiveReply::total_hours, std::move(hours));
}

void ArchiveReplyCache::AttachColumns(int shard, std::string_view key, const ServedFile& file, int shard_count,
                                      std::shared_ptr<const DecodedColumns> columns) {
  Attach(shard, key, file, shard_count, &ArchiveReply::columns, std::move(columns));
}

ArchiveReply* ArchiveReplyCache::Find(int shard, std::string_view key, const ServedFile& file, int shard_count) {
  if (!enabled() || shard < 0) return nullptr;
  Index& index = IndexOf(shard);
  auto it = index.find(key);
  if (it == index.end()) return nullptr;
  if (!it->second->Of(file, shard_count)) {
    // Of an older file (or, with the same number, another one), or routed by
    // another count: it will not be asked for again. Of a newer one: another
    // replica is ahead of this one, and it stays for that one.
    if (it->second->reply.view.generation <= file.generation || it->second->shard_count != shard_count) {
      Erase(index, it);
    }
    return nullptr;
  }
  order_.splice(order_.begin(), order_, it->second);
  return &it->second->reply;
}

void ArchiveReplyCache::Forget(int shard, std::string_view key, const ServedFile& file) {
  if (!enabled() || shard < 0) return;
  Index& index = IndexOf(shard);
  auto it = index.find(key);
  if (it != index.end() && FileOf(it->second->reply.view) == file) Erase(index, it);
}

bool ArchiveReplyCache::Insert(int shard, std::string_view key, ArchiveReply reply, int shard_count) {
  if (!enabled() || shard < 0 || !FileOf(reply.view)) return false;
  Entry entry{shard, shard_count, std::string(key), std::move(reply)};
  entry.reply.kept = true;
  entry.reply.total_hours.reset();  // attached by AttachTotalHours or AttachColumns, charged there
  entry.reply.columns.reset();
  const size_t bytes = entry.Bytes();
  if (bytes > max_bytes_ / 8) return false;  // one huge value would push out everything else
  Index& index = IndexOf(shard);
  if (auto it = index.find(key); it != index.end()) Erase(index, it);
  MakeRoom(max_bytes_ - bytes, 0);
  order_.push_front(std::move(entry));
  index.emplace(std::string_view(order_.front().key), order_.begin());
  bytes_ += bytes;
  return true;
}

}  // namespace clickatron::api
