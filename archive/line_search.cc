#include "line_search.h"

#include <algorithm>
#include <cstring>
#include <string>

namespace clickatron::archive {
namespace {

// <0 if the line starting at `start` sorts before every line starting with
// `prefix`, 0 if it starts with `prefix`, >0 if it sorts after them. Bytes
// compare unsigned (memcmp), as LC_ALL=C sort does. Reads at most
// prefix.size() bytes of the line: its end is never looked for.
int ComparePrefixAt(std::string_view data, size_t start, std::string_view prefix) {
  const size_t avail = std::min(prefix.size(), data.size() - start);
  const char* line = data.data() + start;
  // A newline within those bytes ends a line shorter than the prefix.
  const void* nl = avail == 0 ? nullptr : std::memchr(line, '\n', avail);
  const size_t n = nl ? static_cast<size_t>(static_cast<const char*>(nl) - line) : avail;
  const int c = n == 0 ? 0 : std::memcmp(line, prefix.data(), n);
  if (c != 0) return c;
  return n < prefix.size() ? -1 : 0;
}

// The first line start whose line is not `before` (data.size() when every
// line is), where `before` takes the line's comparison with `prefix`
// (ComparePrefixAt's sign). REQUIRES: `before` is true for a prefix of the
// lines and false for the rest (monotone).
//
// First a binary search over the blocks' first lines (line_index.h) finds
// the block K whose first line is the first that is not `before`; the
// answer is then one of the lines that start in block K - 1 after its first
// one (they start before byte K * block), or K's first. The blocks' first
// lines are compared from the index's kept bytes, and read only when those
// tie.
template <typename Before>
size_t PartitionPoint(const LineIndex& lines, std::string_view prefix, Before before) {
  const std::string_view data = lines.data();
  auto before_at = [&](size_t start) { return start < data.size() && before(ComparePrefixAt(data, start, prefix)); };
  auto block_before = [&](size_t k) {
    const int c = lines.CompareFirstLine(k, prefix);
    return c == LineIndex::kUndecided ? before_at(lines.FirstLineStartOfBlock(k)) : before(c);
  };
  if (!block_before(0)) return 0;
  size_t lo = 1, hi = lines.blocks();  // block lo - 1's first line is before; block hi's is not
  while (lo < hi) {
    const size_t mid = lo + (hi - lo) / 2;
    if (block_before(mid)) {
      lo = mid + 1;
    } else {
      hi = mid;
    }
  }
  const size_t upper = lines.FirstLineStartOfBlock(lo);
  // Newlines before byte lo * block - 1 start lines inside block lo - 1.
  const size_t scan_end = std::min(lo * lines.block_bytes(), data.size()) - 1;
  size_t pos = lines.FirstLineStartOfBlock(lo - 1);
  while (pos < scan_end) {
    const void* nl = std::memchr(data.data() + pos, '\n', scan_end - pos);
    if (nl == nullptr) break;
    pos = static_cast<size_t>(static_cast<const char*>(nl) - data.data()) + 1;
    if (!before_at(pos)) return pos;
  }
  return upper;
}

// The end of the line starting at `start` (the offset of its newline, or
// `limit` when it has none before `limit`).
size_t LineEnd(std::string_view data, size_t start, size_t limit) {
  const void* nl = std::memchr(data.data() + start, '\n', limit - start);
  return nl ? static_cast<size_t>(static_cast<const char*>(nl) - data.data()) : limit;
}

}  // namespace

LineRange FindPrefixRange(const LineIndex& lines, std::string_view prefix) {
  LineRange r;
  r.begin = PartitionPoint(lines, prefix, [](int c) { return c < 0; });
  r.end = PartitionPoint(lines, prefix, [](int c) { return c <= 0; });
  return r;
}

std::optional<std::string_view> FindKeyLine(const LineIndex& lines, std::string_view key, char separator) {
  // A key ends at the first separator, so no line has a key containing one
  // (though "KEY,VAL" + "," might well be the start of a lookup line).
  if (key.find(separator) != std::string_view::npos) return std::nullopt;
  const std::string_view data = lines.data();
  std::string prefix;
  prefix.reserve(key.size() + 1);
  prefix.append(key);
  prefix.push_back(separator);
  const size_t start = PartitionPoint(lines, prefix, [](int c) { return c < 0; });
  if (start == data.size() || ComparePrefixAt(data, start, prefix) != 0) return std::nullopt;
  return data.substr(start, LineEnd(data, start, data.size()) - start);
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
