// Generations moving between hosts over HTTP: two replicas of one shard, each
// with its own file in its own directory (nothing shared), a third "source"
// that lies about its bytes, and the real clickatron-archive daemons.
//
//   GET /file?shard=S          the serving file, byte for byte
//   POST /fetch?source=&generation=
//                              fetched, checked, put in place, served
//   start-up                   a replica behind its peers catches up by itself
#include <gtest/gtest.h>

#include <unistd.h>

#include <chrono>
#include <filesystem>
#include <string>
#include <thread>
#include <vector>

#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include "archive_fixture.h"
#include "clickatron/byte_stream.h"
#include "clickatron/file_util.h"
#include "clickatron/generation_fetch.h"
#include "clickatron/http_client.h"
#include "clickatron/http_server.h"
#include "clickatron/manifest.h"
#include "testutil/cluster.h"

namespace clickatron::archive::testing {
namespace {

using clickatron::testing::WaitFor;

constexpr const char* kToken = "fetch-test-token";

// Sorted lines "u|kNNNNNNN,c3h5:N" up to about `bytes` bytes: big enough to
// be streamed in many chunks.
std::string ArchiveText(size_t bytes, int salt) {
  std::string text;
  for (int i = 0; text.size() < bytes; ++i) text += fmt::format("u|k{:07d},c3h5:{}\n", i, i * 7 + salt);
  return text;
}

class FetchTest : public ::testing::Test {
 protected:
  void SetUp() override {
    clickatron::testing::ClusterSpec spec;
    spec.api_nodes = 0;
    spec.archive_replicas = 2;
    spec.cluster.SetString("admin_token", kToken).SetString("log_level", "info");
    // Each replica's file in a directory of its own.
    for (int r = 0; r < 2; ++r) {
      const std::string name = clickatron::testing::ArchiveMemberName(0, r, 2);
      spec.members[name].file = cluster_ / fmt::format("{}/shard-0.csv", name);
      ASSERT_TRUE(MakeDirs(cluster_ / name).ok());
    }
    const Status written = cluster_.Write(spec);
    ASSERT_TRUE(written.ok()) << written.ToString();
  }

  void TearDown() override {
    for (int r = 0; r < 2; ++r) {
      if (cluster_.Running(Name(r))) {
        EXPECT_EQ(cluster_.Stop(Name(r)), 0) << cluster_.LogTail(Name(r));
      }
    }
  }

  std::string Name(int replica) const { return cluster_.ArchiveName(0, replica); }
  std::string File(int replica) const { return cluster_.Member(Name(replica)).file; }
  void Start(int replica) {
    std::string error;
    ASSERT_TRUE(cluster_.Start(Name(replica), &error)) << error;
  }
  // data.generation at /manifest (-1: no answer).
  int64_t Generation(int replica) {
    HttpResponse r = cluster_.Get(Name(replica), "/manifest");
    if (!r.ok() || r.status_code != 200) return -1;
    auto j = nlohmann::json::parse(r.body, nullptr, false);
    if (j.is_discarded() || !j.contains("data")) return -1;
    return j["data"].is_null() ? 0 : j["data"].value("generation", int64_t{-1});
  }
  HttpResponse Fetch(int replica, const HostPort& source, const std::string& generation) {
    std::string target = "/fetch?source=" + source.ToString();
    if (!generation.empty()) target += "&generation=" + generation;
    return cluster_.Post(Name(replica), target, "", kToken, 30000);
  }
  // /stats archive.catch_up: what the replica's start-up catch-up found.
  std::string CatchUp(int replica) {
    auto j = nlohmann::json::parse(cluster_.Get(Name(replica), "/stats").body, nullptr, false);
    if (j.is_discarded()) return "";
    return j["data"]["archive"].value("catch_up", "");
  }
  // Replica 1 started serving generation 1 (old_text), and generation 2
  // (good, with its manifest) for a source to offer it.
  struct Offer {
    std::string old_text;
    std::string good;
    Manifest manifest;
  };
  Offer ServeOneOfferTwo() {
    Offer offer;
    offer.old_text = ArchiveText(50 << 10, 1);
    WriteArchive(File(1), offer.old_text, 1, "2026-11-20");
    Start(1);
    offer.good = ArchiveText(300 << 10, 3);
    offer.manifest.generation = 2;
    DescribeArchiveData(offer.good, &offer.manifest);
    return offer;
  }
  static std::string Reason(const HttpResponse& r) {
    auto j = nlohmann::json::parse(r.body, nullptr, false);
    return j.is_discarded() ? "" : j.value("status_txt", "");
  }

