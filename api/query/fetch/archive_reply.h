// What an archive replica answered for one key, and which file it came from.
#pragma once

#include <cstddef>
#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "query/merge/decoded_columns.h"
#include "query/merge/read_records.h"

namespace clickatron::api {

// X-Archive-Generation, X-Archive-Last-Day and X-Archive-Shard-Count of an answer.
struct ArchiveView {
  uint64_t generation = 0;
  ArchiveLastDay last_day;
  int shard_count = 0;  // X-Archive-Shard-Count; 0: not said (no file, or a file without a manifest)
  // X-Archive-Crc32: the served file's crc32 (nullopt: not said). Two files
  // may carry one generation number (a rollback, then a new build).
  std::optional<uint32_t> file_crc32 = std::nullopt;
  friend bool operator==(const ArchiveView&, const ArchiveView&) = default;
};

// One key of an mget answer from the cache whose columns were decoded
// before: its line is not in the answer's body.
struct DecodedLine {
  std::string key;
  std::shared_ptr<const DecodedColumns> columns;
};

struct ArchiveReply {
  ArchiveView view;
  bool found = false;  // 200; false for 404 (no such key)
  std::string body;    // as /get answers it: "value\n"
  size_t replica = 0;  // which replica of the shard answered
  // Found in the API node's cache (archive_reply_cache.h): an answer of the
  // served generation read a second time, worth decoding whole and keeping
  // decoded. An answer just fetched is kept too, but not marked.
  bool kept = false;
  // For a kept total record, once a query decoded it: its columns
  // (CachedArchiveReader::KeepDecodedTotal). A reply from the cache that has them
  // comes without its body: read it with QueryGather::AddArchiveTotal.
  std::shared_ptr<const ArchiveTotalHours> total_hours;
  // For a kept subtotal or unique record, once a query decoded it.
  std::shared_ptr<const DecodedColumns> columns;
  // An mget answer made of kept answers (CachedArchiveReader::MGet): the keys
  // whose columns are decoded, beside the lines of the others in `body`.
  std::vector<DecodedLine> decoded_lines;
};

}  // namespace clickatron::api
