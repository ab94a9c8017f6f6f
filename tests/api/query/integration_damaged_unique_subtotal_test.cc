// A key's archived unique subtotal records whose column for one value (DE)
// is damaged, read for another value (US): the cache must not change the
// answer. A first read takes only the US column from each record's text and
// never decodes DE's; the second read finds the text kept and decodes it
// whole to keep it decoded, which fails on DE. That read must answer as the
// first did (and forget the text), not fail where a node without the cache
// never would. Asking for DE fails every time, cache or not.
#include <gtest/gtest.h>

#include <string>

#include "api/query/cluster_fixture.h"
#include "api/query/damaged_reads.h"

namespace clickatron::api::testing::integration_damaged_unique_subtotal_test {
namespace {

const std::string kKey = "damagedsub";

class IntegrationDamagedUniqueSubtotalTest : public ::testing::Test {
 protected:
  void SetUp() override {
    today_ = TestRingToday();
    // D-10 .. D-1, every fifth hour: a US visitor and a DE visitor each
    // (a pool of 6 per country, so days and spans hold few distinct ones).
    int n = 0;
    for (int64_t h = (today_ - 10) * kSecondsPerDay; h < today_ * kSecondsPerDay; h += 5 * kSecondsPerHour, ++n) {
      for (const std::string country : {"US", "DE"}) {
        const std::vector<ReadDataset::Sub> subs = {{"c", country}};
        data_.AddAtRing("u", kKey, h, 1, subs, today_);
        data_.AddVisitorAtRing("u", kKey, h, fmt::format("{}-visitor-{}", country, n % 6), subs, today_);
      }
    }
    cluster_ = std::make_unique<ReadCluster>(
        ReadCluster::Spec{.realtime_shards = 1, .archive_shards = 1, .replicas = 1, .read_cache_mb = 16});
    cluster_->WriteConfig();
    // Every unique subtotal record of the key gets a DE sketch that is no
    // base64: "DE:xyz" becomes "DE:!xyz". Its US column stays whole.
    cluster_->archive_tamper = [](std::string* contents) {
      const std::string head = "~c.u|" + kKey + ".";
      int damaged = 0;
      for (size_t line = contents->find(head); line != std::string::npos; line = contents->find(head, line + 1)) {
        if (line != 0 && (*contents)[line - 1] != '\n') continue;
        const size_t end = contents->find('\n', line);
        const size_t de = contents->find("DE:", line);
        ASSERT_LT(de, end) << "no DE column in " << contents->substr(line, end - line);
        contents->insert(de + 3, "!");
        ++damaged;
      }
      ASSERT_GT(damaged, 0) << "no unique subtotal record of " << kKey;
    };
    cluster_->StartWithData(data_, today_, 1);
  }

  // 20:00 UTC today: the window's last day is today.
  int64_t ReferenceTs() const { return today_ * kSecondsPerDay + 20 * kSecondsPerHour; }

  std::string Target(const std::string& country) const {
    return fmt::format("/uniques?ns=u&key={}&sns=c&skey={}&unit=day&units=12&unit_reference_ts={}", Enc(kKey),
                       country, ReferenceTs());
  }

  // The oracle's distinct visitors of `country` per day, newest first.
  nlohmann::json Expected(const std::string& country) const {
    return ExpectedUniqueSeries(
        ExpectedVisitors("day", 0, ReferenceTs(), 12, data_.VisitorHours("c", "u", kKey, country)));
  }

  std::unique_ptr<ReadCluster> cluster_;
  ReadDataset data_;
  int64_t today_ = 0;
};

TEST_F(IntegrationDamagedUniqueSubtotalTest, DamageInAnotherValuesColumnNeverFailsARepeatedQuery) {
  const nlohmann::json want = Expected("US");
  int64_t visitors = 0;
  for (const auto& day : want) visitors += day["uniques"].get<int64_t>();
  ASSERT_GT(visitors, 0) << "the oracle has no visitors to count";
  ExpectEveryReadAnswersAndTheTextIsForgotten(*cluster_, Target("US"), "uniques", want);
}

TEST_F(IntegrationDamagedUniqueSubtotalTest, TheDamagedValueFailsEveryTime) {
  for (int ask = 1; ask <= 3; ++ask) {
    const nlohmann::json got = cluster_->Api(Target("DE"));
    EXPECT_EQ(got["status_txt"], "CORRUPTION") << "ask " << ask << " answered a damaged sketch: " << got.dump();
  }
}

}  // namespace
}  // namespace clickatron::api::testing::integration_damaged_unique_subtotal_test
