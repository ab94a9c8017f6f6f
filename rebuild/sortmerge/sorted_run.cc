// Run files with a sparse index of their keys; see sorted_run.h.
#include "sortmerge/sorted_run.h"

#include <algorithm>

#include <fmt/format.h>

#include "clickatron/record.h"

namespace clickatron::rebuild {

RunIndexSink::RunIndexSink(LineWriter* writer, uint64_t mark_every, RunFile* run)
    : writer_(writer), mark_every_(std::max<uint64_t>(mark_every, 1)), run_(run) {
  run_->path = writer->path();
  run_->bytes = writer->bytes();
  run_->marks.clear();
}

Status RunIndexSink::Put(std::string_view line) {
  const uint64_t offset = writer_->bytes();
  if (offset >= next_mark_) {
    run_->marks.push_back({std::string(LineKey(line)), offset});
    next_mark_ = offset + mark_every_;
  }
  CLICKATRON_RETURN_IF_ERROR(writer_->Put(line));
  run_->bytes = writer_->bytes();
  return Status::Ok();
}

void RunInput::Sample(std::vector<KeySample>* samples) const {
  const std::vector<RunMark>& marks = run_->marks;
  for (size_t i = 0; i < marks.size(); ++i) {
    const uint64_t next = i + 1 < marks.size() ? marks[i + 1].offset : run_->bytes;
    samples->push_back({marks[i].key, next - marks[i].offset});
  }
}

Result<uint64_t> RunInput::Find(std::string_view key) const {
  const std::vector<RunMark>& marks = run_->marks;
  // The first mark at or past `key`; the key's line is after the mark before it.
  const auto first_not_below = std::partition_point(
      marks.begin(), marks.end(), [&](const RunMark& m) { return CompareArchiveKeys(m.key, key) < 0; });
  if (first_not_below == marks.begin()) return uint64_t{0};
  const uint64_t begin = std::prev(first_not_below)->offset;
  const uint64_t end = first_not_below == marks.end() ? run_->bytes : first_not_below->offset;
  auto reader = LineReader::Open(run_->path, {.buffer_bytes = 64u << 10, .begin_offset = begin, .end_offset = end});
  if (!reader.ok()) return reader.status();
  uint64_t offset = begin;
  std::string_view line;
  while ((*reader)->Next(&line)) {
    if (CompareArchiveKeys(LineKey(line), key) >= 0) return offset;
    offset += line.size() + 1;
  }
  CLICKATRON_RETURN_IF_ERROR((*reader)->status());
  if (offset != end) {
    return Status::Corruption(fmt::format("{}: {} bytes between offsets {} and {}, {} read: changed since written",
                                          run_->path, end - begin, begin, end, offset - begin));
  }
  return end;
}

Result<std::unique_ptr<LineSource>> RunInput::Open(uint64_t begin, uint64_t end, size_t buffer_bytes) const {
  auto reader =
      LineReader::Open(run_->path, {.buffer_bytes = buffer_bytes, .begin_offset = begin, .end_offset = end});
  if (!reader.ok()) return reader.status();
  return std::unique_ptr<LineSource>(std::move(reader).value());
}

}  // namespace clickatron::rebuild
