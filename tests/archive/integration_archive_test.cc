// The real clickatron-archive daemon over loopback: sortdb's answers on
// sortdb's sample, the protocol's headers, errors, streaming, stats.
#include <gtest/gtest.h>

#include <string>
#include <vector>

#include <fmt/format.h>

#include "replica_fixture.h"

namespace clickatron::archive {
namespace {

using testing::kSortdbSample;
using testing::ReplicaTest;
using testing::WriteArchive;

class ArchiveDaemonTest : public ReplicaTest {
 protected:
  void SetUp() override {
    WriteArchive(file(), kSortdbSample, 5, "2012-03-25");
    StartReplica("archive-admin-secret");
  }
  void ExpectGenerationHeaders(const HttpResponse& r) {
    EXPECT_EQ(r.Header("X-Archive-Generation"), "5");
    EXPECT_EQ(r.Header("X-Archive-Last-Day"), "2012-03-25");
    EXPECT_EQ(r.Header("X-Archive-Shard-Count"), "1");  // the manifest's shard_count
  }
};

TEST_F(ArchiveDaemonTest, GetAnswersLikeSortdb) {
  // The curl lines of seeds/sortdb.txt, with the raw '|' unencoded.
  HttpResponse total = Get("/get?key=u|jehiah.c3hh");
  ASSERT_TRUE(total.ok()) << total.transport.ToString();
  EXPECT_EQ(total.status_code, 200);
  EXPECT_EQ(total.body, "13\n");
  ExpectGenerationHeaders(total);
  HttpResponse subtotal = Get("/get?key=c.u|jehiah.c3hh");
  EXPECT_EQ(subtotal.status_code, 200);
  EXPECT_EQ(subtotal.body, "DE:1 None:5 US:7\n");
  // The same key %-encoded.
  EXPECT_EQ(Get("/get?key=u%7Cjehiah.c3hh").body, "13\n");
}

TEST_F(ArchiveDaemonTest, GetMissIs404WithEmptyBody) {
  for (std::string key : {"u|jehiah.c3hi", "u|jehiah", "u|jehiah.c3h", "zzz", ""}) {
    HttpResponse r = Get("/get?key=" + key);
    EXPECT_EQ(r.status_code, 404) << key;
    EXPECT_EQ(r.body, "") << key;
    ExpectGenerationHeaders(r);
  }
}

TEST_F(ArchiveDaemonTest, MissingKeyIs400InTheEnvelope) {
  for (std::string target : {"/get", "/get?k=1", "/mget", "/fwmatch?limit=3"}) {
    HttpResponse r = Get(target);
    EXPECT_EQ(r.status_code, 400) << target;
    nlohmann::json j = Json(r);
    EXPECT_EQ(j["status_txt"], "MISSING_ARG_KEY") << target << ": " << r.body;
    EXPECT_TRUE(j["data"].is_null());
  }
}

TEST_F(ArchiveDaemonTest, MgetAnswersHitsInRequestOrder) {
  HttpResponse r = Get("/mget?key=u|jehiah.c3i0&key=u|nobody.c3hh&key=c.u|jehiah.c3h5&key=c.u|jehiah.c3hh");
  EXPECT_EQ(r.status_code, 200);
  EXPECT_EQ(r.body, "u|jehiah.c3i0,7\nc.u|jehiah.c3h5,US:2\nc.u|jehiah.c3hh,DE:1 None:5 US:7\n");
  ExpectGenerationHeaders(r);
  HttpResponse none = Get("/mget?key=a&key=b");
  EXPECT_EQ(none.status_code, 200);
  EXPECT_EQ(none.body, "");
}

TEST_F(ArchiveDaemonTest, FwmatchAnswersTheBlockOfLinesWithThePrefix) {
  // seeds/sortdb.txt: fwmatch u|jehiah. → the two total lines.
  HttpResponse r = Get("/fwmatch?key=u|jehiah.");
  EXPECT_EQ(r.status_code, 200);
  EXPECT_EQ(r.body, "u|jehiah.c3hh,13\nu|jehiah.c3i0,7\n");
  ExpectGenerationHeaders(r);
  EXPECT_EQ(Get("/fwmatch?key=c.u|jehiah.c3hh").body, "c.u|jehiah.c3hh,DE:1 None:5 US:7\n");
  EXPECT_EQ(Get("/fwmatch?key=c.u|jehiah.c3hi&limit=5").body, "c.u|jehiah.c3hi,CA:1 None:6 US:5\n");
  EXPECT_EQ(Get("/fwmatch?key=c.u|&limit=2").body, "c.u|jehiah.c3h5,US:2\nc.u|jehiah.c3h7,US:1\n");
  EXPECT_EQ(Get("/fwmatch?key=").body, std::string(kSortdbSample));
  // Between two lines: nothing, still 200.
  HttpResponse none = Get("/fwmatch?key=c.u|jehiah.c3h6");
  EXPECT_EQ(none.status_code, 200);
  EXPECT_EQ(none.body, "");
  HttpResponse bad = Get("/fwmatch?key=u&limit=many");
  EXPECT_EQ(bad.status_code, 400);
  EXPECT_EQ(Json(bad)["status_txt"], "INVALID_LIMIT");
}

TEST_F(ArchiveDaemonTest, ManifestIsTheServingGenerations) {
  HttpResponse r = Get("/manifest");
  ASSERT_EQ(r.status_code, 200);
  nlohmann::json data = Json(r)["data"];
  EXPECT_EQ(data["generation"], 5);
  EXPECT_EQ(data["records"], 14);
  EXPECT_EQ(data["bytes"], kSortdbSample.size());
  EXPECT_EQ(data["first_key"], "c.u|jehiah.c3h5");
  EXPECT_EQ(data["last_key"], "u|jehiah.c3i0");
  EXPECT_EQ(data["last_day"], "2012-03-25");
}

TEST_F(ArchiveDaemonTest, ReloadIsAnAdminEndpoint) {
  EXPECT_EQ(Reload().status_code, 401);
  EXPECT_EQ(Reload("wrong").status_code, 401);
  HttpResponse ok = Reload("archive-admin-secret");
  ASSERT_EQ(ok.status_code, 200) << ok.body;
  EXPECT_EQ(Json(ok)["data"]["generation"], 5);
  EXPECT_EQ(Json(ok)["data"]["records"], 14);
  EXPECT_EQ(Get("/reload").status_code, 405);
}

TEST_F(ArchiveDaemonTest, StatsCountWhatWasAsked) {
  nlohmann::json before = ArchiveStats();
  ASSERT_TRUE(before.contains("hits")) << before.dump();
  Get("/get?key=u|jehiah.c3hh");                     // hit, 3 bytes
  Get("/get?key=u|nobody");                          // miss
  Get("/mget?key=u|jehiah.c3i0&key=u|nobody");       // hit (16 bytes) + miss
  Get("/fwmatch?key=u|jehiah.");                     // 33 bytes
  nlohmann::json after = ArchiveStats();
  EXPECT_EQ(after["hits"].get<uint64_t>() - before["hits"].get<uint64_t>(), 2u);
  EXPECT_EQ(after["misses"].get<uint64_t>() - before["misses"].get<uint64_t>(), 2u);
  EXPECT_EQ(after["bytes_served"].get<uint64_t>() - before["bytes_served"].get<uint64_t>(),
            std::string("13\n").size() + std::string("u|jehiah.c3i0,7\n").size() +
                std::string("u|jehiah.c3hh,13\nu|jehiah.c3i0,7\n").size());
  EXPECT_EQ(after["requests"]["get"].get<uint64_t>() - before["requests"]["get"].get<uint64_t>(), 2u);
  EXPECT_EQ(after["requests"]["mget"].get<uint64_t>() - before["requests"]["mget"].get<uint64_t>(), 1u);
  EXPECT_EQ(after["requests"]["fwmatch"].get<uint64_t>() - before["requests"]["fwmatch"].get<uint64_t>(), 1u);
  EXPECT_EQ(after["file"]["generation"], 5);
  EXPECT_EQ(after["file"]["records"], 14);
  EXPECT_EQ(after["file"]["bytes"], kSortdbSample.size());
  EXPECT_EQ(after["generations_mapped"], 1);
  HttpResponse metrics = Get("/metrics");
  const std::string labels = "{daemon=\"clickatron-archive\",member=\"archive-0\"}";
  EXPECT_NE(metrics.body.find("clickatron_archive_file_records" + labels + " 14\n"), std::string::npos) << metrics.body;
  EXPECT_NE(metrics.body.find("clickatron_archive_generation" + labels + " 5\n"), std::string::npos);
}

// A block far larger than one answer chunk comes back whole and in order.
TEST_F(ReplicaTest, LargeFwmatchIsStreamedWhole) {
  std::string data;
  std::string expected;
  for (int i = 0; i < 40000; ++i) {
    std::string line = fmt::format("c.u|user{:05d}.c3hh,US:{} JP:{}\n", i, i, i % 7);
    data += line;
    if (i >= 10000 && i < 20000) expected += line;  // user1xxxx
  }
  data += "u|user00000,c3hh:1";  // last line without newline
  WriteArchive(file(), data, 9, "2012-03-25");
  StartReplica();
  HttpResponse block = Get("/fwmatch?key=c.u|user1");
  ASSERT_EQ(block.status_code, 200);
  EXPECT_EQ(block.body.size(), expected.size());
  EXPECT_TRUE(block.body == expected);
  EXPECT_EQ(block.Header("X-Archive-Generation"), "9");
  // The whole file, whose last line lacks its newline: the answer adds it.
  HttpResponse all = Get("/fwmatch?key=");
  EXPECT_EQ(all.body.size(), data.size() + 1);
  EXPECT_TRUE(all.body == data + "\n");
  EXPECT_EQ(Get("/get?key=u|user00000").body, "c3hh:1\n");
  EXPECT_GE(ArchiveStats()["fwmatch_streamed"].get<uint64_t>(), 2u);
}

TEST_F(ReplicaTest, OtherFieldSeparatorFromTheClusterFile) {
  ASSERT_NO_FATAL_FAILURE(WriteArchive(file(), "k1\tv1\nk1a\tv,2\n", 1, ""));
  StartReplica("", clickatron::testing::TomlTable().SetString("field_separator", "\t"));
  EXPECT_EQ(Get("/get?key=k1").body, "v1\n");
  EXPECT_EQ(Get("/get?key=k1a").body, "v,2\n");
  EXPECT_EQ(Get("/mget?key=k1a").body, "k1a\tv,2\n");
}

// sortdb: "start a second sortdb process pointed at the same data file for
// higher read throughput".
TEST(TwoReplicasTest, ServeOneFileSideBySide) {
  clickatron::testing::ClusterSpec spec;
  spec.api_nodes = 0;
  spec.archive_replicas = 2;  // both serve the shard's one file
  clickatron::testing::Cluster cluster(spec);
  WriteArchive(cluster.ArchiveFile(0), kSortdbSample, 4, "2012-03-25");
  const std::string names[2] = {cluster.ArchiveName(0, 0), cluster.ArchiveName(0, 1)};
  for (const std::string& name : names) {
    std::string error;
    ASSERT_TRUE(cluster.Start(name, &error)) << error;
  }
  for (int i = 0; i < 2; ++i) {
    HttpResponse r = clickatron::testing::HttpGet(cluster.Address(names[i]), "/get?key=u|jehiah.c3i0");
    EXPECT_EQ(r.body, "7\n") << names[i];
    EXPECT_EQ(r.Header("X-Archive-Generation"), "4") << names[i];
  }
  for (const std::string& name : names) EXPECT_EQ(cluster.Stop(name), 0);
}

}  // namespace
}  // namespace clickatron::archive
