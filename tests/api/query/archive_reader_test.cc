// ArchiveReader (api/query/fetch/archive_reader.h) and the read cache's
// layer over it (api/query/cache/cached_archive_reader.h) against scripted
// archive replicas (testutil/fake_http_client.h): failover between the
// replicas of a shard, a shard with no replica answering, replicas that
// answer garbage, a generation change between reads (kept answers),
// coalescing and rerouting by the shard count answers carry.
#include "query/fetch/archive_reader.h"

#include "query/cache/cached_archive_reader.h"

#include <event2/event.h>
#include <gtest/gtest.h>

#include <chrono>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "clickatron/config.h"
#include "clickatron/shard.h"
#include "clickatron/ymdh.h"
#include "testutil/fake_http_client.h"
#include "api/query/fake_read_cluster.h"

namespace clickatron::api::archive_reader_test {
namespace {

using namespace fake_read_cluster;  // FakeHttpClient, Answer, Headers, ServeFile, …

// The same file, with the same records, on every replica of shard 0.
std::shared_ptr<ServedFileState> StandardFile() {
  auto file = std::make_shared<ServedFileState>();
  file->records = {{"k1", "v1"}, {"k2", "v2"}, {"k3", "v3"}};
  return file;
}

class ArchiveReaderTest : public ::testing::Test {
 protected:
  // The options every test starts from: a penalty long enough that a failed
  // replica stays skipped for the whole test, whatever the machine's speed.
  static ArchiveReader::Options BaseOptions() {
    ArchiveReader::Options options;
    options.replica_penalty = std::chrono::hours(1);
    return options;
  }

  // The reader, and the cache's layer over it (`kept`: the cache; null:
  // nothing kept). Get and MGet below go through the layer.
  ArchiveReader& MakeReader(const ClusterConfig& cluster, ArchiveReader::Options options = BaseOptions(),
                            std::shared_ptr<ReadCache> kept = nullptr) {
    cluster_ = cluster;
    reads_.reset();
    reader_ = std::make_unique<ArchiveReader>(cluster_, client_, stats_, options);
    reads_ = std::make_unique<CachedArchiveReader>(*reader_, std::move(kept), stats_);
    return *reader_;
  }

  // Serves `file` on every replica of shard 0 of a cluster of `replicas`.
  ArchiveReader& ShardZero(int replicas, std::shared_ptr<ServedFileState> file,
                           ArchiveReader::Options options = BaseOptions(), std::shared_ptr<ReadCache> kept = nullptr) {
    for (int r = 0; r < replicas; ++r) ServeFile(client_, ReplicaPeer(0, r), file);
    return MakeReader(ArchiveCluster(1, replicas), options, std::move(kept));
  }

  // The standard file on one replica each of shards 0 and 1, saying it is
  // cut into `count0` and `count1` shards.
  std::pair<std::shared_ptr<ServedFileState>, std::shared_ptr<ServedFileState>> ServeTwoShards(int count0, int count1) {
    auto shard0 = StandardFile();
    shard0->shard_count = count0;
    auto shard1 = StandardFile();
    shard1->shard_count = count1;
    ServeFile(client_, ReplicaPeer(0, 0), shard0);
    ServeFile(client_, ReplicaPeer(1, 0), shard1);
    return {shard0, shard1};
  }

  // A read cache of 1 MiB, for ShardZero.
  static std::shared_ptr<ReadCache> Kept() { return std::make_shared<ReadCache>(1 << 20); }

  // One Get, driven to its end: its callback must run exactly once. (A kept
  // answer calls back inside Get; the others come through the loop.)
  Result<ArchiveReply> Get(const std::shared_ptr<ArchiveReader::Session>& session, const std::string& key) {
    std::optional<Result<ArchiveReply>> got;
    int calls = 0;
    reads_->Get(session, key, [&](Result<ArchiveReply> reply) {
      ++calls;
      got.emplace(std::move(reply));
    });
    client_.RunUntilIdle();
    EXPECT_EQ(calls, 1);
    return got ? std::move(*got) : Result<ArchiveReply>(Status::Internal("Get never called back"));
  }

  Result<std::vector<ArchiveReply>> MGet(const std::shared_ptr<ArchiveReader::Session>& session,
                                         const std::vector<std::string>& keys) {
    std::optional<Result<std::vector<ArchiveReply>>> got;
    int calls = 0;
    reads_->MGet(session, keys, [&](Result<std::vector<ArchiveReply>> replies) {
      ++calls;
      got.emplace(std::move(replies));
    });
    client_.RunUntilIdle();
    EXPECT_EQ(calls, 1);
    return got ? std::move(*got) : Result<std::vector<ArchiveReply>>(Status::Internal("MGet never called back"));
  }

  // The /get and /mget requests sent to `peer` (the reads, not the routing
  // and confirmation /manifest requests).
  size_t ReadsTo(const HostPort& peer) const {
    return client_.RequestsTo(peer, "/get").size() + client_.RequestsTo(peer, "/mget").size();
  }

