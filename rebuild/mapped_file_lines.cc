#include "mapped_file_lines.h"

#include <sys/mman.h>
#include <unistd.h>

#include "sortmerge/crc32_fast.h"

namespace clickatron::rebuild {
namespace {

constexpr size_t kLinesCrcBatch = 1u << 20;      // checksummed in pieces this large
constexpr size_t kLinesKeptBehind = 8u << 20;    // resident behind the reader (its recent lines)
constexpr size_t kLinesReleaseStep = 4u << 20;   // handed back in pieces this large

}  // namespace

MappedFileLines::MappedFileLines(std::string_view mapping, std::string name)
    : data_(mapping), name_(std::move(name)), page_(static_cast<size_t>(::sysconf(_SC_PAGESIZE))) {}

void MappedFileLines::Pass(size_t upto) {
  crc_ = FastCrc32Extend(crc_, data_.substr(crc_done_, upto - crc_done_));
  crc_done_ = upto;
  if (crc_done_ < released_ + kLinesKeptBehind + kLinesReleaseStep) return;
  const size_t release_to = (crc_done_ - kLinesKeptBehind) & ~(page_ - 1);
  ::madvise(const_cast<char*>(data_.data()) + released_, release_to - released_, MADV_DONTNEED);  // a hint: errors change nothing
  released_ = release_to;
}

bool MappedFileLines::Next(std::string_view* line) {
  if (pos_ >= data_.size()) {
    if (crc_done_ < data_.size()) Pass(data_.size());
    return false;
  }
  size_t end = data_.find('\n', pos_);
  if (end == std::string_view::npos) end = data_.size();
  *line = data_.substr(pos_, end - pos_);
  if (pos_ - crc_done_ >= kLinesCrcBatch) Pass(pos_);
  pos_ = end + 1;
  return true;
}

}  // namespace clickatron::rebuild
