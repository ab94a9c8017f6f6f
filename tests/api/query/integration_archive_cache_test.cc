// The API node's cache of archive answers (archive_reply_cache.h), end to
// end: real daemons on loopback, every expected answer from the dataset's own
// oracle (ReadDataset + oracle::Rollup), never from the code under test.
//
//  - answers served from the cache are exact, and repeats are served from it;
//  - a new archive file loaded by the replicas by hand (no rebuild told
//    realtime) is picked up: while it happens every answer is wholly the old
//    file's or wholly the new one's, and a query that starts
//    CachedArchiveReader::kReconfirmEvery (and a margin) after every replica serves
//    the new file answers the new one (the reader asks a replica it has not
//    heard from for that long which file it serves);
//  - kept answers outlive their replica (a file never changes): after the
//    only replica died, queries of kept keys stay exact, and a key never
//    asked answers 503 SHARD_UNAVAILABLE;
//  - with read_cache_mb = 0 nothing is kept, probed or counted.
// What a deploy by the rebuild does to kept answers (realtime's answers say
// it) is tests/integration/archive_cache_deploy_test.cc's.
//
// Waits poll a condition with a bounded deadline; the short pauses between
// polls only pace the loop.
#include <gtest/gtest.h>

#include <chrono>
#include <csignal>
#include <iostream>
#include <memory>
#include <optional>
#include <random>
#include <thread>

#include "api/query/cluster_fixture.h"
#include "query/cache/cached_archive_reader.h"

namespace clickatron::api::testing {
namespace {

using Clock = std::chrono::steady_clock;
using std::chrono::milliseconds;

constexpr int64_t kDay = 86400;
constexpr int64_t kHour = 3600;
constexpr auto kDeadline = std::chrono::seconds(10);
constexpr auto kPace = milliseconds(20);

const std::string kKey = "cached";
const std::string kOtherKey = "also-cached";
const std::vector<std::string> kValues = {"US", "JP", "http://long.example/referrer"};

// One query and its answer by the oracle.
struct Expected {
  std::string target;
  std::string field;  // data.<field> holds the answer: "clicks" or "breakdown"
  nlohmann::json want;
};

class IntegrationArchiveCacheTest : public ::testing::Test {
 protected:
  // Hours over D-20 .. D (D = the ring's Today): days before D-1 in the
  // archive only, D-1 in both, D in realtime only; one subtotal namespace.
  void BuildDataset() {
    today_ = TestRingToday();
    ref_ = today_ * kDay + 20 * kHour;
    std::mt19937_64 rng(11);
    for (int64_t h = (today_ - 20) * kDay; h < (today_ + 1) * kDay; h += kHour) {
      if (rng() % 3 == 0) continue;
      data_.AddAtRing("u", kKey, h, 1 + static_cast<int64_t>(rng() % 9), {{"c", kValues[rng() % kValues.size()]}},
                      today_);
      if (rng() % 5 == 0) {
        data_.AddAtRing("u", kOtherKey, h, 20 + static_cast<int64_t>(rng() % 30),
                        {{"c", rng() % 2 ? "FR" : "US"}}, today_);
      }
    }
  }

  void StartCluster(ReadCluster::Spec spec) {
    cluster_ = std::make_unique<ReadCluster>(spec);
    cluster_->WriteConfig();
    BuildDataset();
    cluster_->StartWithData(data_, today_, 1);
  }
  // One realtime and one archive shard of `replicas`, the cache on (the
  // tests of a replica's file changing).
  void StartOneShard(int replicas) {
    StartCluster({.realtime_shards = 1, .archive_shards = 1, .replicas = replicas, .read_cache_mb = 16});
  }

  static std::string SeriesTarget(const std::string& key, int tz, int64_t ref) {
    return fmt::format("/clicks?ns=u&key={}&unit=day&units=25&hour_offset={}&unit_reference_ts={}", Enc(key), tz,
                       ref);
  }
  static std::string BreakdownTarget(const std::string& key, int tz, int64_t ref) {
    return fmt::format("/breakdown?sns=c&ns=u&key={}&unit=day&units=25&hour_offset={}&unit_reference_ts={}",
                       Enc(key), tz, ref);
  }

