// The flush window: same-record increments become one line with the summed
// delta, lookups appear once, and shards stay apart. Checked against a map
// oracle built from the raw records.
#include "ingest/combiner.h"

#include <gtest/gtest.h>

#include <map>
#include <random>
#include <string>

#include "clickatron/oplog_record.h"

namespace clickatron::api {
namespace {

RoutedRecord Counter(uint32_t shard, std::string key, int64_t delta) {
  RoutedRecord r;
  r.shard = shard;
  r.key = std::move(key);
  r.delta = delta;
  return r;
}

RoutedRecord Lookup(uint32_t shard, std::string hash, std::string value) {
  RoutedRecord r;
  r.shard = shard;
  r.lookup = true;
  r.key = std::move(hash);
  r.lookup_value = std::move(value);
  return r;
}

RoutedRecord Visit(uint32_t shard, std::string key, const std::string& token) {
  RoutedRecord r = Counter(shard, std::move(key), 1);
  r.has_visitor = true;
  r.visitor = HashVisitor(token);
  return r;
}

std::map<std::string, std::string> Lines(const std::string& text) {
  std::map<std::string, std::string> out;
  ForEachPayloadLine(text, [&](std::string_view line) {
    size_t comma = line.find(',');
    EXPECT_NE(comma, std::string_view::npos);
    auto [it, inserted] = out.emplace(std::string(line.substr(0, comma)), std::string(line.substr(comma + 1)));
    EXPECT_TRUE(inserted) << "key twice in one batch: " << line;
  });
  return out;
}

TEST(WriteCombinerTest, AWindowsVisitorsOfOneRecordFoldIntoOneSketchLine) {
  Combiner c(1);
  c.Add(Visit(0, "u|x.c413", "alice"));
  c.Add(Visit(0, "u|x.c413", "bob"));
  c.Add(Visit(0, "u|x.c413", "alice"));
  c.Add(Counter(0, "u|x.c413", 2));     // a click without uniq= counts, adds no visitor
  c.Add(Counter(0, "u|y.c413", 1));     // never a visitor: no unique line
  EXPECT_EQ(c.lines(0), 3u);
  Combiner::Lines l = c.Take(0);
  EXPECT_EQ(l.count, 3u);
  UniqueSketch both;  // what the shard must get: the set {alice, bob}
  both.Add(HashVisitor("bob"));
  both.Add(HashVisitor("alice"));
  const std::map<std::string, std::string> want = {
      {"u|x.c413", "5"}, {"~u|x.c413", both.ToText()}, {"u|y.c413", "1"}};
  EXPECT_EQ(Lines(l.text), want);
  EXPECT_TRUE(c.empty());
  c.Add(Visit(0, "u|x.c413", "carol"));  // the next window starts without the old visitors
  UniqueSketch carol;
  carol.Add(HashVisitor("carol"));
  EXPECT_EQ(Lines(c.Take(0).text).at("~u|x.c413"), carol.ToText());
}

TEST(WriteCombinerTest, ThreeIncrementsOfOneRecordBecomeOneLine) {
  Combiner c(1);
  for (int i = 0; i < 3; ++i) c.Add(Counter(0, "u|x.c413", 1));
  ASSERT_EQ(c.lines(0), 1u);
  Combiner::Lines l = c.Take(0);
  EXPECT_EQ(l.text, "u|x.c413,3\n");
  EXPECT_EQ(l.count, 1u);
  EXPECT_EQ(l.records, 3u);
  EXPECT_TRUE(c.empty());
  EXPECT_EQ(c.Take(0).count, 0u);  // the window starts empty again
}

// Windows one after another reuse the combiner's table: a key of an earlier
// window is new again in the next one, and a burst of distinct keys (the
// table grown large, then started small again) loses and doubles nothing.
TEST(WriteCombinerTest, LaterWindowsStartEmptyAfterABurstOfDistinctKeys) {
  Combiner c(1);
  for (int i = 0; i < 40000; ++i) c.Add(Counter(0, "u|k" + std::to_string(i) + ".c413", 1));
  c.Add(Counter(0, "u|k7.c413", 2));
  Combiner::Lines burst = c.Take(0);
  EXPECT_EQ(burst.count, 40000u);
  EXPECT_EQ(burst.records, 40001u);
  const std::map<std::string, std::string> lines = Lines(burst.text);
  ASSERT_EQ(lines.size(), 40000u);
  EXPECT_EQ(lines.at("u|k7.c413"), "3");
  EXPECT_EQ(lines.at("u|k39999.c413"), "1");

  for (int window = 0; window < 3; ++window) {
    c.Add(Counter(0, "u|k7.c413", 5));
    c.Add(Counter(0, "u|k8.c413", 1));
    c.Add(Counter(0, "u|k7.c413", 5));
    Combiner::Lines l = c.Take(0);
    EXPECT_EQ(Lines(l.text), (std::map<std::string, std::string>{{"u|k7.c413", "10"}, {"u|k8.c413", "1"}}))
        << "window " << window;
    EXPECT_EQ(l.records, 3u);
  }
}

TEST(WriteCombinerTest, RandomStreamMatchesAMapOracle) {
  std::mt19937 rng(42);
  const uint32_t shards = 3;
  Combiner c(shards);
  std::vector<std::map<std::string, std::string>> oracle(shards);
  std::map<std::string, int64_t> sums;
  size_t records = 0;
  for (int i = 0; i < 20000; ++i) {
    uint32_t shard = rng() % shards;
    // Skewed keys: a few hot ones, a long tail.
    int k = (rng() % 4 == 0) ? static_cast<int>(rng() % 1000) : static_cast<int>(rng() % 5);
    std::string key = "u|k" + std::to_string(k * shards + shard) + ".c413";
    int64_t delta = 1 + static_cast<int64_t>(rng() % 1000);
    sums[key] += delta;
    c.Add(Counter(shard, key, delta));
    ++records;
    if (rng() % 10 == 0) {
      std::string hash = "h" + std::to_string(rng() % 50 * shards + shard);
      oracle[shard]["l|" + hash] = "value of " + hash;
      c.Add(Lookup(shard, hash, "value of " + hash));
      ++records;
    }
  }
  for (const auto& [key, sum] : sums) {
    uint32_t shard = static_cast<uint32_t>(std::stoi(key.substr(3)) % shards);
    oracle[shard][key] = std::to_string(sum);
  }
  uint64_t taken_records = 0;
  for (uint32_t s = 0; s < shards; ++s) {
    EXPECT_EQ(c.lines(s), oracle[s].size());
    Combiner::Lines l = c.Take(s);
    EXPECT_EQ(l.count, oracle[s].size());
    EXPECT_EQ(Lines(l.text), oracle[s]) << "shard " << s;
    taken_records += l.records;
  }
  EXPECT_EQ(taken_records, records);
}

TEST(WriteCombinerTest, LookupValuesMayHoldCommas) {
  Combiner c(1);
  c.Add(Lookup(0, "h0aMB8AuNw4=", "http://x/?a=1,2"));
  c.Add(Lookup(0, "h0aMB8AuNw4=", "http://x/?a=1,2"));
  EXPECT_EQ(c.Take(0).text, "l|h0aMB8AuNw4=,http://x/?a=1,2\n");
}

}  // namespace
}  // namespace clickatron::api
