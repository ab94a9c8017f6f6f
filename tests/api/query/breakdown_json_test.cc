// /breakdown answers written as text are byte-identical to the dump of a
// JSON DOM of the same answer, built here from the rows: rollup or per unit,
// with compare= and uniques=true, and values that need escaping (quotes,
// backslashes, control bytes, UTF-8, bytes that are not UTF-8).
#include "query/answer/breakdown_json.h"

#include <gtest/gtest.h>

#include <nlohmann/json.hpp>

namespace clickatron::api {
namespace {

std::string Dump(const nlohmann::json& j) { return j.dump(-1, ' ', false, nlohmann::json::error_handler_t::replace); }

// The DOM of one unit's rows, as a client reads them.
nlohmann::json Rows(const TopValues& top, const KeyCounts* earlier, const KeyUniques* uniques) {
  nlohmann::json list = nlohmann::json::array();
  for (const auto& [value, clicks] : top) {
    nlohmann::json row = {{"value", value}, {"clicks", clicks}};
    if (uniques != nullptr) row["uniques"] = uniques->count(value) ? uniques->at(value) : 0;
    if (earlier != nullptr) {
      const int64_t before = earlier->count(value) ? earlier->at(value) : 0;
      nlohmann::json change = nullptr;
      if (before != 0) change = static_cast<double>(clicks - before) / static_cast<double>(before);
      row["compare"] = {{"clicks", before}, {"change", change}};
    }
    list.push_back(row);
  }
  return list;
}

BreakdownParams Params(bool rollup, Compare compare, bool uniques, nlohmann::json reference) {
  BreakdownParams p;
  p.sns = "c";
  p.ns = "u";
  p.key = "k";
  p.limit = 7;
  p.uniques = uniques;
  p.window.unit = Unit::kDay;
  p.window.units = 3;
  p.window.tz_offset = -5;
  p.window.rollup = rollup;
  p.window.compare = compare;
  p.window.reference_echo = std::move(reference);
  return p;
}

nlohmann::json Echo(const BreakdownParams& p) {
  return nlohmann::json{{"unit", UnitName(p.window.unit)}, {"units", p.window.units},
                        {"tz_offset", p.window.tz_offset}, {"unit_reference_ts", p.window.reference_echo},
                        {"sns", p.sns},                     {"limit", p.limit}};
}

const TopValues kTop = {{"US", 12},
                        {"say \"hi\"\\there", 7},
                        {"tab\tnew\nline\x01", 5},
                        {"Zürich 東京", 3},
                        {std::string("bad \xff\xfe utf-8"), 2},
                        {"http://a.example/long/referrer?x=1&y=2", 1}};

TEST(BreakdownJsonTest, RollupMatchesTheDomWithEveryOption) {
  const KeyCounts before = {{"US", 4}, {"Zürich 東京", 9}, {"gone", 5}};
  const KeyUniques visitors = {{"US", 3}, {"tab\tnew\nline\x01", 1}};
  auto window = UnitWindow::Ending(Unit::kDay, -5, 1700000000, 3, 100000);
  auto earlier = UnitWindow::Ending(Unit::kDay, -5, 1700000000 - 3 * 86400, 3, 100000);
  ASSERT_TRUE(window.ok() && earlier.ok());
  for (bool with_compare : {false, true}) {
    for (bool with_uniques : {false, true}) {
      for (const nlohmann::json& reference : {nlohmann::json(1700000000), nlohmann::json("now")}) {
        const BreakdownParams p =
            Params(true, with_compare ? Compare::kPrevious : Compare::kNone, with_uniques, reference);
        nlohmann::json want = Echo(p);
        want["breakdown"] = Rows(kTop, with_compare ? &before : nullptr, with_uniques ? &visitors : nullptr);
        if (with_compare) want["compare"] = {{"window", CompareName(Compare::kPrevious)}};
        want["other"] = 40;
        want["none"] = 2;
        const std::optional<UnitWindow> compared = with_compare ? std::optional<UnitWindow>(*earlier) : std::nullopt;
        const std::string got =
            BreakdownJson(p, *window, {kTop}, {RowsLeftOut{40, 2}}, compared, {before}, {visitors}, 0);
        EXPECT_EQ(got, Dump(want)) << with_compare << with_uniques << reference;
        EXPECT_FALSE(nlohmann::json::parse(got, nullptr, false).is_discarded());
      }
    }
  }
}

TEST(BreakdownJsonTest, UnitsNewestFirstAndMissingOnesEmpty) {
  auto window = UnitWindow::Ending(Unit::kDay, -5, 1700000000, 3, 100000);
  auto earlier = UnitWindow::Ending(Unit::kDay, -5, 1700000000 - 7 * 86400, 3, 100000);
  ASSERT_TRUE(window.ok() && earlier.ok());
  // Two units' rows given of three (the third has none); the earlier
  // window's counts for the first only.
  const std::vector<TopValues> tops = {kTop, {{"JP", 1}}};
  const std::vector<KeyCounts> before = {{{"US", 12}}};
  const std::vector<RowsLeftOut> left_out = {{1, 2}, {3, 0}};  // the third unit's: none given, 0 and 0
  const int64_t now = window->start(2) + 1;  // inside the newest unit
  for (bool with_compare : {false, true}) {
    const BreakdownParams p = Params(false, with_compare ? Compare::kYear : Compare::kNone, true, 99);
    nlohmann::json want = Echo(p);
    want["breakdown"] = nlohmann::json::array();
    static const KeyCounts kNothing;
    static const KeyUniques kNoVisitors;
    for (size_t i = window->size(); i-- > 0;) {
      const TopValues none;
      const KeyCounts* b = with_compare ? (i < before.size() ? &before[i] : &kNothing) : nullptr;
      nlohmann::json unit = {{"dt", window->start(i)}, {"breakdown", Rows(i < tops.size() ? tops[i] : none, b, &kNoVisitors)}};
      if (with_compare) unit["compare_dt"] = earlier->start(i);
      unit["other"] = i < left_out.size() ? left_out[i].other : 0;
      unit["none"] = i < left_out.size() ? left_out[i].none : 0;
      if (i == 2) unit["complete"] = false;
      want["breakdown"].push_back(unit);
    }
    if (with_compare) want["compare"] = {{"window", CompareName(Compare::kYear)}};
    const std::optional<UnitWindow> compared = with_compare ? std::optional<UnitWindow>(*earlier) : std::nullopt;
    EXPECT_EQ(BreakdownJson(p, *window, tops, left_out, compared, before, {}, now), Dump(want)) << with_compare;
  }
}

TEST(BreakdownJsonTest, EmptyWindowHasNoUnits) {
  auto empty = UnitWindow::Spanning(Unit::kMonth, 0, 2000000000, 1000000000, 100000);
  ASSERT_TRUE(empty.ok() && empty->empty());
  for (bool rollup : {false, true}) {
    const BreakdownParams p = Params(rollup, Compare::kNone, false, 5);
    nlohmann::json want = Echo(p);
    want["breakdown"] = nlohmann::json::array();
    if (rollup) want["other"] = want["none"] = 0;
    EXPECT_EQ(BreakdownJson(p, *empty, {}, {}, std::nullopt, {}, {}, 0), Dump(want)) << rollup;
  }
}

}  // namespace
}  // namespace clickatron::api