  // The series and the breakdown of `key` at offset `tz`, as the oracle of
  // `data` has them.
  std::vector<Expected> Queries(const ReadDataset& data, const std::string& key, int tz) const {
    std::vector<Expected> out;
    out.push_back({SeriesTarget(key, tz, ref_), "clicks",
                   ExpectedSeries(oracle::Rollup("day", tz, ref_, 25, data.Hours("u", key)))});
    std::map<std::string, int64_t> sums;
    for (const auto& [value, hours] : data.SubHours("c", "u", key)) {
      for (const auto& u : oracle::Rollup("day", tz, ref_, 25, hours)) sums[value] += u.clicks;
    }
    out.push_back({BreakdownTarget(key, tz, ref_), "breakdown", ExpectedTop(sums, 100)});
    return out;
  }

  // Every query of keys x offsets.
  std::vector<Expected> AllQueries(const ReadDataset& data, const std::vector<std::string>& keys,
                                   const std::vector<int>& tzs) const {
    std::vector<Expected> out;
    for (const std::string& key : keys) {
      for (int tz : tzs) {
        for (Expected& e : Queries(data, key, tz)) out.push_back(std::move(e));
      }
    }
    return out;
  }

  // Asks `q`; true when the answer is 200 and equals the oracle.
  bool Matches(const nlohmann::json& answer, const Expected& q) const {
    return answer["http_status"] == 200 && answer.contains("data") && answer["data"].is_object() &&
           answer["data"][q.field] == q.want;
  }
  void ExpectExact(const Expected& q) {
    auto j = cluster_->Api(q.target);
    EXPECT_TRUE(Matches(j, q)) << q.target << "\n got: " << j.dump() << "\n want: " << q.want.dump();
  }

  void ExpectNextFilePickedUp(uint64_t next_generation);

  // The crc32 of the file archive member `name` serves, by its own /manifest
  // (-1: no answer or no manifest).
  int64_t ServedCrc32(const std::string& name) {
    auto r = HttpGet(cluster_->Peer(name), "/manifest?shard=0", 2000);
    if (r.status_code != 200) return -1;
    auto j = nlohmann::json::parse(r.body, nullptr, false);
    if (j.is_discarded() || !j["data"].is_object() || !j["data"]["crc32"].is_number_integer()) return -1;
    return j["data"]["crc32"].get<int64_t>();
  }

