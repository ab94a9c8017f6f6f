// A key's archived total whose text is damaged before a query's window: the
// cache must not change the answer. A first read decodes only the window's
// columns (the ones before it are skipped by bisection), so it answers; the
// second read finds the text kept and decodes it whole to keep it decoded,
// which fails. That read must answer as the first did (and forget the text),
// not fail where a node without the cache never would. A window that holds
// the damaged column fails every time, cache or not.
#include <gtest/gtest.h>

#include <string>

#include "api/query/cluster_fixture.h"
#include "api/query/damaged_reads.h"

namespace clickatron::api::testing::integration_damaged_total_test {
namespace {

constexpr int64_t kDay = 86400;
constexpr int64_t kHour = 3600;
const std::string kKey = "damaged";

class IntegrationDamagedTotalTest : public ::testing::Test {
 protected:
  void SetUp() override {
    today_ = TestRingToday();
    // Hours on D-20 .. D-1, every third hour: days before D-1 in the archive
    // only, D-1 in both.
    for (int64_t h = (today_ - 20) * kDay; h < today_ * kDay; h += 3 * kHour) {
      data_.AddAtRing("u", kKey, h, 2, {}, today_);
    }
    cluster_ = std::make_unique<ReadCluster>(
        ReadCluster::Spec{.realtime_shards = 1, .archive_shards = 1, .replicas = 1, .read_cache_mb = 16});
    cluster_->WriteConfig();
    // The total's first column (D-20's first hour) gets a count that is no
    // number: "CODE:2" becomes "CODE:2x".
    cluster_->archive_tamper = [](std::string* contents) {
      const std::string head = "u|" + kKey + ",";
      const size_t line = contents->find(head);
      ASSERT_NE(line, std::string::npos) << "no total line for " << kKey;
      const size_t first_column_end = contents->find(' ', line + head.size());
      ASSERT_NE(first_column_end, std::string::npos);
      contents->insert(first_column_end, "x");
    };
    cluster_->StartWithData(data_, today_, 1);
  }

  std::string Target(int units) const {
    return fmt::format("/clicks?ns=u&key={}&unit=day&units={}&unit_reference_ts={}", Enc(kKey), units,
                       today_ * kDay + 20 * kHour);
  }

  std::unique_ptr<ReadCluster> cluster_;
  ReadDataset data_;
  int64_t today_ = 0;
};

TEST_F(IntegrationDamagedTotalTest, DamageBeforeTheWindowNeverFailsARepeatedQuery) {
  const nlohmann::json want =
      ExpectedSeries(oracle::Rollup("day", 0, today_ * kDay + 20 * kHour, 5, data_.Hours("u", kKey)));
  ExpectEveryReadAnswersAndTheTextIsForgotten(*cluster_, Target(5), "clicks", want);
}

TEST_F(IntegrationDamagedTotalTest, AWindowHoldingTheDamageFailsEveryTime) {
  for (int ask = 1; ask <= 3; ++ask) {
    const nlohmann::json got = cluster_->Api(Target(25));
    EXPECT_EQ(got["status_txt"], "CORRUPTION") << "ask " << ask << " answered a damaged total: " << got.dump();
  }
}

}  // namespace
}  // namespace clickatron::api::testing::integration_damaged_total_test
