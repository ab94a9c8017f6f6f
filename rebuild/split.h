// Step: splitting sorted archive lines by archive shard.
//
// shard = crc32(shard key) % archive_shards (docs/protocols.md; ShardKeyOfArchiveKey
// and ShardOf in shard.h). Splitting a sorted stream keeps each part sorted,
// so the merged generation is cut into one sorted file per shard.
//
// The rebuild splits by filtering: the worker that builds shard S reads the
// new sorted inputs through a ShardFilter that passes only shard S's lines,
// and merges them with the previous generation's file for shard S (already
// holding only shard S). Shards are then built in parallel, and the previous
// generation, the bulk of the bytes, is read once and never re-sharded unless
// archive_shards changed.
//
// Every line inside the rebuild was validated on entry, so the shard key is
// found by scanning for its delimiters rather than parsing again (the same
// rule as shard.cc; tests/rebuild/split_test.cc checks them against each other).
#pragma once

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "clickatron/status.h"
#include "clickatron/manifest.h"
#include "sortmerge/line_io.h"

namespace clickatron::rebuild {

// The shard key of a valid archive line ("ns|tkey", or a lookup's HASH).
std::string_view ShardKeyOfValidArchiveLine(std::string_view line);
uint32_t ShardOfValidArchiveLine(std::string_view line, uint32_t shard_count);

// Passes on only the lines of `shard` from a sorted source.
class ShardFilter : public LineSource {
 public:
  ShardFilter(LineSource* source, uint32_t shard, uint32_t shard_count)
      : source_(source), shard_(shard), shard_count_(shard_count) {}
  bool Next(std::string_view* line) override {
    while (source_->Next(line)) {
      if (ShardOfValidArchiveLine(*line, shard_count_) == shard_) return true;
    }
    return false;
  }
  const Status& status() const override { return source_->status(); }
  const std::string& name() const override { return source_->name(); }

 private:
  LineSource* source_;
  uint32_t shard_;
  uint32_t shard_count_;
};

// Writes one archive shard file and collects what its manifest says about it
// (records, bytes, crc32, first and last key) as the lines go by, so the
// file is not read again to describe it (same figures as DescribeArchiveData).
class ShardFileWriter : public LineSink {
 public:
  static Result<std::unique_ptr<ShardFileWriter>> Create(const std::string& path);
  Status Put(std::string_view line) override;
  // Whole lines copied as they are (a span of the previous generation):
  // `bytes` ends in '\n' and holds `lines` lines.
  Status PutLines(std::string_view bytes, uint64_t lines);
  Status Finish();  // flush + fsync + close
  // Fills records, bytes, crc32, first_key, last_key.
  void Describe(Manifest* manifest) const;

 private:
  std::unique_ptr<LineWriter> writer_;
  std::string first_key_;
  std::string last_line_;
};

// Splits a sorted file into `shard_count` sorted files (paths[i] for shard i):
// the plain split for tools and tests; the pipeline filters instead (above).
Status SplitSortedFile(const std::string& input, uint32_t shard_count,
                       const std::vector<std::string>& paths);
// The same for lines from any sorted source (a mapped file).
Status SplitSortedLines(LineSource* input, uint32_t shard_count, const std::vector<std::string>& paths);

}  // namespace clickatron::rebuild
