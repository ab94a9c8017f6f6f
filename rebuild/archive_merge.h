// Step: merge new sorted records into one shard of the previous generation.
//
// The previous generation's file is most of the bytes and most of its keys
// are untouched by a day: it is mapped, and between two new keys the lines it
// already holds are found by galloping + binary search on line starts (the
// file is sorted: "the index is the data") and copied as one span, without
// looking at each line. Only a line whose key also arrives anew is parsed
// and combined (line_combine.h). So the nightly cost is one sequential copy
// of the archive plus work proportional to the day, never a re-sort.
//
// Every byte of the previous file is checksummed on the way, and the result
// is compared with its manifest before the new file counts as built.
#pragma once

#include <cstdint>
#include <functional>
#include <utility>
#include <vector>
#include <string_view>

#include "clickatron/status.h"
#include "sortmerge/line_io.h"
#include "sortmerge/progress.h"
#include "split.h"

namespace clickatron::rebuild {

struct ArchiveMergeStats {
  uint64_t previous_lines = 0;  // lines of the previous file
  uint64_t added = 0;           // new keys
  uint64_t combined = 0;        // keys in both
  uint32_t previous_crc32 = 0;  // zlib crc32 of the whole previous file
};

struct ArchiveMergeOptions {
  Progress* progress = nullptr;
  // `previous` is a read-only mapping of a file (MappedFile): pages already
  // copied are dropped from the mapping as it goes (MADV_DONTNEED; the data
  // stays in the page cache), so the process's resident set stays within the
  // memory bound however large the archive. Never set it for heap memory.
  bool previous_is_file_mapping = false;
  // Byte ranges of `previous` (from a line start to a line start; sorted,
  // disjoint) that are not part of it: the caller reads their lines as
  // additions of its own (NamespaceRanges), so they come back through
  // `additions`, changed or not at all. Their bytes are still checksummed.
  std::vector<std::pair<size_t, size_t>> skipped;
};

// The byte ranges of a whole archive file that hold the records of the
// namespaces `wanted` says yes to: every "ns|…", "sns.ns|…", "~ns|…" and
// "~sns.ns|…" line of them (never lookups). The lines of one key prefix
// before '|' are one run of the file, found by binary search, so this reads
// a few lines per prefix, not the file. Adjacent ranges are joined.
std::vector<std::pair<size_t, size_t>> NamespaceRanges(std::string_view archive,
                                                       const std::function<bool(std::string_view ns)>& wanted);

// REQUIRES: `previous` is a whole archive file (sorted, unique keys, every
// line ending in '\n'); `additions` yields sorted unique keys (a MergingSource).
Status MergeIntoArchive(std::string_view previous, LineSource* additions, ShardFileWriter* out,
                        const ArchiveMergeOptions& options, ArchiveMergeStats* stats);

}  // namespace clickatron::rebuild
