// The order rules of a sorted file (see sorted_lines.h). Moved here from
// archive/line_search.cc so the archive replica and `clickatron manifest`
// share one implementation.
#include "clickatron/sorted_lines.h"

#include <fmt/format.h>

#include <cstring>

#include "clickatron/key_codec.h"

namespace clickatron {

Status CheckSortedLine(std::string_view previous, std::string_view line, uint64_t line_no, char separator) {
  if (line.empty()) return Status::Corruption(fmt::format("line {} is empty", line_no));
  const size_t sep = line.find(separator);
  if (sep == std::string_view::npos) {
    return Status::Corruption(fmt::format("line {} has no field separator '{}': its key can never be found",
                                          line_no, separator));
  }
  if (line_no <= 1) return Status::Ok();
  const std::string_view key = line.substr(0, sep);
  const std::string_view previous_key = previous.substr(0, previous.find(separator));
  // std::string_view compares with char_traits<char>::compare (memcmp), i.e.
  // bytes unsigned, as LC_ALL=C sort does.
  if (!(previous < line)) {
    return Status::Corruption(fmt::format(
        "line {} (key {}) sorts before line {} (key {}): files must be in LC_ALL=C sort order of whole lines",
        line_no, QuoteForMessage(key), line_no - 1, QuoteForMessage(previous_key)));
  }
  if (key == previous_key) {
    return Status::Corruption(
        fmt::format("lines {} and {} have the same key {}", line_no - 1, line_no, QuoteForMessage(key)));
  }
  return Status::Ok();
}

Status CheckSorted(std::string_view data, char separator, const SortedLineVisitor& each_line, uint64_t* lines) {
  std::string_view previous;
  uint64_t line_no = 0;
  size_t pos = 0;
  while (pos < data.size()) {
    const void* nl = std::memchr(data.data() + pos, '\n', data.size() - pos);
    const size_t end = nl ? static_cast<size_t>(static_cast<const char*>(nl) - data.data()) : data.size();
    const std::string_view line = data.substr(pos, end - pos);
    CLICKATRON_RETURN_IF_ERROR(CheckSortedLine(previous, line, ++line_no, separator));
    if (each_line) CLICKATRON_RETURN_IF_ERROR(each_line(line, line_no));
    previous = line;
    pos = end + 1;
  }
  if (lines != nullptr) *lines = line_no;
  return Status::Ok();
}

}  // namespace clickatron
