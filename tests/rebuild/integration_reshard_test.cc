// Changing archive_shards on a live cluster (rebuild_cluster_fixture.h): the
// next generation re-partitions the whole archive into the new count, and the
// files deployed hold exactly the oracle's records cut by it.
#include <gtest/gtest.h>

#include <unistd.h>

#include "rebuild_cluster_fixture.h"

namespace clickatron {
namespace {

class ReshardIntegration : public RebuildIntegration {
 protected:
  // GET on API node 0: the parsed answer, with "http_status".
  nlohmann::json Api(const std::string& target) {
    HttpResponse r = HttpGet(cluster_.Api(0), target, 20000);
    nlohmann::json j = nlohmann::json::parse(r.body, nullptr, false);
    if (j.is_discarded()) j = nlohmann::json{{"unparsed", r.body}};
    j["http_status"] = r.status_code;
    return j;
  }
  int64_t ReadFigure(const std::string& name) {
    const nlohmann::json stats = Api("/stats");
    const nlohmann::json& figure = stats["data"]["read"][name];
    return figure.is_number() ? figure.get<int64_t>() : -1;
  }

  // Generation 1 deployed, the next day's generation built and not deployed
  // (run --build-only), under the fixture's two archive shards.
  void ArchiveADayThenBuildOnlyTheNext(uint32_t seed, uint32_t next_seed, Expectation* expect, std::string* out) {
    ASSERT_NO_FATAL_FAILURE(ArchiveFirstDay(seed, 400, expect));
    PutRandomDay(day_ + 1, next_seed, 300, expect);
    RotateAll(day_ + 2);
    ASSERT_EQ(BuildDayOnly(day_ + 1, out), 0) << *out;
  }