  clickatron::testing::Cluster cluster_;
};

TEST_F(FetchTest, FileAnswersTheServingBytesAndOnlyForItsShard) {
  const std::string text = ArchiveText(600 << 10, 1);  // ~10 chunks of 64 KiB
  WriteArchive(File(0), text, 4, "2026-11-20");
  Start(0);
  HttpResponse r = cluster_.Get(Name(0), "/file?shard=0");
  ASSERT_EQ(r.status_code, 200) << r.body.substr(0, 300);
  EXPECT_EQ(r.body, text);
  EXPECT_EQ(r.Header("X-Archive-Generation"), "4");
  EXPECT_EQ(cluster_.Get(Name(0), "/file?shard=1").status_code, 400);
  EXPECT_EQ(Reason(cluster_.Get(Name(0), "/file?shard=1")), "WRONG_SHARD");
  EXPECT_EQ(Reason(cluster_.Get(Name(0), "/manifest?shard=1")), "WRONG_SHARD");
  EXPECT_EQ(Reason(cluster_.Get(Name(0), "/file")), "MISSING_ARG_SHARD");
  // Another member's signature is required: an unsigned request is refused.
  BlockingHttpClient unsigned_client;
  HttpRequestSpec request;
  request.target = "/file?shard=0";
  EXPECT_EQ(unsigned_client.Fetch(cluster_.Address(Name(0)), request).status_code, 401);
}

TEST_F(FetchTest, AReplicaWithoutAFileAnswers404ToFile) {
  Start(0);
  HttpResponse r = cluster_.Get(Name(0), "/file?shard=0");
  EXPECT_EQ(r.status_code, 404);
  EXPECT_EQ(Reason(r), "NO_FILE");
}

TEST_F(FetchTest, FetchCopiesTheSourcesGenerationIntoTheReplicasOwnFile) {
  const std::string old_text = ArchiveText(100 << 10, 1);
  const std::string new_text = ArchiveText(700 << 10, 2);
  WriteArchive(File(0), new_text, 2, "2026-11-21");
  WriteArchive(File(1), old_text, 1, "2026-11-20");
  // Replica 1 first, so that its start-up catch-up finds its peer down and
  // leaves the fetch to this test.
  Start(1);
  ASSERT_TRUE(WaitFor([&] { return CatchUp(1) != "running"; }));
  EXPECT_EQ(CatchUp(1).rfind("not done: no other replica of the shard answered", 0), 0u) << CatchUp(1);
  Start(0);
  ASSERT_EQ(Generation(1), 1);
  // Admin only.
  EXPECT_EQ(cluster_.Post(Name(1), "/fetch?source=" + cluster_.Address(Name(0)).ToString()).status_code, 401);
  // Not the generation the source has: refused, nothing changes.
  HttpResponse wrong = Fetch(1, cluster_.Address(Name(0)), "3");
  EXPECT_EQ(wrong.status_code, 409) << wrong.body;
  EXPECT_EQ(Reason(wrong), "GENERATION_MISMATCH");
  EXPECT_EQ(Generation(1), 1);

  HttpResponse fetched = Fetch(1, cluster_.Address(Name(0)), "2");
  ASSERT_EQ(fetched.status_code, 200) << fetched.body;
  EXPECT_EQ(Generation(1), 2);
  EXPECT_EQ(ReadFileToString(File(1)).value(), new_text);
  EXPECT_EQ(ReadManifest(ManifestPathFor(File(1)))->generation, 2u);
  // What served before is kept beside it, and nothing temporary is left.
  EXPECT_EQ(ReadFileToString(File(1) + ".prev").value(), old_text);
  EXPECT_EQ(ReadManifest(ManifestPathFor(File(1)) + ".prev")->generation, 1u);
  EXPECT_FALSE(FileExists(File(1) + ".fetch"));
  EXPECT_FALSE(FileExists(File(1) + ".fetch.part"));
  // Reads answer from the fetched generation.
  HttpResponse got = cluster_.Get(Name(1), "/get?key=u%7Ck0000001");
  EXPECT_EQ(got.body, "c3h5:9\n");
  // Asked again, it has it already: no second transfer.
  ASSERT_EQ(Fetch(1, cluster_.Address(Name(0)), "2").status_code, 200);
  auto stats = nlohmann::json::parse(cluster_.Get(Name(0), "/stats").body, nullptr, false);
  EXPECT_EQ(stats["data"]["archive"]["files_served"], 1) << stats.dump();
}

// A source whose bytes do not match the manifest it gives (a damaged copy,
// or a transfer cut short): the replica refuses it and keeps what it had.
// Frozen: it sends the first 64 KiB of the file, then nothing more, nor
// closes (a publisher stopped with SIGSTOP).
class LyingSource {
 public:
  enum class Mode { kWhole, kFrozen };
  LyingSource(Manifest manifest, std::string bytes, Mode mode = Mode::kWhole)
      : manifest_(std::move(manifest)), bytes_(std::move(bytes)), mode_(mode) {
    HttpServerOptions options;
    options.daemon = "test";
    options.member = "liar";
    options.listen = HostPort{"127.0.0.1", 0};
    options.cluster_secret = clickatron::testing::kTestClusterSecret;
    options.stop_on_signals = false;
    server_ = std::move(HttpServer::Create(options).value());
    server_->InternalRoute("/manifest", [this](const HttpExchangePtr& ex) {
      ex->AddHeader(kArchiveGenerationHeader, std::to_string(manifest_.generation));
      ex->ReplyJson(manifest_.ToJson());
    });
    server_->InternalRoute("/file", [this](const HttpExchangePtr& ex) {
      ex->AddHeader(kArchiveGenerationHeader, std::to_string(manifest_.generation));
      if (mode_ == Mode::kWhole) {
        StreamBytes(ex, nullptr, bytes_, {});
        return;
      }
      ex->StartStream(200, "application/octet-stream");
      ex->SendChunk(bytes_.substr(0, 64 << 10));
      held_.push_back(ex);  // never ended
    });
    loop_ = std::thread([this] { (void)server_->Run(); });
  }
  ~LyingSource() {
    server_->Stop();
    loop_.join();
    held_.clear();
  }
  HostPort address() const { return HostPort{"127.0.0.1", server_->port()}; }

