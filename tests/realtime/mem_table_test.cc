#include "mem_table.h"

#include <gtest/gtest.h>

#include <limits>
#include <map>
#include <set>
#include <random>

#include "apply_batch.h"
#include "clickatron/key_codec.h"
#include "clickatron/unique_sketch.h"
#include "clickatron/ymdh.h"

namespace clickatron::realtime::mem_table_test {
namespace {

const int64_t kDay = DaysFromCivil({2012, 3, 25});  // hour 1 is "c3p1"
constexpr int64_t kMax = std::numeric_limits<int64_t>::max();

using Records = std::map<std::string, std::string>;  // key -> value text, as a read line shows it

std::string Ymdh(int64_t day, int hour) { return *YmdhFromUnix(day * kSecondsPerDay + hour * kSecondsPerHour); }
std::string Total(const std::string& tkey, int64_t day = kDay, int hour = 1) {
  return "u|" + tkey + "." + Ymdh(day, hour);
}
std::string Sub(const std::string& tkey, const std::string& skey, int64_t day = kDay, int hour = 1) {
  return "c.u|" + tkey + "." + skey + "." + Ymdh(day, hour);
}
std::string LookupLine(const std::string& value) { return "l|" + Hash12(value) + "," + value + "\n"; }

// Parses `body` with the real parser (so every key is a valid one) and
// applies it; the table copies what it keeps, so the body may go after.
Status Apply(MemTable& table, const std::string& body, int64_t lookup_day = kDay) {
  Result<ParsedBatch> batch = ParseBatch(body);
  EXPECT_TRUE(batch.ok()) << batch.status().ToString();
  if (!batch.ok()) return batch.status();
  return table.Apply(*batch, lookup_day);
}

// Everything a cursor yields from `start`, values as text.
Records Drain(StoreCursor& cursor, std::string_view start = "") {
  Records out;
  std::string last;
  for (cursor.Seek(start); cursor.Valid(); cursor.Next()) {
    const std::string key(cursor.key());
    EXPECT_TRUE(out.empty() || last < key) << "out of order: " << last << " then " << key;
    std::string text;
    EXPECT_TRUE(AppendValueText(key, cursor.raw_value(), &text).ok()) << key;
    out[key] = text;
    last = key;
  }
  EXPECT_TRUE(cursor.status().ok());
  return out;
}
Records Scan(const MemTable& table, const std::string& prefix, int64_t day = kDay) {
  return Drain(*table.NewCursor(day, prefix));
}
Records Filter(const Records& oracle, const std::string& prefix) {
  Records out;
  for (const auto& [key, value] : oracle) {
    if (key.starts_with(prefix)) out.emplace(key, value);
  }
  return out;
}
void AddTo(Records& oracle, const std::string& key, int64_t delta) {
  std::string& sum = oracle[key];
  sum = std::to_string((sum.empty() ? 0 : std::stoll(sum)) + delta);
}
Records AllCounters(const MemTable& table, int64_t day) {
  Records out;
  const auto by_day = table.CheckpointCounters();
  if (auto d = by_day.find(day); d != by_day.end()) {
    for (const SortableCounter& c : d->second) out[std::string(c.key.key)] = std::to_string(c.delta);
  }
  return out;
}

TEST(MemTableTest, KeyGroupEndsAtTheFirstDotAfterTheBar) {
  EXPECT_EQ(KeyGroup("u|jehiah.c3p1"), "u|jehiah.");
  EXPECT_EQ(KeyGroup("c.u|jehiah.US.c3p1"), "c.u|jehiah.");  // the sns's dot comes before the bar
  const std::string lookup = "l|" + Hash12("http://www.facebook.com/");
  EXPECT_EQ(KeyGroup(lookup), lookup);  // base64 has no '.': a lookup is its own group
  EXPECT_EQ(KeyGroup("nobar.x"), "nobar.x");
}

// A table sized like the one before it holds no day until a record comes:
// a clear waiting for memory to empty must not wait forever.
TEST(MemTableTest, ReserveLikeAddsNoDayAndNoRecord) {
  MemTable previous;
  ASSERT_TRUE(Apply(previous, Total("a") + ",1\n" + Total("b", kDay + 1) + ",2\n").ok());
  MemTable next;
  next.ReserveLike(previous);
  EXPECT_FALSE(next.HasDay(kDay));
  EXPECT_FALSE(next.HasDay(kDay + 1));
  EXPECT_TRUE(next.empty());
  ASSERT_TRUE(Apply(next, Total("a") + ",5\n").ok());
  EXPECT_TRUE(next.HasDay(kDay));
  EXPECT_FALSE(next.HasDay(kDay + 1));
  EXPECT_EQ(next.Counter(kDay, Total("a")), 5);
}

TEST(MemTableTest, CountersSumPerKeyAcrossBatches) {
  MemTable t;
  ASSERT_TRUE(Apply(t, Total("a") + ",3\n" + Sub("a", "US") + ",1\n" + Total("a") + ",2\n").ok());
  ASSERT_TRUE(Apply(t, Total("a") + ",10\n" + Total("b") + ",7\n").ok());
  EXPECT_EQ(t.Counter(kDay, Total("a")), 15);
  EXPECT_EQ(t.Counter(kDay, Sub("a", "US")), 1);
  EXPECT_EQ(t.Counter(kDay, Total("b")), 7);
  EXPECT_FALSE(t.Counter(kDay, Total("c")).has_value());
  EXPECT_EQ(t.keys(), 3u);
  EXPECT_EQ(AllCounters(t, kDay), (Records{{Total("a"), "15"}, {Total("b"), "7"}, {Sub("a", "US"), "1"}}));
}

TEST(MemTableTest, LookupsLastPutWinsInTheLookupDay) {
  // Built by hand: the parser insists a value matches its hash, so two
  // values for one key can only come from a hand-made batch.
  const std::string key = "l|AAAAAAAAAAA=";
  MemTable t;
  auto apply = [&](const std::string& value, int64_t day) {
    ParsedBatch batch;
    batch.lines.push_back(BatchLine{.key = key, .value = value, .lookup = true});
    batch.lookups = 1;
    ASSERT_TRUE(t.Apply(batch, day).ok());
  };
  apply("first", kDay);
  apply("second, longer than fifteen bytes", kDay);
  ASSERT_NE(t.Lookup(kDay, key), nullptr);
  EXPECT_EQ(std::string_view(*t.Lookup(kDay, key)), "second, longer than fifteen bytes");
  EXPECT_EQ(t.Lookup(kDay + 1, key), nullptr);
  EXPECT_EQ(t.keys(), 1u);
  EXPECT_EQ(Scan(t, "l|"), (Records{{key, "second, longer than fifteen bytes"}}));
}

TEST(MemTableTest, DaysAreKeptApart) {
  MemTable t;
  // One tkey either side of midnight: two days, two groups named alike.
  ASSERT_TRUE(Apply(t, Total("a", kDay, 23) + ",1\n" + Total("a", kDay + 1, 0) + ",2\n" + LookupLine("v")).ok());
  EXPECT_TRUE(t.HasDay(kDay));
  EXPECT_TRUE(t.HasDay(kDay + 1));
  EXPECT_FALSE(t.HasDay(kDay - 1));
  EXPECT_FALSE(t.HasDay(kDay + 2));
  EXPECT_EQ(t.Counter(kDay, Total("a", kDay, 23)), 1);
  EXPECT_FALSE(t.Counter(kDay + 1, Total("a", kDay, 23)).has_value());
  EXPECT_FALSE(t.Counter(kDay, Total("a", kDay + 1, 0)).has_value());
  EXPECT_EQ(t.keys(kDay), 2u);  // the counter and the lookup (lookup_day is kDay)
  EXPECT_EQ(t.keys(kDay + 1), 1u);
  EXPECT_EQ(Scan(t, "u|a.", kDay), (Records{{Total("a", kDay, 23), "1"}}));
  EXPECT_EQ(Scan(t, "", kDay + 1), (Records{{Total("a", kDay + 1, 0), "2"}}));
  EXPECT_TRUE(Scan(t, "", kDay + 2).empty());
}

TEST(MemTableTest, OverflowInALateLineLeavesTheTableAsBefore) {
  MemTable t;
  ASSERT_TRUE(Apply(t, Total("a") + ",3\n" + Total("hot") + "," + std::to_string(kMax - 5) + "\n").ok());
  const Records before = Scan(t, "");
  const size_t keys_before = AllCounters(t, kDay).size();
  // New keys (a new group, a new key in an old group, a new day), an add to
  // an old key and a lookup all come before the line that overflows.
  const std::string body = Total("a") + ",4\n" + Total("new") + ",1\n" + Sub("a", "US") + ",2\n" +
                           Total("a", kDay, 2) + ",1\n" + Total("a", kDay + 1, 0) + ",9\n" + LookupLine("x") +
                           Total("hot") + ",10\n";
  Status st = Apply(t, body);
  ASSERT_FALSE(st.ok());
  EXPECT_EQ(st.code(), StatusCode::kInternal);
  EXPECT_EQ(st.reason(), "COUNTER_OVERFLOW");
  EXPECT_EQ(t.Counter(kDay, Total("a")), 3);
  EXPECT_EQ(t.Counter(kDay, Total("hot")), kMax - 5);  // the overflowing line itself
  for (const std::string& key : {Total("new"), Sub("a", "US"), Total("a", kDay, 2)}) {
    EXPECT_FALSE(t.Counter(kDay, key).has_value()) << key;
  }
  EXPECT_FALSE(t.Counter(kDay + 1, Total("a", kDay + 1, 0)).has_value());
  EXPECT_EQ(t.Lookup(kDay, "l|" + Hash12("x")), nullptr);
  // Cursors of every shape, and what a checkpoint would write, skip them.
  EXPECT_EQ(Scan(t, ""), before);
  EXPECT_EQ(Scan(t, "u|a."), Filter(before, "u|a."));
  EXPECT_EQ(Scan(t, "u|"), Filter(before, "u|"));
  EXPECT_TRUE(Scan(t, "c.u|a.").empty());
  EXPECT_TRUE(Scan(t, "", kDay + 1).empty());
  EXPECT_EQ(AllCounters(t, kDay), before);
  EXPECT_EQ(AllCounters(t, kDay).size(), keys_before);
  EXPECT_TRUE(AllCounters(t, kDay + 1).empty());
  EXPECT_EQ(t.CheckpointCounters().count(kDay + 1), 0u);  // no empty day for a checkpoint to write
  size_t lookups = 0;
  t.ForEachLookup([&](int64_t, std::string_view, std::string_view) { ++lookups; });
  EXPECT_EQ(lookups, 0u);
  // The table still takes batches, and the undone keys start from zero.
  ASSERT_TRUE(Apply(t, Total("new") + ",1\n" + Total("a") + ",1\n").ok());
  EXPECT_EQ(t.Counter(kDay, Total("new")), 1);
  EXPECT_EQ(t.Counter(kDay, Total("a")), 4);
}

// A sample day with groups that share prefixes ("u|jehiah." and
// "u|jehiahx."), two subtotal namespaces and lookups, for every prefix shape.
class MemTableCursorTest : public ::testing::Test {
 protected:
  void SetUp() override {
    std::string body;
    auto add = [&](const std::string& key, int64_t delta) {
      body += key + "," + std::to_string(delta) + "\n";
      AddTo(oracle_, key, delta);
    };
    // Inserted out of key order, so groups must be sorted.
    for (int hour : {5, 1, 3, 0, 23}) {
      add(Total("jehiah", kDay, hour), hour + 1);
      add(Total("jehiahx", kDay, hour), 2);
      add(Total("je", kDay, hour), 3);
      add(Sub("jehiah", "US", kDay, hour), 4);
      add(Sub("jehiah", "JP", kDay, hour), 5);
      add(Sub("jehiah", "USA", kDay, hour), 6);
      add("r.u|jehiah.x." + Ymdh(kDay, hour), 7);
    }
    add(Total("jehiah", kDay, 5), 100);
    for (const std::string value : {"one", "two", "three"}) {
      body += LookupLine(value);
      oracle_["l|" + Hash12(value)] = value;
    }
    ASSERT_TRUE(Apply(t_, body).ok());
  }
  MemTable t_;
  Records oracle_;
};

TEST_F(MemTableCursorTest, EveryPrefixShapeMatchesTheOracle) {
  const std::string hash = Hash12("two");
  const std::vector<std::string> prefixes = {
      "u|jehiah.",          // a whole group
      "c.u|jehiah.",        // a whole subtotal group
      "c.u|jehiah.US.",     // longer than a group (not "USA")
      "c.u|jehiah.US",      // longer, and "USA" matches too
      "u|jehiah." + Ymdh(kDay, 3),  // one key
      "u|jehiah",           // shorter: "u|jehiahx." matches as well
      "u|je",               // shorter: three groups
      "c.",                 // no bar at all
      "",                   // the whole day, counters and lookups merged
      "l|",                 // lookups only
      "l|" + hash.substr(0, 3),
      "l|" + hash,
      "u|nobody.",          // a group that is not there
      "zzz",
  };
  for (const std::string& prefix : prefixes) {
    EXPECT_EQ(Scan(t_, prefix), Filter(oracle_, prefix)) << "prefix \"" << prefix << "\"";
  }
  EXPECT_EQ(Scan(t_, "").size(), oracle_.size());  // the empty prefix misses nothing
}

TEST_F(MemTableCursorTest, CursorIsACopy) {
  std::unique_ptr<StoreCursor> group = t_.NewCursor(kDay, "u|jehiah.");
  std::unique_ptr<StoreCursor> all = t_.NewCursor(kDay, "");
  // Adds to old keys, new keys inside and before the group, a new lookup.
  ASSERT_TRUE(Apply(t_, Total("jehiah", kDay, 1) + ",1000\n" + Total("jehiah", kDay, 2) + ",1\n" + Total("a") +
                            ",1\n" + LookupLine("four"))
                  .ok());
  EXPECT_EQ(Drain(*group), Filter(oracle_, "u|jehiah."));
  EXPECT_EQ(Drain(*all), oracle_);
  EXPECT_NE(Scan(t_, ""), oracle_);  // a new cursor does see them
}

TEST_F(MemTableCursorTest, SeekLandsOnTheFirstKeyNotBefore) {
  std::unique_ptr<StoreCursor> c = t_.NewCursor(kDay, "u|jehiah.");
  const Records group = Filter(oracle_, "u|jehiah.");
  const std::string third = std::next(group.begin(), 2)->first;
  c->Seek(third);
  ASSERT_TRUE(c->Valid());
  EXPECT_EQ(c->key(), third);
  c->Seek(third + "!");  // between two keys: the next one
  ASSERT_TRUE(c->Valid());
  EXPECT_EQ(c->key(), std::next(group.begin(), 3)->first);
  c->Seek("u|jehiah/");  // past the last key
  EXPECT_FALSE(c->Valid());
  EXPECT_EQ(Drain(*c, "u|a"), group);  // backwards again, from before the first
}

TEST(MemTableTest, BytesGrowWithNewKeysNotWithRepeatedAdds) {
  MemTable t;
  EXPECT_EQ(t.bytes(), 0u);
  ASSERT_TRUE(Apply(t, Total("a") + ",1\n").ok());
  const size_t one = t.bytes();
  EXPECT_GT(one, 0u);
  for (int i = 0; i < 50; ++i) ASSERT_TRUE(Apply(t, Total("a") + ",1\n").ok());
  EXPECT_EQ(t.bytes(), one);
  EXPECT_EQ(t.keys(), 1u);
  ASSERT_TRUE(Apply(t, Total("b") + ",1\n").ok());
  const size_t two = t.bytes();
  EXPECT_GT(two, one);
  ASSERT_TRUE(Apply(t, Sub("abcdefghijk", "US") + ",1\n").ok());  // a longer key: more bytes beside its entry
  EXPECT_GT(t.bytes() - two, two - one);
}

// Thousands of lines over many groups, two days and lookups; after each
// round every cursor shape (each cut of sampled keys) must equal a std::map.
TEST(MemTableTest, RandomBatchesMatchAnOracleForEveryPrefixShape) {
  std::mt19937 rng(20120325);
  const std::vector<std::string> tkeys = {"a", "ab", "abc", "b", "jehiah", "jehiahx", "x_1", "x-2", "Z"};
  const std::vector<std::string> skeys = {"US", "USA", "JP", "de"};
  const std::vector<std::string> values = {"v1", "v2", "a value", "http://example.com/"};
  MemTable t;
  std::map<int64_t, Records> oracle;
  auto pick = [&](const auto& v) -> const auto& { return v[rng() % v.size()]; };
  for (int round = 0; round < 10; ++round) {
    for (int b = 0; b < 30; ++b) {
      std::string body;
      const int lines = 1 + static_cast<int>(rng() % 20);
      for (int i = 0; i < lines; ++i) {
        if (rng() % 10 == 0) {
          const std::string& v = pick(values);
          body += LookupLine(v);
          oracle[kDay]["l|" + Hash12(v)] = v;
          continue;
        }
        const int64_t day = kDay + static_cast<int64_t>(rng() % 2);
        const int hour = static_cast<int>(rng() % 24);
        const std::string key = rng() % 2 ? Total(pick(tkeys), day, hour) : Sub(pick(tkeys), pick(skeys), day, hour);
        const int64_t delta = 1 + static_cast<int64_t>(rng() % 1000);
        body += key + "," + std::to_string(delta) + "\n";
        AddTo(oracle[day], key, delta);
      }
      ASSERT_TRUE(Apply(t, body).ok());
    }
    for (int64_t day : {kDay, kDay + 1}) {
      const Records& want = oracle[day];
      ASSERT_EQ(Scan(t, "", day), want) << "round " << round;
      for (int s = 0; s < 6; ++s) {
        const std::string& key = std::next(want.begin(), static_cast<long>(rng() % want.size()))->first;
        for (size_t cut = 0; cut <= key.size(); ++cut) {
          const std::string prefix = key.substr(0, cut);
          ASSERT_EQ(Scan(t, prefix, day), Filter(want, prefix)) << "round " << round << " prefix " << prefix;
        }
      }
      for (const auto& [key, value] : want) {
        if (key.starts_with("l|")) {
          ASSERT_NE(t.Lookup(day, key), nullptr);
          EXPECT_EQ(std::string_view(*t.Lookup(day, key)), value);
        } else {
          EXPECT_EQ(t.Counter(day, key), std::stoll(value)) << key;
        }
      }
    }
  }
  EXPECT_GT(t.keys(), 300u);  // the test is only worth it over many keys
}

// Unique records ("~" lines) ride on their counters' entries. Lines of both
// kinds, in random batches: most "~" lines right after their counter's (as
// the API sends them), some alone, some after another key's counter, some
// for a key with no counter at all. Every cursor shape, Sketch() and
// ForEachSketch must equal an oracle of plain token sets.
TEST(MemTableTest, UniqueRecordsMatchAnOracleWhereverTheirLinesStand) {
  std::mt19937 rng(20261128);
  const std::vector<std::string> tkeys = {"a", "ab", "jehiah", "jehiahx", "Z"};
  const std::vector<std::string> skeys = {"US", "USA", "JP"};
  MemTable t;
  std::map<int64_t, Records> counters;                                   // day -> counter oracle
  std::map<int64_t, std::map<std::string, std::set<std::string>>> visitors;  // day -> "~" key -> tokens
  auto pick = [&](const auto& v) -> const auto& { return v[rng() % v.size()]; };
  auto sketch_line = [&](int64_t day, const std::string& counter_key, int count) {
    UniqueSketch sketch;
    for (int v = 0; v < count; ++v) {
      const std::string token = "visitor" + std::to_string(rng() % 300);
      sketch.Add(HashVisitor(token));
      visitors[day]["~" + counter_key].insert(token);
    }
    return "~" + counter_key + "," + sketch.ToText() + "\n";
  };
  size_t riders = 0;
  for (int b = 0; b < 200; ++b) {
    std::string body;
    const int lines = 1 + static_cast<int>(rng() % 12);
    for (int i = 0; i < lines; ++i) {
      const int64_t day = kDay + static_cast<int64_t>(rng() % 2);
      const int hour = static_cast<int>(rng() % 24);
      const std::string key = rng() % 2 ? Total(pick(tkeys), day, hour) : Sub(pick(tkeys), pick(skeys), day, hour);
      const int count = 1 + static_cast<int>(rng() % 4);
      switch (rng() % 4) {
        case 0:  // a "~" line alone (its counter may come in another batch, or never)
          body += sketch_line(day, key, count);
          break;
        case 1: {  // a counter line, then another key's "~" line
          body += key + ",2\n";
          AddTo(counters[day], key, 2);
          const std::string other = Total(pick(tkeys) + "x", day, hour);
          body += sketch_line(day, other, count);
          break;
        }
        default:  // the API's shape: the counter, then its "~" line
          body += key + ",1\n";
          AddTo(counters[day], key, 1);
          body += sketch_line(day, key, count);
          ++riders;
      }
    }
    ASSERT_TRUE(Apply(t, body).ok());
  }
  ASSERT_GT(riders, 100u);
  for (int64_t day : {kDay, kDay + 1}) {
    Records want = counters[day];
    Records sketches;
    for (const auto& [key, tokens] : visitors[day]) {
      UniqueSketch all;
      for (const std::string& token : tokens) all.Add(HashVisitor(token));
      want[key] = sketches[key] = all.ToText();
      const UniqueSketch* held = t.Sketch(day, key);
      ASSERT_NE(held, nullptr) << key;
      EXPECT_EQ(held->Estimate(), tokens.size()) << key;  // exact while small
    }
    ASSERT_EQ(Scan(t, "", day), want);
    Records seen;
    t.ForEachSketch([&](int64_t d, std::string_view counter_key, const UniqueSketch& sketch) {
      if (d == day) seen["~" + std::string(counter_key)] = sketch.ToText();
    });
    EXPECT_EQ(seen, sketches);
    // Every cut of every key, counters' and unique records' alike.
    for (const auto& [key, value] : want) {
      for (size_t cut = 0; cut <= key.size(); ++cut) {
        const std::string prefix = key.substr(0, cut);
        ASSERT_EQ(Scan(t, prefix, day), Filter(want, prefix)) << "prefix " << prefix;
      }
    }
  }
  // A counter key is not a unique record, nor the other way round.
  const std::string some = visitors[kDay].begin()->first;
  EXPECT_EQ(t.Sketch(kDay, some.substr(1) + "x"), nullptr);
  EXPECT_EQ(t.Sketch(kDay, some.substr(1)), nullptr);
}

TEST(MemTableTest, UniqueRecordsCountAsKeysAndTheirVisitorsAsBytes) {
  MemTable t;
  ASSERT_TRUE(Apply(t, Total("a") + ",1\n").ok());
  EXPECT_EQ(t.keys(), 1u);
  const size_t counter_only = t.bytes();
  UniqueSketch one;
  one.Add(HashVisitor("v1"));
  ASSERT_TRUE(Apply(t, Total("a") + ",1\n~" + Total("a") + "," + one.ToText() + "\n").ok());
  EXPECT_EQ(t.keys(), 2u);  // the counter and its unique record
  EXPECT_EQ(t.keys(kDay), 2u);
  const size_t with_sketch = t.bytes();
  EXPECT_GT(with_sketch, counter_only);
  UniqueSketch many;
  for (int v = 0; v < 500; ++v) many.Add(HashVisitor("w" + std::to_string(v)));
  ASSERT_TRUE(Apply(t, "~" + Total("a") + "," + many.ToText() + "\n").ok());
  EXPECT_EQ(t.keys(), 2u);
  EXPECT_GE(t.bytes() - with_sketch, 499 * sizeof(uint64_t));  // the hashes it now holds
  ASSERT_NE(t.Sketch(kDay, "~" + Total("a")), nullptr);
  EXPECT_EQ(t.Sketch(kDay, "~" + Total("a"))->Estimate(), 501u);
  EXPECT_EQ(t.Counter(kDay, Total("a")), 2);
}

}  // namespace
}  // namespace clickatron::realtime::mem_table_test
