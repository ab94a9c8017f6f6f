#include "archive_merge.h"

#include <sys/mman.h>
#include <unistd.h>

#include <algorithm>
#include <cstring>
#include <string>

#include <fmt/format.h>

#include "clickatron/record.h"
#include "clickatron/shard.h"
#include "sortmerge/crc32_fast.h"
#include "sortmerge/line_combine.h"

namespace clickatron::rebuild {
namespace {

// Where galloping starts: about a dozen typical lines.
constexpr size_t kFirstStride = 512;
constexpr uint64_t kProgressBytes = 16u << 20;
constexpr size_t kReleaseBytes = 16u << 20;
constexpr size_t kCrcBatch = 64u << 10;  // well below kReleaseBytes: checksummed before released

// Views over the previous file: line starts, ends and keys by byte offset.
class SortedText {
 public:
  explicit SortedText(std::string_view data) : data_(data) {}
  size_t size() const { return data_.size(); }
  // Offset of the '\n' ending the line that starts at `start`.
  size_t LineEnd(size_t start) const {
    const void* nl = std::memchr(data_.data() + start, '\n', data_.size() - start);
    return static_cast<const char*>(nl) - data_.data();  // the file ends in '\n'
  }
  // The first line start at or after `offset` (size() if none).
  size_t LineStartAtOrAfter(size_t offset) const {
    if (offset == 0) return 0;
    if (offset >= data_.size()) return data_.size();
    const void* nl = std::memchr(data_.data() + offset - 1, '\n', data_.size() - offset + 1);
    return static_cast<const char*>(nl) - data_.data() + 1;
  }
  std::string_view Line(size_t start) const { return data_.substr(start, LineEnd(start) - start); }
  // CompareArchiveKeys(key of the line at `start`, key), reading no more of
  // the line than the key's length + 1: the order is decided by then.
  int CompareKeyAt(size_t start, std::string_view key) const {
    const size_t window = std::min(key.size() + 1, data_.size() - start);
    const std::string_view head = data_.substr(start, window);
    const size_t comma = head.find(',');
    return CompareArchiveKeys(comma == std::string_view::npos ? head : head.substr(0, comma), key);
  }
  bool KeyBelow(size_t start, std::string_view key) const { return CompareKeyAt(start, key) < 0; }

  // The first line start >= lo whose key is >= key (size() if none).
  // REQUIRES: lo is a line start and every line before it has a smaller key.
  size_t LowerBound(size_t lo, std::string_view key) const {
    if (lo >= size() || !KeyBelow(lo, key)) return lo;  // usual: the next line is already >= key
    lo = LineEnd(lo) + 1;
    // Gallop: double the stride until a line >= key is passed.
    size_t hi = size();
    for (size_t stride = kFirstStride; lo < size(); stride *= 2) {
      const size_t probe = LineStartAtOrAfter(lo + stride);
      if (probe >= size()) break;
      if (!KeyBelow(probe, key)) {
        hi = probe;
        break;
      }
      lo = LineEnd(probe) + 1;
    }
    // Binary search on line starts in [lo, hi]: lines before lo are < key,
    // hi is a line >= key (or the end).
    while (lo < hi) {
      const size_t mid = LineStartAtOrAfter(lo + (hi - lo) / 2);
      if (mid >= hi) {
        // No line starts in the upper half: step over lo's line.
        if (!KeyBelow(lo, key)) return lo;
        lo = LineEnd(lo) + 1;
      } else if (KeyBelow(mid, key)) {
        lo = LineEnd(mid) + 1;
      } else {
        hi = mid;
      }
    }
    return lo;
  }

