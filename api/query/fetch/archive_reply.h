// What an archive replica answered for one key, and which file it came from.
#pragma once

#include <cstddef>
#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <utility>
#include <vector>

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

struct ArchiveReply {
  ArchiveView view;
  bool found = false;  // 200; false for 404 (no such key)
  std::string body;    // as /get answers it: "value\n"
  size_t replica = 0;  // which replica of the shard answered
  // Found in the API node's cache (archive_reply_cache.h), not sent now.
  bool kept = false;
};

}  // namespace clickatron::api
