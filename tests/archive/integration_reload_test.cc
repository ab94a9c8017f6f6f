// Zero-downtime swaps of the real daemon: reloads under a read load, refused
// replacements, the no-file start, SIGHUP, and a stream that outlives a swap.
#include <signal.h>

#include <atomic>
#include <filesystem>
#include <map>
#include <mutex>
#include <random>
#include <string>
#include <thread>
#include <vector>

#include <fmt/format.h>
#include <gtest/gtest.h>

#include "replica_fixture.h"

namespace clickatron::archive {
namespace {

using testing::kSortdbSample;
using testing::ReplicaTest;
using testing::WriteArchive;

// One generation's contents, kept as a map so answers can be checked
// against it independently of the daemon's search.
struct Generation {
  uint64_t number = 0;
  std::string last_day;
  std::map<std::string, std::string> values;  // key → value
  std::string Contents() const {
    std::string out;
    for (const auto& [k, v] : values) out += k + "," + v + "\n";  // std::map order = bytewise
    return out;
  }
  std::string Lines(const std::string& prefix) const {
    std::string out;
    for (const auto& [k, v] : values) {
      if ((k + "," + v).compare(0, prefix.size(), prefix) == 0) out += k + "," + v + "\n";
    }
    return out;
  }
};

// Keys u|k000…u|k299; A lacks every third key, B another third, so hits and
// misses both depend on which file answered.
Generation MakeGeneration(uint64_t number, char tag, int skip_mod) {
  Generation g;
  g.number = number;
  g.last_day = tag == 'a' ? "2012-03-24" : "2012-03-25";
  for (int i = 0; i < 300; ++i) {
    if (i % 3 == skip_mod) continue;
    g.values[fmt::format("u|k{:03d}", i)] = fmt::format("c3h{}:{}{}", tag, tag, i);
  }
  return g;
}

// Checks one answer against the generation its header names; "" when right.
std::string CheckAnswer(const HttpResponse& r, const std::map<uint64_t, const Generation*>& gens,
                        const std::function<std::string(const Generation&)>& expected_body, int expected_status_hit,
                        bool is_get, const std::string& key) {
  if (!r.ok()) return "transport error: " + r.transport.ToString();
  uint64_t number = std::strtoull(r.Header("X-Archive-Generation").c_str(), nullptr, 10);
  auto it = gens.find(number);
  if (it == gens.end()) return fmt::format("unknown generation header \"{}\"", r.Header("X-Archive-Generation"));
  const Generation& g = *it->second;
  if (r.Header("X-Archive-Last-Day") != g.last_day) return "last day header does not match generation";
  int want_status = expected_status_hit;
  if (is_get && !g.values.count(key)) want_status = 404;
  if (r.status_code != want_status) return fmt::format("status {} (want {}) for {}", r.status_code, want_status, key);
  std::string want_body = expected_body(g);
  if (r.body != want_body) return fmt::format("body \"{}\" (want \"{}\") for {}", r.body, want_body, key);
  return "";
}

TEST_F(ReplicaTest, ReloadsUnderReadLoadFailNoRequest) {
  Generation a = MakeGeneration(101, 'a', 0);
  Generation b = MakeGeneration(202, 'b', 1);
  std::string staged_a = cluster_ / "staged-a.csv", staged_b = cluster_ / "staged-b.csv";
  WriteArchive(staged_a, a.Contents(), a.number, a.last_day);
  WriteArchive(staged_b, b.Contents(), b.number, b.last_day);
  Deploy(staged_a);
  StartReplica();
  std::map<uint64_t, const Generation*> gens = {{a.number, &a}, {b.number, &b}};

  std::atomic<bool> stop{false};
  std::atomic<uint64_t> reads{0};
  std::mutex failure_mu;
  std::vector<std::string> failures;
  std::thread reader([&] {
    BlockingHttpClient client(clickatron::testing::kTestClusterSecret);
    std::mt19937 rng(7);
    while (!stop.load()) {
      int i = static_cast<int>(rng() % 300);
      std::string key = fmt::format("u|k{:03d}", i);
      std::string error;
      HttpRequestSpec spec;
      switch (rng() % 4) {
        case 0: {  // mget of three keys, misses left out
          std::string k2 = fmt::format("u|k{:03d}", (i + 1) % 300), k3 = fmt::format("u|k{:03d}", (i + 2) % 300);
          spec.target = "/mget?key=" + key + "&key=" + k2 + "&key=" + k3;
          HttpResponse r = client.Fetch(peer(), spec);
          error = CheckAnswer(r, gens, [&](const Generation& g) {
            std::string out;
            for (const auto& k : {key, k2, k3}) {
              if (g.values.count(k)) out += k + "," + g.values.at(k) + "\n";
            }
            return out;
          }, 200, false, key);
          break;
        }
        case 1: {  // fwmatch of a ten-key block
          std::string prefix = key.substr(0, key.size() - 1);
          spec.target = "/fwmatch?key=" + prefix;
          HttpResponse r = client.Fetch(peer(), spec);
          error = CheckAnswer(r, gens, [&](const Generation& g) { return g.Lines(prefix); }, 200, false, prefix);
          break;
        }
        default: {
          spec.target = "/get?key=" + key;
          HttpResponse r = client.Fetch(peer(), spec);
          error = CheckAnswer(r, gens, [&](const Generation& g) {
            return g.values.count(key) ? g.values.at(key) + "\n" : std::string();
          }, 200, true, key);
        }
      }
      reads.fetch_add(1);
      if (!error.empty()) {
        std::lock_guard lock(failure_mu);
        if (failures.size() < 10) failures.push_back(error);
      }
    }
  });

  const int kReloads = 200;
  int reload_failures = 0;
  for (int n = 0; n < kReloads; ++n) {
    const Generation& next = n % 2 == 0 ? b : a;
    Deploy(n % 2 == 0 ? staged_b : staged_a);
    HttpResponse r = Reload();
    if (r.status_code != 200 || Json(r)["data"]["generation"] != next.number) {
      ++reload_failures;
      ADD_FAILURE() << "reload " << n << ": " << r.status_code << " " << r.body;
      if (reload_failures > 3) break;
    }
  }
  // Make sure reads overlapped the reloads, then a few more after the last one.
  uint64_t reads_at_end = reads.load();
  ASSERT_TRUE(clickatron::testing::WaitFor([&] { return reads.load() >= reads_at_end + 20; }));
  stop = true;
  reader.join();

  EXPECT_EQ(reload_failures, 0);
  EXPECT_GT(reads_at_end, 50u) << "the reader barely ran during the reloads";
  RecordProperty("reads_during_reloads", std::to_string(reads_at_end));
  std::lock_guard lock(failure_mu);
  EXPECT_TRUE(failures.empty()) << failures.size() << " bad answers, first: " << failures.front();
  nlohmann::json stats = ArchiveStats();
  EXPECT_EQ(stats["reloads_ok"], kReloads);
  EXPECT_EQ(stats["reloads_failed"], 0);
  EXPECT_EQ(stats["file"]["generation"], a.number);  // 200 swaps end on A
  EXPECT_EQ(stats["generations_mapped"], 1);          // every old mapping released
}

TEST_F(ReplicaTest, CorruptReplacementsAreRefusedWhileTheOldFileServes) {
  WriteArchive(file(), kSortdbSample, 5, "2012-03-25");
  StartReplica();
  auto expect_still_serving = [&](const std::string& what) {
    HttpResponse r = Get("/get?key=u|jehiah.c3hh");
    EXPECT_EQ(r.status_code, 200) << what;
    EXPECT_EQ(r.body, "13\n") << what;
    EXPECT_EQ(r.Header("X-Archive-Generation"), "5") << what;
  };
  auto expect_refused = [&](const std::string& what, const std::string& reason_part) {
    HttpResponse r = Reload();
    EXPECT_EQ(r.status_code, 500) << what;
    nlohmann::json j = Json(r);
    EXPECT_EQ(j["status_txt"], "RELOAD_FAILED") << what;
    std::string message = j.value("message", "");
    EXPECT_NE(message.find(reason_part), std::string::npos) << what << ": " << message;
    EXPECT_NE(message.find("still serving generation 5"), std::string::npos) << what << ": " << message;
    expect_still_serving(what);
  };

  // A new generation whose bytes were damaged after its manifest was written.
  std::string next(kSortdbSample);
  next.replace(next.find("u|jehiah.c3i0,7"), 15, "u|jehiah.c3i0,8");
  std::string staged = cluster_ / "staged.csv";
  WriteArchive(staged, next, 6, "2012-03-26");
  std::string damaged(next);
  damaged[damaged.find("US:7")] = 'X';
  ASSERT_TRUE(WriteFileAtomically(staged, damaged).ok());
  Deploy(staged);
  expect_refused("bad crc", "crc32");

  // Truncated copy.
  WriteArchive(staged, next, 6, "2012-03-26");
  ASSERT_TRUE(WriteFileAtomically(staged, next.substr(0, next.size() - 10)).ok());
  Deploy(staged);
  expect_refused("truncated", "bytes");

  // No manifest beside the file.
  std::filesystem::remove(ManifestPathFor(file()));
  ASSERT_TRUE(WriteFileAtomically(file(), next).ok());
  expect_refused("missing manifest", "no manifest");

  // The file gone: an empty archive would look like lost history.
  std::filesystem::remove(file());
  expect_refused("vanished file", "does not exist");

  nlohmann::json stats = ArchiveStats();
  EXPECT_EQ(stats["reloads_failed"], 4);
  EXPECT_EQ(stats["reloads_ok"], 0);
  EXPECT_NE(stats["last_reload_error"].get<std::string>().find("does not exist"), std::string::npos);

  // And a good one is taken.
  WriteArchive(file(), next, 6, "2012-03-26");
  HttpResponse ok = Reload();
  ASSERT_EQ(ok.status_code, 200) << ok.body;
  EXPECT_EQ(Json(ok)["data"]["generation"], 6);
  HttpResponse r = Get("/get?key=u|jehiah.c3i0");
  EXPECT_EQ(r.body, "8\n");
  EXPECT_EQ(r.Header("X-Archive-Generation"), "6");
  EXPECT_EQ(r.Header("X-Archive-Last-Day"), "2012-03-26");
}

TEST_F(ReplicaTest, NoFileAnswersEmptyUntilAReloadFindsOne) {
  StartReplica();
  HttpResponse miss = Get("/get?key=u|jehiah.c3hh");
  EXPECT_EQ(miss.status_code, 404);
  EXPECT_EQ(miss.body, "");
  EXPECT_EQ(miss.Header("X-Archive-Generation"), "0");
  EXPECT_EQ(miss.Header("X-Archive-Last-Day"), "");
  EXPECT_EQ(Get("/mget?key=u|jehiah.c3hh").body, "");
  HttpResponse block = Get("/fwmatch?key=u|");
  EXPECT_EQ(block.status_code, 200);
  EXPECT_EQ(block.body, "");
  HttpResponse manifest = Get("/manifest");
  EXPECT_EQ(manifest.status_code, 200);
  EXPECT_TRUE(Json(manifest)["data"].is_null()) << manifest.body;
  // Still no file: reloading keeps the empty archive.
  HttpResponse still_empty = Reload();
  EXPECT_EQ(still_empty.status_code, 200) << still_empty.body;
  EXPECT_EQ(Json(still_empty)["data"]["generation"], 0);

  WriteArchive(file(), kSortdbSample, 1, "2012-03-25");
  HttpResponse reload = Reload();
  ASSERT_EQ(reload.status_code, 200) << reload.body;
  EXPECT_EQ(Json(reload)["data"]["generation"], 1);
  EXPECT_EQ(Json(reload)["data"]["records"], 14);
  HttpResponse hit = Get("/get?key=u|jehiah.c3hh");
  EXPECT_EQ(hit.body, "13\n");
  EXPECT_EQ(hit.Header("X-Archive-Generation"), "1");
  EXPECT_EQ(hit.Header("X-Archive-Last-Day"), "2012-03-25");
}

TEST_F(ReplicaTest, AFileFailingItsChecksAtStartAnswers503UntilFixed) {
  ASSERT_TRUE(WriteFileAtomically(file(), kSortdbSample).ok());  // no manifest
  StartReplica();
  HttpResponse r = Get("/get?key=u|jehiah.c3hh");
  EXPECT_EQ(r.status_code, 503);
  EXPECT_EQ(Json(r)["status_txt"], "ARCHIVE_UNAVAILABLE");
  EXPECT_EQ(Get("/fwmatch?key=u").status_code, 503);
  WriteArchive(file(), kSortdbSample, 3, "2012-03-25");
  ASSERT_EQ(Reload().status_code, 200);
  EXPECT_EQ(Get("/get?key=u|jehiah.c3hh").body, "13\n");
}

TEST_F(ReplicaTest, SighupReloads) {
  WriteArchive(file(), kSortdbSample, 1, "2012-03-25");
  StartReplica();
  std::string next(kSortdbSample);
  next += "u|zed,1\n";
  WriteArchive(file(), next, 2, "2012-03-26");
  ASSERT_EQ(::kill(pid(), SIGHUP), 0);
  EXPECT_TRUE(clickatron::testing::WaitFor([&] {
    return Get("/get?key=u|zed").Header("X-Archive-Generation") == "2";
  })) << LogTail();
  EXPECT_EQ(Get("/get?key=u|zed").body, "1\n");
  EXPECT_EQ(ArchiveStats()["reloads_ok"], 1);
}

// A streamed fwmatch started on generation 1 finishes on generation 1 even
// though a reload swaps in generation 2 while the client is still reading;
// the old mapping is released when the stream ends.
TEST_F(ReplicaTest, AStreamStartedBeforeAReloadFinishesOnTheOldFile) {
  std::string old_data, new_data;
  for (int i = 0; i < 300000; ++i) {  // ~25 MB: far more than the socket buffers hold
    old_data += fmt::format("p|{:07d},old value {:07d} padding padding padding\n", i, i);
    new_data += fmt::format("p|{:07d},new {}\n", i, i);
  }
  WriteArchive(file(), old_data, 1, "2012-03-24");
  std::string staged = cluster_ / "staged.csv";
  WriteArchive(staged, new_data, 2, "2012-03-25");
  StartReplica();

  std::string received;
  bool reloaded_mid_stream = false;
  int64_t generations_during = 0;
  BlockingHttpClient client(clickatron::testing::kTestClusterSecret);
  HttpRequestSpec spec;
  spec.target = "/fwmatch?key=p|";
  spec.timeout_ms = 60000;
  HttpResponse r = client.FetchStreaming(peer(), spec, [&](std::string_view chunk) {
    received.append(chunk);
    if (!reloaded_mid_stream) {
      reloaded_mid_stream = true;
      Deploy(staged);
      HttpResponse reload = Reload();
      EXPECT_EQ(reload.status_code, 200) << reload.body;
      EXPECT_EQ(Get("/get?key=p|0000001").body, "new 1\n");
      generations_during = ArchiveStats()["generations_mapped"].get<int64_t>();
    }
    return Status::Ok();
  });
  ASSERT_TRUE(r.ok()) << r.transport.ToString();
  EXPECT_EQ(r.status_code, 200);
  EXPECT_EQ(r.Header("X-Archive-Generation"), "1");
  EXPECT_TRUE(reloaded_mid_stream);
  EXPECT_EQ(received.size(), old_data.size());
  EXPECT_TRUE(received == old_data) << "the stream did not finish on the old generation";
  EXPECT_EQ(generations_during, 2) << "the old mapping should be alive while its stream runs";
  EXPECT_TRUE(clickatron::testing::WaitFor([&] { return ArchiveStats()["generations_mapped"] == 1; }));
}

}  // namespace
}  // namespace clickatron::archive
