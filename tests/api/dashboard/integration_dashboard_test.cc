// The dashboard page end to end: a real cluster (clickatron-realtime x1 with a
// manual clock, clickatron-archive x1 with no file yet, clickatron-api) fed
// through the API's /incr, and Debian's headless Chromium loading the page
// from the API node and running its script against the real JSON API. The
// DOM Chromium dumps is compared with an oracle the test keeps in plain maps.
//
// Needs /usr/bin/chromium (scripts/deps installs it). Without it the tests
// fail rather than skip: an untested page is not a passing one.
#include <gtest/gtest.h>

#include <time.h>

#include <algorithm>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <map>
#include <optional>
#include <random>
#include <set>
#include <string>
#include <vector>

#include "api/query/cluster_fixture.h"

namespace clickatron::api::testing {
namespace {

constexpr int64_t kDay = 86400;
constexpr int64_t kHour = 3600;
constexpr char kChromium[] = "/usr/bin/chromium";
const std::vector<std::string> kCountries = {"US", "JP", "DE", "C\xC3\xB4te d'Ivoire"};  // the last is hashed

// ---- a small reader for Chromium's serialized DOM ----

std::string UnescapeHtml(const std::string& text) {
  static const std::vector<std::pair<std::string, std::string>> kEntities = {
      {"&quot;", "\""}, {"&lt;", "<"}, {"&gt;", ">"}, {"&#39;", "'"}, {"&nbsp;", "\xC2\xA0"}, {"&amp;", "&"}};
  std::string out;
  for (size_t i = 0; i < text.size();) {
    bool matched = false;
    if (text[i] == '&') {
      for (const auto& [entity, value] : kEntities) {
        if (text.compare(i, entity.size(), entity) == 0) {
          out += value;
          i += entity.size();
          matched = true;
          break;
        }
      }
    }
    if (!matched) out += text[i++];
  }
  return out;
}

struct Element {
  size_t begin = 0;  // offset of '<'
  size_t end = 0;    // offset just past '>'
  std::map<std::string, std::string> attrs;
  bool Has(const std::string& name) const { return attrs.count(name) != 0; }
  std::string Attr(const std::string& name) const {
    auto it = attrs.find(name);
    return it == attrs.end() ? "" : it->second;
  }
  bool HasClass(const std::string& name) const {
    return (" " + Attr("class") + " ").find(" " + name + " ") != std::string::npos;
  }
};

// Start tags `<tag …>` in document order. The serializer always writes
// attribute values in double quotes with '"' escaped, so reading up to the
// next quote is exact even when a value holds '>'.
std::vector<Element> FindElements(const std::string& html, const std::string& tag) {
  std::vector<Element> found;
  const std::string open = "<" + tag;
  for (size_t at = html.find(open); at != std::string::npos; at = html.find(open, at + 1)) {
    size_t i = at + open.size();
    if (i >= html.size() || (html[i] != ' ' && html[i] != '>' && html[i] != '/')) continue;
    Element e;
    e.begin = at;
    while (i < html.size() && html[i] != '>') {
      if (html[i] == ' ' || html[i] == '/') {
        ++i;
        continue;
      }
      size_t name_end = html.find_first_of("= >", i);
      if (name_end == std::string::npos) return found;
      std::string name = html.substr(i, name_end - i);
      i = name_end;
      std::string value;
      if (html[i] == '=' && i + 1 < html.size() && html[i + 1] == '"') {
        size_t close = html.find('"', i + 2);
        if (close == std::string::npos) return found;
        value = UnescapeHtml(html.substr(i + 2, close - i - 2));
        i = close + 1;
      }
      e.attrs[name] = value;
    }
    e.end = i + 1;
    found.push_back(std::move(e));
  }
  return found;
}

std::vector<Element> WithClass(const std::vector<Element>& elements, const std::string& name) {
  std::vector<Element> out;
  for (const Element& e : elements) {
    if (e.HasClass(name)) out.push_back(e);
  }
  return out;
}

// n as the page writes it (en-US: 6,034).
std::string FormatThousands(int64_t n) {
  std::string digits = std::to_string(n), out;
  for (size_t i = 0; i < digits.size(); ++i) {
    if (i > 0 && (digits.size() - i) % 3 == 0 && digits[i - 1] != '-') out += ',';
    out += digits[i];
  }
  return out;
}

// The text right after an element's start tag, up to the next tag.
std::string TextAfter(const std::string& html, const Element& e) {
  size_t stop = html.find('<', e.end);
  return UnescapeHtml(html.substr(e.end, stop == std::string::npos ? std::string::npos : stop - e.end));
}

std::string BodyState(const std::string& html) {
  auto bodies = FindElements(html, "body");
  return bodies.empty() ? "(no body)" : bodies[0].Attr("data-state");
}

// The start tag of the element with that id, if any.
std::optional<Element> ById(const std::string& html, const std::string& tag, const std::string& id) {
  for (Element& e : FindElements(html, tag)) {
    if (e.Attr("id") == id) return std::move(e);
  }
  return std::nullopt;
}

// "Mon 2024-03-25 14:00": an hour start as the page's tooltips name it, in
// local time = UTC + offset hours (strftime on a shifted gmtime).
std::string LocalHourName(int64_t dt, int offset_hours) {
  const time_t shifted = static_cast<time_t>(dt + offset_hours * kHour);
  struct tm tm {};
  gmtime_r(&shifted, &tm);
  char buf[64];
  strftime(buf, sizeof(buf), "%a %Y-%m-%d %H:00", &tm);
  return buf;
}

class IntegrationDashboardTest : public ::testing::Test {
 protected:
  void SetUp() override {
    ASSERT_TRUE(std::filesystem::exists(kChromium))
        << kChromium << " is missing: run scripts/deps (it installs Debian's chromium) to test the dashboard";
    now_ = static_cast<int64_t>(std::time(nullptr));
    today_ = FloorDiv(now_, kDay);
    cluster_.WriteConfig();
    cluster_.StartStorage();
    // Manual clock: pin the ring to the UTC date of `now_`, so the test's
    // increments land on open days even if midnight passes meanwhile.
    cluster_.RotateRealtime(today_);
    cluster_.StartApi();
  }