 private:
  std::string_view data_;
};

}  // namespace

std::vector<std::pair<size_t, size_t>> NamespaceRanges(std::string_view archive,
                                                       const std::function<bool(std::string_view ns)>& wanted) {
  std::vector<std::pair<size_t, size_t>> ranges;
  // Not a whole archive file: none (the merge refuses the file itself).
  if (archive.empty() || archive.back() != '\n') return ranges;
  const SortedText text(archive);
  size_t pos = 0;
  while (pos < text.size()) {
    const std::string_view key = LineKey(text.Line(pos));
    const size_t bar = key.find('|');
    if (bar == std::string_view::npos) {  // not a record key: a line of its own
      pos = text.LineEnd(pos) + 1;
      continue;
    }
    // Every key of this prefix sorts below the prefix with '}' for its '|'
    // ('|' < '}', and no key part holds either).
    const std::string upper = std::string(key.substr(0, bar)) + "}";
    const size_t end = text.LowerBound(pos, upper);
    const ArchiveKeyView view = SplitArchiveKey(key);
    if (view.type != RecordType::kLookup && wanted(view.ns)) {
      if (!ranges.empty() && ranges.back().second == pos) {
        ranges.back().second = end;
      } else {
        ranges.emplace_back(pos, end);
      }
    }
    pos = end;
  }
  return ranges;
}

Status MergeIntoArchive(std::string_view previous, LineSource* additions, ShardFileWriter* out,
                        const ArchiveMergeOptions& options, ArchiveMergeStats* stats) {
  Progress* progress = options.progress;
  if (!previous.empty() && previous.back() != '\n') {
    return Status::Corruption("the previous archive file does not end with a newline");
  }
  const SortedText text(previous);
  // Every byte of `previous` up to `pos` is consumed exactly once, in order,
  // so its crc is taken in big pieces behind `pos` (still in cache: the
  // spans were just copied) rather than once per span.
  uint32_t crc = 0;
  size_t crc_done = 0;
  const auto crc_catch_up = [&](size_t upto) {
    crc = FastCrc32Extend(crc, previous.substr(crc_done, upto - crc_done));
    crc_done = upto;
  };
  size_t pos = 0;
  size_t released = 0;  // mapping bytes handed back
  const size_t page = static_cast<size_t>(::sysconf(_SC_PAGESIZE));
  uint64_t reported_lines = 0, reported_bytes = 0, lines_out = 0, bytes_out = 0;
  const std::vector<std::pair<size_t, size_t>>& skipped = options.skipped;
  size_t next_skip = 0;  // the first skipped range that ends after pos
  // Whether the line at `at` (>= pos) is in a skipped range.
  const auto is_skipped = [&](size_t at) {
    size_t i = next_skip;
    while (i < skipped.size() && skipped[i].second <= at) ++i;
    return i < skipped.size() && skipped[i].first <= at;
  };
  // Checksums what pos has passed, in big pieces, and hands back the
  // mapping's pages below that (only bytes already checksummed; the mapping
  // starts on a page boundary), whether they were copied or skipped: a
  // skipped range's reader is at pos or past it, the file is read once.
  const auto passed = [&] {
    if (pos - crc_done >= kCrcBatch) crc_catch_up(pos);
    if (options.previous_is_file_mapping && crc_done - released >= kReleaseBytes) {
      const size_t upto = crc_done & ~(page - 1);
      ::madvise(const_cast<char*>(previous.data()) + released, upto - released, MADV_DONTNEED);
      released = upto;
    }
  };
  // Copies the lines of [pos, end) that are not skipped.
  const auto copy_kept = [&](size_t end, const auto& copy) -> Status {
    while (pos < end) {
      while (next_skip < skipped.size() && skipped[next_skip].second <= pos) ++next_skip;
      if (next_skip < skipped.size() && skipped[next_skip].first <= pos) {
        pos = std::min(end, skipped[next_skip].second);  // its lines come as additions
        passed();
        continue;
      }
      const size_t stop = next_skip < skipped.size() ? std::min(end, skipped[next_skip].first) : end;
      CLICKATRON_RETURN_IF_ERROR(copy(stop));
    }
    return Status::Ok();
  };
  const auto copy_one_span = [&](size_t end) -> Status {
    if (end == pos) return Status::Ok();
    const std::string_view span = previous.substr(pos, end - pos);
    const uint64_t lines = CountNewlines(span);
    stats->previous_lines += lines;
    lines_out += lines;
    bytes_out += span.size();
    pos = end;
    CLICKATRON_RETURN_IF_ERROR(out->PutLines(span, lines));
    passed();
    return Status::Ok();
  };
  const auto copy_span = [&](size_t end) -> Status { return copy_kept(end, copy_one_span); };
  std::string combined;
  std::string_view add;
  while (additions->Next(&add)) {
    const std::string_view key = LineKey(add);
    CLICKATRON_RETURN_IF_ERROR(copy_span(text.LowerBound(pos, key)));
    if (pos < text.size() && text.CompareKeyAt(pos, key) == 0 && !is_skipped(pos)) {
      const std::string_view line = text.Line(pos);
      {
        // The key is in the archive already: combine (sum counts, union columns).
        combined.assign(line);
        if (Status st = CombineArchiveLineInto(&combined, add); !st.ok()) {
          return st.WithContext(fmt::format("combining with the previous generation"));
        }
        pos += line.size() + 1;
        ++stats->previous_lines;
        ++stats->combined;
        CLICKATRON_RETURN_IF_ERROR(out->Put(combined));
        ++lines_out;
        bytes_out += combined.size() + 1;
        continue;
      }
    }
    ++stats->added;
    ++lines_out;
    bytes_out += add.size() + 1;
    CLICKATRON_RETURN_IF_ERROR(out->Put(add));
    if (progress != nullptr && bytes_out - reported_bytes >= kProgressBytes) {
      progress->Add(lines_out - reported_lines, bytes_out - reported_bytes);
      reported_lines = lines_out;
      reported_bytes = bytes_out;
    }
  }
  CLICKATRON_RETURN_IF_ERROR(additions->status());
  CLICKATRON_RETURN_IF_ERROR(copy_span(text.size()));
  crc_catch_up(pos);
  if (progress != nullptr) progress->Add(lines_out - reported_lines, bytes_out - reported_bytes);
  stats->previous_crc32 = crc;
  return Status::Ok();
}

}  // namespace clickatron::rebuild
