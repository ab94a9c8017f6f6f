#include "line_search.h"

#include <cstring>
#include <string>

namespace clickatron::archive {
namespace {

// <0 if `line` sorts before every line starting with `prefix`, 0 if it starts
// with `prefix`, >0 if it sorts after them. Bytes compare unsigned (memcmp),
// as LC_ALL=C sort does.
int ComparePrefix(std::string_view line, std::string_view prefix) {
  size_t n = line.size() < prefix.size() ? line.size() : prefix.size();
  int c = n == 0 ? 0 : std::memcmp(line.data(), prefix.data(), n);
  if (c != 0) return c;
  return line.size() < prefix.size() ? -1 : 0;
}

// The end of the line starting at `start` (the offset of its newline, or
// `limit` when it has none before `limit`).
size_t LineEnd(std::string_view data, size_t start, size_t limit) {
  const void* nl = std::memchr(data.data() + start, '\n', limit - start);
  return nl ? static_cast<size_t>(static_cast<const char*>(nl) - data.data()) : limit;
}

// The first line start at or after `lo` whose line is not `before`.
// REQUIRES: lo is a line start; `before` is true for a prefix of the lines and
// false for the rest (monotone).
// Invariant: lines starting before lo are `before`; lines starting at or after
// hi are not; lo and hi are line starts or data.size().
template <typename Before>
size_t PartitionPoint(std::string_view data, size_t lo, Before before) {
  size_t hi = data.size();
  while (lo < hi) {
    size_t mid = lo + (hi - lo) / 2;
    size_t start = lo;
    if (mid > lo) {
      const void* nl = memrchr(data.data() + lo, '\n', mid - lo);
      if (nl) start = static_cast<size_t>(static_cast<const char*>(nl) - data.data()) + 1;
    }
    // hi is a line start, so the line at `start` ends before it (or at the
    // end of data when the last line has no newline).
    size_t end = LineEnd(data, start, hi);
    if (before(data.substr(start, end - start))) {
      lo = end < hi ? end + 1 : hi;  // end >= mid, so lo moves past mid
    } else {
      hi = start;  // start <= mid < hi
    }
  }
  return lo;
}

}  // namespace

LineRange FindPrefixRange(std::string_view data, std::string_view prefix) {
  LineRange r;
  r.begin = PartitionPoint(data, 0, [&](std::string_view line) { return ComparePrefix(line, prefix) < 0; });
  r.end = PartitionPoint(data, r.begin, [&](std::string_view line) { return ComparePrefix(line, prefix) <= 0; });
  return r;
}

std::optional<std::string_view> FindKeyLine(std::string_view data, std::string_view key, char separator) {
  // A key ends at the first separator, so no line has a key containing one
  // (though "KEY,VAL" + "," might well be the start of a lookup line).
  if (key.find(separator) != std::string_view::npos) return std::nullopt;
  std::string prefix;
  prefix.reserve(key.size() + 1);
  prefix.append(key);
  prefix.push_back(separator);
  size_t start = PartitionPoint(data, 0, [&](std::string_view line) { return ComparePrefix(line, prefix) < 0; });
  if (start == data.size()) return std::nullopt;
  std::string_view line = data.substr(start, LineEnd(data, start, data.size()) - start);
  if (ComparePrefix(line, prefix) != 0) return std::nullopt;
  return line;
}

size_t EndAfterLines(std::string_view data, LineRange range, uint64_t max_lines) {
  size_t pos = range.begin;
  for (uint64_t n = 0; n < max_lines && pos < range.end; ++n) {
    size_t end = LineEnd(data, pos, range.end);
    pos = end < range.end ? end + 1 : range.end;
  }
  return pos;
}

}  // namespace clickatron::archive
