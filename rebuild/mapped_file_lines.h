// The lines of a whole archive file's mapping, read once from front to back:
// each byte is checksummed as the reader passes it (zlib's crc32), and the
// pages well behind the reader are handed back to the kernel
// (MADV_DONTNEED; the data stays in the page cache). So a merge that reads a
// previous generation in full (an older format, a restatement or a
// deletion) keeps its resident set bounded and reads the file
// once, as MergeIntoArchive does for the file it copies, instead of holding
// the whole mapping resident and reading it a second time for its checksum.
//
// A view handed out stays valid: a page handed back is read again from the
// file if it is touched (the mapping is read-only and never written).
//
// Thread-safety: one instance per thread.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>

#include "clickatron/status.h"
#include "sortmerge/line_io.h"

namespace clickatron::rebuild {

class MappedFileLines : public LineSource {
 public:
  // REQUIRES: `mapping` is a whole read-only file mapping (MappedFile),
  // starting on a page boundary.
  MappedFileLines(std::string_view mapping, std::string name);

  bool Next(std::string_view* line) override;
  const Status& status() const override { return status_; }
  const std::string& name() const override { return name_; }
  // The crc32 of every byte; valid once Next has returned false.
  uint32_t crc32() const { return crc_; }

 private:
  // Checksums up to `upto` and hands back the pages far enough behind it.
  void Pass(size_t upto);

  std::string_view data_;
  std::string name_;
  Status status_;
  size_t pos_ = 0;
  size_t crc_done_ = 0;
  size_t released_ = 0;
  size_t page_ = 4096;
  uint32_t crc_ = 0;
};

}  // namespace clickatron::rebuild
