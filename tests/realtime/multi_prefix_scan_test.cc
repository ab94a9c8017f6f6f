// Several prefix scans as one (GET /mfwmatch) over a real RocksDB ring:
// the union of the prefixes' records, each once, in key order, checked
// against a std::map oracle of what was applied. Half the data is
// checkpointed into the store before the rest is applied, so every prefix
// reads the store (through the day cursors its scan shares with the others)
// and the in-memory table, and adds them.
#include "multi_prefix_scan.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <deque>
#include <map>
#include <set>

#include "apply_batch.h"
#include "clickatron/unique_sketch.h"
#include "clickatron/ymdh.h"
#include "ring.h"
#include "small_store.h"
#include "testutil/testutil.h"

namespace clickatron::realtime::multi_prefix_scan_test {
namespace {

using clickatron::testing::TempDir;

const int64_t kToday = DaysFromCivil({2024, 3, 10});

std::string Hour(int64_t day, int hour) { return *YmdhFromUnix(day * kSecondsPerDay + hour * kSecondsPerHour); }

std::vector<std::string> SplitLines(const std::string& text) {
  std::vector<std::string> lines;
  for (size_t start = 0; start < text.size();) {
    const size_t end = text.find('\n', start);
    lines.push_back(text.substr(start, end - start));
    start = end + 1;
  }
  return lines;
}

class MultiPrefixScanTest : public ::testing::Test {
 protected:
  void SetUp() override {
    // Every scan kept, however few records it read, none too (the fixture's
    // prefixes hold a handful): what the cache must get right is the same.
    const Status opened = testing::OpenSmallRing(
        tmp_.path(), kToday, ScanCacheOptions{.max_bytes = 1 << 20, .min_records = 0}, &store_, &ring_);
    ASSERT_TRUE(opened.ok()) << opened.ToString();
    // Keys whose tkeys prefix one another ("a", "ab", "abc"), subtotals, over
    // the three open days; some keys incremented twice.
    std::string body;
    int64_t value = 1;
    for (const char* tkey : {"a", "ab", "abc", "b", "z"}) {
      for (int64_t day : {kToday - 1, kToday, kToday + 1}) {
        for (int hour : {0, 7, 23}) {
          const std::string total = std::string("u|") + tkey + "." + Hour(day, hour);
          const std::string sub = std::string("c.u|") + tkey + ".US." + Hour(day, hour);
          for (const std::string& key : {total, sub}) {
            body += key + "," + std::to_string(value) + "\n";
            ++value;
          }
        }
      }
    }
    body += "u|a." + Hour(kToday, 7) + ",5\n";
    // The first half into the store, the second (the same keys again, and
    // keys of their own) held in memory.
    const size_t half = body.find('\n', body.size() / 2) + 1;
    ApplyLines(body.substr(0, half), 1);
    ring_->checkpointer().Start();
    ASSERT_GE(ring_->checkpointer().stats().completed, 1u) << "the first half is in the store";
    std::string again = body.substr(half);
    for (const char* extra : {"u|aa.", "u|b0.", "c.u|b.JP."}) {
      const std::string key = extra + Hour(kToday, 5);
      again += key + ",3\n";
    }
    again += "u|a." + Hour(kToday - 1, 0) + ",1000\n";  // also in the store
    ApplyLines(again, 2);
  }

  void ApplyLines(const std::string& lines, uint64_t seq) {
    bodies_.push_back(lines);
    auto batch = ParseBatch(bodies_.back());
    ASSERT_TRUE(batch.ok()) << batch.status().ToString();
    ASSERT_TRUE(ring_->Apply("test", seq, *batch).ok());
    for (const std::string& line : SplitLines(lines)) {
      oracle_[line.substr(0, line.find(','))] += std::stoll(line.substr(line.find(',') + 1));
    }
  }

  // The oracle's lines of every key starting with any of `prefixes`, sorted, once.
  std::string Expected(const std::vector<std::string>& prefixes) const {
    return clickatron::testing::LinesWithAnyPrefix(oracle_, prefixes);
  }

