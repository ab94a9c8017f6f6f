// SortedFile: one immutable, verified generation of the archive file, mapped
// read-only and searched in place.
//
// Held by shared_ptr<const SortedFile>. The server swaps its pointer on a
// reload; a request (or a streamed fwmatch) that took a copy keeps reading
// the old mapping, which is unmapped when the last copy goes. The file itself
// is never modified in place (the rebuild renames a new file over it), so a
// mapping stays valid after the path points elsewhere.
//
// An "empty" SortedFile stands for a file that does not exist yet (docs/protocols.md:
// a new cluster has no archive file): every search misses.
//
// Thread-safety: immutable after creation; any thread may read it.
#pragma once

#include <atomic>
#include <chrono>
#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <string_view>

#include "clickatron/file_util.h"
#include "clickatron/manifest.h"
#include "line_search.h"

namespace clickatron::archive {

class SortedFile;
using SortedFilePtr = std::shared_ptr<const SortedFile>;

class SortedFile {
 public:
  // A generation of the file at `path` with its checked manifest.
  static SortedFilePtr Create(std::string path, std::unique_ptr<MappedFile> mapping, Manifest manifest,
                              char separator);
  // No file at `path`: answers as an empty file, generation 0.
  static SortedFilePtr Empty(std::string path, char separator);
  ~SortedFile();
  SortedFile(const SortedFile&) = delete;
  SortedFile& operator=(const SortedFile&) = delete;

  // The value of `key` (the line after its separator), nullopt on a miss.
  std::optional<std::string_view> Get(std::string_view key) const;
  // The whole line of `key` (without newline), nullopt on a miss.
  std::optional<std::string_view> GetLine(std::string_view key) const;
  // The block of whole lines starting with `prefix`; at most `max_lines` of
  // them when given (finding that end costs a scan of those lines).
  LineRange Prefix(std::string_view prefix, std::optional<uint64_t> max_lines = std::nullopt) const;

  std::string_view data() const { return data_; }
  const std::string& path() const { return path_; }
  bool has_file() const { return manifest_.has_value(); }
  const Manifest* manifest() const { return manifest_ ? &*manifest_ : nullptr; }
  uint64_t generation() const { return manifest_ ? manifest_->generation : 0; }
  uint64_t records() const { return manifest_ ? manifest_->records : 0; }
  // YYYY-MM-DD or "" (no file, or a file that holds no day yet).
  const std::string& last_day() const { return last_day_; }
  // Preformatted for the X-Archive-Generation header on every answer.
  const std::string& generation_text() const { return generation_text_; }
  std::chrono::system_clock::time_point mapped_at() const { return mapped_at_; }

  // Damage found under the mapping (a fault on a file that shrank, or the
  // scrub: scrubber.h). A damaged generation is never answered from again.
  bool damaged() const { return mapping_ && mapping_->damaged(); }
  void MarkDamaged() const {
    if (mapping_) mapping_->MarkDamaged();
  }
  // The file's size on disk now, and its bytes read without the mapping.
  Result<uint64_t> CurrentSize() const { return mapping_ ? mapping_->CurrentSize() : Result<uint64_t>(uint64_t{0}); }
  // Whether `path` names the mapped file itself (MappedFile::IsFileAt).
  bool IsFileAt(const std::string& path) const { return mapping_ && mapping_->IsFileAt(path); }
  Result<size_t> ReadAt(uint64_t offset, char* out, size_t n) const {
    return mapping_ ? mapping_->ReadAt(offset, out, n) : Result<size_t>(size_t{0});
  }
  char separator() const { return separator_; }

  // Generations alive in this process (the serving one plus old ones still
  // read by in-flight requests): shows in /stats that old mappings go away.
  static int64_t alive_count() { return alive_.load(std::memory_order_relaxed); }

 private:
  SortedFile(std::string path, std::unique_ptr<MappedFile> mapping, std::optional<Manifest> manifest, char separator);

  static std::atomic<int64_t> alive_;

  std::string path_;
  std::unique_ptr<MappedFile> mapping_;  // null for an empty SortedFile
  std::string_view data_;
  LineIndex lines_;  // over data_
  std::optional<Manifest> manifest_;
  std::string last_day_;
  std::string generation_text_;
  char separator_;
  std::chrono::system_clock::time_point mapped_at_;
};

}  // namespace clickatron::archive
