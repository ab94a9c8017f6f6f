// Archive answers kept per (shard, key) and file, so that a hot key's
// archived hours are not asked for, sent and copied again with every query.
// A deployed archive file never changes (a new generation is a new file), so
// the answer a file gave for a key is its answer for as long as it is
// served. Knowing which file is served is the reader's job
// (archive_reader.h); this class keeps answers in the node's read cache
// (read_cache.h, kind archive_reply), keyed by the file they came from: an
// answer of a file no longer served is never found again and ages out.
//
// Absent keys are kept too (found = false): a breakdown asks for day records
// a file may not have, and "not there" is as stable as a value.
//
// Thread-safety: thread-safe (the read cache is); shared use is fine.
#pragma once

#include <cstddef>
#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <string_view>

#include "query/fetch/archive_reply.h"
#include "query/cache/read_cache.h"

namespace clickatron::api {

// Which file a replica serves: a generation number alone does not say (a
// rolled-back generation's number is built again, as another file). Its
// manifest's last day too: it decides which days a query takes from
// realtime, and a manifest put right by hand (same file, same crc32) must
// not leave answers kept under the wrong one.
struct ServedFile {
  uint64_t generation = 0;
  uint32_t crc32 = 0;
  ArchiveLastDay last_day;
  friend bool operator==(const ServedFile&, const ServedFile&) = default;
};

class ArchiveReplyCache {
 public:
  explicit ArchiveReplyCache(ReadCache& cache) : cache_(cache) {}

  bool enabled() const { return cache_.enabled(); }

  // The reply kept for `key` on `shard` from `file`, routed by
  // `shard_count`; null when none.
  std::shared_ptr<const ArchiveReply> Find(int shard, std::string_view key, const ServedFile& file,
                                           int shard_count);
  // Keeps a total record's decoded hours (`found`: the key was there), from
  // the file `view` names, in place of its text: a decoded total is read
  // from its hours, never its text again. Nothing for a view that does not
  // name its file.
  void AttachTotalHours(int shard, std::string_view key, const ArchiveView& view, bool found, int shard_count,
                        std::shared_ptr<const ArchiveTotalHours> hours);
  // The same for a found subtotal or unique record's decoded columns.
  void AttachColumns(int shard, std::string_view key, const ArchiveView& view, int shard_count,
                     std::shared_ptr<const DecodedColumns> columns);
  // Keeps (or replaces) the reply for `key` on `shard`; its view says the
  // file (a reply whose view has no X-Archive-Crc32 is not kept).
  // `shard_count` is the count the request was routed by. False when not
  // kept (no file identity, the cache is off, or too large an answer).
  bool Insert(int shard, std::string_view key, ArchiveReply reply, int shard_count);
  // Drops the entry of `key` on `shard` from `file`.
  void Forget(int shard, std::string_view key, const ServedFile& file, int shard_count);
  // The file a kept reply came from (nullopt: it does not say).
  static std::optional<ServedFile> FileOf(const ArchiveView& view);
  // A replica found `file` of `shard` damaged (its bytes changed in place;
  // its name did not): its kept answers are never used again, on any read
  // loop (ReadCache::Retire).
  void RetireFile(int shard, const ServedFile& file);
  bool Retired(int shard, const ServedFile& file) const;

 private:
  // shard, count, generation and crc32 as fixed-size fields, then the key
  // (in a per-thread buffer: valid until the thread's next call).
  static std::string_view KeyOf(int shard, std::string_view key, const ServedFile& file, int shard_count);
  static std::string_view ScopeOf(int shard, const ServedFile& file);
  static size_t Charge(const ArchiveReply& reply);
  template <typename Decoded>
  void Attach(int shard, std::string_view key, const ArchiveView& view, bool found, int shard_count,
              std::shared_ptr<const Decoded> ArchiveReply::*decoded, std::shared_ptr<const Decoded> value);

  ReadCache& cache_;
};

}  // namespace clickatron::api