  // Every line of a multi-prefix scan, read `budget` bytes at a time:
  // through the ring (and its scan cache), or with `uncached` straight from
  // the store and tables with no cache.
  std::string ReadAll(const std::vector<std::string>& prefixes, size_t budget, Status* status = nullptr,
                      int* fills = nullptr, bool uncached = false) {
    auto scan = uncached ? ScanPrefixes(ring_->checkpointer().View(), ring_->ReadableDays(), DisjointPrefixes(prefixes))
                         : ring_->ScanMany(DisjointPrefixes(prefixes), std::nullopt);
    EXPECT_TRUE(scan.ok()) << scan.status().ToString();
    if (!scan.ok()) return "";
    std::unique_ptr<LineSource> source = std::move(scan).value();
    std::string out;
    int n = 1;
    while (source->Fill(&out, budget)) ++n;
    if (status) *status = source->status();
    if (fills) *fills = n;
    return out;
  }

  TempDir tmp_;
  std::unique_ptr<ShardStore> store_;
  std::unique_ptr<Ring> ring_;
  std::deque<std::string> bodies_;
  std::map<std::string, int64_t> oracle_;
};

TEST(DisjointPrefixesTest, SortsAndDropsDuplicatesAndExtensions) {
  EXPECT_EQ(DisjointPrefixes({"u|b.", "u|ab.", "u|a", "u|a", "c.u|a.", "u|a."}),
            (std::vector<std::string>{"c.u|a.", "u|a", "u|b."}));
  EXPECT_EQ(DisjointPrefixes({"u|a.", "u|ab."}), (std::vector<std::string>{"u|a.", "u|ab."}));
  EXPECT_EQ(DisjointPrefixes({"x", ""}), (std::vector<std::string>{""}));
}

TEST_F(MultiPrefixScanTest, UnionOfThePrefixesInKeyOrderEachRecordOnce) {
  for (const std::vector<std::string>& prefixes : std::vector<std::vector<std::string>>{
           {"u|ab.", "u|a.", "c.u|b.", "u|zz."},
           {"u|a", "u|ab.", "u|a."},          // nested: the records of "u|ab." come once
           {"u|b.", "u|b.", "c.u|abc.US."},  // duplicates
           {"nothing."}}) {
    const std::string expected = Expected(prefixes);
    for (bool uncached : {true, false}) {
      for (size_t budget : {size_t{1}, size_t{64}, size_t{1} << 20}) {
        Status st;
        EXPECT_EQ(ReadAll(prefixes, budget, &st, nullptr, uncached), expected)
            << prefixes.front() << " budget " << budget << (uncached ? " uncached" : "");
        EXPECT_TRUE(st.ok()) << st.ToString();
      }
    }
  }
}

TEST_F(MultiPrefixScanTest, ASmallAnswerEndsInOneFill) {
  int fills = 0;
  const std::string out = ReadAll({"u|a.", "u|b."}, 256 << 10, nullptr, &fills);
  EXPECT_EQ(out, Expected({"u|a.", "u|b."}));
  EXPECT_EQ(fills, 1);  // so the daemon answers a plain 200, not a chunked stream
}

// Each prefix's share is what a scan of that prefix alone answers.
TEST_F(MultiPrefixScanTest, EachPrefixsLinesAreItsOwnScan) {
  const std::vector<std::string> prefixes = DisjointPrefixes({"c.u|a.", "c.u|b.", "u|a.", "u|aa.", "u|abc.", "u|b.",
                                                              "u|b0.", "u|nothing.", "u|z."});
  const std::string all = ReadAll(prefixes, 1 << 20, nullptr, nullptr, /*uncached=*/true);
  EXPECT_EQ(ReadAll(prefixes, 1 << 20), all);  // the first through the cache
  EXPECT_EQ(ReadAll(prefixes, 1 << 20), all);  // and from it
  for (const std::string& p : prefixes) {
    auto one = ring_->Scan(p, std::nullopt, 0);
    ASSERT_TRUE(one.ok());
    std::string alone;
    while ((*one)->Fill(&alone, 1 << 20)) {
    }
    std::string mine;
    for (const std::string& line : SplitLines(all)) {
      if (line.starts_with(p)) mine += line + "\n";
    }
    EXPECT_EQ(mine, alone) << p;
  }
  EXPECT_EQ(all, Expected(prefixes));
}

// A scan answers what the ring held when it was made, even once a
// checkpoint has moved the in-memory records into the store (and dropped
// the table) and more were applied before its later prefixes are read.
TEST_F(MultiPrefixScanTest, AScanReadsTheRingAsItWasWhenMade) {
  const std::vector<std::string> prefixes = {"c.u|a.", "u|a.", "u|b."};
  const std::string expected = Expected(prefixes);
  auto scan = ring_->ScanMany(prefixes, std::nullopt);
  ASSERT_TRUE(scan.ok()) << scan.status().ToString();
  std::string out;
  ASSERT_TRUE((*scan)->Fill(&out, 1));  // the first line only
  const uint64_t before = ring_->checkpointer().stats().completed;
  ring_->checkpointer().Start();
  EXPECT_GT(ring_->checkpointer().stats().completed, before);
  ApplyLines("u|b." + Hour(kToday, 7) + ",100000\n", 3);
  while ((*scan)->Fill(&out, 1)) {
  }
  EXPECT_TRUE((*scan)->status().ok());
  EXPECT_EQ(out, expected);
  EXPECT_NE(Expected(prefixes), expected);
  EXPECT_EQ(ReadAll(prefixes, 1 << 20), Expected(prefixes));  // a new scan sees the newer records
}

// The ring's scan cache: a prefix scanned again is read from it, the
// in-memory records still added on top; once a checkpoint has moved records
// into the store, what it kept is not used.
TEST_F(MultiPrefixScanTest, AScanAgainIsTheCachesUntilACheckpointLands) {
  const std::vector<std::string> prefixes = {"c.u|a.", "u|a.", "u|b."};
  const size_t reads = prefixes.size() * ring_->ReadableDays().size();  // (day, prefix) pairs
  const ScanCache::Figures fresh = ring_->scan_cache_figures();
  EXPECT_EQ(ReadAll(prefixes, 1 << 20), Expected(prefixes));
  EXPECT_EQ(ring_->scan_cache_figures().misses, fresh.misses + reads);
  EXPECT_EQ(ring_->scan_cache_figures().entries, fresh.entries + reads);

  ApplyLines("u|a." + Hour(kToday, 7) + ",40\nu|b." + Hour(kToday + 1, 2) + ",2\n", 3);  // held in memory
  EXPECT_EQ(ReadAll(prefixes, 1 << 20), Expected(prefixes));
  EXPECT_EQ(ring_->scan_cache_figures().hits, fresh.hits + reads);

  ring_->checkpointer().Start();  // those records are the store's now, and the table is empty
  ASSERT_EQ(ring_->checkpointer().memory_keys(), 0u);
  const ScanCache::Figures before = ring_->scan_cache_figures();
  EXPECT_EQ(ReadAll(prefixes, 1 << 20), Expected(prefixes));
  EXPECT_EQ(ring_->scan_cache_figures().hits, before.hits);
  EXPECT_EQ(ring_->scan_cache_figures().misses, before.misses + reads);
}

// A day of a scan whose middle prefix the cache keeps and whose others it
// does not: the store cursor shared by the others seeks past the kept one.
TEST_F(MultiPrefixScanTest, APrefixFromTheCacheBetweenPrefixesFromTheStore) {
  EXPECT_EQ(ReadAll({"u|ab."}, 1 << 20), Expected({"u|ab."}));
  const std::vector<std::string> prefixes = {"u|a.", "u|ab.", "u|b."};
  const ScanCache::Figures before = ring_->scan_cache_figures();
  EXPECT_EQ(ReadAll(prefixes, 1), Expected(prefixes));
  const size_t days = ring_->ReadableDays().size();
  EXPECT_EQ(ring_->scan_cache_figures().hits, before.hits + days);        // "u|ab."
  EXPECT_EQ(ring_->scan_cache_figures().misses, before.misses + 2 * days);  // the others
}

// A rotation creates a day's store (and may drop one): views get another
// store version, so nothing kept before it is used after.
TEST_F(MultiPrefixScanTest, ARotationGivesViewsAnotherStoreVersion) {
  const uint64_t before = ring_->checkpointer().View().store_version;
  ring_->checkpointer().Start();  // nothing left in memory: the rotation need not wait
  const uint64_t persisted = ring_->checkpointer().View().store_version;
  EXPECT_GT(persisted, before);
  ASSERT_TRUE(ring_->RotateTo(kToday + 1).ok());
  EXPECT_GT(ring_->checkpointer().View().store_version, persisted);
}

// Only a prefix read to its end is kept: a scan dropped halfway keeps
// nothing of the prefix it was reading.
TEST_F(MultiPrefixScanTest, AScanDroppedHalfwayKeepsOnlyThePrefixesItFinished) {
  const std::vector<std::string> prefixes = {"c.u|a.", "u|a."};
  const size_t days = ring_->ReadableDays().size();
  {
    auto scan = ring_->ScanMany(prefixes, std::nullopt);
    ASSERT_TRUE(scan.ok());
    std::string out;
    // One line at a time until the first line of "u|a." (the second prefix).
    while ((*scan)->Fill(&out, 1) && out.find("\nu|a.") == std::string::npos) {
    }
  }
  EXPECT_EQ(ring_->scan_cache_figures().entries, days);  // "c.u|a." only
  EXPECT_EQ(ReadAll(prefixes, 1 << 20), Expected(prefixes));
  EXPECT_EQ(ring_->scan_cache_figures().entries, 2 * days);
}

// A lone prefix without a limit (/fwmatch) reads through the scan cache
// too, and its lines are ScanPrefix's; with a limit it is ScanPrefix.
TEST_F(MultiPrefixScanTest, ALonePrefixReadsThroughTheCache) {
  const auto read = [&](uint64_t limit) {
    auto scan = ring_->Scan("u|a.", std::nullopt, limit);
    EXPECT_TRUE(scan.ok()) << scan.status().ToString();
    std::string out;
    while (scan.ok() && (*scan)->Fill(&out, 1 << 20)) {
    }
    return out;
  };
  const size_t days = ring_->ReadableDays().size();
  EXPECT_EQ(read(0), Expected({"u|a."}));
  const ScanCache::Figures before = ring_->scan_cache_figures();
  EXPECT_EQ(read(0), Expected({"u|a."}));
  EXPECT_EQ(ring_->scan_cache_figures().hits, before.hits + days);
  const std::vector<std::string> all = SplitLines(Expected({"u|a."}));
  ASSERT_GT(all.size(), 2u);
  EXPECT_EQ(read(2), all[0] + "\n" + all[1] + "\n");
  EXPECT_EQ(ring_->scan_cache_figures().hits, before.hits + days);  // not through the cache
}

// A ring of its own over an empty store, for tests that need days the
// main fixture's data would fill.
class FreshRingTest : public ::testing::Test {
 protected:
  void SetUp() override {
    const Status opened = testing::OpenSmallRing(
        tmp_.path(), kToday, ScanCacheOptions{.max_bytes = 1 << 20, .min_records = 1}, &store_, &ring_);
    ASSERT_TRUE(opened.ok()) << opened.ToString();
  }