  // Increments through the API's /incr on most hours of yesterday and today
  // (the days the realtime ring holds open), most with a country subtotal
  // (every fifth has none: the breakdown's "none").
  void SendIncrements() {
    std::mt19937 rng(20240325);
    for (int64_t hour = (today_ - 1) * kDay; hour <= now_; hour += kHour) {
      // Skip some hours, but never today's first: both days get clicks.
      if (rng() % 3 == 0 && hour != today_ * kDay) continue;
      const int64_t ts = std::min<int64_t>(hour + static_cast<int64_t>(rng() % kHour), now_);
      const int64_t value = 1 + static_cast<int64_t>(rng() % 4);
      const std::string& country = kCountries[rng() % kCountries.size()];
      // A visitor from a small pool (one with a space and a plus in it).
      const std::string visitor = fmt::format("visitor {}+{}", rng() % 5, rng() % 2);
      const bool with_country = ++sent_ % 5 != 0;
      auto r = cluster_.Api(fmt::format("/incr?ns=u&key={}&ts={}&value={}{}&uniq={}", Enc(key_), ts, value,
                                        with_country ? "&sub=c:" + Enc(country) : std::string(), Enc(visitor)));
      ASSERT_EQ(r["http_status"], 200) << r.dump();
      visitors_.insert(visitor);
      hours_[FloorDiv(ts, kHour) * kHour] += value;
      total_ += value;
      if (!with_country) continue;
      country_visitors_[country].insert(visitor);
      countries_[country] += value;
      day_countries_[FloorDiv(ts, kDay)][country] += value;
    }
    ASSERT_GT(total_, 0);
    // /incr answers once the oplog has it; realtime gets it a little later.
    const std::string clicks = fmt::format(
        "/clicks?ns=u&key={}&unit=day&units=7&timezone=0&rollup=true&unit_reference_ts={}", Enc(key_), now_);
    const std::string breakdown = fmt::format(
        "/breakdown?sns=c&ns=u&key={}&unit=day&units=7&timezone=0&unit_reference_ts={}", Enc(key_), now_);
    const std::string uniques = fmt::format(
        "/uniques?ns=u&key={}&unit=day&units=7&timezone=0&rollup=true&unit_reference_ts={}", Enc(key_), now_);
    nlohmann::json last_clicks, last_breakdown, last_uniques;
    EXPECT_TRUE(clickatron::testing::WaitFor([&] {
      last_clicks = cluster_.Api(clicks);
      last_breakdown = cluster_.Api(breakdown);
      last_uniques = cluster_.Api(uniques);
      return last_clicks["data"]["clicks"] == total_ &&
             last_breakdown["data"]["breakdown"] == ExpectedTop(countries_, 100) &&
             last_uniques["data"]["uniques"] == visitors_.size();
    })) << "the API never showed the increments: " << last_clicks.dump() << " " << last_breakdown.dump() << " "
        << last_uniques.dump();
  }

