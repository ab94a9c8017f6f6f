// Decoded columns of kept records (decoded_columns.h) add what the text path
// adds for the same value (AddArchiveSubtotalColumns, AddArchiveUnique*), and
// reject what it rejects. The sketches are built here from token sets, so
// the expected visitor counts come from the sets, not from the decoder.
#include "query/merge/decoded_columns.h"

#include <gtest/gtest.h>

#include <set>
#include <string>

#include "query/merge/read_records.h"

namespace clickatron::api {
namespace {

UniqueSketch SketchOf(const std::set<std::string>& tokens) {
  UniqueSketch s;
  for (const std::string& t : tokens) s.Add(HashVisitor(t));
  return s;
}

// (hour, key, estimate) of each sketch, for comparing two ways of adding.
std::vector<std::tuple<int64_t, std::string, uint64_t>> Flat(const HourlySketches& sketches) {
  std::vector<std::tuple<int64_t, std::string, uint64_t>> out;
  for (const HourSketch& h : sketches) out.emplace_back(h.hour, h.key, h.sketch->Estimate());
  return out;
}

TEST(DecodedColumnsTest, SubtotalsAsTheTextAddsThem) {
  const std::string value = "US:12 JP:3 http%3A%2F%2Fa.example%2Flong-referrer:7\n";
  HourlyBreakdown text, decoded;
  ASSERT_TRUE(AddArchiveSubtotalColumns(value, 3600, &text).ok());
  auto columns = DecodeSubtotalRecord(value);
  ASSERT_TRUE(columns.ok()) << columns.status().ToString();
  AddDecodedSubtotals(*columns, 3600, &decoded);
  ASSERT_EQ(decoded.size(), 3u);
  for (size_t i = 0; i < text.size(); ++i) {
    EXPECT_EQ(decoded[i].hour, text[i].hour);
    EXPECT_EQ(decoded[i].key, text[i].key);
    EXPECT_EQ(decoded[i].count, text[i].count);
  }
  EXPECT_EQ(decoded[2].key, "http%3A%2F%2Fa.example%2Flong-referrer");
  EXPECT_EQ(decoded[1].count, 3);
}

TEST(DecodedColumnsTest, BadSubtotalValuesAreRejectedAsByTheText) {
  for (const std::string bad : {"US", "US:", ":4", "US:x", "US:1 JP"}) {
    HourlyBreakdown text;
    EXPECT_FALSE(AddArchiveSubtotalColumns(bad, 0, &text).ok()) << bad;
    EXPECT_FALSE(DecodeSubtotalRecord(bad).ok()) << bad;
  }
}

TEST(DecodedColumnsTest, UniqueSubtotalsAsTheTextAddsThem) {
  const std::set<std::string> us = {"a", "b", "c"}, jp = {"b"};
  std::set<std::string> many;
  for (int i = 0; i < 3000; ++i) many.insert("visitor-" + std::to_string(i));  // dense
  const std::string value = "US:" + SketchOf(us).ToText() + " JP:" + SketchOf(jp).ToText() +
                            " DE:" + SketchOf(many).ToText() + "\n";
  auto columns = DecodeUniqueRecord(value, /*total=*/false);
  ASSERT_TRUE(columns.ok()) << columns.status().ToString();
  for (const std::string only : {"", "JP", "FR"}) {
    HourlySketches text, decoded;
    ASSERT_TRUE(AddArchiveUniqueSubtotals(value, 7200, only, &text).ok());
    AddDecodedSketches(*columns, 7200, only, &decoded);
    EXPECT_EQ(Flat(decoded), Flat(text)) << "only " << only;
  }
  HourlySketches all;
  AddDecodedSketches(*columns, 7200, "", &all);
  ASSERT_EQ(all.size(), 3u);
  EXPECT_EQ(all[0].sketch->Estimate(), us.size());
  EXPECT_EQ(all[1].sketch->Estimate(), jp.size());
  EXPECT_FALSE(all[2].sketch->exact());
  EXPECT_EQ(*all[2].sketch, SketchOf(many));  // the same registers
}

TEST(DecodedColumnsTest, UniqueTotalIsOneColumnKeyedEmpty) {
  const std::set<std::string> tokens = {"x", "y"};
  const std::string value = SketchOf(tokens).ToText() + "\n";
  auto columns = DecodeUniqueRecord(value, /*total=*/true);
  ASSERT_TRUE(columns.ok()) << columns.status().ToString();
  HourlySketches text, decoded;
  ASSERT_TRUE(AddArchiveUniqueTotal(value, 0, &text).ok());
  AddDecodedSketches(*columns, 0, "", &decoded);
  ASSERT_EQ(decoded.size(), 1u);
  EXPECT_EQ(decoded[0].key, "");
  EXPECT_EQ(decoded[0].sketch->Estimate(), tokens.size());
  EXPECT_EQ(Flat(decoded), Flat(text));
}

TEST(DecodedColumnsTest, BadSketchesAreCorruption) {
  EXPECT_EQ(DecodeUniqueRecord("e!!", true).status().code(), StatusCode::kCorruption);
  EXPECT_EQ(DecodeUniqueRecord("US:e!!", false).status().code(), StatusCode::kCorruption);
  EXPECT_FALSE(DecodeUniqueRecord("US", false).ok());
}

TEST(DecodedColumnsTest, BytesCountTheSketchesHeld) {
  std::set<std::string> many;
  for (int i = 0; i < 3000; ++i) many.insert("v" + std::to_string(i));
  auto columns = DecodeUniqueRecord("US:" + SketchOf(many).ToText(), false);
  ASSERT_TRUE(columns.ok());
  EXPECT_GE(columns->Bytes(), kSketchRegisters);  // the dense registers, one byte each
}

}  // namespace
}  // namespace clickatron::api