  void Apply(const std::string& lines) {
    bodies_.push_back(lines);
    auto batch = ParseBatch(bodies_.back());
    ASSERT_TRUE(batch.ok()) << batch.status().ToString();
    ASSERT_TRUE(ring_->Apply("test", ++seq_, *batch).ok());
  }

  // Every line of a scan, read `budget` bytes at a time.
  static std::string ReadAll(Result<std::unique_ptr<LineSource>> scan, size_t budget) {
    EXPECT_TRUE(scan.ok()) << scan.status().ToString();
    std::string out;
    while (scan.ok() && (*scan)->Fill(&out, budget)) {
    }
    return out;
  }

  TempDir tmp_;
  std::unique_ptr<ShardStore> store_;
  std::unique_ptr<Ring> ring_;
  std::deque<std::string> bodies_;
  uint64_t seq_ = 0;
};

// A day with nothing in the store (Tomorrow before its first checkpoint) is
// found empty once per store version and then not opened: its records in
// memory are still read, and once a checkpoint has moved them into the
// store, the next scan reads them there.
TEST_F(FreshRingTest, ADayEmptyInTheStoreIsReadAgainOnceItsRecordsLand) {
  const auto read = [&] { return ReadAll(ring_->ScanMany({"u|a.", "u|b."}, std::nullopt), 1 << 20); };
  const auto skips = [&] { return ring_->scan_cache_figures().empty_day_skips; };
  const std::string today = "u|a." + Hour(kToday, 3);
  const std::string tomorrow = "u|b." + Hour(kToday + 1, 4);
  Apply(today + ",5\n");
  ring_->checkpointer().Start();  // Today's record in the store; Tomorrow's store empty
  Apply(tomorrow + ",7\n");       // held in memory
  EXPECT_EQ(read(), today + ",5\n" + tomorrow + ",7\n");
  EXPECT_EQ(skips(), 0u);  // found empty now: Yesterday's and Tomorrow's stores
  EXPECT_EQ(read(), today + ",5\n" + tomorrow + ",7\n");
  EXPECT_EQ(skips(), 2u * 2u);  // both days, both prefixes
  ring_->checkpointer().Start();  // Tomorrow's record moves into the store
  ASSERT_EQ(ring_->checkpointer().memory_keys(), 0u);
  EXPECT_EQ(read(), today + ",5\n" + tomorrow + ",7\n");
  EXPECT_EQ(skips(), 4u);  // another store version: found again
  Apply(tomorrow + ",1\n");
  EXPECT_EQ(read(), today + ",5\n" + tomorrow + ",8\n");  // the store's 7 and memory's 1
  EXPECT_EQ(skips(), 4u + 2u);  // Yesterday only
}

// Each key's records in a store file of its own (a checkpoint each), the
// files interleaved in key order: a scan seeks each prefix by its key part,
// skipping the files without it (key_prefix.h), so a cursor left past one
// prefix in one file must not be taken for where the next prefix starts
// (its records are in a file that cursor skipped). Every record, once.
TEST_F(FreshRingTest, PrefixesWhoseRecordsAreInOtherFilesAreEachSought) {
  std::map<std::string, int64_t> oracle;
  const std::vector<std::string> keys = {"a", "b", "c", "d", "e", "f"};
  // Checkpoint 1: a, c, e; checkpoint 2: b, d, f; checkpoint 3: a and d again.
  for (const std::vector<std::string>& file : std::vector<std::vector<std::string>>{
           {"a", "c", "e"}, {"b", "d", "f"}, {"a", "d"}}) {
    std::string body;
    for (const std::string& k : file) {
      for (int hour : {2, 9}) {
        for (const std::string& key : {"u|" + k + "." + Hour(kToday, hour), "c.u|" + k + ".US." + Hour(kToday, hour)}) {
          body += key + ",3\n";
          oracle[key] += 3;
        }
      }
    }
    Apply(body);
    ring_->checkpointer().Start();
    ASSERT_EQ(ring_->checkpointer().memory_keys(), 0u);
  }
  for (const std::string ns : {"u|", "c.u|"}) {
    std::vector<std::string> prefixes;
    for (const std::string& k : keys) prefixes.push_back(ns + k + ".");
    const std::string want = clickatron::testing::LinesWithAnyPrefix(oracle, prefixes);
    EXPECT_EQ(ReadAll(ScanPrefixes(ring_->checkpointer().View(), ring_->ReadableDays(), prefixes), 1 << 20), want)
        << ns;
    EXPECT_EQ(ReadAll(ring_->ScanMany(prefixes, std::nullopt), 1 << 20), want) << ns << " (through the cache)";
    // One key's value, and a prefix shorter than a key part (read in key order).
    EXPECT_EQ(ReadAll(ScanPrefixes(ring_->checkpointer().View(), ring_->ReadableDays(), {ns + "d.", ns + "e"}),
                      1 << 20),
              clickatron::testing::LinesWithAnyPrefix(oracle, {ns + "d.", ns + "e"}))
        << ns;
  }
}

// unite=day: a unique record's hours of one UTC day are one line, keyed by
// the first of them, whose sketch is the union of the day's visitors (the
// store's and memory's parts alike); another record's hours, another day's
// and counters are lines of their own. Checked against sets of visitors
// kept by the test (a handful per day: sketches are exact there).
TEST_F(FreshRingTest, AUniqueRecordsHoursOfADayAreOneLineOfItsVisitors) {
  // By (record, day): the visitors added to any of its hours.
  std::map<std::pair<std::string, int64_t>, std::set<std::string>> visitors;
  const auto sketch_of = [](const auto& tokens) {
    UniqueSketch sketch;
    for (const std::string& t : tokens) sketch.Add(HashVisitor(t));
    return sketch.ToText();
  };
  const auto add = [&](const std::string& record, int64_t day, int hour, std::vector<std::string> tokens) {
    visitors[{record, day}].insert(tokens.begin(), tokens.end());
    Apply(record + Hour(day, hour) + "," + sketch_of(tokens) + "\n");
  };
  add("~u|a.", kToday, 3, {"v1", "v2"});
  add("~u|a.", kToday, 9, {"v2", "v3"});
  add("~u|a.", kToday + 1, 0, {"v9"});
  add("~c.u|a.JP.", kToday, 5, {"v1"});
  add("~c.u|a.JP.", kToday, 6, {"v4"});
  add("~c.u|a.US.", kToday, 5, {"v5"});
  ring_->checkpointer().Start();  // those in the store, the rest in memory
  add("~u|a.", kToday, 9, {"v7"});
  add("~u|a.", kToday, 23, {"v3", "v8"});
  add("~c.u|a.JP.", kToday, 7, {"v1", "v6"});
  const std::string counters = "u|a." + Hour(kToday, 3) + ",4\nu|a." + Hour(kToday, 4) + ",5\n";
  Apply(counters);

  // The records in key order (as the store sorts: "u|" before "~"): the
  // counters' hours, then the day lines.
  std::string expected = counters;
  const auto line = [&](const std::string& record, int64_t day, int first_hour) {
    expected += record + Hour(day, first_hour) + "," + sketch_of(visitors.at({record, day})) + "\n";
  };
  line("~c.u|a.JP.", kToday, 5);
  line("~c.u|a.US.", kToday, 5);
  line("~u|a.", kToday, 3);
  line("~u|a.", kToday + 1, 0);
  const auto many = [&] {
    return ReadAll(ring_->ScanMany({"u|a.", "~c.u|a.", "~u|a."}, std::nullopt, std::nullopt, true), 1);
  };
  EXPECT_EQ(many(), expected);
  EXPECT_EQ(many(), expected);  // again, the store's part from the scan cache
  EXPECT_EQ(ReadAll(ring_->Scan("", std::nullopt, 0, std::nullopt, true), 1), expected);
  // Without it, every hour is a line of its own.
  const std::string hours = ReadAll(ring_->ScanMany({"~u|a."}, std::nullopt), 1 << 20);
  EXPECT_EQ(std::count(hours.begin(), hours.end(), '\n'), 4);  // today 03, 09, 23 and tomorrow 00
}

}  // namespace
}  // namespace clickatron::realtime::multi_prefix_scan_test