 private:
  Manifest manifest_;
  std::string bytes_;
  Mode mode_;
  std::unique_ptr<HttpServer> server_;
  std::thread loop_;
  std::vector<HttpExchangePtr> held_;  // the loop's only, until it has stopped
};

TEST_F(FetchTest, BytesThatDoNotMatchTheManifestAreRefusedAndTheOldFileServes) {
  const Offer offer = ServeOneOfferTwo();
  const std::string& old_text = offer.old_text;
  const std::string& good = offer.good;
  const Manifest& manifest = offer.manifest;
  std::string flipped = good;
  flipped[flipped.size() / 2] ^= 0x01;
  const std::string cases[] = {flipped, good.substr(0, good.size() - 100), good + "u|zz,c3h5:1\n"};
  for (const std::string& bytes : cases) {
    LyingSource source(manifest, bytes);
    HttpResponse r = Fetch(1, source.address(), "2");
    EXPECT_EQ(r.status_code, 502) << r.body;
    EXPECT_EQ(Reason(r), "FETCH_FAILED");
    EXPECT_EQ(Generation(1), 1);
    EXPECT_EQ(ReadFileToString(File(1)).value(), old_text);
    EXPECT_EQ(ReadManifest(ManifestPathFor(File(1)))->generation, 1u);
    EXPECT_FALSE(FileExists(File(1) + ".fetch"));
    EXPECT_FALSE(FileExists(File(1) + ".fetch.part"));
  }
  // Whole bytes whose manifest cannot be written beside them (here a
  // directory in its place; on a full disk, no room): refused, and the
  // fetched copy, a shard's size, is not left behind.
  ASSERT_TRUE(MakeDirs(ManifestPathFor(File(1) + ".fetch")).ok());
  {
    LyingSource honest(manifest, good);
    HttpResponse r = Fetch(1, honest.address(), "2");
    EXPECT_EQ(r.status_code, 502) << r.body;
    EXPECT_FALSE(FileExists(File(1) + ".fetch"));
    EXPECT_EQ(Generation(1), 1);
  }
  ASSERT_EQ(::rmdir(ManifestPathFor(File(1) + ".fetch").c_str()), 0);
  // The same source telling the truth is taken.
  LyingSource honest(manifest, good);
  ASSERT_EQ(Fetch(1, honest.address(), "2").status_code, 200);
  EXPECT_EQ(ReadFileToString(File(1)).value(), good);
}

// A source that sends the start of its file and then nothing more, nor
// closes (a frozen publisher): a replica fetching from it still stops at
// once on SIGTERM, instead of waiting out the fetch's 10-minute deadline.
TEST_F(FetchTest, AReplicaStopsAtOnceWhileAFetchWaitsOnAFrozenSource) {
  const Offer offer = ServeOneOfferTwo();
  const std::string& old_text = offer.old_text;
  const std::string& good = offer.good;
  const Manifest& manifest = offer.manifest;
  {
    LyingSource frozen(manifest, good, LyingSource::Mode::kFrozen);
    std::thread asking([&] { (void)Fetch(1, frozen.address(), "2"); });
    EXPECT_TRUE(WaitFor([&] { return FileExists(File(1) + ".fetch.part"); }));
    const auto start = std::chrono::steady_clock::now();
    EXPECT_EQ(cluster_.Stop(Name(1), std::chrono::seconds(15)), 0) << cluster_.LogTail(Name(1));
    EXPECT_LT(std::chrono::steady_clock::now() - start, std::chrono::seconds(10));
    asking.join();
  }
  // The old generation is what the replica has.
  EXPECT_EQ(ReadFileToString(File(1)).value(), old_text);
  EXPECT_FALSE(FileExists(File(1) + ".fetch.part"));
}

TEST_F(FetchTest, AReplicaBehindItsPeerCatchesUpWhenItStarts) {
  const std::string old_text = ArchiveText(80 << 10, 1);
  const std::string new_text = ArchiveText(400 << 10, 5);
  WriteArchive(File(0), new_text, 7, "2026-11-22");
  WriteArchive(File(1), old_text, 6, "2026-11-21");
  Start(0);
  Start(1);  // behind: generation 6 on its disk, 7 at its peer
  ASSERT_TRUE(WaitFor([&] { return Generation(1) == 7; })) << cluster_.LogTail(Name(1));
  EXPECT_EQ(ReadFileToString(File(1)).value(), new_text);
  EXPECT_EQ(CatchUp(1), "fetched generation 7");
  // The other way round: replica 0 comes back with an older file (a disk
  // restored from last week) and catches up from replica 1.
  ASSERT_EQ(cluster_.Stop(Name(0)), 0);
  WriteArchive(File(0), old_text, 6, "2026-11-21");
  Start(0);
  ASSERT_TRUE(WaitFor([&] { return Generation(0) == 7; })) << cluster_.LogTail(Name(0));
  EXPECT_EQ(ReadFileToString(File(0)).value(), new_text);
  EXPECT_EQ(CatchUp(0), "fetched generation 7");
  // Replica 1, asked at the same time, had nothing newer to take: it stays.
  EXPECT_EQ(Generation(1), 7);
  ASSERT_EQ(cluster_.Stop(Name(1)), 0);
  Start(1);
  ASSERT_TRUE(WaitFor([&] { return CatchUp(1) != "running"; }));
  EXPECT_EQ(CatchUp(1), "up to date");
}

TEST_F(FetchTest, AReplicaWhosePeerIsDownServesWhatItHas) {
  const std::string text = ArchiveText(20 << 10, 1);
  WriteArchive(File(1), text, 3, "2026-11-20");
  Start(1);  // its peer never starts
  ASSERT_TRUE(WaitFor([&] { return CatchUp(1) != "running"; }));
  EXPECT_EQ(Generation(1), 3);
  // Not a failed reload: nothing was refused.
  auto stats = nlohmann::json::parse(cluster_.Get(Name(1), "/stats").body, nullptr, false);
  EXPECT_EQ(stats["data"]["archive"]["reloads_failed"], 0);
  EXPECT_EQ(stats["data"]["archive"]["last_reload_error"], "");
  EXPECT_EQ(cluster_.Get(Name(1), "/get?key=u%7Ck0000002").body, "c3h5:15\n");
  EXPECT_NE(CatchUp(1).find("asking again in"), std::string::npos) << CatchUp(1);
  // The peer comes back with a newer generation: the replica, started on
  // an older file while it was away (a restored backup), asks again on its
  // own and takes it, instead of serving the old file until a deploy.
  WriteArchive(File(0), ArchiveText(30 << 10, 2), 4, "2026-11-21");
  Start(0);
  ASSERT_TRUE(WaitFor([&] { return Generation(1) == 4; }, std::chrono::seconds(30))) << CatchUp(1);
  EXPECT_EQ(CatchUp(1), "fetched generation 4");
}

}  // namespace
}  // namespace clickatron::archive::testing
