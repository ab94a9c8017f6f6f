// /clicks answers written as text equal what a JSON DOM of the same answer
// holds, and are byte-identical to that DOM's dump (same key order).
#include <gtest/gtest.h>

#include <nlohmann/json.hpp>

#include "query/answer/series_json.h"

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
    // Now inside the middle week: it and the newest are not over.
    const int64_t now = window->start(1) + 3600;
    nlohmann::json want = Echo(w);
    want["clicks"] = nlohmann::json::array();
    for (size_t i = window->size(); i-- > 0;) {
      want["clicks"].push_back({{"dt", window->start(i)}, {"clicks", sums[i]}});
      if (i >= 1) want["clicks"].back()["complete"] = false;
    }
    const std::string got = SeriesJson(w, *window, sums, now);
    EXPECT_EQ(nlohmann::json::parse(got), want);
    EXPECT_EQ(got, want.dump());
  }
}

TEST(SeriesJsonTest, AUnitIsCompleteFromItsEndOn) {
  WindowParams w;
  w.unit = Unit::kDay;
  w.units = 2;
  w.tz_offset = 0;
  w.reference_echo = 86400;
  auto window = UnitWindow::Ending(Unit::kDay, 0, 86400, 2, 100000);  // days 0 and 1
  ASSERT_TRUE(window.ok());
  const auto markers = [&](int64_t now) {
    std::vector<bool> incomplete;
    const nlohmann::json answer = nlohmann::json::parse(SeriesJson(w, *window, {1, 2}, now));
    for (const auto& unit : answer["clicks"]) {
      incomplete.push_back(unit.contains("complete"));
      if (unit.contains("complete")) {
        EXPECT_EQ(unit["complete"], false);
      }
    }
    return incomplete;  // newest first
  };
  EXPECT_EQ(markers(2 * 86400), (std::vector<bool>{false, false}));
  EXPECT_EQ(markers(2 * 86400 - 1), (std::vector<bool>{true, false}));
  EXPECT_EQ(markers(86400), (std::vector<bool>{true, false}));
  EXPECT_EQ(markers(86400 - 1), (std::vector<bool>{true, true}));
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
  EXPECT_EQ(SeriesJson(w, *empty, {}, 0), want.dump());
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
  for (size_t i = window->size(); i-- > 0;) {
    want["uniques"].push_back({{"dt", window->start(i)}, {"uniques", uniques[i]}});
    if (i == 1) want["uniques"].back()["complete"] = false;
  }
  EXPECT_EQ(UniquesSeriesJson(w, *window, uniques, window->end_ts() - 1), want.dump());
  want["uniques"] = 42;
  EXPECT_EQ(UniquesRollupJson(w, 42), want.dump());
}

}  // namespace
}  // namespace clickatron::api