  // Day `day` put into realtime and rebuilt.
  void RunNextDay(int64_t day, uint32_t seed, int increments, Expectation* expect, std::string* out) {
    PutRandomDay(day, seed, increments, expect);
    RotateAll(day + 1);
    ASSERT_EQ(RunDay(day, out), 0) << *out;
  }
};

TEST_F(ReshardIntegration, RaisingArchiveShardsRepartitionsAtTheNextDay) {
  Expectation expect;
  ASSERT_NO_FATAL_FAILURE(ArchiveFirstDay(1, 800, &expect));
  ExpectArchiveCutInto(expect, kShards, 1);

  ASSERT_NO_FATAL_FAILURE(RewriteArchiveShards(3));
  ASSERT_NO_FATAL_FAILURE(StartArchiveReplica(2, 0));
  EXPECT_EQ(ServedGeneration(2), 0);  // the new shard's member has no file yet
  std::string out;
  // Day two has keys and days of day one: the re-partition merges them.
  ASSERT_NO_FATAL_FAILURE(RunNextDay(day_ + 1, 2, 400, &expect, &out));
  EXPECT_NE(out.find("re-partitions the archive from 2 to 3 archive shards"), std::string::npos) << out;
  ExpectArchiveCutInto(expect, 3, 2);

  // The generation after it is the nightly merge again, on 3 shards.
  ASSERT_NO_FATAL_FAILURE(RunNextDay(day_ + 2, 3, 400, &expect, &out));
  EXPECT_EQ(out.find("re-partitions"), std::string::npos) << out;
  ExpectArchiveCutInto(expect, 3, 3);
}

TEST_F(ReshardIntegration, LoweringArchiveShardsTakesTheDroppedShardFromTheWorkDir) {
  Expectation expect;
  ASSERT_NO_FATAL_FAILURE(ArchiveFirstDay(4, 800, &expect));
  const std::string dropped_file = cluster_.Member(ArchiveName(1)).file;
  ASSERT_NO_FATAL_FAILURE(RewriteArchiveShards(1));
  EXPECT_EQ(cluster_.Stop(ArchiveName(1)), 0);  // its member is no longer in the cluster file

  // Without the work dir's copy of the dropped shard's file the rebuild
  // cannot re-partition, and says what to do.
  const std::string kept = cluster_ / "work/gen/1/shard-1.csv";
  ASSERT_TRUE(FileExists(kept));
  const std::string aside = cluster_ / "shard-1.aside";
  ASSERT_TRUE(RenameDurably(kept, aside).ok());
  PutRandomDay(day_ + 1, 5, 400, &expect);
  RotateAll(day_ + 2);
  std::string out;
  EXPECT_NE(RunDay(day_ + 1, &out), 0) << out;
  EXPECT_NE(out.find("RESHARD_NEEDS_FILE"), std::string::npos) << out;
  EXPECT_EQ(ServedGeneration(0), 1);

  // A copy of another generation put in fetched/ is refused, and the
  // message says what is wrong with it (probe 9a: "no copy of it").
  const std::string fetched = cluster_ / "work/fetched/1/shard-1.csv";
  ASSERT_TRUE(MakeDirs(cluster_ / "work/fetched/1").ok());
  std::filesystem::copy_file(aside, fetched);
  auto manifest = ReadManifest(ManifestPathFor(kept));
  ASSERT_TRUE(manifest.ok()) << manifest.status().ToString();
  manifest->generation = 0;
  ASSERT_TRUE(WriteManifestAtomically(ManifestPathFor(fetched), *manifest).ok());
  EXPECT_NE(RunDay(day_ + 1, &out), 0) << out;
  EXPECT_NE(out.find("RESHARD_NEEDS_FILE"), std::string::npos) << out;
  EXPECT_NE(out.find(fetched + " is there, but its manifest says generation 0, shard 1 of 2"), std::string::npos)
      << out;
  std::filesystem::remove(fetched);
  std::filesystem::remove(ManifestPathFor(fetched));

  ASSERT_TRUE(RenameDurably(aside, kept).ok());
  ASSERT_EQ(RunDay(day_ + 1, &out), 0) << out;
  EXPECT_NE(out.find("re-partitions the archive from 2 to 1 archive shards"), std::string::npos) << out;
  ExpectArchiveCutInto(expect, 1, 2);

  // Raised again, the dropped shard's replica started on the file it kept
  // (generation 1, cut into 2 shards): a leftover, not a deploy stopped
  // half-way. The next run re-partitions and replaces it.
  testing::ClusterSpec spec = cluster_.spec();
  spec.archive_shards = 2;
  spec.members[ArchiveName(1)].file = dropped_file;  // where it kept its file
  const Status written = cluster_.Write(spec);
  ASSERT_TRUE(written.ok()) << written.ToString();
  ASSERT_NO_FATAL_FAILURE(StartArchiveReplica(1, 0));
  ASSERT_EQ(ServedGeneration(1), 1);
  PutRandomDay(day_ + 2, 6, 400, &expect);
  RotateAll(day_ + 3);
  ASSERT_EQ(RunDay(day_ + 2, &out), 0) << out;
  EXPECT_NE(out.find("a file left from before the count was lowered"), std::string::npos) << out;
  EXPECT_NE(out.find("re-partitions the archive from 1 to 2 archive shards"), std::string::npos) << out;
  EXPECT_EQ(ServedGeneration(1), 3);
}

// A generation built for the old count and not deployed is deployed with
// the cluster file it was built for, never with the new one.
TEST_F(ReshardIntegration, AGenerationBuiltForTheOldCountIsNotDeployedWithTheNew) {
  Expectation expect;
  std::string out;
  ASSERT_NO_FATAL_FAILURE(ArchiveADayThenBuildOnlyTheNext(7, 8, &expect, &out));
  ASSERT_NO_FATAL_FAILURE(RewriteArchiveShards(3));
  ASSERT_NO_FATAL_FAILURE(StartArchiveReplica(2, 0));
  EXPECT_NE(RunDay(day_ + 1, &out), 0) << out;
  EXPECT_NE(out.find("SHARD_COUNT_CHANGED"), std::string::npos) << out;
  EXPECT_EQ(ServedGeneration(0), 1);

  // Deployed with its own count, then the next day re-partitions.
  ASSERT_NO_FATAL_FAILURE(RewriteArchiveShards(2));
  ASSERT_EQ(RunDay(day_ + 1, &out), 0) << out;
  ExpectArchiveCutInto(expect, 2, 2);
  ASSERT_NO_FATAL_FAILURE(RewriteArchiveShards(3));
  ASSERT_NO_FATAL_FAILURE(RunNextDay(day_ + 2, 9, 300, &expect, &out));
  ExpectArchiveCutInto(expect, 3, 3);
}

// A day's sort tasks finished under the old count (their parts cut by it)
// are run again, cut by the new count, before the merges read their parts.
TEST_F(ReshardIntegration, SortTasksCutByTheOldCountAreRunAgain) {
  Expectation expect;
  std::string out;
  ASSERT_NO_FATAL_FAILURE(ArchiveADayThenBuildOnlyTheNext(13, 14, &expect, &out));
  // Its build forgotten (as if it had failed before its plan was written):
  // only the sort tasks, cut into 2, are left of it.
  ASSERT_EQ(::unlink((cluster_ / "work/gen/2/plan.json").c_str()), 0);
  ASSERT_NO_FATAL_FAILURE(RewriteArchiveShards(3));
  ASSERT_NO_FATAL_FAILURE(StartArchiveReplica(2, 0));
  ASSERT_EQ(RunDay(day_ + 1, &out), 0) << out;
  EXPECT_NE(out.find("done by an earlier run for another archive shard count; running it again"), std::string::npos)
      << out;
  ExpectArchiveCutInto(expect, 3, 2);
}

// The API reads the archive by the shard count it serves: with the new
// cluster file loaded before the re-partitioned generation is deployed, and
// after, every query answers exactly what was counted.
TEST_F(ReshardIntegration, QueriesAnswerExactlyBeforeAndAfterTheRepartitionIsDeployed) {
  Expectation expect;
  ASSERT_NO_FATAL_FAILURE(ArchiveFirstDay(11, 800, &expect));
  // Day one only in the archive from now on: an answer that missed it
  // (asked of a shard without the key) could not be made whole by realtime.
  for (int i = 0; i < kShards; ++i) {
    HttpResponse r = Admin("POST", realtime_ports_[i], "/clear?date=" + FormatDate(day_));
    ASSERT_EQ(r.status_code, 200) << r.body;
  }
  ASSERT_NO_FATAL_FAILURE(RewriteArchiveShards(3));
  ASSERT_NO_FATAL_FAILURE(StartArchiveReplica(2, 0));
  ASSERT_NO_FATAL_FAILURE(RestartApi(0));  // archive_shards = 3 while the archive serves 2
  // Keys of the new shard 2 first: the API's very first read is of a key
  // that the cluster file's count puts on the shard with no file yet.
  std::vector<std::string> keys;
  for (int k = 0; k < 40; ++k) keys.push_back(fmt::format("key{}", k));
  std::stable_partition(keys.begin(), keys.end(), [](const std::string& key) { return ShardOf("u|" + key, 3) == 2; });
  ASSERT_EQ(ShardOf("u|" + keys.front(), 3), 2u);
  const int64_t reference = (day_ + 3) * kSecondsPerDay;  // 5 days: every day of the test
  const auto expect_queries = [&](const std::string& when) {
    for (const std::string& key : keys) {
      auto clicks = Api(fmt::format("/clicks?ns=u&key={}&unit=day&units=5&unit_reference_ts={}&rollup=true", key,
                                    reference));
      ASSERT_EQ(clicks["http_status"], 200) << when << " " << clicks.dump();
      EXPECT_EQ(clicks["data"]["clicks"].get<int64_t>(), expect.Clicks("u|" + key)) << when << " " << key;
      for (const std::string sns : {"c", "r"}) {  // r: hashed referrers, resolved by lookups
        auto breakdown = Api(fmt::format(
            "/breakdown?sns={}&ns=u&key={}&unit=day&units=5&unit_reference_ts={}&rollup=true&limit=100", sns, key,
            reference));
        ASSERT_EQ(breakdown["http_status"], 200) << when << " " << breakdown.dump();
        std::map<std::string, int64_t> got;
        for (const auto& row : breakdown["data"]["breakdown"]) got[row["value"]] = row["clicks"].get<int64_t>();
        EXPECT_EQ(got, expect.Breakdown(sns, "u|" + key)) << when << " " << key << " " << sns;
      }
    }
  };
  ASSERT_NO_FATAL_FAILURE(expect_queries("generation 1 (2 shards), API file with 3"));
  PutRandomDay(day_ + 1, 12, 400, &expect);
  RotateAll(day_ + 2);
  ASSERT_NO_FATAL_FAILURE(expect_queries("day two in realtime, before the re-partition"));
  EXPECT_EQ(ReadFigure("archive_reroutes"), 0) << "routed by the served count from the first read";

  std::string out;
  ASSERT_EQ(RunDay(day_ + 1, &out), 0) << out;
  ExpectArchiveCutInto(expect, 3, 2);
  ASSERT_NO_FATAL_FAILURE(expect_queries("generation 2 (3 shards)"));
  EXPECT_GT(ReadFigure("archive_reroutes"), 0) << "the first reads after the deploy learned the new count";
}

// An API node that starts with the new count while shard 0 (which says how
// the archive is cut) is down cannot tell a new shard's "no file" from an
// empty key: it answers 503 rather than zero clicks, and the exact count once
// shard 0 answers.
TEST_F(ReshardIntegration, ANewShardsEmptyAnswerIsNotZeroWhileShardZeroIsDown) {
  Expectation expect;
  ASSERT_NO_FATAL_FAILURE(ArchiveFirstDay(21, 800, &expect));
  for (int i = 0; i < kShards; ++i) {  // the day in the archive only
    HttpResponse r = Admin("POST", realtime_ports_[i], "/clear?date=" + FormatDate(day_));
    ASSERT_EQ(r.status_code, 200) << r.body;
  }
  // A key the new count puts on the new shard 2 and the served count on 1.
  std::string key;
  for (int k = 0; k < 40 && key.empty(); ++k) {
    const std::string candidate = fmt::format("key{}", k);
    if (ShardOf("u|" + candidate, 3) == 2 && ShardOf("u|" + candidate, 2) == 1 && expect.Clicks("u|" + candidate) > 0) {
      key = candidate;
    }
  }
  ASSERT_FALSE(key.empty());
  ASSERT_NO_FATAL_FAILURE(RewriteArchiveShards(3));
  ASSERT_NO_FATAL_FAILURE(StartArchiveReplica(2, 0));
  ASSERT_EQ(cluster_.Stop(ArchiveName(0)), 0);
  ASSERT_NO_FATAL_FAILURE(RestartApi(0));  // its first read is of the new shard's key
  const std::string query = fmt::format("/clicks?ns=u&key={}&unit=day&units=3&unit_reference_ts={}&rollup=true", key,
                                        (day_ + 1) * kSecondsPerDay);
  auto down = Api(query);
  EXPECT_EQ(down["http_status"], 503) << down.dump();
  ASSERT_NO_FATAL_FAILURE(StartArchiveReplica(0, 0));
  auto up = Api(query);
  ASSERT_EQ(up["http_status"], 200) << up.dump();
  EXPECT_EQ(up["data"]["clicks"].get<int64_t>(), expect.Clicks("u|" + key));
}

// `load --now` is a generation too: it re-partitions like a nightly run.
TEST_F(ReshardIntegration, LoadNowRepartitions) {
  Expectation expect;
  ASSERT_NO_FATAL_FAILURE(ArchiveFirstDay(6, 600, &expect));
  ASSERT_NO_FATAL_FAILURE(RewriteArchiveShards(3));
  ASSERT_NO_FATAL_FAILURE(StartArchiveReplica(2, 0));
  const std::string load = cluster_ / "load.csv";
  std::string lines;
  for (int k = 0; k < 30; ++k) {
    lines += fmt::format("u|key{}.{},{}\n", k, Ymdh(day_, 5), k + 1);
    lines += fmt::format("c.u|key{}.US.{},{}\n", k, Ymdh(day_, 5), k + 1);
    expect.AddTotal("u", fmt::format("key{}", k), Ymdh(day_, 5), k + 1);
    expect.AddSubtotal("c", "u", fmt::format("key{}", k), "US", Ymdh(day_, 5), k + 1);
  }
  ASSERT_TRUE(WriteFileAtomically(load, lines).ok());
  std::string out;
  ASSERT_EQ(Rebuild({"load", "--config", cluster_.config_path(), "--now", load}, &out), 0) << out;
  ExpectArchiveCutInto(expect, 3, 2);
}

}  // namespace
}  // namespace clickatron
