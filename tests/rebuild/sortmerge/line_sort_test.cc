// The word-at-a-time MSD sort must give std::sort's bytewise order on any
// bytes: shared prefixes, lines that are prefixes of others, NUL bytes,
// bytes >= 0x80, empty lines.
#include "sortmerge/line_sort.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <random>
#include <string>
#include <vector>

namespace clickatron::rebuild {
namespace {

std::vector<std::string> SortedByEntries(const std::vector<std::string>& lines) {
  std::string buffer;
  std::vector<LineEntry> entries;
  for (const std::string& line : lines) {
    entries.push_back({0, static_cast<uint32_t>(buffer.size()), static_cast<uint32_t>(line.size())});
    buffer += line;
  }
  SortLineEntries(entries.data(), entries.data() + entries.size(), buffer.data());
  std::vector<std::string> out;
  for (const LineEntry& e : entries) out.push_back(buffer.substr(e.offset, e.length));
  return out;
}

TEST(LineSort, MatchesStdSortOnAwkwardBytes) {
  std::mt19937 rng(17);
  const std::string alphabet("\x00\x01,.|abc\x7f\x80\xff", 11);
  for (int round = 0; round < 200; ++round) {
    std::vector<std::string> lines;
    const std::string shared = std::string("c.u|k0000").substr(0, rng() % 10);
    const size_t n = 1 + rng() % 300;
    for (size_t i = 0; i < n; ++i) {
      std::string line = rng() % 4 == 0 ? std::string() : shared;
      const size_t extra = rng() % 20;
      for (size_t j = 0; j < extra; ++j) line += alphabet[rng() % alphabet.size()];
      lines.push_back(line);
      if (rng() % 5 == 0) lines.push_back(line);                        // duplicates
      if (rng() % 5 == 0) lines.push_back(line + std::string(1, '\0'));  // prefix + NUL
    }
    std::vector<std::string> expected = lines;
    std::sort(expected.begin(), expected.end());
    ASSERT_EQ(SortedByEntries(lines), expected) << "round " << round;
  }
}

TEST(LineSort, LargeGroupsTakeTheRadixPathAndMatchStdSort) {
  // Thousands of lines per group of equal leading words: the radix sort on
  // words runs, on every byte value, with duplicates and prefixes.
  std::mt19937 rng(23);
  for (int round = 0; round < 6; ++round) {
    std::vector<std::string> lines;
    const std::string shared = std::string("c.u|k0000000").substr(0, 4 * round);
    for (int i = 0; i < 20000; ++i) {
      std::string line = shared;
      const size_t extra = rng() % 24;
      for (size_t j = 0; j < extra; ++j) {
        line += round % 2 == 0 ? static_cast<char>('0' + rng() % 10) : static_cast<char>(rng());
      }
      lines.push_back(line);
      if (rng() % 7 == 0) lines.push_back(line);
      if (rng() % 7 == 0) lines.push_back(line.substr(0, line.size() / 2));
    }
    std::vector<std::string> expected = lines;
    std::sort(expected.begin(), expected.end());
    ASSERT_EQ(SortedByEntries(lines), expected) << "round " << round;
  }
}

TEST(LineSort, LongSharedPrefixes) {
  std::vector<std::string> lines;
  const std::string prefix(100, 'p');
  for (int i = 0; i < 5000; ++i) lines.push_back(prefix + std::to_string((i * 7919) % 5000));
  std::vector<std::string> expected = lines;
  std::sort(expected.begin(), expected.end());
  EXPECT_EQ(SortedByEntries(lines), expected);
}

}  // namespace
}  // namespace clickatron::rebuild
