// Archive answers kept per key and file; see archive_reply_cache.h.
#include "query/cache/archive_reply_cache.h"

#include <cstring>
#include <limits>
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
  AppendFixed(&out, file.last_day.value_or(std::numeric_limits<int64_t>::min()));
  out.append(key);
  return out;
}

std::string_view ArchiveReplyCache::ScopeOf(int shard, const ServedFile& file) {
  // A per-thread buffer, as KeyOf's: asked on every cached read once any
  // file was retired.
  thread_local std::string out;
  out.clear();
  AppendFixed(&out, static_cast<int32_t>(shard));
  AppendFixed(&out, file.generation);
  AppendFixed(&out, file.crc32);
  return out;
}

void ArchiveReplyCache::RetireFile(int shard, const ServedFile& file) {
  cache_.Retire(std::string(ScopeOf(shard, file)));
}

bool ArchiveReplyCache::Retired(int shard, const ServedFile& file) const {
  return cache_.AnyRetired() && cache_.Retired(ScopeOf(shard, file));
}

size_t ArchiveReplyCache::Charge(const ArchiveReply& reply) {
  return sizeof(ArchiveReply) + reply.body.size() +
         (reply.total_hours ? sizeof(ArchiveTotalHours) + reply.total_hours->hours.capacity() *
                                                              sizeof(reply.total_hours->hours[0])
                            : 0) +
         (reply.columns ? reply.columns->Bytes() : 0);
}

std::optional<ServedFile> ArchiveReplyCache::FileOf(const ArchiveView& view) {
  if (!view.file_crc32) return std::nullopt;
  return ServedFile{view.generation, *view.file_crc32, view.last_day};
}

std::shared_ptr<const ArchiveReply> ArchiveReplyCache::Find(int shard, std::string_view key, const ServedFile& file,
                                                            int shard_count) {
  if (!enabled() || shard < 0) return nullptr;
  return cache_.Find<ArchiveReply>(CacheKind::kArchiveReply, KeyOf(shard, key, file, shard_count));
}

template <typename Decoded>
void ArchiveReplyCache::Attach(int shard, std::string_view key, const ArchiveView& view, bool found,
                               int shard_count, std::shared_ptr<const Decoded> ArchiveReply::*decoded,
                               std::shared_ptr<const Decoded> value) {
  const std::optional<ServedFile> file = FileOf(view);
  if (!enabled() || shard < 0 || !value || !file) return;
  // Kept values are immutable (another loop may be reading this one): the
  // decoded form replaces the kept text, which no reader of a decoded reply
  // reads. It is the file's answer for the key whether or not the text is
  // still kept.
  auto replacement = std::make_shared<ArchiveReply>();
  replacement->view = view;
  replacement->found = found;
  replacement->kept = true;
  (*replacement).*decoded = std::move(value);
  const size_t charge = Charge(*replacement);
  const std::string_view name = KeyOf(shard, key, *file, shard_count);
  // A decoded form too large to keep leaves the kept text in place (the
  // cache refuses it and keeps what it had: the next query decodes it again
  // rather than fetching it again too).
  cache_.Insert<ArchiveReply>(CacheKind::kArchiveReply, name, std::move(replacement), charge);
}

void ArchiveReplyCache::AttachTotalHours(int shard, std::string_view key, const ArchiveView& view, bool found,
                                         int shard_count, std::shared_ptr<const ArchiveTotalHours> hours) {
  Attach(shard, key, view, found, shard_count, &ArchiveReply::total_hours, std::move(hours));
}

void ArchiveReplyCache::AttachColumns(int shard, std::string_view key, const ArchiveView& view, int shard_count,
                                      std::shared_ptr<const DecodedColumns> columns) {
  Attach(shard, key, view, /*found=*/true, shard_count, &ArchiveReply::columns, std::move(columns));
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
  kept->total_hours.reset();  // attached by AttachTotalHours or AttachColumns
  kept->columns.reset();
  kept->decoded_lines.clear();
  const size_t charge = Charge(*kept);
  return cache_.Insert<ArchiveReply>(CacheKind::kArchiveReply, KeyOf(shard, key, *file, shard_count),
                                     std::move(kept), charge);
}

}  // namespace clickatron::api
