// Binary search over the lines of a sorted file held in memory (sortdb's idea:
// the file is the index).
//
// The data is a sequence of lines sorted bytewise as whole lines (LC_ALL=C
// sort). The lines starting with a given prefix are then contiguous, and
// "does line L start with P, or sort before/after it" is monotone along the
// file, so both an exact key (prefix KEY + separator) and a forward match
// (any prefix) are one prefix search.
//
// Every function stays inside [0, data.size()): the last line may lack its
// trailing newline (sortdb's strchr ran past the end of the mapping there).
// Offsets are byte offsets into `data`; a line range [begin, end) always
// starts at a line start and ends just after a newline or at the end of data.
//
// Cost: O(log(blocks)) probes of a LineIndex (line_index.h), each a compare
// of the prefix's bytes (with the first bytes the index keeps of a block's
// first line; the file's own only when those tie), then a scan of at most
// one block (4 KiB): a long
// line is never scanned to find where it starts or ends, except the line a
// key lookup returns.
// Thread-safety: pure functions over immutable data (the index is safe to
// share).
#pragma once

#include <cstddef>
#include <cstdint>
#include <optional>
#include <string_view>

#include "clickatron/sorted_lines.h"
#include "line_index.h"

namespace clickatron::archive {

struct LineRange {
  size_t begin = 0;
  size_t end = 0;
  bool empty() const { return begin == end; }
  size_t size() const { return end - begin; }
};

// The block of whole lines that start with `prefix` (every line when the
// prefix is empty). Empty when none; then begin == end is where such a line
// would go.
LineRange FindPrefixRange(const LineIndex& lines, std::string_view prefix);

// The line (without its newline) whose key is exactly `key`: the first line
// starting with key + separator. nullopt when there is none, and always for
// a key that contains the separator.
std::optional<std::string_view> FindKeyLine(const LineIndex& lines, std::string_view key, char separator);

// The end of the first `max_lines` lines of `range` (range.end if it holds
// fewer). REQUIRES: range.begin is a line start.
size_t EndAfterLines(std::string_view data, LineRange range, uint64_t max_lines);

// The full check behind archive.verify_sorted_on_load, CheckSorted, is in
// the core (clickatron/sorted_lines.h): `clickatron manifest` applies the same
// rules before it writes a manifest for an existing file.

}  // namespace clickatron::archive
