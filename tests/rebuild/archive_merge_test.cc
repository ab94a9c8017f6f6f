// Merging into the previous generation by galloping over its lines must give
// exactly what a plain line-by-line map merge gives, and checksum every byte
// of the previous file.
#include "archive_merge.h"

#include <gtest/gtest.h>

#include <fmt/format.h>

#include <algorithm>
#include <fstream>
#include <map>
#include <random>

#include "clickatron/file_util.h"
#include "clickatron/shard.h"
#include "sortmerge/merge.h"
#include "testutil/sort_oracle.h"
#include "testutil/testutil.h"

namespace clickatron::rebuild {
namespace {

using clickatron::testing::TempDir;

using Table = std::map<std::string, std::map<std::string, int64_t>>;

// std::map order of "u|kNNNN" keys equals CompareArchiveKeys order here.
std::vector<std::string> Format(const Table& table) { return ArchiveLines(table); }

std::vector<std::string> ReadLines(const std::string& path) {
  std::vector<std::string> lines;
  std::string text = ReadFileToString(path).value();
  for (size_t start = 0; start < text.size();) {
    const size_t nl = text.find('\n', start);
    lines.push_back(text.substr(start, nl - start));
    start = nl + 1;
  }
  return lines;
}

struct Case {
  Table previous, additions, expected;
};

Case RandomCase(uint32_t seed, int previous_keys, int added_keys) {
  std::mt19937 rng(seed);
  Case c;
  for (int i = 0; i < previous_keys; ++i) {
    const std::string key = "u|k" + std::to_string(100000 + rng() % 200000);
    c.previous[key]["c3a" + std::to_string(rng() % 10)] = 1 + rng() % 9;
    // Now and then a long line, so spans are not all alike.
    if (rng() % 50 == 0) {
      for (int h = 0; h < 10; ++h) c.previous[key]["c3b" + std::to_string(h)] = h + 1;
    }
  }
  for (int i = 0; i < added_keys; ++i) {
    const std::string key = "u|k" + std::to_string(100000 + rng() % 200000);
    c.additions[key]["c3a" + std::to_string(rng() % 10)] += 1 + rng() % 9;
  }
  c.expected = c.previous;
  for (const auto& [key, columns] : c.additions) {
    for (const auto& [name, count] : columns) c.expected[key][name] += count;
  }
  return c;
}

void RunCase(const Case& c, const std::string& dir) {
  std::string previous;
  for (const std::string& line : Format(c.previous)) previous += line + "\n";
  VectorLineSource added(Format(c.additions), "additions");
  MergingSource additions({&added});
  auto writer = ShardFileWriter::Create(dir + "/out.csv");
  ASSERT_TRUE(writer.ok());
  ArchiveMergeStats stats;
  const Status st = MergeIntoArchive(previous, &additions, writer->get(), {}, &stats);
  ASSERT_TRUE(st.ok()) << st.ToString();
  ASSERT_TRUE((*writer)->Finish().ok());
  const auto expected = Format(c.expected);
  EXPECT_EQ(ReadLines(dir + "/out.csv"), expected);
  EXPECT_EQ(stats.previous_crc32, Crc32(previous));
  EXPECT_EQ(stats.previous_lines, c.previous.size());
  EXPECT_EQ(stats.added + stats.combined, c.additions.size());
  Manifest described, core;
  (*writer)->Describe(&described);
  DescribeArchiveData(ReadFileToString(dir + "/out.csv").value(), &core);
  EXPECT_EQ(described.records, expected.size());
  EXPECT_EQ(described.crc32, core.crc32);
  EXPECT_EQ(described.first_key, core.first_key);
  EXPECT_EQ(described.last_key, core.last_key);
}

TEST(ArchiveMerge, SparseAdditionsIntoALargeArchive) {
  TempDir tmp;
  RunCase(RandomCase(1, 20000, 300), tmp.path());
}

TEST(ArchiveMerge, DenseAdditions) {
  TempDir tmp;
  RunCase(RandomCase(2, 3000, 3000), tmp.path());
}

TEST(ArchiveMerge, EmptyPreviousOrNoAdditions) {
  TempDir tmp;
  RunCase(RandomCase(3, 0, 500), tmp.path());
  RunCase(RandomCase(4, 500, 0), tmp.path());
  RunCase(RandomCase(5, 0, 0), tmp.path());
}

TEST(ArchiveMerge, KeysAtTheEdgesAndPrefixKeys) {
  TempDir tmp;
  Case c;
  // "u|a" is a prefix of "u|a-b" and "u|a0": key order, not naive string order.
  c.previous["u|a"]["c3a1"] = 1;
  c.previous["u|a-b"]["c3a1"] = 2;
  c.previous["u|a0"]["c3a1"] = 3;
  c.previous["u|z"]["c3a1"] = 4;
  c.additions["u|a"]["c3a2"] = 5;     // the first line
  c.additions["u|a-a"]["c3a1"] = 6;   // between "u|a" and "u|a-b"
  c.additions["u|z"]["c3a1"] = 7;     // the last line
  c.additions["u|zz"]["c3a1"] = 8;    // after the end
  c.expected = c.previous;
  for (const auto& [key, columns] : c.additions) {
    for (const auto& [name, count] : columns) c.expected[key][name] += count;
  }
  RunCase(c, tmp.path());
}

// Retention's partial read: the ranges of a namespace's lines (every
// subtotal namespace and unique record of it, never lookups), found by
// search, then skipped by the merge while their lines come back as additions.
TEST(ArchiveMerge, NamespaceRangesAreSkippedAndComeBackAsAdditions) {
  TempDir tmp;
  // A sorted archive of namespaces u and uu (a name that u prefixes), their
  // subtotal namespaces and unique records, and lookups.
  std::vector<std::string> lines;
  for (const std::string prefix : {"a.u", "a.uu", "b.u", "c.v", "l", "u", "uu", "v", "~a.u", "~u", "~v"}) {
    for (int k = 0; k < 40; ++k) lines.push_back(fmt::format("{}|k{:03d},{}", prefix, k, prefix == "l" ? "x" : "c3a1:1"));
  }
  std::sort(lines.begin(), lines.end());
  std::string previous;
  for (const std::string& line : lines) previous += line + "\n";
  // Which lines are u's, by the test's own reading of the key.
  auto of_u = [](const std::string& line) {
    const std::string prefix = line.substr(line[0] == '~' ? 1 : 0, line.find('|') - (line[0] == '~' ? 1 : 0));
    return prefix == "u" || (prefix.size() > 2 && prefix.substr(prefix.size() - 2) == ".u");
  };
  const auto ranges = NamespaceRanges(previous, [](std::string_view ns) { return ns == "u"; });
  std::vector<std::string> in_ranges, want_in;
  for (const auto& [begin, end] : ranges) {
    ASSERT_TRUE(begin == 0 || previous[begin - 1] == '\n');
    ASSERT_EQ(previous[end - 1], '\n');
    std::string_view part = std::string_view(previous).substr(begin, end - begin);
    for (size_t at = 0; at < part.size();) {
      const size_t nl = part.find('\n', at);
      in_ranges.emplace_back(part.substr(at, nl - at));
      at = nl + 1;
    }
  }
  for (const std::string& line : lines) {
    if (of_u(line)) want_in.push_back(line);
  }
  EXPECT_EQ(in_ranges, want_in);
  EXPECT_EQ(ranges.size(), 3u);  // a.u, b.u (adjacent: one range), u, ~a.u and ~u (adjacent)

  // The merge skips them; the additions bring u's lines back doubled, and one new key.
  std::vector<std::string> added, want;
  for (const std::string& line : want_in) added.push_back(line.substr(0, line.find(',')) + ",c3a1:2");
  added.push_back("u|k999,c3a1:5");
  std::sort(added.begin(), added.end());
  for (const std::string& line : lines) want.push_back(of_u(line) ? line.substr(0, line.find(',')) + ",c3a1:2" : line);
  want.push_back("u|k999,c3a1:5");
  std::sort(want.begin(), want.end());
  VectorLineSource source(added, "additions");
  auto writer = ShardFileWriter::Create(tmp / "out.csv");
  ASSERT_TRUE(writer.ok());
  ArchiveMergeStats stats;
  ASSERT_TRUE(MergeIntoArchive(previous, &source, writer->get(), {.skipped = ranges}, &stats).ok());
  ASSERT_TRUE((*writer)->Finish().ok());
  EXPECT_EQ(ReadLines(tmp / "out.csv"), want);
  EXPECT_EQ(stats.previous_crc32, Crc32(previous));  // skipped bytes are checksummed too
  EXPECT_EQ(stats.combined, 0u);
  EXPECT_EQ(stats.previous_lines, lines.size() - want_in.size());
}

// Additions read from a skipped range, sampling the resident set as they go.
class SamplingSource : public LineSource {
 public:
  explicit SamplingSource(LineSource* in) : in_(in), before_(testing::ProcStatusKb(0, "RssFile")) {}
  bool Next(std::string_view* line) override {
    if (++lines_ % 50000 == 0) peak_ = std::max(peak_, testing::ProcStatusKb(0, "RssFile") - before_);
    return in_->Next(line);
  }
  const Status& status() const override { return in_->status(); }
  const std::string& name() const override { return in_->name(); }
  int64_t peak() const { return peak_; }