  std::unique_ptr<ReadCluster> cluster_;
  ReadDataset data_;
  int64_t today_ = 0;
  int64_t ref_ = 0;
};

// Repeated queries are answered from the cache, and those answers are the
// oracle's, in every offset, for two keys side by side.
TEST_F(IntegrationArchiveCacheTest, HitsAreExact) {
  StartCluster({.realtime_shards = 1, .archive_shards = 2, .replicas = 1, .read_cache_mb = 16});
  const std::vector<Expected> queries = AllQueries(data_, {kKey, kOtherKey}, {0, -5, 9, -12, 14});
  for (const Expected& q : queries) ASSERT_GT(q.want.size(), 0u) << q.target;

  // The first round fills the cache.
  for (const Expected& q : queries) ExpectExact(q);
  const int64_t requests_before = cluster_->ReadFigure("archive_requests");
  const int64_t hits_before = cluster_->ReadFigure("archive_cache_hits");
  ASSERT_GT(requests_before, 0);

  constexpr int kRepeats = 3;
  int asked = 0;
  for (int round = 0; round < kRepeats; ++round) {
    for (const Expected& q : queries) {
      ExpectExact(q);
      ++asked;
    }
  }
  const int64_t hits = cluster_->ReadFigure("archive_cache_hits") - hits_before;
  const int64_t requests = cluster_->ReadFigure("archive_requests") - requests_before;
  EXPECT_GT(hits, 0);
  std::cout << "[ info ] " << asked << " repeated queries: " << hits << " cache hits, " << requests
            << " archive requests (first round: " << requests_before << ")\n";
  // Every one of these queries reads archived days; had each gone to a
  // replica, there would be at least one archive request per query.
  EXPECT_LT(requests, asked) << "archive requests " << requests << " for " << asked << " repeated queries";
  EXPECT_GT(cluster_->ReadFigure("archive_cache_misses"), 0);  // the first round
  EXPECT_EQ(cluster_->ReadFigure("archive_cache_evictions"), 0);  // a few keys in 16 MB
  // From the third ask on, kept subtotal records are read decoded.
  EXPECT_GT(cluster_->ReadFigure("archive_cache_decoded_hits"), 0);
}

// The next file (other counts for the same key, same last day), numbered
// `next_generation`, loaded by both replicas is picked up; meanwhile each
// answer is one file's, whole.
void IntegrationArchiveCacheTest::ExpectNextFilePickedUp(uint64_t next_generation) {
  // The reader asks again after kReconfirmEvery; the margin is for the
  // probe's round trip on a loaded machine.
  constexpr milliseconds kReconfirmBound = CachedArchiveReader::kReconfirmEvery + milliseconds(500);
  StartOneShard(2);
  // Generation 2: the same, plus clicks on archived days only (before D-1,
  // which realtime also holds), some under a value generation 1 lacks.
  ReadDataset next = data_;
  for (int64_t day = today_ - 20; day <= today_ - 2; day += 2) {
    next.Add("u", kKey, day * kDay + 7 * kHour, 40, {{"c", "DE"}}, /*in_archive=*/true, /*in_realtime=*/false);
    next.Add("u", kKey, day * kDay + 13 * kHour, 3, {{"c", "JP"}}, true, false);
  }
  const std::vector<Expected> old_queries = AllQueries(data_, {kKey}, {0, -5});
  const std::vector<Expected> new_queries = AllQueries(next, {kKey}, {0, -5});
  ASSERT_EQ(old_queries.size(), new_queries.size());
  for (size_t i = 0; i < old_queries.size(); ++i) {
    ASSERT_EQ(old_queries[i].target, new_queries[i].target);
    ASSERT_NE(old_queries[i].want, new_queries[i].want) << old_queries[i].target << ": the generations must differ";
  }

  // Generation 1, kept.
  for (int round = 0; round < 3; ++round) {
    for (const Expected& q : old_queries) ExpectExact(q);
  }
  ASSERT_GT(cluster_->ReadFigure("archive_cache_hits"), 0);
  // The 25-day breakdowns' span and day records were kept too: the next
  // file's answers below must not be those (its days are the same, its
  // counts are not).
  ASSERT_GT(cluster_->ReadFigure("archive_cache_decoded_hits"), 0);

  cluster_->WriteArchives(next, next_generation, FormatDate(today_ - 1));
  auto next_manifest = ReadManifest(ManifestPathFor(cluster_->ArchiveFilePath(0)));
  ASSERT_TRUE(next_manifest.ok()) << next_manifest.status().ToString();
  const int64_t next_crc = next_manifest->crc32;
  const std::vector<std::string> replicas = {cluster_->ArchiveMember(0, 0), cluster_->ArchiveMember(0, 1)};
  for (const std::string& r : replicas) ASSERT_EQ(::kill(cluster_->Daemon(r).pid(), SIGHUP), 0);

  // When both replicas were first seen serving the next file: a request sent
  // after that can only have been answered from it.
  std::optional<Clock::time_point> all_serve_new;
  int old_answers = 0, new_answers = 0, bound_rounds = 0, new_streak = 0;
  const auto deadline = Clock::now() + kDeadline;
  while (Clock::now() < deadline && !(new_streak >= 8 && bound_rounds >= 3)) {
    if (!all_serve_new) {
      bool all = true;
      for (const std::string& r : replicas) all = all && ServedCrc32(r) == next_crc;
      if (all) all_serve_new = Clock::now();
    }
    const auto started = Clock::now();
    const bool bound = all_serve_new && started >= *all_serve_new + kReconfirmBound;
    bool round_new = true;
    for (size_t i = 0; i < old_queries.size(); ++i) {
      auto j = cluster_->Api(old_queries[i].target);
      if (Matches(j, new_queries[i])) {
        ++new_answers;
        continue;
      }
      round_new = false;
      if (Matches(j, old_queries[i])) {
        ++old_answers;
        if (!bound) continue;
        ADD_FAILURE() << old_queries[i].target << ": the first file's answer from a query started "
                      << std::chrono::duration_cast<milliseconds>(started - *all_serve_new).count()
                      << " ms after both replicas served the next one (kReconfirmEvery "
                      << CachedArchiveReader::kReconfirmEvery.count() << " ms)";
        return;
      }
      ADD_FAILURE() << old_queries[i].target << ": neither generation's answer: " << j.dump()
                    << "\n first file: " << old_queries[i].want.dump()
                    << "\n next file: " << new_queries[i].want.dump();
      return;
    }
    if (bound) ++bound_rounds;
    new_streak = round_new ? new_streak + 1 : 0;
    std::this_thread::sleep_for(kPace);
  }
  ASSERT_TRUE(all_serve_new.has_value()) << "the replicas never served the next file";
  std::cout << "[ info ] answers after the reload: " << old_answers << " of the first file, " << new_answers
            << " of the next one\n";
  EXPECT_GE(new_streak, 8) << "generation 2 not picked up (or not for good) within the deadline; old answers "
                           << old_answers << ", new " << new_answers;
  EXPECT_GE(bound_rounds, 3);
  // And from then on it is kept again, exactly.
  const int64_t hits_before = cluster_->ReadFigure("archive_cache_hits");
  const int64_t decoded_before = cluster_->ReadFigure("archive_cache_decoded_hits");
  for (int round = 0; round < 3; ++round) {
    for (const Expected& q : new_queries) ExpectExact(q);
  }
  EXPECT_GT(cluster_->ReadFigure("archive_cache_hits"), hits_before);
  EXPECT_GT(cluster_->ReadFigure("archive_cache_decoded_hits"), decoded_before)
      << "the next file's records kept, exactly";
}

TEST_F(IntegrationArchiveCacheTest, NewGenerationIsPickedUp) { ExpectNextFilePickedUp(2); }

// A rollback, then a new build: another file with the number of the one
// whose answers were kept. Those must not be taken for the new file's.
TEST_F(IntegrationArchiveCacheTest, AnotherFileWithTheSameGenerationNumberIsPickedUp) { ExpectNextFilePickedUp(1); }

// The only replica of the shard killed: kept answers are of a file that
// never changes, so queries of kept keys stay exact (realtime still answers,
// and says of no newer file); a key never asked has nothing kept and answers
// SHARD_UNAVAILABLE.
TEST_F(IntegrationArchiveCacheTest, KeptAnswersOutliveTheirReplica) {
  StartOneShard(1);
  const std::vector<Expected> queries = AllQueries(data_, {kKey}, {0});
  for (int round = 0; round < 2; ++round) {
    for (const Expected& q : queries) ExpectExact(q);
  }
  ASSERT_GT(cluster_->ReadFigure("archive_cache_hits"), 0);

  const int64_t probes_before = cluster_->ReadFigure("archive_cache_probes");
  cluster_->Daemon(cluster_->ArchiveMember(0, 0)).Kill();
  // Until the reader has asked the dead replica which file it serves (after
  // kReconfirmEvery), and a few rounds after: a probe it cannot answer
  // changes nothing.
  const auto deadline = Clock::now() + kDeadline;
  int rounds_after_probe = 0;
  while (Clock::now() < deadline && rounds_after_probe < 3) {
    const bool probed = cluster_->ReadFigure("archive_cache_probes") > probes_before;
    for (const Expected& q : queries) ExpectExact(q);
    if (probed) ++rounds_after_probe;
    std::this_thread::sleep_for(kPace);
  }
  EXPECT_EQ(rounds_after_probe, 3) << "the reader never asked the dead replica again";
  auto never_asked = cluster_->Api(SeriesTarget(kOtherKey, 0, ref_));
  EXPECT_EQ(never_asked["http_status"], 503) << never_asked.dump();
  EXPECT_EQ(never_asked["status_txt"], "SHARD_UNAVAILABLE") << never_asked.dump();
}

// read_cache_mb = 0: every query goes to the archive, nothing is kept or
// probed, the answers are the oracle's.
TEST_F(IntegrationArchiveCacheTest, OffMeansOff) {
  StartCluster({.realtime_shards = 1, .archive_shards = 2, .replicas = 1, .read_cache_mb = 0});
  const std::vector<Expected> queries = AllQueries(data_, {kKey, kOtherKey}, {0, -5, 9});
  const int64_t requests_before = cluster_->ReadFigure("archive_requests");
  int asked = 0;
  for (int round = 0; round < 3; ++round) {
    for (const Expected& q : queries) {
      ExpectExact(q);
      ++asked;
    }
  }
  EXPECT_EQ(cluster_->ReadFigure("archive_cache_hits"), 0);
  EXPECT_EQ(cluster_->ReadFigure("archive_cache_probes"), 0);
  EXPECT_EQ(cluster_->ReadFigure("archive_cache_misses"), 0);
  EXPECT_EQ(cluster_->ReadFigure("archive_cache_evictions"), 0);
  EXPECT_GE(cluster_->ReadFigure("archive_requests") - requests_before, asked);
}

}  // namespace
}  // namespace clickatron::api::testing
