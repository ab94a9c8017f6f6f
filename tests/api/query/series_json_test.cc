// /clicks answers written as text equal what a JSON DOM of the same answer
// holds, and are byte-identical to that DOM's dump (same key order).
#include <gtest/gtest.h>

#include <nlohmann/json.hpp>

#include "query/series_json.h"

namespace clickatron::api {
namespace {

nlohmann::json Echo(const WindowParams& w) {
  return nlohmann::json{{"unit", UnitName(w.unit)},
                        {"units", w.units},
                        {"tz_offset", w.tz_offset},
                        {"unit_reference_ts", w.reference_echo}};
}

TEST(SeriesJsonTest, SeriesMatchesTheDomNewestFirst) {
  for (const nlohmann::json& reference : {nlohmann::json(1700000000), nlohmann::json("now"),
                                          nlohmann::json("2023-11-14T22:13:20Z")}) {
    WindowParams w;
    w.unit = Unit::kWeek;
    w.units = 3;
    w.tz_offset = -5;
    w.reference_echo = reference;
    auto window = UnitWindow::Ending(Unit::kWeek, -5, 1700000000, 3, 100000);
    ASSERT_TRUE(window.ok());
    const std::vector<int64_t> sums{7, 0, INT64_MAX};
    nlohmann::json want = Echo(w);
    want["clicks"] = nlohmann::json::array();
    for (size_t i = window->size(); i-- > 0;) want["clicks"].push_back({{"dt", window->start(i)}, {"clicks", sums[i]}});
    const std::string got = SeriesJson(w, *window, sums);
    EXPECT_EQ(nlohmann::json::parse(got), want);
    EXPECT_EQ(got, want.dump());
  }
}

TEST(SeriesJsonTest, EmptyWindowAndRollup) {
  WindowParams w;
  w.unit = Unit::kMonth;
  w.units = -1;
  w.tz_offset = 14;
  w.reference_echo = 1234;
  auto empty = UnitWindow::Spanning(Unit::kMonth, 14, 2000000000, 1000000000, 100000);
  ASSERT_TRUE(empty.ok());
  ASSERT_TRUE(empty->empty());
  nlohmann::json want = Echo(w);
  want["clicks"] = nlohmann::json::array();
  EXPECT_EQ(SeriesJson(w, *empty, {}), want.dump());
  want["clicks"] = -3;  // any int64, as the DOM would print it
  EXPECT_EQ(RollupJson(w, -3), want.dump());
}

TEST(SeriesJsonTest, UniquesMatchTheDom) {
  WindowParams w;
  w.unit = Unit::kDay;
  w.units = 2;
  w.tz_offset = 9;
  w.reference_echo = "now";
  auto window = UnitWindow::Ending(Unit::kDay, 9, 1700000000, 2, 100000);
  ASSERT_TRUE(window.ok());
  const std::vector<uint64_t> uniques{0, UINT64_MAX};
  nlohmann::json want = Echo(w);
  want["uniques"] = nlohmann::json::array();
  for (size_t i = window->size(); i-- > 0;) want["uniques"].push_back({{"dt", window->start(i)}, {"uniques", uniques[i]}});
  EXPECT_EQ(UniquesSeriesJson(w, *window, uniques), want.dump());
  want["uniques"] = 42;
  EXPECT_EQ(UniquesRollupJson(w, 42), want.dump());
}

}  // namespace
}  // namespace clickatron::api
