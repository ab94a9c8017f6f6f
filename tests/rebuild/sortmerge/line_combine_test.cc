// Combining on text must give what the core's CombineArchiveRecords gives on
// parsed records: the rules (docs/protocols.md) are totals union hours summing equal
// hours, subtotals union skeys summing equal skeys, lookups identical kept
// once and different values an error.
#include "sortmerge/line_combine.h"

#include <gtest/gtest.h>

#include <limits>
#include <map>
#include <random>

#include "clickatron/convert.h"
#include "clickatron/record.h"
#include "clickatron/unique_sketch.h"

namespace clickatron::rebuild {
namespace {

std::string CoreCombine(const std::string& a, const std::string& b, Status* status) {
  Result<ArchiveRecord> ra = ParseArchiveLine(a);
  Result<ArchiveRecord> rb = ParseArchiveLine(b);
  EXPECT_TRUE(ra.ok() && rb.ok()) << a << " / " << b;
  *status = CombineArchiveRecords(&ra.value(), *rb);
  return FormatArchiveLine(*ra);
}

// A random valid line for `key` with columns from `names`.
std::string RandomLine(std::mt19937& rng, const std::string& key, const std::vector<std::string>& names) {
  std::map<std::string, int64_t> columns;
  const size_t n = 1 + rng() % 5;
  for (size_t i = 0; i < n; ++i) {
    columns[names[rng() % names.size()]] = static_cast<int64_t>(rng() % 1000) - 100;
  }
  std::string line = key + ",";
  bool first = true;
  for (const auto& [name, count] : columns) {
    if (!first) line += ' ';
    first = false;
    line += name + ":" + std::to_string(count);
  }
  return line;
}

TEST(CombineArchiveLineInto, Examples) {
  std::string line = "u|jehiah,c413:2";
  ASSERT_TRUE(CombineArchiveLineInto(&line, "u|jehiah,c41l:5").ok());
  EXPECT_EQ(line, "u|jehiah,c413:2 c41l:5");
  ASSERT_TRUE(CombineArchiveLineInto(&line, "u|jehiah,c413:1 c41m:1").ok());
  EXPECT_EQ(line, "u|jehiah,c413:3 c41l:5 c41m:1");
  line = "c.u|jehiah.c41l,US:4";
  ASSERT_TRUE(CombineArchiveLineInto(&line, "c.u|jehiah.c41l,JP:1 US:2").ok());
  EXPECT_EQ(line, "c.u|jehiah.c41l,JP:1 US:6");
  line = "l|h0aMB8AuNw4=,http://www.facebook.com/";
  ASSERT_TRUE(CombineArchiveLineInto(&line, "l|h0aMB8AuNw4=,http://www.facebook.com/").ok());
  EXPECT_EQ(line, "l|h0aMB8AuNw4=,http://www.facebook.com/");
}

// Unique records combine by text exactly as the core combines parsed ones:
// subtotal lines whose skeys come later are appended as text, a skey in both
// is a union, and a total (one sketch) always unites.
TEST(CombineArchiveLineInto, UniqueRecordsAgreeWithTheCore) {
  auto sketch = [](int from, int count) {
    UniqueSketch s;
    for (int v = from; v < from + count; ++v) s.Add(HashVisitor("visitor-" + std::to_string(v)));
    return s.ToText();
  };
  const std::string key = "~c.u|jehiah.c41l";
  const std::vector<std::pair<std::string, std::string>> cases = {
      {key + ",JP:" + sketch(0, 3), key + ",US:" + sketch(2, 4)},                        // later skey: appended
      {key + ",US:" + sketch(0, 3), key + ",JP:" + sketch(2, 4) + " US:" + sketch(1, 5)},  // overlapping: united
      {key + ",DE:" + sketch(0, 2000), key + ",DE:" + sketch(1000, 2000)},                 // dense union
      {"~u|jehiah.c41l," + sketch(0, 3), "~u|jehiah.c41l," + sketch(2, 3)},               // totals
  };
  for (const auto& [a, b] : cases) {
    std::string line = a;
    ASSERT_TRUE(CombineArchiveLineInto(&line, b).ok()) << a << " / " << b;
    Status core_status;
    EXPECT_EQ(line, CoreCombine(a, b, &core_status)) << a << " / " << b;
    EXPECT_TRUE(core_status.ok());
  }
}

TEST(CombineArchiveLineInto, LookupConflictIsCorruption) {
  std::string line = "l|h0aMB8AuNw4=,http://www.facebook.com/";
  // Same hash, another value: the second line is not even a valid lookup, and
  // either way it must not be kept.
  const Status st = CombineArchiveLineInto(&line, "l|h0aMB8AuNw4=,http://example.com/");
  EXPECT_FALSE(st.ok());
}

TEST(CombineArchiveLineInto, OverflowIsAnError) {
  const int64_t max = std::numeric_limits<int64_t>::max();
  std::string line = "u|k,c41l:" + std::to_string(max);
  const Status st = CombineArchiveLineInto(&line, "u|k,c41l:1");
  EXPECT_EQ(st.code(), StatusCode::kOutOfRange) << st.ToString();
}

TEST(CombineArchiveLineInto, AgreesWithCoreOnRandomRecords) {
  std::mt19937 rng(11);
  const std::vector<std::string> hours = {"c410", "c411", "c41a", "c41l", "c3p1", "c3p2", "d111"};
  const std::vector<std::string> skeys = {"US", "JP", "U", "US2", "a", "h0aMB8AuNw4=", "Z-_"};
  for (int round = 0; round < 5000; ++round) {
    const bool total = rng() % 2 == 0;
    const std::string key = total ? "u|k" : "c.u|k.c41l";
    const auto& names = total ? hours : skeys;
    std::string a = RandomLine(rng, key, names);
    const std::string b = RandomLine(rng, key, names);
    Status core_status;
    const std::string expected = CoreCombine(a, b, &core_status);
    ASSERT_TRUE(core_status.ok());
    ASSERT_TRUE(CombineArchiveLineInto(&a, b).ok());
    EXPECT_EQ(a, expected);
  }
}

}  // namespace
}  // namespace clickatron::rebuild
