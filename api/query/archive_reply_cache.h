// Archive answers kept per (shard, key) and file generation, so that a hot
// key's archived hours are not asked for, sent and copied again with every
// query. A deployed archive file never changes (a new generation is a new
// file), so the answer a generation gave for a key is its answer for as long
// as that generation is served. Knowing that it still is served is the
// reader's job (archive_reader.h: an entry is used only while an answer sent
// within the last archive_cache_confirm_ms confirmed the generation on the
// replica the query reads from); this class only keeps and bounds.
//
// Absent keys are kept too (found = false): a breakdown asks for day records
// a file may not have, and "not there" is as stable as a value.
//
// Least recently used out first, within a byte budget (keys, values and a
// fixed overhead per entry). A budget of 0 turns the cache off.
//
// Thread-safety: none; one instance belongs to the loop thread.
#pragma once

#include <cstddef>
#include <cstdint>
#include <list>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <unordered_map>
#include <vector>

#include "clickatron/text_hash.h"
#include "query/archive_reply.h"

namespace clickatron::api {

// Which file a replica serves: a generation number alone does not say (a
// rolled-back generation's number is built again, as another file).
struct ServedFile {
  uint64_t generation = 0;
  uint32_t crc32 = 0;
  friend bool operator==(const ServedFile&, const ServedFile&) = default;
};

class ArchiveReplyCache {
 public:
  explicit ArchiveReplyCache(size_t max_bytes) : max_bytes_(max_bytes) {}

  bool enabled() const { return max_bytes_ > 0; }

  // The reply kept for `key` on `shard`, if it came from `file`, routed by
  // `shard_count`; nullptr otherwise. An entry of an older generation, or of
  // another file with the same number, is dropped; one of a newer generation
  // stays (this replica is behind another). Valid until the next Insert.
  ArchiveReply* Find(int shard, std::string_view key, const ServedFile& file, int shard_count);
  // Keeps a total record's decoded hours with its kept answer (if it is
  // still kept, of that generation and count), charged to the budget.
  void AttachTotalHours(int shard, std::string_view key, const ServedFile& file, int shard_count,
                        std::shared_ptr<const ArchiveTotalHours> hours);
  // The same for a subtotal or unique record's decoded columns.
  void AttachColumns(int shard, std::string_view key, const ServedFile& file, int shard_count,
                     std::shared_ptr<const DecodedColumns> columns);
  // Keeps (or replaces) the reply for `key` on `shard`; its view says the
  // file (a reply whose view has no X-Archive-Crc32 is not kept).
  // `shard_count` is the count the request was routed by. False when not
  // kept (no file identity, or too large a value).
  bool Insert(int shard, std::string_view key, ArchiveReply reply, int shard_count);
  // Drops the entry of `key` on `shard` if it came from `file`.
  void Forget(int shard, std::string_view key, const ServedFile& file);
  // The file a kept reply came from (nullopt: it does not say).
  static std::optional<ServedFile> FileOf(const ArchiveView& view);

  // Hits and misses are the reader's to count (ReadStats): it knows which
  // lookups could have been answered.
  struct Figures {
    uint64_t evictions = 0;  // dropped for room, since the cache was made
    size_t bytes = 0;
    size_t entries = 0;
  };
  Figures figures() const { return Figures{evictions_, bytes_, order_.size()}; }

  // What an entry is charged beyond its key and value (list and map nodes,
  // the view): an estimate that keeps many tiny entries within the budget.
  static constexpr size_t kEntryOverhead = 128;

 private:
  struct Entry {
    int shard = 0;
    int shard_count = 0;
    std::string key;
    ArchiveReply reply;
    // Kept from `file`, asked by `count` shards.
    bool Of(const ServedFile& file, int count) const;
    size_t Bytes() const {
      return key.size() + reply.body.size() + kEntryOverhead +
             (reply.total_hours ? reply.total_hours->hours.size() * sizeof(reply.total_hours->hours[0]) : 0) +
             (reply.columns ? reply.columns->Bytes() : 0);
    }
  };
  using Index = std::unordered_map<std::string_view, std::list<Entry>::iterator, TextHash, std::equal_to<>>;

  Index& IndexOf(int shard);
  // Sets reply.*decoded of the kept entry (AttachTotalHours, AttachColumns).
  template <typename Decoded>
  void Attach(int shard, std::string_view key, const ServedFile& file, int shard_count,
              std::shared_ptr<const Decoded> ArchiveReply::*decoded, std::shared_ptr<const Decoded> value);
  // Drops the least recently used entries, but the first `keep`, until the
  // bytes kept are within `budget`.
  void MakeRoom(size_t budget, size_t keep);
  void Erase(Index& index, Index::iterator it);

  size_t max_bytes_;
  std::list<Entry> order_;     // most recently used first
  std::vector<Index> shards_;  // by shard: key (a view into its entry) -> entry
  uint64_t evictions_ = 0;
  size_t bytes_ = 0;  // charged by the entries kept (Entry::Bytes)
};

}  // namespace clickatron::api
