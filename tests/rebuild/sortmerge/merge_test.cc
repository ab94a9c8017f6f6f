// The generation merge: previous archive + new sorted data, equal keys combined.
#include "sortmerge/merge.h"

#include <gtest/gtest.h>

#include <map>
#include <memory>

namespace clickatron::rebuild {
namespace {

TEST(Merge, CombinesAcrossInputsAndKeepsOrder) {
  VectorLineSource previous({"c.u|a.c41l,JP:1 US:4", "u|a,c413:2 c41l:5", "u|b,c41l:1"}, "previous");
  VectorLineSource day({"c.u|a.c41l,US:1", "c.u|a.c41m,US:2", "u|a,c41m:3", "u|c,c41m:1"}, "day");
  VectorLineSource late({"u|a,c41l:1"}, "late");
  VectorLineSink out;
  MergeStats stats;
  ASSERT_TRUE(MergeSortedSources({&previous, &day, &late}, &out, {}, &stats).ok());
  EXPECT_EQ(out.lines, (std::vector<std::string>{
                           "c.u|a.c41l,JP:1 US:5",
                           "c.u|a.c41m,US:2",
                           "u|a,c413:2 c41l:6 c41m:3",
                           "u|b,c41l:1",
                           "u|c,c41m:1",
                       }));
  EXPECT_EQ(stats.lines_in, 8u);
  EXPECT_EQ(stats.lines_out, 5u);
}

TEST(Merge, UnsortedInputIsAnErrorNotAFile) {
  VectorLineSource bad({"u|b,c41l:1", "u|a,c41l:1"}, "bad");
  VectorLineSource good({"u|c,c41l:1"}, "good");
  VectorLineSink out;
  const Status st = MergeSortedSources({&bad, &good}, &out, {}, nullptr);
  EXPECT_FALSE(st.ok());
  EXPECT_NE(st.message().find("not sorted"), std::string::npos) << st.ToString();
}

TEST(Merge, ARepeatedKeyWithinOneInputIsAnError) {
  VectorLineSource bad({"u|a,c41l:1", "u|a,c41m:1"}, "bad");
  VectorLineSink out;
  EXPECT_FALSE(MergeSortedSources({&bad}, &out, {}, nullptr).ok());
}

TEST(Merge, ManyInputsAgainstAMapOracle) {
  // 9 inputs (a deeper heap), keys shared between some of them.
  std::map<std::string, std::map<std::string, int64_t>> oracle;
  std::vector<std::unique_ptr<VectorLineSource>> sources;
  std::vector<LineSource*> inputs;
  for (int input = 0; input < 9; ++input) {
    std::vector<std::string> lines;
    for (int k = input % 3; k < 200; k += 1 + input % 4) {
      const std::string key = "u|k" + std::to_string(1000 + k);
      const std::string hour = std::string("c41") + "0123456789"[input];
      lines.push_back(key + "," + hour + ":" + std::to_string(input + 1));
      oracle[key][hour] += input + 1;
    }
    sources.push_back(std::make_unique<VectorLineSource>(lines));
    inputs.push_back(sources.back().get());
  }
  VectorLineSink out;
  ASSERT_TRUE(MergeSortedSources(inputs, &out, {}, nullptr).ok());
  std::vector<std::string> expected;
  for (const auto& [key, columns] : oracle) {
    std::string line = key + ",";
    for (const auto& [hour, count] : columns) line += (line.back() == ',' ? "" : " ") + hour + ":" + std::to_string(count);
    expected.push_back(line);
  }
  EXPECT_EQ(out.lines, expected);
}

TEST(Merge, NoInputsNoOutput) {
  VectorLineSink out;
  ASSERT_TRUE(MergeSortedSources({}, &out, {}, nullptr).ok());
  EXPECT_TRUE(out.lines.empty());
}

}  // namespace
}  // namespace clickatron::rebuild