 private:
  LineSource* in_;
  int64_t before_;
  int64_t lines_ = 0, peak_ = 0;
};

// A range as large as the file (every line of a namespace with a policy):
// the merge checksums it and hands its pages back as it passes them, as it
// does for what it copies, so the file is not held resident.
TEST(ArchiveMerge, ASkippedRangeIsNotHeldResident) {
  TempDir tmp;
  std::string text;
  for (int i = 0; text.size() < (48u << 20); ++i) text += fmt::format("u|key{:08d},c3p1:{}\n", i, i % 977);
  ASSERT_TRUE(WriteFileAtomically(tmp / "previous.csv", text).ok());
  auto mapped = MappedFile::Open(tmp / "previous.csv");
  ASSERT_TRUE(mapped.ok());
  const std::string_view previous = (*mapped)->data();
  const auto ranges = NamespaceRanges(previous, [](std::string_view ns) { return ns == "u"; });
  ASSERT_EQ(ranges, (std::vector<std::pair<size_t, size_t>>{{0, previous.size()}}));
  TextLineSource range(previous, "range");
  SamplingSource additions(&range);
  auto writer = ShardFileWriter::Create(tmp / "out.csv");
  ASSERT_TRUE(writer.ok());
  ArchiveMergeStats stats;
  ASSERT_TRUE(MergeIntoArchive(previous, &additions, writer->get(),
                               {.previous_is_file_mapping = true, .skipped = ranges}, &stats)
                  .ok());
  ASSERT_TRUE((*writer)->Finish().ok());
  EXPECT_EQ(stats.previous_crc32, Crc32(text));
  EXPECT_EQ(stats.added, static_cast<uint64_t>(std::count(text.begin(), text.end(), '\n')));
  // 48 MiB passed; some 16 MiB behind the reader may stay mapped (without
  // handing the skipped pages back, some 30 MiB were resident here).
  EXPECT_LT(additions.peak(), 22 * 1024) << "kB of the file resident while merging it";
  EXPECT_GT(additions.peak(), 1024) << "kB of the file resident while merging it";  // it was read
}

TEST(ArchiveMerge, AFileWithoutFinalNewlineIsRefused) {
  TempDir tmp;
  VectorLineSource none({});
  auto writer = ShardFileWriter::Create(tmp / "out.csv");
  ASSERT_TRUE(writer.ok());
  ArchiveMergeStats stats;
  EXPECT_FALSE(MergeIntoArchive("u|a,c3a1:1", &none, writer->get(), {}, &stats).ok());
}

}  // namespace
}  // namespace clickatron::rebuild
