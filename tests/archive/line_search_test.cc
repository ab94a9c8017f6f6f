// Binary search over sorted lines, checked against a linear scan (the oracle)
// and against the answers published with sortdb's sample.
#include "line_search.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <optional>
#include <random>
#include <set>
#include <string>
#include <vector>

#include "archive_fixture.h"

namespace clickatron::archive {
namespace {

using testing::kSortdbSample;

// Lines of `data`, without newlines; the last one may lack its newline.
std::vector<std::string> SplitLines(std::string_view data) {
  std::vector<std::string> lines;
  size_t pos = 0;
  while (pos < data.size()) {
    size_t nl = data.find('\n', pos);
    if (nl == std::string_view::npos) nl = data.size();
    lines.emplace_back(data.substr(pos, nl - pos));
    pos = nl + 1;
  }
  return lines;
}

// Oracle: the line whose key (text before the first separator) is `key`.
std::optional<std::string> LinearKeyLine(std::string_view data, std::string_view key, char sep) {
  for (const std::string& line : SplitLines(data)) {
    size_t s = line.find(sep);
    if (s != std::string::npos && std::string_view(line).substr(0, s) == key) return line;
  }
  return std::nullopt;
}

// Oracle: every line starting with `prefix`, in file order.
std::vector<std::string> LinearPrefix(std::string_view data, std::string_view prefix) {
  std::vector<std::string> out;
  for (const std::string& line : SplitLines(data)) {
    if (std::string_view(line).substr(0, prefix.size()) == prefix) out.push_back(line);
  }
  return out;
}

std::vector<std::string> BlockLines(std::string_view data, LineRange range) {
  return SplitLines(data.substr(range.begin, range.size()));
}

// A range must start at a line start and end after a newline or at the end.
void ExpectWholeLines(std::string_view data, LineRange range) {
  ASSERT_LE(range.begin, range.end);
  ASSERT_LE(range.end, data.size());
  // begin == data.size() is the insertion point after a last line without newline.
  EXPECT_TRUE(range.begin == 0 || range.begin == data.size() || data[range.begin - 1] == '\n') << range.begin;
  EXPECT_TRUE(range.end == 0 || range.end == data.size() || data[range.end - 1] == '\n') << range.end;
}

std::string Join(const std::vector<std::string>& lines, bool trailing_newline) {
  std::string out;
  for (size_t i = 0; i < lines.size(); ++i) {
    out += lines[i];
    if (i + 1 < lines.size() || trailing_newline) out += '\n';
  }
  return out;
}

// The searches over a LineIndex at several block sizes (1 byte: every line
// start is some block's first; 3 and 16: blocks inside lines and lines across
// blocks; the default 4 KiB: the scan inside one block). Every size must
// give the same answer; the default's is returned.
std::optional<std::string_view> KeyLine(std::string_view data, std::string_view key, char sep) {
  LineIndex standard(data);
  std::optional<std::string_view> want = FindKeyLine(standard, key, sep);
  for (size_t block : {1, 3, 16}) {
    LineIndex lines(data, block);
    EXPECT_EQ(FindKeyLine(lines, key, sep), want) << "block " << block << " key " << key;
  }
  return want;
}

LineRange PrefixRange(std::string_view data, std::string_view prefix) {
  LineIndex standard(data);
  LineRange want = FindPrefixRange(standard, prefix);
  for (size_t block : {1, 3, 16}) {
    LineIndex lines(data, block);
    LineRange got = FindPrefixRange(lines, prefix);
    EXPECT_EQ(got.begin, want.begin) << "block " << block << " prefix " << prefix;
    EXPECT_EQ(got.end, want.end) << "block " << block << " prefix " << prefix;
  }
  return want;
}

TEST(LineSearchTest, SortdbSampleGivesThePublishedAnswers) {
  // seeds/sortdb.txt: get u|jehiah.c3hh → 13, get c.u|jehiah.c3hh → "DE:1 None:5 US:7".
  EXPECT_EQ(KeyLine(kSortdbSample, "u|jehiah.c3hh", ','), "u|jehiah.c3hh,13");
  EXPECT_EQ(KeyLine(kSortdbSample, "c.u|jehiah.c3hh", ','), "c.u|jehiah.c3hh,DE:1 None:5 US:7");
  // fwmatch u|jehiah. → the two total lines.
  LineRange r = PrefixRange(kSortdbSample, "u|jehiah.");
  ExpectWholeLines(kSortdbSample, r);
  EXPECT_EQ(std::string(kSortdbSample.substr(r.begin, r.size())), "u|jehiah.c3hh,13\nu|jehiah.c3i0,7\n");
}

TEST(LineSearchTest, FindsTheFirstAndTheLastKey) {
  EXPECT_EQ(KeyLine(kSortdbSample, "c.u|jehiah.c3h5", ','), "c.u|jehiah.c3h5,US:2");
  EXPECT_EQ(KeyLine(kSortdbSample, "u|jehiah.c3i0", ','), "u|jehiah.c3i0,7");
  // Just outside either end.
  EXPECT_EQ(KeyLine(kSortdbSample, "c.u|jehiah.c3h4", ','), std::nullopt);
  EXPECT_EQ(KeyLine(kSortdbSample, "u|jehiah.c3i1", ','), std::nullopt);
  EXPECT_EQ(KeyLine(kSortdbSample, "a", ','), std::nullopt);
  EXPECT_EQ(KeyLine(kSortdbSample, "zzz", ','), std::nullopt);
}

TEST(LineSearchTest, KeysThatArePrefixesOfOneAnother) {
  std::vector<std::string> lines = {"u|a,1", "u|a-,2", "u|a!,3", "u|ab,4", "u|a.c3hh,5"};
  std::sort(lines.begin(), lines.end());  // bytewise, as LC_ALL=C sort
  // '!' (0x21) < ',' (0x2c) < '-' (0x2d) < '.' (0x2e) < 'b'.
  ASSERT_EQ(lines, (std::vector<std::string>{"u|a!,3", "u|a,1", "u|a-,2", "u|a.c3hh,5", "u|ab,4"}));
  std::string data = Join(lines, true);
  EXPECT_EQ(KeyLine(data, "u|a", ','), "u|a,1");
  EXPECT_EQ(KeyLine(data, "u|a-", ','), "u|a-,2");
  EXPECT_EQ(KeyLine(data, "u|a!", ','), "u|a!,3");
  EXPECT_EQ(KeyLine(data, "u|ab", ','), "u|ab,4");
  EXPECT_EQ(KeyLine(data, "u|a.c3hh", ','), "u|a.c3hh,5");
  EXPECT_EQ(KeyLine(data, "u|", ','), std::nullopt);
  EXPECT_EQ(KeyLine(data, "u|a.", ','), std::nullopt);
  EXPECT_EQ(BlockLines(data, PrefixRange(data, "u|a")), lines);
  EXPECT_EQ(BlockLines(data, PrefixRange(data, "u|a,")), std::vector<std::string>{"u|a,1"});
  EXPECT_EQ(BlockLines(data, PrefixRange(data, "u|a-")), std::vector<std::string>{"u|a-,2"});
}

TEST(LineSearchTest, EmptyFileFindsNothing) {
  EXPECT_EQ(KeyLine("", "u|a", ','), std::nullopt);
  EXPECT_EQ(KeyLine("", "", ','), std::nullopt);
  EXPECT_TRUE(PrefixRange("", "u").empty());
  EXPECT_TRUE(PrefixRange("", "").empty());
}

TEST(LineSearchTest, OneLineFileWithAndWithoutNewline) {
  for (std::string data : {"u|a,5\n", "u|a,5"}) {
    SCOPED_TRACE(data);
    EXPECT_EQ(KeyLine(data, "u|a", ','), "u|a,5");
    EXPECT_EQ(KeyLine(data, "u|", ','), std::nullopt);
    EXPECT_EQ(KeyLine(data, "u|b", ','), std::nullopt);
    EXPECT_EQ(KeyLine(data, "u|a,5", ','), std::nullopt);
    LineRange all = PrefixRange(data, "u");
    EXPECT_EQ(all.begin, 0u);
    EXPECT_EQ(all.end, data.size());
    EXPECT_TRUE(PrefixRange(data, "v").empty());
  }
}

TEST(LineSearchTest, QueryKeyThatIsAPrefixOfALineUpToItsSeparator) {
  // A lookup's value may hold commas: the key ends at the first one.
  std::string data = "l|abc,x,y\nl|abd,z\n";
  EXPECT_EQ(KeyLine(data, "l|abc", ','), "l|abc,x,y");
  // "l|abc,x" is the start of the first line but no line's key.
  EXPECT_EQ(KeyLine(data, "l|abc,x", ','), std::nullopt);
  EXPECT_EQ(KeyLine(data, "l|ab", ','), std::nullopt);
  EXPECT_EQ(KeyLine(data, "l|abc,x,y", ','), std::nullopt);
}

TEST(LineSearchTest, LongLines) {
  std::vector<std::string> lines;
  for (char c = 'a'; c <= 'f'; ++c) lines.push_back(std::string("k") + c + "," + std::string(1 << 20, c));
  std::string data = Join(lines, true);
  for (char c = 'a'; c <= 'f'; ++c) {
    auto line = KeyLine(data, std::string("k") + c, ',');
    ASSERT_TRUE(line.has_value());
    EXPECT_EQ(line->size(), 3u + (1u << 20));
    EXPECT_EQ(line->back(), c);
  }
  EXPECT_EQ(KeyLine(data, "kc0", ','), std::nullopt);
  EXPECT_EQ(BlockLines(data, PrefixRange(data, "kd")), std::vector<std::string>{lines[3]});
}

TEST(LineSearchTest, FileWithoutTrailingNewlineIsSearchedInsideItsBounds) {
  // The view ends at "b,2"; the bytes after it must never be read as part of
  // the last line (sortdb's strchr ran past the end of the mapping).
  std::string buffer = "a,1\nb,2XYZ\nc,3\n";
  std::string_view data(buffer.data(), 7);  // "a,1\nb,2"
  EXPECT_EQ(KeyLine(data, "b", ','), "b,2");
  EXPECT_EQ(KeyLine(data, "a", ','), "a,1");
  EXPECT_EQ(KeyLine(data, "c", ','), std::nullopt);
  LineRange r = PrefixRange(data, "b");
  EXPECT_EQ(r.begin, 4u);
  EXPECT_EQ(r.end, 7u);
  EXPECT_EQ(EndAfterLines(data, PrefixRange(data, ""), 5), 7u);
}

TEST(LineSearchTest, PrefixMatchingNothingBetweenTwoLines) {
  // c3h6 sorts between c3h5 and c3h7 in the sample.
  LineRange r = PrefixRange(kSortdbSample, "c.u|jehiah.c3h6");
  EXPECT_TRUE(r.empty());
  EXPECT_EQ(r.begin, kSortdbSample.find("c.u|jehiah.c3h7"));
  // And between the subtotal and the total blocks.
  r = PrefixRange(kSortdbSample, "d");
  EXPECT_TRUE(r.empty());
  EXPECT_EQ(r.begin, kSortdbSample.find("\nu|jehiah.c3hh") + 1);
}

TEST(LineSearchTest, EndAfterLinesStopsAtTheLimit) {
  LineRange r = PrefixRange(kSortdbSample, "c.u|");
  std::vector<std::string> all = LinearPrefix(kSortdbSample, "c.u|");
  ASSERT_EQ(all.size(), 12u);
  for (uint64_t limit : {0u, 1u, 5u, 12u, 100u}) {
    LineRange limited{r.begin, EndAfterLines(kSortdbSample, r, limit)};
    std::vector<std::string> expected(all.begin(), all.begin() + std::min<uint64_t>(limit, all.size()));
    EXPECT_EQ(BlockLines(kSortdbSample, limited), expected) << limit;
  }
}

TEST(LineSearchTest, OtherFieldSeparator) {
  std::string data = "k1\tv1\nk1a\tv2\nk2\tv3\n";
  EXPECT_EQ(KeyLine(data, "k1", '\t'), "k1\tv1");
  EXPECT_EQ(KeyLine(data, "k1a", '\t'), "k1a\tv2");
  EXPECT_EQ(KeyLine(data, "k1", ','), std::nullopt);
}

// Random files over an alphabet crowded around the separator, searched for
// every key, every prefix of every key, and random strings; the binary search
// must agree with the linear scan each time.
// `common`: a start every key shares (the index keeps a block's first
// kHeadBytes bytes: keys that tie there are compared on the file's bytes).
void AgreeWithALinearScan(size_t max_value_len, size_t block_bytes, unsigned seed, const std::string& common = "") {
  std::mt19937 rng(seed);
  // Around ',' (0x2c) and '.', and bytes that sort below the newline (a
  // line ending there must still sort before a prefix going on with them).
  // Bytes of 0x80 and more sort after every ASCII byte (unsigned).
  const std::string alphabet = std::string("!+-.0ab|\t") + '\x01' + '\x80' + '\xff';
  auto random_string = [&](size_t min_len, size_t max_len) {
    std::uniform_int_distribution<size_t> len(min_len, max_len);
    std::uniform_int_distribution<size_t> pick(0, alphabet.size() - 1);
    std::string s(len(rng), ' ');
    for (char& c : s) c = alphabet[pick(rng)];
    return s;
  };
  for (int round = 0; round < 60; ++round) {
    std::set<std::string> keys;
    size_t n = std::uniform_int_distribution<size_t>(0, 80)(rng);
    while (keys.size() < n) keys.insert(common.substr(0, std::uniform_int_distribution<size_t>(0, common.size())(rng)) +
                                        random_string(1, 5));
    std::vector<std::string> lines;
    for (const auto& k : keys) lines.push_back(k + "," + random_string(0, max_value_len));
    std::sort(lines.begin(), lines.end());
    for (bool trailing : {true, false}) {
      std::string data = Join(lines, trailing);
      std::vector<std::string> queries(keys.begin(), keys.end());
      for (const auto& k : keys) {
        for (size_t i = 0; i <= k.size(); ++i) queries.push_back(k.substr(0, i));
      }
      for (int i = 0; i < 40; ++i) queries.push_back(random_string(0, 6));
      // Whole lines going on past their end: a line is a prefix of these.
      for (const auto& line : lines) queries.push_back(line + random_string(1, 2));
      // A newline inside a prefix: no line holds one, so nothing matches,
      // not even a line and the start of the next one.
      for (const auto& k : keys) queries.push_back(k + "\n" + random_string(0, 2));
      for (size_t i = 0; i + 1 < lines.size(); ++i) queries.push_back(lines[i] + "\n" + lines[i + 1].substr(0, 2));
      for (const std::string& q : queries) {
        SCOPED_TRACE("round " + std::to_string(round) + " query \"" + q + "\"");
        LineIndex index(data, block_bytes);
        auto got = FindKeyLine(index, q, ',');
        auto want = LinearKeyLine(data, q, ',');
        ASSERT_EQ(got ? std::optional<std::string>(std::string(*got)) : std::nullopt, want);
        LineRange r = FindPrefixRange(index, q);
        ExpectWholeLines(data, r);
        ASSERT_EQ(BlockLines(data, r), LinearPrefix(data, q));
      }
    }
  }
}

TEST(LineSearchTest, AgreesWithALinearScanOnRandomFiles) {
  for (size_t block : {size_t{1}, size_t{5}, size_t{32}, LineIndex::kDefaultBlockBytes}) {
    SCOPED_TRACE("block " + std::to_string(block));
    AgreeWithALinearScan(4, block, 12345);
  }
}

// Values of up to 300 bytes over blocks of 7 and 64: lines span many blocks,
// and blocks hold several short lines.
TEST(LineSearchTest, AgreesWithALinearScanWhenLinesSpanBlocks) {
  for (size_t block : {size_t{7}, size_t{64}}) {
    SCOPED_TRACE("block " + std::to_string(block));
    AgreeWithALinearScan(300, block, 777);
  }
}

// Keys starting with all or part of a 14-byte start (as one key's records
// share "c.u|lk0012345."), so lines and queries tie with the index's kept
// bytes of a block's first line, or end inside them, or go on past them.
TEST(LineSearchTest, AgreesWithALinearScanWhenKeysShareTheirFirstBytes) {
  const std::string common = "c.u|lk001234\x80.";
  ASSERT_EQ(common.size() + 1, LineIndex::kHeadBytes);
  for (size_t block : {size_t{1}, size_t{5}, size_t{32}, LineIndex::kDefaultBlockBytes}) {
    SCOPED_TRACE("block " + std::to_string(block));
    AgreeWithALinearScan(20, block, 4242, common);
  }
}

TEST(CheckSortedTest, AcceptsASortedFile) {
  EXPECT_TRUE(CheckSorted(kSortdbSample, ',').ok());
  EXPECT_TRUE(CheckSorted("", ',').ok());
  EXPECT_TRUE(CheckSorted("a,1\nb,2", ',').ok());  // no trailing newline
}

TEST(CheckSortedTest, NamesTheFirstLineOutOfOrder) {
  Status st = CheckSorted("a,1\nc,2\nb,3\n", ',');
  EXPECT_EQ(st.code(), StatusCode::kCorruption);
  EXPECT_NE(st.message().find("line 3"), std::string::npos) << st.message();
}

TEST(CheckSortedTest, RefusesRepeatedKeysEmptyLinesAndLinesWithoutSeparator) {
  Status dup = CheckSorted("a,1\na,2\n", ',');
  EXPECT_EQ(dup.code(), StatusCode::kCorruption);
  EXPECT_NE(dup.message().find("same key"), std::string::npos) << dup.message();
  Status empty = CheckSorted("a,1\n\nb,2\n", ',');
  EXPECT_EQ(empty.code(), StatusCode::kCorruption);
  EXPECT_NE(empty.message().find("line 2 is empty"), std::string::npos) << empty.message();
  Status nosep = CheckSorted("a,1\nb\n", ',');
  EXPECT_EQ(nosep.code(), StatusCode::kCorruption);
  EXPECT_NE(nosep.message().find("line 2"), std::string::npos) << nosep.message();
}

}  // namespace
}  // namespace clickatron::archive