  // Declared first, destroyed last: the client's and reader's events are on it.
  std::unique_ptr<event_base, decltype(&event_base_free)> base_{event_base_new(), &event_base_free};
  FakeHttpClient client_{base_.get()};
  ReadStats stats_;
  ClusterConfig cluster_;
  std::unique_ptr<ArchiveReader> reader_;
  std::unique_ptr<CachedArchiveReader> reads_;  // over reader_: destroyed first
};

// --- the fake itself ---------------------------------------------------------

HttpRequestSpec Spec(std::string target, std::string method = "GET", std::string body = "") {
  HttpRequestSpec spec;
  spec.method = std::move(method);
  spec.target = std::move(target);
  spec.body = std::move(body);
  return spec;
}

TEST(FakeHttpClientTest, AnswersThroughTheLoopInOrderAndRecordsRequests) {
  std::unique_ptr<event_base, decltype(&event_base_free)> base{event_base_new(), &event_base_free};
  FakeHttpClient client(base.get());
  const HostPort peer{"127.0.0.1", 7001};
  client.Script(peer, "/a", Answer::Http(200, "always"));
  client.ScriptOnce(peer, "/a", Answer::Http(201, "once"));
  client.Script(peer, "/down", Answer::TransportError("TIMEOUT"));
  std::vector<std::string> got;
  auto record = [&got](HttpResponse r) {
    got.push_back(r.ok() ? std::to_string(r.status_code) + " " + r.body : "no answer: " + r.transport.reason());
  };
  client.Send(peer, Spec("/a?x=1", "POST", "payload"), record);
  client.Send(peer, Spec("/a"), record);
  client.Send(peer, Spec("/down"), record);
  EXPECT_TRUE(got.empty());  // never inside Send
  client.RunUntilIdle();
  EXPECT_EQ(got, (std::vector<std::string>{"201 once", "200 always", "no answer: TIMEOUT"}));
  ASSERT_EQ(client.requests().size(), 3u);
  EXPECT_EQ(client.requests()[0].method, "POST");
  EXPECT_EQ(client.requests()[0].target, "/a?x=1");
  EXPECT_EQ(client.requests()[0].body, "payload");
  EXPECT_EQ(client.RequestsTo(peer, "/a").size(), 2u);
}

TEST(FakeHttpClientTest, HeldAnswersWaitForRelease) {
  std::unique_ptr<event_base, decltype(&event_base_free)> base{event_base_new(), &event_base_free};
  FakeHttpClient client(base.get());
  const HostPort peer{"127.0.0.1", 7001};
  client.Script(peer, "/a", Answer::Http(200, "x"));
  int answered = 0;
  client.Hold();
  client.Send(peer, Spec("/a"), [&](HttpResponse) { ++answered; });
  client.RunUntilIdle();
  EXPECT_EQ(answered, 0);
  EXPECT_EQ(client.pending(), 1u);
  client.Release();
  client.RunUntilIdle();
  EXPECT_EQ(answered, 1);
}

// --- failover -------------------------------------------------------------

class ArchiveReaderFailoverTest : public ArchiveReaderTest {
 protected:
  // Replica 0 answers every read with `broken`; replica 1 serves the file. A
  // fresh reader's first session starts on replica 0 (round robin from 0).
  void ExpectReadAnsweredByReplicaOne(const Answer& broken) {
    auto file = StandardFile();
    ArchiveReader& reader = ShardZero(2, file);
    client_.Script(ReplicaPeer(0, 0), "/get", broken);
    auto session = reader.Begin("k1");
    ASSERT_EQ(session->replica, 0u);

    Result<ArchiveReply> reply = Get(session, "k1");
    ASSERT_TRUE(reply.ok()) << reply.status().ToString();
    EXPECT_TRUE(reply->found);
    EXPECT_EQ(reply->body, "v1\n");
    EXPECT_EQ(reply->replica, 1u);
    EXPECT_EQ(reply->view.generation, 7u);
    // Asked replica 0 once, then replica 1; the session follows the failover.
    EXPECT_EQ(client_.RequestsTo(ReplicaPeer(0, 0), "/get").size(), 1u);
    EXPECT_EQ(client_.RequestsTo(ReplicaPeer(0, 1), "/get").size(), 1u);
    EXPECT_EQ(session->replica, 1u);
    EXPECT_EQ(stats_.archive_failovers.load(), 1u);
  }
};

TEST_F(ArchiveReaderFailoverTest, TransportErrorIsAnsweredByTheOtherReplica) {
  ExpectReadAnsweredByReplicaOne(Answer::TransportError());
}

TEST_F(ArchiveReaderFailoverTest, ServerErrorIsAnsweredByTheOtherReplica) {
  ExpectReadAnsweredByReplicaOne(Answer::Http(503, "overloaded"));
}

TEST_F(ArchiveReaderFailoverTest, FailedReplicaIsSkippedByLaterSessions) {
  auto file = StandardFile();
  ArchiveReader& reader = ShardZero(2, file);
  client_.Script(ReplicaPeer(0, 0), "/get", Answer::TransportError());
  ASSERT_TRUE(Get(reader.Begin("k1"), "k1").ok());
  const size_t asked_before = ReadsTo(ReplicaPeer(0, 0));

  // Within its penalty, new sessions are begun on replica 1 even when the
  // round robin points at replica 0, and nothing more goes to replica 0.
  for (const std::string key : {"k2", "k3", "k1"}) {
    auto session = reader.Begin(key);
    EXPECT_EQ(session->replica, 1u) << key;
    Result<ArchiveReply> reply = Get(session, key);
    ASSERT_TRUE(reply.ok()) << reply.status().ToString();
    EXPECT_EQ(reply->replica, 1u);
  }
  EXPECT_EQ(ReadsTo(ReplicaPeer(0, 0)), asked_before);
  EXPECT_EQ(stats_.archive_failovers.load(), 1u);
}

TEST_F(ArchiveReaderFailoverTest, NoReplicaAnsweringIsShardUnavailable) {
  auto file = StandardFile();
  ArchiveReader& reader = ShardZero(2, file);
  client_.Script(ReplicaPeer(0, 0), "/get", Answer::TransportError());
  client_.Script(ReplicaPeer(0, 1), "/get",
                 Answer::Http(503, R"({"status_code":503,"status_txt":"ARCHIVE_DAMAGED","data":null,)"
                                   R"("message":"its file no longer matches its manifest"})"));

  Result<ArchiveReply> reply = Get(reader.Begin("k1"), "k1");
  ASSERT_FALSE(reply.ok());
  EXPECT_EQ(reply.status().code(), StatusCode::kUnavailable);
  EXPECT_EQ(reply.status().reason(), "SHARD_UNAVAILABLE");
  EXPECT_NE(reply.status().message().find("archive shard 0: no replica answered"), std::string::npos)
      << reply.status().message();
  // The last replica's failure is named, with its reason and message: an
  // operator sees why (probe 9a: "answered 503" alone, for a damaged file).
  EXPECT_NE(reply.status().message().find("answered HTTP 503 ARCHIVE_DAMAGED: its file no longer matches its manifest"),
            std::string::npos)
      << reply.status().message();
  // Each replica asked once: no loop over replicas that are down.
  EXPECT_EQ(client_.RequestsTo(ReplicaPeer(0, 0), "/get").size(), 1u);
  EXPECT_EQ(client_.RequestsTo(ReplicaPeer(0, 1), "/get").size(), 1u);
}

TEST_F(ArchiveReaderFailoverTest, LoneReplicaIsAskedTwiceForAClosedConnection) {
  auto file = StandardFile();
  ArchiveReader& reader = ShardZero(1, file);
  // A keep-alive connection the replica closed fails at once; the second try
  // gets the answer (the script then falls back to the file).
  client_.ScriptOnce(ReplicaPeer(0, 0), "/get", Answer::TransportError("UNAVAILABLE"));
  Result<ArchiveReply> reply = Get(reader.Begin("k1"), "k1");
  ASSERT_TRUE(reply.ok()) << reply.status().ToString();
  EXPECT_EQ(reply->body, "v1\n");
  EXPECT_EQ(client_.RequestsTo(ReplicaPeer(0, 0), "/get").size(), 2u);
}

TEST_F(ArchiveReaderFailoverTest, LoneReplicaThatTimedOutIsNotAskedAgain) {
  auto file = StandardFile();
  ArchiveReader& reader = ShardZero(1, file);
  client_.ScriptOnce(ReplicaPeer(0, 0), "/get", Answer::TransportError("TIMEOUT"));
  Result<ArchiveReply> reply = Get(reader.Begin("k1"), "k1");
  ASSERT_FALSE(reply.ok());
  EXPECT_EQ(reply.status().reason(), "SHARD_UNAVAILABLE");
  // A second request would most likely wait out another timeout.
  EXPECT_EQ(client_.RequestsTo(ReplicaPeer(0, 0), "/get").size(), 1u);
}

// --- garbage ----------------------------------------------------------------

// An answer that is not an archive's (no or bad archive headers) is not
// trusted: it fails over like a replica that is down.
class ArchiveReaderGarbageTest : public ArchiveReaderFailoverTest {};

TEST_F(ArchiveReaderGarbageTest, AnswerWithoutArchiveHeadersIsNotTrusted) {
  // A 200 from something that is not an archive daemon (a proxy's page).
  ExpectReadAnsweredByReplicaOne(Answer::Http(200, "<html>hello</html>"));
}

TEST_F(ArchiveReaderGarbageTest, MalformedGenerationHeaderIsNotTrusted) {
  ExpectReadAnsweredByReplicaOne(Answer::Http(200, "v1\n", {{"X-Archive-Generation", "7x"},
                                                     {"X-Archive-Last-Day", "2026-11-30"}}));
}

TEST_F(ArchiveReaderGarbageTest, MalformedLastDayHeaderIsNotTrusted) {
  ExpectReadAnsweredByReplicaOne(Answer::Http(200, "v1\n", {{"X-Archive-Generation", "7"},
                                                     {"X-Archive-Last-Day", "yesterday"}}));
}

// An mget answer with a line for a key nobody asked cannot be split per
// key: the replica answered garbage. It is failed over like a replica that
// is down (before, every query whose keys shared its batch failed with 500
// while the other replica was never tried), and nothing of it is kept.
TEST_F(ArchiveReaderGarbageTest, GarbledMgetIsAnsweredByTheOtherReplicaAndIsNotKept) {
  auto file = StandardFile();
  ArchiveReader& reader = ShardZero(2, file, BaseOptions(), Kept());
  client_.Script(ReplicaPeer(0, 0), "/mget", Answer::Http(200, "k1,v1\nzz,oops\n", file->ArchiveHeaders()));

  auto session = reader.Begin("k1");
  ASSERT_EQ(session->replica, 0u);
  Result<std::vector<ArchiveReply>> first = MGet(session, {"k1", "k2"});
  ASSERT_TRUE(first.ok()) << first.status().ToString();
  ASSERT_EQ(first->size(), 1u);
  EXPECT_EQ((*first)[0].body, "k1,v1\nk2,v2\n");
  EXPECT_EQ((*first)[0].replica, 1u);
  EXPECT_EQ(client_.RequestsTo(ReplicaPeer(0, 0), "/mget").size(), 1u);
  EXPECT_EQ(stats_.archive_failovers.load(), 1u);

  // What is kept is replica 1's answer, not the garbage: a key of the
  // garbled line is not found, and nothing more goes to replica 0.
  Result<std::vector<ArchiveReply>> second = MGet(reader.Begin("k1"), {"k1", "zz"});
  ASSERT_TRUE(second.ok()) << second.status().ToString();
  std::string lines;
  for (const ArchiveReply& r : *second) lines += r.body;
  EXPECT_EQ(lines, "k1,v1\n");
  EXPECT_EQ(client_.RequestsTo(ReplicaPeer(0, 0), "/mget").size(), 1u);
}

TEST_F(ArchiveReaderGarbageTest, GarbledMgetFromEveryReplicaIsShardUnavailableSayingWhy) {
  auto file = StandardFile();
  ArchiveReader& reader = ShardZero(1, file, BaseOptions(), Kept());
  client_.Script(ReplicaPeer(0, 0), "/mget", Answer::Http(200, "k1,v1\nk1,v1\n", file->ArchiveHeaders()));

  Result<std::vector<ArchiveReply>> got = MGet(reader.Begin("k1"), {"k1", "k2"});
  ASSERT_FALSE(got.ok());
  EXPECT_EQ(got.status().reason(), "SHARD_UNAVAILABLE") << got.status().ToString();
  EXPECT_NE(got.status().message().find("answered garbage"), std::string::npos) << got.status().message();
  EXPECT_NE(got.status().message().find("unasked or repeated key"), std::string::npos) << got.status().message();

  // Nothing of it was kept: the replica, mended, is asked again.
  client_.Script(ReplicaPeer(0, 0), "/mget", Answer::Http(200, "k1,v1\nk2,v2\n", file->ArchiveHeaders()));
  const size_t before = ReadsTo(ReplicaPeer(0, 0));
  Result<std::vector<ArchiveReply>> again = MGet(reader.Begin("k1"), {"k1", "k2"});
  ASSERT_TRUE(again.ok()) << again.status().ToString();
  EXPECT_EQ(ReadsTo(ReplicaPeer(0, 0)), before + 1);
}

// An mget too large for one request is sent as several; each part's answer
// is checked as a batch's is (a line for a key that part did not ask was
// taken as data, and kept, before).
TEST_F(ArchiveReaderGarbageTest, EachPartOfALargeMgetIsCheckedAndFailedOver) {
  auto file = StandardFile();
  std::vector<std::string> keys;
  for (int i = 0; i < 100; ++i) {
    keys.push_back("key" + std::to_string(1000 + i));
    file->records.emplace(keys.back(), "v" + std::to_string(i));
  }
  ArchiveReader::Options options = BaseOptions();
  options.max_keys_per_mget = 40;  // 3 parts; past coalesce_max_keys (64): not one batch
  ArchiveReader& reader = ShardZero(2, file, options, Kept());
  // Replica 0 answers every part with lines of the first and the last
  // part's keys: each part gets a line it did not ask.
  client_.Script(ReplicaPeer(0, 0), "/mget",
                 Answer::Http(200, "key1000,v0\nkey1099,v99\n", file->ArchiveHeaders()));

  Result<std::vector<ArchiveReply>> got = MGet(reader.Begin("key1000"), keys);
  ASSERT_TRUE(got.ok()) << got.status().ToString();
  std::map<std::string, int> lines;
  for (const ArchiveReply& r : *got) {
    EXPECT_EQ(r.replica, 1u);
    for (size_t at = 0; at < r.body.size();) {
      const size_t nl = r.body.find('\n', at);
      ++lines[r.body.substr(at, nl - at)];
      at = nl + 1;
    }
  }
  ASSERT_EQ(lines.size(), keys.size());
  for (int i = 0; i < 100; ++i) EXPECT_EQ(lines["key" + std::to_string(1000 + i) + ",v" + std::to_string(i)], 1) << i;
}

// A large mget naming a key twice is asked for it once: the replica's line
// for it is not taken for a repeated one (the batches' coalescer dedupes
// the same way).
TEST_F(ArchiveReaderGarbageTest, ALargeMgetNamingAKeyTwiceAsksItOnce) {
  auto file = StandardFile();
  std::vector<std::string> keys;
  for (int i = 0; i < 100; ++i) {
    keys.push_back("key" + std::to_string(1000 + i));
    file->records.emplace(keys.back(), "v" + std::to_string(i));
  }
  keys.push_back("key1000");
  keys.push_back("key1050");
  ArchiveReader::Options options = BaseOptions();
  options.max_keys_per_mget = 40;
  ArchiveReader& reader = ShardZero(1, file, options, Kept());
  Result<std::vector<ArchiveReply>> got = MGet(reader.Begin("key1000"), keys);
  ASSERT_TRUE(got.ok()) << got.status().ToString();
  size_t lines = 0;
  for (const ArchiveReply& r : *got) lines += static_cast<size_t>(std::count(r.body.begin(), r.body.end(), '\n'));
  EXPECT_EQ(lines, 100u);
}

// The reader does not parse values: a value that does not decode, under
// good headers, is kept like any other. Its reader (QueryGather) forgets it
// when it cannot decode it, and the next read asks the replica again rather
// than getting the garbage for the rest of the generation.
TEST_F(ArchiveReaderGarbageTest, AForgottenValueIsAskedAgain) {
  auto file = StandardFile();
  ArchiveReader& reader = ShardZero(1, file, BaseOptions(), Kept());
  client_.ScriptOnce(ReplicaPeer(0, 0), "/get", Answer::Http(200, "\x01\x02 not a record\n", file->ArchiveHeaders()));
  auto session = reader.Begin("k1");
  Result<ArchiveReply> garbage = Get(session, "k1");
  ASSERT_TRUE(garbage.ok()) << garbage.status().ToString();
  // Handed on unmarked (an answer read once is not decoded whole), and kept
  // all the same: the next read does not ask the replica.
  ASSERT_FALSE(garbage->kept);
  const size_t asked = ReadsTo(ReplicaPeer(0, 0));
  Result<ArchiveReply> kept = Get(reader.Begin("k1"), "k1");  // kept: not asked again
  ASSERT_TRUE(kept.ok());
  EXPECT_EQ(kept->body, "\x01\x02 not a record\n");
  EXPECT_EQ(ReadsTo(ReplicaPeer(0, 0)), asked);

  reads_->Forget(*session, "k1", garbage->view);
  Result<ArchiveReply> again = Get(reader.Begin("k1"), "k1");
  ASSERT_TRUE(again.ok()) << again.status().ToString();
  EXPECT_EQ(again->body, "v1\n");
  EXPECT_EQ(ReadsTo(ReplicaPeer(0, 0)), asked + 1);
}

TEST_F(ArchiveReaderGarbageTest, GarbledManifestIsAskedAgain) {
  auto file = StandardFile();
  ArchiveReader& reader = ShardZero(1, file);
  auto session = reader.Begin("k1");
  ASSERT_TRUE(Get(session, "k1").ok());  // routing learned: only the rules' /manifest below
  client_.ScriptOnce(ReplicaPeer(0, 0), "/manifest", Answer::Http(200, "{not json", file->ArchiveHeaders()));

  auto rules_of = [&]() {
    std::optional<ArchiveReader::ManifestFacts> got;
    reader.ReadManifestFacts(session, 7, file->crc32, [&](ArchiveReader::ManifestFacts rules) { got = rules; });
    client_.RunUntilIdle();
    EXPECT_TRUE(got.has_value());
    return got.value_or(ArchiveReader::ManifestFacts{});
  };
  const size_t manifests_before = client_.RequestsTo(ReplicaPeer(0, 0), "/manifest").size();
  EXPECT_FALSE(rules_of().manifest_read);
  // Not remembered: the next query asks again, and the good answer is.
  EXPECT_FALSE(reader.KnownManifestFacts(*session, 7, file->crc32).has_value());
  EXPECT_TRUE(rules_of().manifest_read);
  EXPECT_EQ(client_.RequestsTo(ReplicaPeer(0, 0), "/manifest").size(), manifests_before + 2);
  ASSERT_TRUE(reader.KnownManifestFacts(*session, 7, file->crc32).has_value());
  EXPECT_TRUE(reader.KnownManifestFacts(*session, 7, file->crc32)->manifest_read);
  // What one file of generation 7 said is not another's: a file of that
  // number with another crc32 (converted in place, say) is asked anew.
  EXPECT_FALSE(reader.KnownManifestFacts(*session, 7, file->crc32 + 1).has_value());
}

// --- generations and the cache of kept answers --------------------------------

class ArchiveReaderGenerationTest : public ArchiveReaderTest {
 protected:
  // What realtime tells the node, in known_ (shared with the reader as a
  // realtime reader would share it); the tests pass Kept() beside it.
  ArchiveReader::Options Known() {
    ArchiveReader::Options options = BaseOptions();
    options.known_generation = known_;
    return options;
  }
  std::shared_ptr<KnownGeneration> known_ = std::make_shared<KnownGeneration>(std::string());
  // Deploys another generation on the replica: another file, another value.
  static void Deploy(ServedFileState& file, uint64_t generation, uint32_t crc32, const std::string& k1_value) {
    file.generation = generation;
    file.crc32 = crc32;
    file.records["k1"] = k1_value;
  }
};

TEST_F(ArchiveReaderGenerationTest, KeptAnswerIsReusedWithinItsGeneration) {
  auto file = StandardFile();
  ArchiveReader& reader = ShardZero(1, file, Known(), Kept());
  Result<ArchiveReply> first = Get(reader.Begin("k1"), "k1");
  ASSERT_TRUE(first.ok()) << first.status().ToString();
  EXPECT_FALSE(first->kept);  // kept for later reads, but marked only when read from the cache

  const size_t before = ReadsTo(ReplicaPeer(0, 0));
  Result<ArchiveReply> second = Get(reader.Begin("k1"), "k1");
  ASSERT_TRUE(second.ok()) << second.status().ToString();
  EXPECT_TRUE(second->kept);
  EXPECT_EQ(second->body, "v1\n");
  EXPECT_EQ(ReadsTo(ReplicaPeer(0, 0)), before);  // not asked again
  EXPECT_EQ(stats_.archive_cache_hits.load(), 1u);
}

TEST_F(ArchiveReaderGenerationTest, NewGenerationSeenByAnyAnswerDropsKeptAnswers) {
  auto file = StandardFile();
  ArchiveReader& reader = ShardZero(1, file, Known(), Kept());
  ASSERT_TRUE(Get(reader.Begin("k1"), "k1").ok());

  Deploy(*file, 8, 2222, "v1-of-8");
  // Another key's answer says the replica now serves generation 8 ...
  Result<ArchiveReply> other = Get(reader.Begin("k2"), "k2");
  ASSERT_TRUE(other.ok()) << other.status().ToString();
  EXPECT_EQ(other->view.generation, 8u);
  // ... so k1's kept answer (generation 7) is not used: k1 is asked again.
  const size_t before = ReadsTo(ReplicaPeer(0, 0));
  Result<ArchiveReply> again = Get(reader.Begin("k1"), "k1");
  ASSERT_TRUE(again.ok()) << again.status().ToString();
  EXPECT_EQ(again->view.generation, 8u);
  EXPECT_EQ(again->body, "v1-of-8\n");
  EXPECT_EQ(ReadsTo(ReplicaPeer(0, 0)), before + 1);
}

TEST_F(ArchiveReaderGenerationTest, SameGenerationNumberOfAnotherFileDropsKeptAnswers) {
  // A rolled-back generation's number built again: only the crc32 differs.
  auto file = StandardFile();
  ArchiveReader& reader = ShardZero(1, file, Known(), Kept());
  ASSERT_TRUE(Get(reader.Begin("k1"), "k1").ok());
  Deploy(*file, 7, 3333, "v1-rebuilt");
  ASSERT_TRUE(Get(reader.Begin("k2"), "k2").ok());
  Result<ArchiveReply> again = Get(reader.Begin("k1"), "k1");
  ASSERT_TRUE(again.ok()) << again.status().ToString();
  EXPECT_EQ(again->body, "v1-rebuilt\n");
  EXPECT_EQ(again->view.file_crc32, std::optional<uint32_t>(3333));
}

TEST_F(ArchiveReaderGenerationTest, KeptAnswersStopWhenRealtimeSaysANewerGenerationIsDeployed) {
  // Nothing of this reader's own asked the replica since it moved to 8; a
  // realtime answer saying 8 is deployed is enough to stop using 7's answers.
  auto file = StandardFile();
  ArchiveReader& reader = ShardZero(1, file, Known(), Kept());
  ASSERT_TRUE(Get(reader.Begin("k1"), "k1").ok());
  Deploy(*file, 8, 2222, "v1-of-8");
  const size_t before = ReadsTo(ReplicaPeer(0, 0));
  ASSERT_EQ(Get(reader.Begin("k1"), "k1")->body, "v1\n") << "nothing said 8 yet: 7's answer is still used";
  EXPECT_EQ(ReadsTo(ReplicaPeer(0, 0)), before);

  known_->SawHandover(8, std::nullopt);
  Result<ArchiveReply> again = Get(reader.Begin("k1"), "k1");
  ASSERT_TRUE(again.ok()) << again.status().ToString();
  EXPECT_EQ(again->body, "v1-of-8\n");
  EXPECT_EQ(again->view.generation, 8u);
  EXPECT_EQ(ReadsTo(ReplicaPeer(0, 0)), before + 1);
}

TEST_F(ArchiveReaderGenerationTest, AKeptAnswerLackingADayRealtimeHandedOverIsNotUsed) {
  auto file = StandardFile();  // its last day: 2026-11-30
  ArchiveReader& reader = ShardZero(1, file, Known(), Kept());
  ASSERT_TRUE(Get(reader.Begin("k1"), "k1").ok());
  known_->SawHandover(0, *ParseDate("2026-11-30"));  // a day the file holds: kept answers still good
  const size_t before = ReadsTo(ReplicaPeer(0, 0));
  ASSERT_TRUE(Get(reader.Begin("k1"), "k1").ok());
  EXPECT_EQ(ReadsTo(ReplicaPeer(0, 0)), before);

  known_->SawHandover(0, *ParseDate("2026-12-01"));  // realtime may have cleared a day the file lacks
  EXPECT_TRUE(reader.BehindRealtime(Get(reader.Begin("k2"), "k2")->view));
  ASSERT_TRUE(Get(reader.Begin("k1"), "k1").ok());
  EXPECT_EQ(ReadsTo(ReplicaPeer(0, 0)), before + 2) << "k1 asked of the replica again, not taken from the cache";
}

TEST_F(ArchiveReaderGenerationTest, MgetStraddlingAReloadReportsBothViewsAndKeepsNothing) {
  // Without coalescing and with one key per request, an mget of two keys is
  // two requests; the file is replaced between them (a reload mid-query).
  auto file = StandardFile();
  ArchiveReader::Options options = Known();
  options.coalesce_in_flight = 0;
  options.max_keys_per_mget = 1;
  ArchiveReader& reader = ShardZero(1, file, options, Kept());
  ServedFileState newer = *file;
  Deploy(newer, 8, 2222, "v1-of-8");
  client_.ScriptOnce(ReplicaPeer(0, 0), "/mget", Answer::Http(200, "k1,v1\n", file->ArchiveHeaders()));
  client_.ScriptOnce(ReplicaPeer(0, 0), "/mget", Answer::Http(200, "k2,v2\n", newer.ArchiveHeaders()));

  auto session = reader.Begin("k1");
  Result<std::vector<ArchiveReply>> replies = MGet(session, {"k1", "k2"});
  ASSERT_TRUE(replies.ok()) << replies.status().ToString();
  ASSERT_EQ(replies->size(), 2u);
  // Each answer says its own file: the caller sees the reload and starts over.
  EXPECT_EQ((*replies)[0].view.generation, 7u);
  EXPECT_EQ((*replies)[1].view.generation, 8u);

  // Not even k2, whose answer is of the generation now confirmed, was kept.
  *file = newer;
  const size_t before = ReadsTo(ReplicaPeer(0, 0));
  Result<std::vector<ArchiveReply>> k2 = MGet(session, {"k2"});
  ASSERT_TRUE(k2.ok()) << k2.status().ToString();
  EXPECT_EQ(ReadsTo(ReplicaPeer(0, 0)), before + 1);
}

// --- coalescing and routing ------------------------------------------------

TEST_F(ArchiveReaderTest, GetsQueuedWhileOneIsOutGoTogetherAsOneMget) {
  auto file = StandardFile();
  ArchiveReader& reader = ShardZero(1, file);
  std::map<std::string, std::string> got;
  for (const std::string key : {"k1", "k2", "k3", "missing"}) {
    reader.Get(reader.Begin(key), key, [&got, key](Result<ArchiveReply> reply) {
      got[key] = !reply.ok() ? "error: " + reply.status().ToString() : reply->found ? reply->body : "(not found)";
    });
  }
  client_.RunUntilIdle();

  EXPECT_EQ(got, (std::map<std::string, std::string>{
                     {"k1", "v1\n"}, {"k2", "v2\n"}, {"k3", "v3\n"}, {"missing", "(not found)"}}));
  // The first get went alone; the others waited for it and went as one mget.
  std::vector<std::string> reads;
  for (const auto& request : client_.requests()) {
    if (request.path() != "/manifest") reads.push_back(request.target);
  }
  EXPECT_EQ(reads, (std::vector<std::string>{"/get?key=k1", "/mget?key=k2&key=k3&key=missing"}));
  EXPECT_EQ(stats_.archive_coalesced_requests.load(), 1u);
  EXPECT_EQ(stats_.archive_coalesced_keys.load(), 3u);
}

// A key whose shard is `shard` of `count`.
std::string KeyOnShard(uint32_t shard, uint32_t count) {
  for (int i = 0;; ++i) {
    std::string key = "key" + std::to_string(i);
    if (ShardOf(key, count) == shard) return key;
  }
}

TEST_F(ArchiveReaderTest, AnswerCutByAnotherShardCountIsAskedOfThatShard) {
  // The cluster file says 2 shards, and shard 0's manifest says so; shard 1
  // already serves a generation cut into one shard (a re-partition being
  // deployed): a key read there is asked again of its shard under 1.
  const std::string key = KeyOnShard(1, 2);
  // Both now serve generation 8, cut into one shard; shard 0 answered the
  // routing question while it still served generation 7, cut into two.
  auto shard0 = StandardFile();
  shard0->generation = 8;
  shard0->records[key] = "from-shard-0";
  ServedFileState shard0_before = *shard0;
  shard0_before.generation = 7;
  shard0_before.shard_count = 2;
  auto shard1 = StandardFile();
  shard1->generation = 8;
  ServeFile(client_, ReplicaPeer(0, 0), shard0);
  client_.ScriptOnce(ReplicaPeer(0, 0), "/manifest",
                     Answer::Http(200, R"({"data":null})", shard0_before.ArchiveHeaders()));
  ServeFile(client_, ReplicaPeer(1, 0), shard1);
  ArchiveReader& reader = MakeReader(ArchiveCluster(2, 1));
  auto session = reader.Begin(key);

  std::optional<Result<ArchiveReply>> got;
  reader.Get(session, key, [&](Result<ArchiveReply> reply) { got.emplace(std::move(reply)); });
  // Routing: shard 0's /manifest says 2 shards; the get goes to shard 1 ...
  client_.RunUntilIdle();
  ASSERT_TRUE(got.has_value());
  ASSERT_TRUE(got->ok()) << got->status().ToString();
  EXPECT_EQ(client_.RequestsTo(ReplicaPeer(1, 0), "/get").size(), 1u);
  // ... whose answer names 1 shard: asked again of shard 0, which has it.
  EXPECT_EQ(client_.RequestsTo(ReplicaPeer(0, 0), "/get").size(), 1u);
  EXPECT_EQ((*got)->body, "from-shard-0\n");
  EXPECT_EQ(session->shard, 0);
  EXPECT_EQ(session->shard_count, 1);
  EXPECT_EQ(stats_.archive_reroutes.load(), 1u);
  EXPECT_EQ(reader.ShardCount(), 1);  // the newest generation's count routes from now on
}

TEST_F(ArchiveReaderTest, ShardsDisagreeingOnTheCountIsShardUnavailable) {
  // Shard 0 says 2 shards and shard 1 says 1, both of one generation: each
  // answer sends the key to the other shard. A few tries, then a clear error.
  const std::string key = KeyOnShard(1, 2);
  ASSERT_EQ(ShardOf(key, 1), 0u);
  ServeTwoShards(2, 1);
  ArchiveReader& reader = MakeReader(ArchiveCluster(2, 1));

  Result<ArchiveReply> reply = Get(reader.Begin(key), key);
  ASSERT_FALSE(reply.ok());
  EXPECT_EQ(reply.status().reason(), "SHARD_UNAVAILABLE");
  EXPECT_NE(reply.status().message().find("re-partitioned generation is being deployed"), std::string::npos)
      << reply.status().message();
  EXPECT_EQ(stats_.archive_reroutes.load(), 3u);
}

// An mget whose asked keys are rerouted while out (a re-partition being
// deployed) had its other keys answered by the cache from the shard first
// asked: those lines are dropped and every key asked again where the
// session points now, so the caller gets one file's answers.
TEST_F(ArchiveReaderGenerationTest, AnMgetReroutedWhileOutIsAskedAgainWholeWithoutItsKeptLines) {
  const std::string shard_key = KeyOnShard(1, 2);
  const auto [shard0, shard1] = ServeTwoShards(2, 2);
  ArchiveReader& reader = MakeReader(ArchiveCluster(2, 1), Known(), Kept());
  auto session = reader.Begin(shard_key);
  ASSERT_TRUE(MGet(session, {"k1"}).ok());  // kept, of shard 1's generation 7
  ASSERT_EQ(session->shard, 1);
  // The replica's first answer was kept (no file was confirmed when it was
  // asked): read again, it comes from the cache.
  ASSERT_TRUE(MGet(session, {"k1"}).ok());
  ASSERT_EQ(stats_.archive_cache_hits.load(), 1u) << "k1 was not kept";

  // Generation 8 is cut into one shard, which holds every key.
  for (ServedFileState* file : {shard0.get(), shard1.get()}) {
    Deploy(*file, 8, 2222, "v1-of-8");
    file->shard_count = 1;
    file->records["k2"] = "v2-of-8";
  }
  Result<std::vector<ArchiveReply>> replies = MGet(session, {"k1", "k2"});
  ASSERT_TRUE(replies.ok()) << replies.status().ToString();
  EXPECT_EQ(session->shard, 0);
  EXPECT_EQ(session->shard_count, 1);
  std::string lines;
  for (const ArchiveReply& reply : *replies) {
    EXPECT_EQ(reply.view.generation, 8u) << "a kept line of the shard first asked came back";
    EXPECT_FALSE(reply.kept);
    lines += reply.body;
  }
  EXPECT_EQ(lines, "k1,v1-of-8\nk2,v2-of-8\n");
  EXPECT_EQ(stats_.archive_reroutes.load(), 1u);
}

}  // namespace
}  // namespace clickatron::api::archive_reader_test
