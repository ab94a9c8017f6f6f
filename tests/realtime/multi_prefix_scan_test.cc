// Several prefix scans as one (GET /mfwmatch) over a real RocksDB ring:
// the union of the prefixes' records, each once, in key order, checked
// against a std::map oracle of what was applied.
#include "multi_prefix_scan.h"

#include <gtest/gtest.h>

#include <deque>
#include <map>

#include "apply_batch.h"
#include "clickatron/ymdh.h"
#include "ring.h"
#include "testutil/testutil.h"

namespace clickatron::realtime {
namespace {

using clickatron::testing::TempDir;

const int64_t kToday = DaysFromCivil({2024, 3, 10});

std::string Hour(int64_t day, int hour) { return *YmdhFromUnix(day * kSecondsPerDay + hour * kSecondsPerHour); }

class MultiPrefixScanTest : public ::testing::Test {
 protected:
  void SetUp() override {
    StoreOptions options;
    options.write_buffer_mb = 4;
    options.block_cache_mb = 4;
    auto store = ShardStore::Open(tmp_.path(), options);
    ASSERT_TRUE(store.ok()) << store.status().ToString();
    store_ = std::move(store).value();
    auto ring = Ring::Open(store_.get(), kToday);
    ASSERT_TRUE(ring.ok()) << ring.status().ToString();
    ring_ = std::move(ring).value();
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
            oracle_[key] += value;
            ++value;
          }
        }
      }
    }
    body += "u|a." + Hour(kToday, 7) + ",5\n";
    oracle_["u|a." + Hour(kToday, 7)] += 5;
    bodies_.push_back(body);
    auto batch = ParseBatch(bodies_.back());
    ASSERT_TRUE(batch.ok()) << batch.status().ToString();
    ASSERT_TRUE(ring_->Apply("test", 1, *batch).ok());
  }

  // The oracle's lines of every key starting with any of `prefixes`, sorted, once.
  std::string Expected(const std::vector<std::string>& prefixes) const {
    return clickatron::testing::LinesWithAnyPrefix(oracle_, prefixes);
  }

  // Every line of a chained scan, read `budget` bytes at a time.
  std::string ReadAll(const std::vector<std::string>& prefixes, size_t budget, Status* status = nullptr,
                      int* fills = nullptr) {
    auto source = ChainPrefixScans(DisjointPrefixes(prefixes),
                                   [this](std::string_view p) { return ring_->Scan(p, std::nullopt, 0); });
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
    for (size_t budget : {size_t{1}, size_t{64}, size_t{1} << 20}) {
      Status st;
      EXPECT_EQ(ReadAll(prefixes, budget, &st), expected) << prefixes.front() << " budget " << budget;
      EXPECT_TRUE(st.ok()) << st.ToString();
    }
  }
}

TEST_F(MultiPrefixScanTest, ASmallAnswerEndsInOneFill) {
  int fills = 0;
  const std::string out = ReadAll({"u|a.", "u|b."}, 256 << 10, nullptr, &fills);
  EXPECT_EQ(out, Expected({"u|a.", "u|b."}));
  EXPECT_EQ(fills, 1);  // so the daemon answers a plain 200, not a chunked stream
}

TEST_F(MultiPrefixScanTest, AScanThatCannotOpenEndsTheLinesWithItsError) {
  int opened = 0;
  auto source = ChainPrefixScans({"u|a.", "u|b."}, [&](std::string_view p) -> Result<std::unique_ptr<LineSource>> {
    if (++opened == 2) return Status::IoError("disk gone");
    return ring_->Scan(p, std::nullopt, 0);
  });
  std::string out;
  while (source->Fill(&out, 1 << 20)) {
  }
  EXPECT_EQ(source->status().code(), StatusCode::kIoError);
  EXPECT_EQ(out, Expected({"u|a."}));  // what came before the failure, whole lines
  EXPECT_EQ(source->lines(), 9u);  // the "u|a." keys: 3 days x 3 hours
}

}  // namespace
}  // namespace clickatron::realtime
