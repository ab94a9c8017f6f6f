// In-memory sort of lines held in one buffer, in whole-line bytewise order
// (LC_ALL=C sort; for files with unique keys that is CompareArchiveKeys order).
//
// Archive keys share long prefixes ("c.u|k000…", a namespace and a common key
// start), so a comparison sort that calls memcmp on every comparison spends
// its time re-reading equal bytes. This is a most-significant-digit sort on
// 8-byte words: entries carry the next 8 bytes of their line as an integer,
// are sorted on that integer alone, and each group of equal words is sorted
// again on the following 8 bytes. Lines are read once per 8 bytes of the
// prefix they share, and most comparisons are one integer compare.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string_view>

namespace clickatron::rebuild {

// Where a line sits in its buffer; `word` is scratch for the sort.
struct LineEntry {
  uint64_t word;
  uint32_t offset;
  uint32_t length;
};
static_assert(sizeof(LineEntry) == 16);

// The 8 bytes of `line` from `depth` on as a big-endian integer, zero-padded.
uint64_t LineWordAt(const char* line, size_t length, size_t depth);

// Sorts [begin, end) so the lines (base + offset, length) are in bytewise
// order; equal lines keep no particular order.
void SortLineEntries(LineEntry* begin, LineEntry* end, const char* base);

// Bytewise "a < b" of two entries' lines (for merging sorted parts).
inline bool LineEntryLess(const char* base, const LineEntry& a, const LineEntry& b) {
  return std::string_view(base + a.offset, a.length) < std::string_view(base + b.offset, b.length);
}

}  // namespace clickatron::rebuild
