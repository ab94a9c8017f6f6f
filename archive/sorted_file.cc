#include "sorted_file.h"

#include <utility>

namespace clickatron::archive {

std::atomic<int64_t> SortedFile::alive_{0};

SortedFile::SortedFile(std::string path, std::unique_ptr<MappedFile> mapping, std::optional<Manifest> manifest,
                       char separator)
    : path_(std::move(path)),
      mapping_(std::move(mapping)),
      data_(mapping_ ? mapping_->data() : std::string_view()),
      lines_(data_),
      manifest_(std::move(manifest)),
      separator_(separator),
      mapped_at_(std::chrono::system_clock::now()) {
  if (manifest_) last_day_ = manifest_->last_day;
  generation_text_ = std::to_string(generation());
  alive_.fetch_add(1, std::memory_order_relaxed);
}

SortedFile::~SortedFile() { alive_.fetch_sub(1, std::memory_order_relaxed); }

SortedFilePtr SortedFile::Create(std::string path, std::unique_ptr<MappedFile> mapping, Manifest manifest,
                                 char separator) {
  return SortedFilePtr(new SortedFile(std::move(path), std::move(mapping), std::move(manifest), separator));
}

SortedFilePtr SortedFile::Empty(std::string path, char separator) {
  return SortedFilePtr(new SortedFile(std::move(path), nullptr, std::nullopt, separator));
}

std::optional<std::string_view> SortedFile::GetLine(std::string_view key) const {
  return FindKeyLine(lines_, key, separator_);
}

std::optional<std::string_view> SortedFile::Get(std::string_view key) const {
  auto line = GetLine(key);
  if (!line) return std::nullopt;
  return line->substr(key.size() + 1);  // the line starts with key + separator
}

LineRange SortedFile::Prefix(std::string_view prefix, std::optional<uint64_t> max_lines) const {
  LineRange range = FindPrefixRange(lines_, prefix);
  if (max_lines) range.end = EndAfterLines(data_, range, *max_lines);
  return range;
}

}  // namespace clickatron::archive
