// Decoding archive and realtime answers, the archive/realtime day split, mget
// batching and the lookup cache.
#include <gtest/gtest.h>

#include <map>
#include <random>

#include "clickatron/http_client.h"
#include "clickatron/query_string.h"
#include "clickatron/record.h"
#include "clickatron/ymdh.h"
#include "query/fetch/archive_reader.h"
#include "query/cache/lookup_cache.h"
#include "query/merge/read_records.h"
#include "query/fetch/coalesced_reads.h"

namespace clickatron::api {
namespace {

// c41l = 2012-04-01 21:00, c413 = 2012-04-01 03:00, c421 = 2012-04-02 01:00 (b32).
constexpr int64_t kApr1 = 15431;  // days since epoch of 2012-04-01
constexpr int64_t kC413 = kApr1 * 86400 + 3 * 3600;
constexpr int64_t kC41l = kApr1 * 86400 + 21 * 3600;
constexpr int64_t kC421 = (kApr1 + 1) * 86400 + 1 * 3600;

TEST(ReadRecordsTest, ArchiveTotalColumnsEveryHour) {
  HourlyCounts hours;
  // c421 is after any last day the archive may have: loaded history and late
  // data reach the archive without passing the ring, and count all the same.
  ASSERT_TRUE(AddArchiveTotalColumns("c413:2 c41l:5 c421:7", &hours).ok());
  EXPECT_EQ(hours, (HourlyCounts{{kC413, 2}, {kC41l, 5}, {kC421, 7}}));
  HourlyCounts with_newline;  // as /get answers it
  ASSERT_TRUE(AddArchiveTotalColumns("c413:2 c41l:5 c421:7\n", &with_newline).ok());
  EXPECT_EQ(with_newline, hours);
}

TEST(ReadRecordsTest, SpanKeepsOnlyItsHours) {
  const std::string value = "c413:2 c41l:5 c421:7";
  HourlyCounts hours;
  ASSERT_TRUE(AddArchiveTotalColumns(value, &hours, HourSpan{kC41l, kC421}).ok());
  EXPECT_EQ(hours, (HourlyCounts{{kC41l, 5}}));  // end excluded
  HourlyCounts from_start;
  ASSERT_TRUE(AddArchiveTotalColumns(value, &from_start, HourSpan{kC413 + 1, kC421 + 1}).ok());
  EXPECT_EQ(from_start, (HourlyCounts{{kC41l, 5}, {kC421, 7}}));
  HourlyCounts far;  // spans wholly outside the YMDH years
  ASSERT_TRUE(AddArchiveTotalColumns(value, &far, HourSpan{0, 86400}).ok());
  ASSERT_TRUE(AddArchiveTotalColumns(value, &far, HourSpan{4102444800, 4102448400}).ok());
  EXPECT_TRUE(far.empty());
  HourlyCounts rt;
  ASSERT_TRUE(AddRealtimeTotalLines("u|k.c413,2\nu|k.c41l,5\n", "u|k.", std::nullopt, &rt, HourSpan{kC41l, kC421}).ok());
  EXPECT_EQ(rt, (HourlyCounts{{kC41l, 5}}));
  // A malformed code is still an error when it could be anywhere.
  EXPECT_FALSE(AddArchiveTotalColumns("zzzz:1", &rt, HourSpan{kC41l, kC421}).ok());
}

TEST(ReadRecordsTest, ArchiveBadColumnsAreCorruption) {
  HourlyCounts hours;
  for (std::string_view bad : {"c413", "c413:x", "zzzz:1", "c413:1  c41l:2", ":4"}) {
    EXPECT_EQ(AddArchiveTotalColumns(bad, &hours).code(), StatusCode::kCorruption) << bad;
  }
}

// A column of a day already decoded has only its hour's character checked
// (the rest equals a checked code): that character, and a code of another
// length with the same first bytes, are still refused.
TEST(ReadRecordsTest, ABadHourOfADayAlreadyReadIsCorruption) {
  for (std::string_view bad : {"c413:1 c41~:2", "c413:1 c41w:2", "c413:1 c41o:2", "c413:1 c41\x7f:2",
                               "c413:1 c414", "c413:1 c41l:"}) {
    HourlyCounts hours;
    EXPECT_EQ(AddArchiveTotalColumns(bad, &hours).code(), StatusCode::kCorruption) << bad;
    // Also where the bad column lies after the span (checked, not decoded).
    HourlyCounts first_hour;
    EXPECT_EQ(AddArchiveTotalColumns(bad, &first_hour, HourSpan{kC413, kC413 + 3600}).code(),
              StatusCode::kCorruption)
        << bad;
  }
  HourlyCounts hours;
  const std::string nul("c413:1 c41\0\x31:2", 14);  // "c41" then a NUL: not the day of c413
  EXPECT_EQ(AddArchiveTotalColumns(nul, &hours).code(), StatusCode::kCorruption);
  HourlyCounts good;
  ASSERT_TRUE(AddArchiveTotalColumns("c413:1 c41l:2 c421:3", &good).ok());
  const std::map<int64_t, int64_t> want{{kC413, 1}, {kC41l, 2}, {kC421, 3}};
  const std::map<int64_t, int64_t> got(good.begin(), good.end());
  EXPECT_EQ(got, want);
}

// Counts of plain digits are read in place; anything else is ParseCount's
// to judge, as before (a sign, 19 digits, an overflow, garbage).
TEST(ReadRecordsTest, ColumnCountsAgreeWithParseCount) {
  for (std::string_view text : {"0", "7", "007", "123456789012345678", "1234567890123456789", "9223372036854775807",
                                "9223372036854775808", "-3", "+3", "1x", "x", " 1", "1 ", "", "١"}) {
    const Result<int64_t> want = ParseCount(text);
    const Result<int64_t> got = ParseColumnCount(text, "test", text);
    ASSERT_EQ(got.ok(), want.ok()) << text;
    if (want.ok()) {
      EXPECT_EQ(*got, *want) << text;
    } else {
      EXPECT_EQ(got.status().code(), StatusCode::kCorruption) << text;
    }
  }
}

TEST(ReadRecordsTest, DecodedTotalAnswersEverySpanAsTheTextDoes) {
  // Hours of 60 days, some missing, with their counts: the expected hours of
  // any span are picked from this map directly.
  std::mt19937 rng(3);
  std::map<int64_t, int64_t> truth;
  std::string value;
  for (int64_t h = kApr1 * 86400; h < (kApr1 + 60) * 86400; h += 3600) {
    if (rng() % 3 == 0) continue;
    const int64_t count = 1 + static_cast<int64_t>(rng() % 1000);
    truth[h] = count;
    value += (value.empty() ? "" : " ") + *YmdhFromUnix(h) + ":" + std::to_string(count);
  }
  auto decoded = DecodeArchiveTotal(value + "\n");
  ASSERT_TRUE(decoded.ok()) << decoded.status().ToString();
  EXPECT_EQ(decoded->hours.size(), truth.size());
  for (int i = 0; i < 200; ++i) {
    // Spans starting and ending anywhere, also off the hour and outside the data.
    int64_t begin = (kApr1 - 2) * 86400 + static_cast<int64_t>(rng() % (64 * 86400));
    int64_t end = begin + static_cast<int64_t>(rng() % (30 * 86400));
    if (i % 2 == 0) {  // on hour starts, as queries' windows are: the end hour itself is outside
      begin -= begin % 3600;
      end -= end % 3600;
    }
    HourlyCounts want;
    for (auto it = truth.lower_bound(begin); it != truth.end() && it->first < end; ++it) {
      ASSERT_TRUE(want.Add(it->first, it->second).ok());
    }
    HourlyCounts got;
    ASSERT_TRUE(AddArchiveTotalHours(*decoded, &got, HourSpan{begin, end}).ok());
    EXPECT_EQ(got, want) << "span " << begin << " .. " << end;
  }
  HourlyCounts all;
  ASSERT_TRUE(AddArchiveTotalHours(*decoded, &all).ok());
  EXPECT_EQ(all.size(), truth.size());
  // A damaged record is refused whole, whatever span a query would read.
  EXPECT_EQ(DecodeArchiveTotal(value + " zzzz:1").status().code(), StatusCode::kCorruption);
  EXPECT_EQ(DecodeArchiveTotal("c41l:5 c413:2").status().code(), StatusCode::kCorruption);  // out of order
}

TEST(ReadRecordsTest, RealtimeHoursOfArchivedDaysAreIgnored) {
  // The overlap day 2012-04-01 is in the archive and still in realtime.
  const std::string body = "u|jehiah.c413,2\nu|jehiah.c41l,5\nu|jehiah.c421,9\n";
  HourlyCounts hours;
  ASSERT_TRUE(AddRealtimeTotalLines(body, "u|jehiah.", ArchiveLastDay(kApr1), &hours).ok());
  EXPECT_EQ(hours, (HourlyCounts{{kC421, 9}}));
  HourlyCounts all;
  ASSERT_TRUE(AddRealtimeTotalLines(body, "u|jehiah.", std::nullopt, &all).ok());
  EXPECT_EQ(all, (HourlyCounts{{kC413, 2}, {kC41l, 5}, {kC421, 9}}));
}

TEST(ReadRecordsTest, MergedTotalCountsEachHourOnce) {
  HourlyCounts hours;
  ASSERT_TRUE(AddArchiveTotalColumns("c413:2 c41l:5", &hours).ok());
  ASSERT_TRUE(AddRealtimeTotalLines("u|k.c413,2\nu|k.c41l,5\nu|k.c421,1\n", "u|k.", ArchiveLastDay(kApr1), &hours)
                  .ok());
  EXPECT_EQ(hours, (HourlyCounts{{kC413, 2}, {kC41l, 5}, {kC421, 1}}));
}

// The columns summed per hour and key: what the rollup will see.
std::map<int64_t, std::map<std::string, int64_t>> ByHour(const HourlyBreakdown& columns) {
  std::map<int64_t, std::map<std::string, int64_t>> out;
  for (const SubtotalCount& c : columns) out[c.hour][c.key] += c.count;
  return out;
}

TEST(ReadRecordsTest, RealtimeSubtotalLines) {
  const std::string body =
      "c.u|jehiah.JP.c421,1\nc.u|jehiah.US.c41l,4\nc.u|jehiah.US.c421,3\nc.u|jehiah.h0aMB8AuNw4=.c421,2\n";
  HourlyBreakdown b;
  ASSERT_TRUE(AddRealtimeSubtotalLines(body, "c.u|jehiah.", ArchiveLastDay(kApr1), 0, INT64_MAX, &b).ok());
  ASSERT_EQ(ByHour(b).size(), 1u);
  EXPECT_EQ(ByHour(b)[kC421], (std::map<std::string, int64_t>{{"JP", 1}, {"US", 3}, {"h0aMB8AuNw4=", 2}}));
  // The window bounds apply too.
  HourlyBreakdown none;
  ASSERT_TRUE(AddRealtimeSubtotalLines(body, "c.u|jehiah.", std::nullopt, 0, kC41l, &none).ok());
  EXPECT_TRUE(none.empty());
  EXPECT_FALSE(AddRealtimeSubtotalLines("c.u|jehiah.c421,1\n", "c.u|jehiah.", std::nullopt, 0, INT64_MAX, &b).ok());
}

TEST(ReadRecordsTest, ArchiveSubtotalColumns) {
  HourlyBreakdown columns;
  ASSERT_TRUE(AddArchiveSubtotalColumns("JP:1 US:4", kC413, &columns).ok());
  ASSERT_TRUE(AddArchiveSubtotalColumns("US:2", kC413, &columns).ok());
  ASSERT_TRUE(AddArchiveSubtotalColumns("US:7", kC421, &columns).ok());
  EXPECT_EQ(ByHour(columns), (std::map<int64_t, std::map<std::string, int64_t>>{
                                 {kC413, {{"JP", 1}, {"US", 6}}}, {kC421, {{"US", 7}}}}));
  EXPECT_EQ(AddArchiveSubtotalColumns("US:x", kC413, &columns).code(), StatusCode::kCorruption);
}

TEST(ReadRecordsTest, KeyValueLinesSplitAtTheFirstComma) {
  auto lines = SplitKeyValueLines("l|h0aMB8AuNw4=,http://x.com/a,b\nu|k.c413,1\n\n");
  ASSERT_TRUE(lines.ok());
  ASSERT_EQ(lines->size(), 2u);
  EXPECT_EQ((*lines)[0].first, "l|h0aMB8AuNw4=");
  EXPECT_EQ((*lines)[0].second, "http://x.com/a,b");
  EXPECT_FALSE(SplitKeyValueLines("nocomma\n").ok());
}

TEST(ReadRecordsTest, ArchiveViewFromHeaders) {
  HttpResponse r;
  r.status_code = 200;
  r.headers = {{"x-archive-generation", "7"}, {"X-Archive-Last-Day", "2012-04-01"}};
  auto view = ParseArchiveView(r);
  ASSERT_TRUE(view.ok());
  EXPECT_EQ(view->generation, 7u);
  EXPECT_EQ(view->last_day, ArchiveLastDay(kApr1));
  r.headers = {{"X-Archive-Generation", "0"}, {"X-Archive-Last-Day", ""}};
  EXPECT_EQ(ParseArchiveView(r)->last_day, std::nullopt);
  r.headers = {{"X-Archive-Generation", "0"}};
  EXPECT_FALSE(ParseArchiveView(r).ok());
  r.headers = {{"X-Archive-Generation", "x"}, {"X-Archive-Last-Day", ""}};
  EXPECT_FALSE(ParseArchiveView(r).ok());
  r.headers = {{"X-Archive-Generation", "1"}, {"X-Archive-Last-Day", "2012-13-01"}};
  EXPECT_FALSE(ParseArchiveView(r).ok());
  // The shard count the file was cut with: optional (no file, no manifest).
  r.headers = {{"X-Archive-Generation", "7"}, {"X-Archive-Last-Day", ""}};
  EXPECT_EQ(ParseArchiveView(r)->shard_count, 0);
  r.headers = {{"X-Archive-Generation", "7"}, {"X-Archive-Last-Day", ""}, {"x-archive-shard-count", "3"}};
  EXPECT_EQ(ParseArchiveView(r)->shard_count, 3);
  for (const char* bad : {"0", "-1", "3x", ""}) {
    r.headers = {{"X-Archive-Generation", "7"}, {"X-Archive-Last-Day", ""}, {"X-Archive-Shard-Count", bad}};
    EXPECT_FALSE(ParseArchiveView(r).ok()) << bad;
  }
  // The served file's crc32: optional too (no manifest); it tells files of
  // one generation number apart.
  r.headers = {{"X-Archive-Generation", "7"}, {"X-Archive-Last-Day", ""}};
  ASSERT_TRUE(ParseArchiveView(r).ok());
  EXPECT_EQ(ParseArchiveView(r)->file_crc32, std::nullopt);
  r.headers = {{"X-Archive-Generation", "7"}, {"X-Archive-Last-Day", ""}, {"X-Archive-Crc32", "4294967295"}};
  EXPECT_EQ(ParseArchiveView(r)->file_crc32, std::optional<uint32_t>(4294967295u));
  for (const char* bad : {"4294967296", "-1", "12a", ""}) {
    r.headers = {{"X-Archive-Generation", "7"}, {"X-Archive-Last-Day", ""}, {"X-Archive-Crc32", bad}};
    EXPECT_FALSE(ParseArchiveView(r).ok()) << bad;
  }
}

TEST(ReadRecordsTest, MGetTargetsCoverEveryKeyOnceWithinBounds) {
  std::vector<std::string> keys;
  for (int i = 0; i < 1000; ++i) keys.push_back("c.u|key" + std::to_string(i) + ".c41l");
  const auto targets = MGetTargets(keys, 600, 50);
  ASSERT_GT(targets.size(), 1u);
  std::vector<std::string> seen;
  for (const MGetBatch& batch : targets) {
    const std::string& t = batch.target;
    EXPECT_LE(t.size(), 600u);
    ASSERT_EQ(t.rfind("/mget?", 0), 0u);
    QueryArgs args;
    ASSERT_TRUE(ParseQueryString(t.substr(6), &args).ok());
    EXPECT_LE(args.size(), 50u);
    // The batch says which keys it asks: the next ones, in order.
    EXPECT_EQ(batch.first_key, seen.size());
    EXPECT_EQ(batch.keys, args.size());
    for (const std::string* k : args.GetAll("key")) seen.push_back(*k);
  }
  EXPECT_EQ(seen, keys);
  EXPECT_TRUE(MGetTargets({}, 600, 50).empty());
}

TEST(ReadRecordsTest, LookupCacheKeepsValuesByHash) {
  ReadCache read_cache(1 << 20);
  LookupCache cache(read_cache);
  cache.Put("a", "1");
  cache.Put("b", "2");
  EXPECT_EQ(*cache.Get("a"), "1");
  EXPECT_EQ(*cache.Get("b"), "2");
  EXPECT_EQ(cache.Get("c"), nullptr);
  EXPECT_EQ(read_cache.Figures(CacheKind::kLookup).entries, 2u);
}

// Entries are charged their bytes (a lookup's value is a URL of any length):
// a long value is charged its length, and one longer than a shard of the
// read cache can hold is not kept.
TEST(ReadRecordsTest, LookupCacheIsChargedItsValuesBytes) {
  ReadCache read_cache(ReadCache::kShards << 16);
  LookupCache cache(read_cache);
  const std::string long_value(10000, 'x');
  cache.Put("long", long_value);
  EXPECT_EQ(*cache.Get("long"), long_value);
  EXPECT_GE(read_cache.Figures(CacheKind::kLookup).bytes, long_value.size());
  cache.Put("huge", std::string(size_t{1} << 16, 'y'));
  EXPECT_EQ(cache.Get("huge"), nullptr);
  EXPECT_LE(read_cache.charged(), read_cache.capacity());
}

}  // namespace
}  // namespace clickatron::api