  // Loads `target` from the API node in headless Chromium and returns the
  // DOM after the page's script has run (virtual time waits for its fetches).
  std::string DumpDom(const std::string& target) {
    const std::string url = fmt::format("http://127.0.0.1:{}{}", cluster_.Peer("api-0").port, target);
    const std::string log = browser_dir_ / "chromium.log";
    // Chromium's stderr (D-Bus noise in a container) must not mix into the
    // DOM on stdout; `timeout` bounds a browser that hangs; HOME and the XDG
    // dirs keep its crash-report and cache files inside the temp dir.
    const std::string home = browser_dir_.path();
    const std::string script = "HOME='" + home + "' XDG_CONFIG_HOME='" + home + "/config' XDG_CACHE_HOME='" + home +
                               "/cache' exec timeout -k 5 50 \"$0\" \"$@\" 2>>'" + log + "'";
    std::vector<std::string> argv = {"/bin/sh", "-c", script, kChromium,
                                     "--headless", "--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run",
                                     "--disable-background-networking", "--disable-component-update", "--disable-sync",
                                     "--user-data-dir=" + (browser_dir_ / "profile"), "--virtual-time-budget=10000",
                                     "--dump-dom", url};
    std::string dom;
    const int rc = clickatron::testing::RunCommand(argv, &dom);
    if (rc != 0 || dom.find("</html>") == std::string::npos) {
      std::ifstream in(log);
      const std::string stderr_text((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
      ADD_FAILURE() << "chromium exited " << rc << " on " << url << " without a DOM; stdout: " << dom.substr(0, 2000)
                    << "\nstderr (tail): " << stderr_text.substr(stderr_text.size() > 3000 ? stderr_text.size() - 3000 : 0);
    }
    return dom;
  }

  int64_t DayTotal(int64_t day_start, int offset_hours) const {
    int64_t sum = 0;
    for (const auto& [hour, count] : hours_) {
      if (FloorDiv(hour + offset_hours * kHour, kDay) * kDay - offset_hours * kHour == day_start) sum += count;
    }
    return sum;
  }
  int64_t HourTotal(int64_t hour) const {
    auto it = hours_.find(hour);
    return it == hours_.end() ? 0 : it->second;
  }

  ReadCluster cluster_{ReadCluster::Spec{.realtime_shards = 1, .archive_shards = 1, .replicas = 1}};
  clickatron::testing::TempDir browser_dir_;
  std::string key_ = "dash";
  int64_t now_ = 0, today_ = 0, total_ = 0, sent_ = 0;
  std::map<int64_t, int64_t> hours_;              // oracle: UTC hour start -> clicks
  std::map<std::string, int64_t> countries_;      // oracle: country -> clicks
  std::map<int64_t, std::map<std::string, int64_t>> day_countries_;  // oracle: UTC day -> country -> clicks
  std::set<std::string> visitors_;                                   // oracle: every visitor (uniq=)
  std::map<std::string, std::set<std::string>> country_visitors_;    // oracle: country -> its visitors
};

TEST_F(IntegrationDashboardTest, ChartAndBreakdownMatchTheIncrementsSent) {
  // A space and a plus (sent as %20 and %2B): a page that turned one into
  // the other on its way to the API would chart another key.
  key_ = "my dash+1";
  ASSERT_NO_FATAL_FAILURE(SendIncrements());
  const std::string dom = DumpDom(fmt::format(
      "/?ns=u&key={}&unit=day&units=7&timezone=0&sns=c&unit_reference_ts={}", Enc(key_), now_));
  ASSERT_EQ(BodyState(dom), "ready") << dom;

  // One bar per UTC day, oldest first, ending today.
  auto bars = WithClass(FindElements(dom, "rect"), "bar");
  ASSERT_EQ(bars.size(), 7u) << dom;
  for (size_t i = 0; i < bars.size(); ++i) {
    const int64_t day_start = (today_ - 6 + static_cast<int64_t>(i)) * kDay;
    EXPECT_EQ(bars[i].Attr("data-dt"), std::to_string(day_start)) << "bar " << i;
    EXPECT_EQ(bars[i].Attr("data-clicks"), std::to_string(DayTotal(day_start, 0))) << "bar " << i;
  }
  // Bar heights are proportional to the clicks (empty days flat), and the
  // two days with data are not flat.
  const double per_click = std::stod(bars[5].Attr("height")) / static_cast<double>(DayTotal((today_ - 1) * kDay, 0));
  EXPECT_GT(per_click, 0.0);
  EXPECT_GT(std::stod(bars[6].Attr("height")), 0.0);
  for (size_t i = 0; i < bars.size(); ++i) {
    EXPECT_NEAR(std::stod(bars[i].Attr("height")), per_click * std::stod(bars[i].Attr("data-clicks")), 0.02)
        << "bar " << i;
  }

  // Breakdown rows: every country with its clicks, most first, ties by value,
  // hashed values shown in full.
  auto rows = WithClass(FindElements(dom, "tr"), "breakdown-row");
  const nlohmann::json want = ExpectedTop(countries_, 10);
  ASSERT_EQ(rows.size(), want.size()) << dom;
  for (size_t i = 0; i < rows.size(); ++i) {
    EXPECT_EQ(rows[i].Attr("data-value"), want[i]["value"].get<std::string>()) << "row " << i;
    EXPECT_EQ(rows[i].Attr("data-clicks"), std::to_string(want[i]["clicks"].get<int64_t>())) << "row " << i;
    // Each value's distinct visitors beside its clicks.
    EXPECT_EQ(rows[i].Attr("data-uniques"),
              std::to_string(country_visitors_[want[i]["value"].get<std::string>()].size()))
        << "row " << i;
  }

  // Below the rows, the clicks sent without a country; no "other" row, as
  // every country made the list.
  int64_t with_country = 0;
  for (const auto& [country, clicks] : countries_) with_country += clicks;
  ASSERT_GT(total_, with_country);
  auto none = WithClass(FindElements(dom, "tr"), "breakdown-none");
  ASSERT_EQ(none.size(), 1u) << dom;
  EXPECT_EQ(none[0].Attr("data-clicks"), std::to_string(total_ - with_country));
  EXPECT_TRUE(WithClass(FindElements(dom, "tr"), "breakdown-other").empty()) << dom;
  // Today is not over: its bar alone is drawn as such.
  for (size_t i = 0; i < bars.size(); ++i) {
    EXPECT_EQ(bars[i].Attr("data-complete"), i + 1 == bars.size() ? "false" : "true") << "bar " << i;
  }

  auto total = ById(dom, "strong", "total");
  ASSERT_TRUE(total.has_value()) << dom;
  EXPECT_EQ(total->Attr("data-total"), std::to_string(total_));
  // The chart's title says the window's total as one (it said "N clicks per
  // day", a rate it is not).
  auto title = ById(dom, "title", "chart-title");
  ASSERT_TRUE(title.has_value()) << dom;
  const std::string title_text = TextAfter(dom, *title);
  EXPECT_EQ(title_text.rfind(fmt::format("{} clicks in 7 days, by day, from ", FormatThousands(total_)), 0), 0u)
      << title_text;
  // And the window's distinct visitors: the union, not a sum of the rows.
  auto visitors = ById(dom, "strong", "uniques-total");
  ASSERT_TRUE(visitors.has_value()) << dom;
  EXPECT_EQ(visitors->Attr("data-total"), std::to_string(visitors_.size()));
  EXPECT_GT(visitors_.size(), 1u);
  auto error_box = ById(dom, "div", "error");
  ASSERT_TRUE(error_box.has_value()) << dom;
  EXPECT_TRUE(error_box->Has("hidden")) << "the error box shows on success";
}

// limit=2: two rows, then "Other values" with the clicks of the rest.
TEST_F(IntegrationDashboardTest, RowsBeyondTheLimitAreShownAsOther) {
  ASSERT_NO_FATAL_FAILURE(SendIncrements());
  const std::string dom = DumpDom(fmt::format(
      "/?ns=u&key=dash&unit=day&units=7&timezone=0&sns=c&limit=2&unit_reference_ts={}", now_));
  ASSERT_EQ(BodyState(dom), "ready") << dom;
  const nlohmann::json top = ExpectedTop(countries_, 2);
  ASSERT_EQ(WithClass(FindElements(dom, "tr"), "breakdown-row").size(), top.size()) << dom;
  int64_t rest = 0;
  for (const auto& [country, clicks] : countries_) rest += clicks;
  for (const auto& row : top) rest -= row["clicks"].get<int64_t>();
  ASSERT_GT(rest, 0) << "the test sends more than two countries";
  auto other = WithClass(FindElements(dom, "tr"), "breakdown-other");
  ASSERT_EQ(other.size(), 1u) << dom;
  EXPECT_EQ(other[0].Attr("data-clicks"), std::to_string(rest));
}

// compare=previous: today beside yesterday, on the chart (a point per unit),
// in the summary, and per breakdown row.
TEST_F(IntegrationDashboardTest, ComparedPeriodIsChartedAndEachRowShowsItsChange) {
  ASSERT_NO_FATAL_FAILURE(SendIncrements());
  const std::string dom = DumpDom(fmt::format(
      "/?ns=u&key=dash&unit=day&units=1&timezone=0&sns=c&compare=previous&unit_reference_ts={}", now_));
  ASSERT_EQ(BodyState(dom), "ready") << dom;
  const int64_t today = DayTotal(today_ * kDay, 0), yesterday = DayTotal((today_ - 1) * kDay, 0);
  ASSERT_GT(yesterday, 0);
  auto bars = WithClass(FindElements(dom, "rect"), "bar");
  ASSERT_EQ(bars.size(), 1u) << dom;
  EXPECT_EQ(bars[0].Attr("data-clicks"), std::to_string(today));
  auto points = WithClass(FindElements(dom, "circle"), "compare-point");
  ASSERT_EQ(points.size(), 1u) << dom;
  EXPECT_EQ(points[0].Attr("data-dt"), std::to_string((today_ - 1) * kDay));
  EXPECT_EQ(points[0].Attr("data-clicks"), std::to_string(yesterday));
  auto compare_total = ById(dom, "strong", "compare-total");
  ASSERT_TRUE(compare_total.has_value()) << dom;
  EXPECT_EQ(compare_total->Attr("data-total"), std::to_string(yesterday));
  EXPECT_NEAR(std::stod(compare_total->Attr("data-change")),
              static_cast<double>(today - yesterday) / static_cast<double>(yesterday), 1e-9);
  // Rows are today's countries, ranked by today; each carries yesterday's
  // clicks of its country.
  const auto& now_countries = day_countries_[today_];
  const auto& then_countries = day_countries_[today_ - 1];
  auto rows = WithClass(FindElements(dom, "tr"), "breakdown-row");
  auto changes = WithClass(FindElements(dom, "td"), "change");
  const nlohmann::json want = ExpectedTop(now_countries, 10);
  ASSERT_EQ(rows.size(), want.size()) << dom;
  ASSERT_EQ(changes.size(), rows.size()) << dom;
  for (size_t i = 0; i < rows.size(); ++i) {
    const std::string value = want[i]["value"].get<std::string>();
    EXPECT_EQ(rows[i].Attr("data-value"), value) << "row " << i;
    auto it = then_countries.find(value);
    const int64_t before = it == then_countries.end() ? 0 : it->second;
    EXPECT_EQ(changes[i].Attr("data-compare-clicks"), std::to_string(before)) << "row " << i;
    if (before == 0) {
      EXPECT_EQ(changes[i].Attr("data-change"), "") << "row " << i;
    } else {
      EXPECT_NEAR(std::stod(changes[i].Attr("data-change")),
                  static_cast<double>(want[i]["clicks"].get<int64_t>() - before) / static_cast<double>(before), 1e-9)
          << "row " << i;
    }
  }
}

TEST_F(IntegrationDashboardTest, HourlyChartIsInTheChosenOffset) {
  ASSERT_NO_FATAL_FAILURE(SendIncrements());
  constexpr int kOffset = -5;
  constexpr int kUnits = 48;
  const std::string dom = DumpDom(fmt::format(
      "/?ns=u&key=dash&unit=hour&units={}&timezone={}&sns=&unit_reference_ts={}", kUnits, kOffset, now_));
  ASSERT_EQ(BodyState(dom), "ready") << dom;
  auto bars = WithClass(FindElements(dom, "rect"), "bar");
  ASSERT_EQ(bars.size(), static_cast<size_t>(kUnits)) << dom;
  const int64_t newest = FloorDiv(now_, kHour) * kHour;  // whole-hour offsets keep UTC hour starts
  auto titles = FindElements(dom, "title");
  for (size_t i = 0; i < bars.size(); ++i) {
    const int64_t dt = newest - (kUnits - 1 - static_cast<int64_t>(i)) * kHour;
    EXPECT_EQ(bars[i].Attr("data-dt"), std::to_string(dt)) << "bar " << i;
    EXPECT_EQ(bars[i].Attr("data-clicks"), std::to_string(HourTotal(dt))) << "bar " << i;
    // The tooltip (the <title> opening the bar's group) names the hour in
    // local time, UTC-5.
    const Element* tooltip = nullptr;
    for (const Element& t : titles) {
      if (t.begin < bars[i].begin) tooltip = &t;
    }
    ASSERT_NE(tooltip, nullptr);
    EXPECT_EQ(TextAfter(dom, *tooltip).rfind(LocalHourName(dt, kOffset) + ": ", 0), 0u)
        << "bar " << i << " tooltip " << TextAfter(dom, *tooltip);
  }
  // No subtotal namespace: no breakdown asked for, none shown.
  EXPECT_TRUE(WithClass(FindElements(dom, "tr"), "breakdown-row").empty());
}

TEST_F(IntegrationDashboardTest, ApiErrorIsShownWithItsMessage) {
  // The API's own answer to the same query is the reference for the message.
  auto api = cluster_.Api("/clicks?ns=u&key=dash&unit=minute&units=7&timezone=0");
  ASSERT_EQ(api["http_status"], 400) << api.dump();
  ASSERT_EQ(api["status_txt"], "INVALID_UNIT") << api.dump();  // docs/protocols.md
  const std::string message = api["message"].get<std::string>();
  ASSERT_FALSE(message.empty());

  const std::string dom = DumpDom("/?ns=u&key=dash&unit=minute&units=7&timezone=0&sns=c");
  ASSERT_EQ(BodyState(dom), "error") << dom;
  std::vector<std::string> reasons, messages;
  for (const Element& e : WithClass(FindElements(dom, "span"), "error-reason")) reasons.push_back(TextAfter(dom, e));
  for (const Element& e : WithClass(FindElements(dom, "span"), "error-message")) messages.push_back(TextAfter(dom, e));
  EXPECT_NE(std::find(reasons.begin(), reasons.end(), "INVALID_UNIT"), reasons.end()) << dom;
  EXPECT_NE(std::find(messages.begin(), messages.end(), message), messages.end()) << message << "\n" << dom;
  auto error_box = ById(dom, "div", "error");
  ASSERT_TRUE(error_box.has_value()) << dom;
  EXPECT_FALSE(error_box->Has("hidden")) << "the error box stays hidden";
  EXPECT_TRUE(WithClass(FindElements(dom, "rect"), "bar").empty());

  // A key with a line break, which the key box cannot hold: the API's
  // INVALID_KEY, not a chart of the key without it (a probe's page charted
  // "ab" for "a\nb").
  const std::string broken = DumpDom("/?ns=u&key=a%0Ab&unit=day&units=3&timezone=0");
  ASSERT_EQ(BodyState(broken), "error") << broken;
  reasons.clear();
  for (const Element& e : WithClass(FindElements(broken, "span"), "error-reason")) {
    reasons.push_back(TextAfter(broken, e));
  }
  EXPECT_NE(std::find(reasons.begin(), reasons.end(), "INVALID_KEY"), reasons.end()) << broken;
}

// A namespace whose older days a retention policy rolled up: the page says
// from when its data is hourly, and in which zone the days before it are.
TEST_F(IntegrationDashboardTest, RolledUpDaysShowTheirBoundary) {
  // An archive generation as the rebuild writes one under a policy of three
  // days of hours (UTC): day today-10 is one record at its noon.
  const int64_t hourly_from = (today_ - 3) * kDay;
  const std::string line = fmt::format("u|dash,{}:7\n", *YmdhFromUnix((today_ - 10) * kDay + 12 * kHour));
  Manifest m;
  m.format = kArchiveFormat;
  m.day_subtotals = m.day_subtotals_every_day = m.day_uniques_every_day = true;
  m.generation = 1;
  m.last_day = FormatDate(today_ - 1);
  m.created = FormatIsoTime(0);
  m.retention.push_back(AppliedRetention{.ns = "u", .zone = "UTC", .hourly_from = hourly_from, .kept_from = std::nullopt});
  DescribeArchiveData(line, &m);
  cluster_.Stop("archive-0");
  ASSERT_TRUE(WriteManifestAtomically(ManifestPathFor(cluster_.ArchiveFilePath(0)), m).ok());
  ASSERT_TRUE(WriteFileAtomically(cluster_.ArchiveFilePath(0), line).ok());
  cluster_.Start("archive-0");

  const std::string dom = DumpDom("/?ns=u&key=dash&unit=day&units=14&timezone=0&sns=");
  ASSERT_EQ(BodyState(dom), "ready") << dom;
  auto resolution = ById(dom, "span", "resolution");
  ASSERT_TRUE(resolution.has_value()) << dom;
  EXPECT_EQ(resolution->Attr("data-hourly-from"), std::to_string(hourly_from));
  EXPECT_EQ(resolution->Attr("data-zone"), "UTC");
  const std::string text = TextAfter(dom, *resolution);
  EXPECT_NE(text.find("Hourly data from " + FormatDate(today_ - 3) + " 00:00 UTC"), std::string::npos) << text;
  EXPECT_NE(text.find("whole days in UTC only"), std::string::npos) << text;
  // The rolled-up day is charted whole on its day.
  bool charted = false;
  for (const Element& bar : WithClass(FindElements(dom, "rect"), "bar")) {
    if (bar.Attr("data-dt") == std::to_string((today_ - 10) * kDay)) charted = bar.Attr("data-clicks") == "7";
  }
  EXPECT_TRUE(charted) << dom;
}

TEST_F(IntegrationDashboardTest, PageIsServedAtTheRootWithNoOutsideResources) {
  auto r = clickatron::testing::HttpGet(cluster_.Peer("api-0"), "/?ns=u&key=dash");
  ASSERT_EQ(r.status_code, 200);
  EXPECT_EQ(r.Header("Content-Type").rfind("text/html", 0), 0u) << r.Header("Content-Type");
  EXPECT_NE(r.body.find("<svg id=\"chart\""), std::string::npos);
  // The network may be closed: the page loads its own script from this node
  // and nothing else (no other src=, no stylesheet or font links, no CSS
  // imports), and the browser is told so.
  const std::string own_script = "<script src=\"dashboard.js\"></script>";
  const size_t script_at = r.body.find(own_script);
  ASSERT_NE(script_at, std::string::npos) << "the page does not load dashboard.js";
  std::string rest = r.body;
  rest.erase(script_at, own_script.size());
  for (const char* outside : {"src=", "rel=\"stylesheet\"", "href=\"http", "href=\"//", "@import", "url(", "@font-face"}) {
    EXPECT_EQ(rest.find(outside), std::string::npos) << outside;
  }
  const std::string csp = r.Header("Content-Security-Policy");
  EXPECT_NE(csp.find("default-src 'none'"), std::string::npos) << csp;
  EXPECT_NE(csp.find("script-src 'self';"), std::string::npos) << csp;
  EXPECT_EQ(csp.find("unsafe-inline'; style"), std::string::npos) << "inline script allowed: " << csp;

  auto script = clickatron::testing::HttpGet(cluster_.Peer("api-0"), "/dashboard.js");
  ASSERT_EQ(script.status_code, 200);
  EXPECT_EQ(script.Header("Content-Type").rfind("text/javascript", 0), 0u) << script.Header("Content-Type");
  EXPECT_EQ(script.Header("X-Content-Type-Options"), "nosniff");
  // It calls this node's API by path, never another origin (the one URL in
  // it is SVG's namespace name, which is never fetched).
  EXPECT_NE(script.body.find("/clicks"), std::string::npos);
  std::string code = script.body;
  const std::string svg_namespace = "'http://www.w3.org/2000/svg'";
  for (size_t at; (at = code.find(svg_namespace)) != std::string::npos;) code.erase(at, svg_namespace.size());
  for (const char* outside : {"http://", "https://", "//cdn", "import("}) {
    EXPECT_EQ(code.find(outside), std::string::npos) << outside;
  }
}

}  // namespace
}  // namespace clickatron::api::testing
