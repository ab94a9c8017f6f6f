// The API node's memory under many distinct queries stays within its read
// cache's bound ([api] read_cache_mb) plus a fixed overhead, with real
// daemons: an archive of 16,000 lookup values of 4 KB each (64 MB), read
// through breakdowns whose 100 rows each name one (every value is fetched
// once, and its archive answer and its value are both things the node
// keeps). Kept without a bound, they would be twice that; with a 4 MiB
// cache the node's peak RSS (VmHWM) stays under 4 + 64 MiB, and the cache
// is seen full (evicting, or not keeping keys it is offered the first
// time). Every answer is checked against the dataset. (The test's XML
// output's api_peak_kib property read 22,356 with read_cache_mb = 4, and
// 158,692 with 1024, so that nothing is evicted.)
#include <gtest/gtest.h>

#include <set>
#include <string>

#include "api/query/cluster_fixture.h"
#include "testutil/testutil.h"

// A namespace of this file's own: its names beside those of the other files
// compiled with it in one unity file (tests/CMakeLists.txt).
namespace clickatron::api::testing::integration_read_cache_bound_test {
namespace {

constexpr int64_t kDay = 86400;
constexpr int kKeys = 160;
constexpr int kValuesPerKey = 100;
constexpr size_t kValueBytes = 4000;  // under kMaxKeyPartLength: stored as a hash and a lookup record
constexpr int kReadCacheMb = 4;
// What the process has beside its caches: code, libraries, the loops'
// buffers, the allocator's own (docs/scaling.md).
constexpr int64_t kOverheadMib = 64;

std::string LongValue(int key, int i) {
  std::string value = fmt::format("https://example.com/k{}/v{}/", key, i);
  value.resize(kValueBytes, 'x');
  return value;
}

TEST(IntegrationReadCacheBoundTest, ManyDistinctQueriesStayWithinTheReadCacheBound) {
  ReadCluster cluster(ReadCluster::Spec{
      .realtime_shards = 1, .archive_shards = 1, .replicas = 1, .read_cache_mb = kReadCacheMb});
  cluster.WriteConfig();
  const int64_t today = TestRingToday();
  const int64_t hour = (today - 3) * kDay + 5 * 3600;
  ReadDataset data;
  for (int k = 0; k < kKeys; ++k) {
    std::vector<ReadDataset::Sub> subs;
    for (int i = 0; i < kValuesPerKey; ++i) subs.push_back({"r", LongValue(k, i)});
    data.Add("u", fmt::format("k{}", k), hour, 1, subs, /*in_archive=*/true, /*in_realtime=*/false);
  }
  cluster.StartWithData(data, today);

  for (int k = 0; k < kKeys; ++k) {
    const std::string target = fmt::format(
        "/breakdown?ns=u&key=k{}&sns=r&unit=day&units=7&rollup=true&limit={}&unit_reference_ts={}", k, kValuesPerKey,
        today * kDay);
    auto j = cluster.Api(target);
    ASSERT_EQ(j["http_status"], 200) << target << " " << j.dump().substr(0, 500);
    std::set<std::string> got;
    for (const auto& row : j["data"]["breakdown"]) {
      EXPECT_EQ(row["clicks"], 1);
      got.insert(row["value"].get<std::string>());
    }
    std::set<std::string> want;
    for (int i = 0; i < kValuesPerKey; ++i) want.insert(LongValue(k, i));
    ASSERT_EQ(got, want) << target;
  }

  auto stats = cluster.Api("/stats");
  ASSERT_EQ(stats["http_status"], 200);
  const auto& cache = stats["data"]["read_cache"];
  ASSERT_TRUE(cache.is_object()) << stats.dump();
  // A full part of the cache either drops an entry for a key offered before
  // or does not keep a new one (its first offer): either says it was full.
  int64_t bytes = 0, evictions = 0, not_kept = 0;
  for (const auto& [kind, figures] : cache["kinds"].items()) {
    bytes += figures["bytes"].get<int64_t>();
    evictions += figures["evictions"].get<int64_t>();
    not_kept += figures["not_kept"].get<int64_t>();
  }
  EXPECT_LE(bytes, cache["capacity_bytes"].get<int64_t>());
  EXPECT_GT(evictions + not_kept, 0) << "the values did not fill the cache: the bound was not exercised";
  const int64_t peak_kib = ProcStatusKb(cluster.Daemon("api-0").pid(), "VmHWM");
  ASSERT_GT(peak_kib, 0);
  ::testing::Test::RecordProperty("api_peak_kib", static_cast<int>(peak_kib));
  EXPECT_LE(peak_kib, (kReadCacheMb + kOverheadMib) * 1024)
      << "the API's peak RSS against read_cache_mb " << kReadCacheMb << " + " << kOverheadMib << " MiB";
}

}  // namespace
}  // namespace clickatron::api::testing::integration_read_cache_bound_test
