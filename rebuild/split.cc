#include "split.h"

#include <memory>
#include <vector>

#include <fmt/format.h>

#include "clickatron/record.h"
#include "clickatron/shard.h"

namespace clickatron::rebuild {

std::string_view ShardKeyOfValidArchiveLine(std::string_view line) {
  // One pass over the key (a loop: keys are short, memchr calls cost more):
  // ns|tkey (total), sns.ns|tkey.YMDH (subtotal) -> "ns|tkey"; l|HASH -> HASH;
  // a unique record ("~…") -> as without its '~' (it lives beside its counters).
  size_t begin = IsUniqueKey(line) ? 1 : 0;
  size_t bar = std::string_view::npos;
  size_t i = 0;
  for (i = begin; i < line.size(); ++i) {
    const char c = line[i];
    if (c == ',') break;
    if (c == '|') {
      bar = i;
      if (i == 1 && line[0] == 'l') {
        const size_t comma = line.find(',', i);
        return line.substr(i + 1, comma == std::string_view::npos ? std::string_view::npos : comma - i - 1);
      }
    } else if (c == '.') {
      if (bar == std::string_view::npos) {
        begin = i + 1;  // sns. comes before ns
      } else {
        break;          // the tkey ends here
      }
    }
  }
  return line.substr(begin, i - begin);
}

uint32_t ShardOfValidArchiveLine(std::string_view line, uint32_t shard_count) {
  return ShardOf(ShardKeyOfValidArchiveLine(line), shard_count);
}

Result<std::unique_ptr<ShardFileWriter>> ShardFileWriter::Create(const std::string& path) {
  auto writer = LineWriter::Create(path, {.buffer_bytes = 1u << 20, .fsync = true, .compute_crc = true});
  if (!writer.ok()) return writer.status();
  auto out = std::make_unique<ShardFileWriter>();
  out->writer_ = std::move(writer).value();
  return out;
}

Status ShardFileWriter::Put(std::string_view line) {
  if (writer_->lines() == 0) first_key_ = std::string(LineKey(line));
  last_line_.assign(line);
  return writer_->Put(line);
}

Status ShardFileWriter::PutLines(std::string_view bytes, uint64_t lines) {
  if (lines == 0) return Status::Ok();
  if (writer_->lines() == 0) first_key_ = std::string(LineKey(bytes.substr(0, bytes.find('\n'))));
  const std::string_view body = bytes.substr(0, bytes.size() - 1);  // without the last '\n'
  const size_t last_start = body.rfind('\n');
  last_line_.assign(last_start == std::string_view::npos ? body : body.substr(last_start + 1));
  return writer_->PutLines(bytes, lines);
}

Status ShardFileWriter::Finish() { return writer_->Finish(); }

void ShardFileWriter::Describe(Manifest* manifest) const {
  manifest->records = writer_->lines();
  manifest->bytes = writer_->bytes();
  manifest->crc32 = writer_->crc32();
  manifest->first_key = first_key_;
  manifest->last_key = writer_->lines() == 0 ? std::string() : std::string(LineKey(last_line_));
}

Status SplitSortedFile(const std::string& input, uint32_t shard_count,
                       const std::vector<std::string>& paths) {
  auto reader = LineReader::Open(input);
  if (!reader.ok()) return reader.status();
  return SplitSortedLines(reader->get(), shard_count, paths);
}

Status SplitSortedLines(LineSource* input, uint32_t shard_count, const std::vector<std::string>& paths) {
  if (paths.size() != shard_count) {
    return Status::InvalidArgument(fmt::format("{} output paths for {} shards", paths.size(), shard_count));
  }
  std::vector<std::unique_ptr<LineWriter>> writers;
  for (const std::string& path : paths) {
    auto writer = LineWriter::Create(path);
    if (!writer.ok()) return writer.status();
    writers.push_back(std::move(writer).value());
  }
  std::string_view line;
  while (input->Next(&line)) {
    CLICKATRON_RETURN_IF_ERROR(writers[ShardOfValidArchiveLine(line, shard_count)]->Put(line));
  }
  CLICKATRON_RETURN_IF_ERROR(input->status());
  for (auto& writer : writers) CLICKATRON_RETURN_IF_ERROR(writer->Finish());
  return Status::Ok();
}

}  // namespace clickatron::rebuild
