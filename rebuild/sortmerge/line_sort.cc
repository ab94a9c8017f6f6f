#include "sortmerge/line_sort.h"

#include <algorithm>
#include <cstdint>
#include <cstring>

static_assert(__BYTE_ORDER__ == __ORDER_LITTLE_ENDIAN__, "LineWordAt byte-swaps to big-endian");

namespace clickatron::rebuild {
namespace {

constexpr size_t kInsertionSortMax = 16;
// Below this many entries a comparison sort on the words beats a radix pass
// (which touches 256 counters and permutes in place).
constexpr size_t kRadixSortMin = 256;

uint8_t ByteAt(const LineEntry& e, int shift) { return static_cast<uint8_t>(e.word >> shift); }

// Sorts by `word` alone: an in-place most-significant-byte radix sort from
// the byte at `shift` down. The words of a chunk are mostly digits at
// different places, where a radix pass is a fraction of a comparison sort's
// cost; small buckets finish with std::sort.
void SortByWord(LineEntry* begin, LineEntry* end, int shift) {
  while (true) {
    const size_t n = static_cast<size_t>(end - begin);
    if (n < kRadixSortMin) {
      std::sort(begin, end, [](const LineEntry& a, const LineEntry& b) { return a.word < b.word; });
      return;
    }
    size_t counts[256] = {};
    for (const LineEntry* e = begin; e < end; ++e) ++counts[ByteAt(*e, shift)];
    if (counts[ByteAt(*begin, shift)] == n) {
      // Every word has this byte: go on with the next one.
      if (shift == 0) return;
      shift -= 8;
      continue;
    }
    size_t heads[256], tails[256];
    size_t at = 0;
    for (int b = 0; b < 256; ++b) {
      heads[b] = at;
      at += counts[b];
      tails[b] = at;
    }
    // Each entry is moved straight into its bucket (cycle leader permutation).
    for (int b = 0; b < 256; ++b) {
      while (heads[b] < tails[b]) {
        LineEntry value = begin[heads[b]];
        uint8_t digit = ByteAt(value, shift);
        while (digit != b) {
          std::swap(value, begin[heads[digit]++]);
          digit = ByteAt(value, shift);
        }
        begin[heads[b]++] = value;
      }
    }
    if (shift == 0) return;
    size_t start = 0;
    for (int b = 0; b < 256; ++b) {
      if (counts[b] > 1) SortByWord(begin + start, begin + start + counts[b], shift - 8);
      start += counts[b];
    }
    return;
  }
}

// Insertion sort on the bytes from `depth` on (everything before is equal).
// Each entry's next 8 bytes are loaded once as its word: most comparisons
// are one integer compare, and only equal words go on to memcmp (which also
// settles lines that end inside the word, zero-padded there).
void InsertionSort(LineEntry* begin, LineEntry* end, const char* base, size_t depth) {
  for (LineEntry* e = begin; e < end; ++e) e->word = LineWordAt(base + e->offset, e->length, depth);
  const auto less = [&](const LineEntry& a, const LineEntry& b) {
    if (a.word != b.word) return a.word < b.word;
    const std::string_view x(base + a.offset + depth, a.length - depth);
    const std::string_view y(base + b.offset + depth, b.length - depth);
    return x < y;
  };
  for (LineEntry* i = begin + 1; i < end; ++i) {
    const LineEntry value = *i;
    LineEntry* j = i;
    while (j > begin && less(value, *(j - 1))) {
      *j = *(j - 1);
      --j;
    }
    *j = value;
  }
}

// REQUIRES: every line in [begin, end) has the same first `depth` bytes.
void SortFrom(LineEntry* begin, LineEntry* end, const char* base, size_t depth) {
  while (end - begin > 1) {
    if (static_cast<size_t>(end - begin) <= kInsertionSortMax) {
      // Lines shorter than depth cannot be here: they would have been "finished".
      InsertionSort(begin, end, base, depth);
      return;
    }
    uint64_t low = UINT64_MAX, high = 0;
    for (LineEntry* e = begin; e < end; ++e) {
      e->word = LineWordAt(base + e->offset, e->length, depth);
      low = std::min(low, e->word);
      high = std::max(high, e->word);
    }
    if (low != high) {
      // Bytes above the highest one that differs are equal in every word.
      const int shift = (63 - __builtin_clzll(low ^ high)) & ~7;
      SortByWord(begin, end, shift);
    }
    // Each group of equal words: lines that end within these 8 bytes are
    // finished (equal to each other up to their length: shorter first);
    // the others go on to the next 8 bytes.
    LineEntry* group = begin;
    LineEntry* tail_begin = nullptr;  // the last group is handled by the loop
    LineEntry* tail_end = nullptr;
    while (group < end) {
      LineEntry* group_end = group + 1;
      while (group_end < end && group_end->word == group->word) ++group_end;
      if (group_end - group > 1) {
        LineEntry* unfinished = std::partition(
            group, group_end, [&](const LineEntry& e) { return e.length <= depth + 8; });
        std::sort(group, unfinished, [](const LineEntry& a, const LineEntry& b) { return a.length < b.length; });
        if (group_end - unfinished > 1) {
          if (tail_begin != nullptr) SortFrom(tail_begin, tail_end, base, depth + 8);
          tail_begin = unfinished;
          tail_end = group_end;
        }
      }
      group = group_end;
    }
    if (tail_begin == nullptr) return;
    begin = tail_begin;  // iterate instead of recursing on the last group
    end = tail_end;
    depth += 8;
  }
}

}  // namespace

uint64_t LineWordAt(const char* line, size_t length, size_t depth) {
  if (depth + 8 <= length) {
    uint64_t word;
    std::memcpy(&word, line + depth, 8);
    return __builtin_bswap64(word);
  }
  unsigned char bytes[8] = {0, 0, 0, 0, 0, 0, 0, 0};
  if (depth < length) std::memcpy(bytes, line + depth, length - depth);
  uint64_t word;
  std::memcpy(&word, bytes, 8);
  return __builtin_bswap64(word);
}

void SortLineEntries(LineEntry* begin, LineEntry* end, const char* base) { SortFrom(begin, end, base, 0); }

}  // namespace clickatron::rebuild
