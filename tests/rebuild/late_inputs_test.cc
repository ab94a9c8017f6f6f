// The late-data fetch against stand-in API nodes (the core HTTP server in
// this process): a file becomes a local copy only when the listed bytes all
// arrived and they are a complete framed log; a transfer that comes short
// skips that API node for the run (nothing of the file is kept); a file that
// arrives whole but damaged is an error; files already folded are not fetched
// again; files of two nodes with the same name get different ids.
#include "late_inputs.h"

#include <gtest/gtest.h>

#include <filesystem>
#include <map>

#include <fmt/format.h>

#include "clickatron/file_util.h"
#include "clickatron/framed_log.h"
#include "clickatron/http_server.h"
#include "clickatron/oplog_record.h"
#include "testutil/stand_in_server.h"
#include "testutil/testutil.h"

namespace clickatron::rebuild::late_inputs_test {
namespace {

using clickatron::testing::TempDir;

constexpr const char* kToken = "tok";

// A framed late-data log of `frames` frames, built with the real writer.
std::string FramedLog(const TempDir& dir, const std::string& source, int frames) {
  const std::string path = dir / ("build-" + std::to_string(frames) + "-" + source);
  std::filesystem::remove(path);
  auto writer = FramedLogWriter::Open(path);
  EXPECT_TRUE(writer.ok());
  for (int i = 0; i < frames; ++i) {
    EXPECT_TRUE((*writer)->Append(FormatBatchHeader(source, 0, static_cast<uint64_t>(i + 1)) +
                                  fmt::format("u|k{}.c41l,{}\n", i, i + 1))
                    .ok());
  }
  EXPECT_TRUE((*writer)->Close().ok());
  return ReadFileToString(path).value();
}

// An API node's late-file routes. files: name -> bytes served; listed_bytes
// overrides the size /late/files gives (a transfer that comes short).
class FakeApi {
 public:
  explicit FakeApi(std::map<std::string, std::string> files, std::map<std::string, uint64_t> listed_bytes = {})
      : files_(std::move(files)), listed_bytes_(std::move(listed_bytes)) {
    HttpServer& server = stand_in_.server();
    server.AdminRoute("/late/files", [this](const HttpExchangePtr& ex) { List(ex); }, kGet);
    server.AdminRoute("/late/file", [this](const HttpExchangePtr& ex) { File(ex); }, kGet);
    server.AdminRoute("/late/done", [this](const HttpExchangePtr& ex) { Done(ex); }, kPost);
    stand_in_.Start();
  }
  uint16_t port() const { return stand_in_.port(); }
  // Names fetched and marked done, in order (read after the fetch returned).
  const std::vector<std::string>& fetched() const { return fetched_; }
  const std::vector<std::string>& done() const { return done_; }

 private:
  void List(const HttpExchangePtr& ex) {
    nlohmann::json files = nlohmann::json::array();
    for (const auto& [name, bytes] : files_) {
      const auto listed = listed_bytes_.find(name);
      files.push_back({{"name", name}, {"bytes", listed != listed_bytes_.end() ? listed->second : bytes.size()}});
    }
    ex->ReplyJson({{"files", files}});
  }
  void File(const HttpExchangePtr& ex) {
    const std::string* name = ex->args().Get("name");
    const auto it = name != nullptr ? files_.find(*name) : files_.end();
    if (it == files_.end()) {
      ex->ReplyError(404, "NOT_FOUND", "no such file");
      return;
    }
    fetched_.push_back(*name);
    ex->StartStream(200, "application/octet-stream");
    ex->SendChunk(it->second.substr(0, it->second.size() / 2));
    ex->SendChunk(it->second.substr(it->second.size() / 2));
    ex->EndStream();
  }
  void Done(const HttpExchangePtr& ex) {
    done_.push_back(*ex->args().Get("name"));
    ex->ReplyJson({{"name", done_.back()}, {"already_done", false}});
  }

  std::map<std::string, std::string> files_;
  std::map<std::string, uint64_t> listed_bytes_;
  std::vector<std::string> fetched_, done_;
  clickatron::testing::StandInServer stand_in_{"fake-api", kToken};  // last: stopped before the rest goes
};

ClusterConfig Cluster(const std::vector<std::pair<std::string, uint16_t>>& apis) {
  ClusterConfig cluster;
  cluster.admin_token = kToken;
  for (const auto& [name, port] : apis) {
    MemberConfig m;
    m.name = name;
    m.role = MemberRole::kApi;
    m.listen = HostPort{"127.0.0.1", port};
    m.data_dir = "/srv/" + name;
    cluster.members.push_back(m);
  }
  return cluster;
}

FetchLateOptions Options(const ClusterConfig& cluster, const std::string& dest) {
  FetchLateOptions options;
  options.cluster = &cluster;
  options.dest_dir = dest;
  options.http_timeout_ms = 5000;
  options.transfer_timeout_ms = 10000;
  return options;
}

TEST(LateInputs, SameNameOnTwoNodesGetsTwoIdsAndTwoCopies) {
  TempDir tmp;
  const std::string a = FramedLog(tmp, "api-0", 3), b = FramedLog(tmp, "api-1", 5);
  FakeApi api0({{"late-1700000000.sealed", a}});
  FakeApi api1({{"late-1700000000.sealed", b}, {"late-1600000000.sealed", a}});
  const ClusterConfig cluster = Cluster({{"api-0", api0.port()}, {"api-1", api1.port()}});
  auto got = FetchLateInputs(Options(cluster, tmp / "late"));
  ASSERT_TRUE(got.ok()) << got.status().ToString();
  // Oldest first across nodes.
  EXPECT_EQ(got->ids, (std::vector<std::string>{"api-1/late-1600000000.sealed", "api-0/late-1700000000.sealed",
                                                "api-1/late-1700000000.sealed"}));
  ASSERT_EQ(got->paths.size(), 3u);
  EXPECT_EQ(got->paths[1], tmp / "late/api-0/late-1700000000.sealed");
  EXPECT_EQ(ReadFileToString(got->paths[1]).value(), a);
  EXPECT_EQ(ReadFileToString(got->paths[2]).value(), b);
  EXPECT_TRUE(got->skipped_members.empty());
  EXPECT_FALSE(FileExists(got->paths[1] + ".tmp"));
}

TEST(LateInputs, AlreadyFoldedFilesAreNotFetchedAgain) {
  TempDir tmp;
  const std::string a = FramedLog(tmp, "api-0", 2);
  FakeApi api0({{"late-1.sealed", a}, {"late-2.sealed", a}});
  const ClusterConfig cluster = Cluster({{"api-0", api0.port()}});
  FetchLateOptions options = Options(cluster, tmp / "late");
  // The same name of another node does not count.
  options.already_folded = {"api-0/late-1.sealed", "api-9/late-2.sealed"};
  auto got = FetchLateInputs(options);
  ASSERT_TRUE(got.ok()) << got.status().ToString();
  EXPECT_EQ(got->ids, std::vector<std::string>{"api-0/late-2.sealed"});
  EXPECT_EQ(got->still_sealed, std::vector<std::string>{"api-0/late-1.sealed"});
  EXPECT_EQ(api0.fetched(), std::vector<std::string>{"late-2.sealed"});
  EXPECT_FALSE(FileExists(tmp / "late/api-0/late-1.sealed"));
}

TEST(LateInputs, ATransferThatComesShortSkipsTheNodeAndKeepsNothingOfIt) {
  TempDir tmp;
  const std::string a = FramedLog(tmp, "api-0", 4);
  // The node lists more bytes than it sends (its read failed after the 200).
  FakeApi api0({{"late-5.sealed", a}}, {{"late-5.sealed", a.size() + 100}});
  FakeApi api1({{"late-6.sealed", a}});
  const ClusterConfig cluster = Cluster({{"api-0", api0.port()}, {"api-1", api1.port()}});
  auto got = FetchLateInputs(Options(cluster, tmp / "late"));
  ASSERT_TRUE(got.ok()) << got.status().ToString();
  EXPECT_EQ(got->ids, std::vector<std::string>{"api-1/late-6.sealed"});
  ASSERT_EQ(got->skipped_members.size(), 1u);
  EXPECT_EQ(got->skipped_members[0].first, "api-0");
  EXPECT_NE(got->skipped_members[0].second.find("broke off"), std::string::npos) << got->skipped_members[0].second;
  EXPECT_FALSE(FileExists(tmp / "late/api-0/late-5.sealed"));
  EXPECT_FALSE(FileExists(tmp / "late/api-0/late-5.sealed.tmp"));
}

TEST(LateInputs, AFileThatEndsInsideAFrameIsAnError) {
  TempDir tmp;
  const std::string a = FramedLog(tmp, "api-0", 4);
  const std::string cut = a.substr(0, a.size() - 3);  // listed and sent whole, but torn
  FakeApi api0({{"late-5.sealed", cut}});
  const ClusterConfig cluster = Cluster({{"api-0", api0.port()}});
  auto got = FetchLateInputs(Options(cluster, tmp / "late"));
  ASSERT_FALSE(got.ok());
  EXPECT_EQ(got.status().code(), StatusCode::kCorruption) << got.status().ToString();
  EXPECT_NE(got.status().message().find("ends inside a frame"), std::string::npos) << got.status().ToString();
  EXPECT_FALSE(FileExists(tmp / "late/api-0/late-5.sealed"));
}

TEST(LateInputs, AFrameWithABadChecksumIsAnError) {
  TempDir tmp;
  std::string a = FramedLog(tmp, "api-0", 4);
  a[kFrameHeaderBytes + 3] ^= 0x20;  // a byte of the first frame's payload: more frames follow it
  FakeApi api0({{"late-5.sealed", a}});
  const ClusterConfig cluster = Cluster({{"api-0", api0.port()}});
  auto got = FetchLateInputs(Options(cluster, tmp / "late"));
  ASSERT_FALSE(got.ok());
  EXPECT_EQ(got.status().code(), StatusCode::kCorruption) << got.status().ToString();
  EXPECT_FALSE(FileExists(tmp / "late/api-0/late-5.sealed"));
}

TEST(LateInputs, ANodeThatDoesNotAnswerIsSkippedAndNamed) {
  TempDir tmp;
  const std::string a = FramedLog(tmp, "api-0", 1);
  FakeApi api0({{"late-5.sealed", a}});
  // api-1's port: taken by nothing.
  const ClusterConfig cluster = Cluster({{"api-0", api0.port()}, {"api-1", clickatron::testing::FreePort()}});
  auto got = FetchLateInputs(Options(cluster, tmp / "late"));
  ASSERT_TRUE(got.ok()) << got.status().ToString();
  EXPECT_EQ(got->ids, std::vector<std::string>{"api-0/late-5.sealed"});
  ASSERT_EQ(got->skipped_members.size(), 1u);
  EXPECT_EQ(got->skipped_members[0].first, "api-1");
}

TEST(LateInputs, ANameThatIsNotALateFileSkipsTheNode) {
  TempDir tmp;
  const std::string a = FramedLog(tmp, "api-0", 1);
  FakeApi api0({{"../late-5.sealed", a}});
  const ClusterConfig cluster = Cluster({{"api-0", api0.port()}});
  auto got = FetchLateInputs(Options(cluster, tmp / "late"));
  ASSERT_TRUE(got.ok()) << got.status().ToString();
  EXPECT_TRUE(got->ids.empty());
  ASSERT_EQ(got->skipped_members.size(), 1u);
  EXPECT_TRUE(api0.fetched().empty());
  EXPECT_FALSE(std::filesystem::exists(tmp / "late-5.sealed"));
}

TEST(LateInputs, MarkDoneAsksTheOwningNode) {
  FakeApi api0({}), api1({});
  const ClusterConfig cluster = Cluster({{"api-0", api0.port()}, {"api-1", api1.port()}});
  ASSERT_TRUE(MarkLateInputDone(cluster, "api-1/late-7.sealed", 5000).ok());
  EXPECT_TRUE(api0.done().empty());
  EXPECT_EQ(api1.done(), std::vector<std::string>{"late-7.sealed"});
  // An id of no API member, and a node that does not answer: errors.
  EXPECT_FALSE(MarkLateInputDone(cluster, "api-5/late-7.sealed", 5000).ok());
  const ClusterConfig down = Cluster({{"api-0", clickatron::testing::FreePort()}});
  const Status st = MarkLateInputDone(down, "api-0/late-7.sealed", 5000);
  EXPECT_FALSE(st.ok());
  EXPECT_EQ(st.reason(), "LATE_DONE_FAILED") << st.ToString();
}

TEST(LateInputs, IdsAndTheOldPathForm) {
  std::string member, name;
  EXPECT_TRUE(SplitLateInputId("api-0/late-17.sealed", &member, &name));
  EXPECT_EQ(member, "api-0");
  EXPECT_EQ(name, "late-17.sealed");
  for (const char* bad : {"late-17.sealed", "api-0/late-17.open", "api-0/x/late-17.sealed", "/late-17.sealed",
                          "../late-17.sealed", "api-0/late-.sealed", "api-0/late-1a.sealed"}) {
    EXPECT_FALSE(SplitLateInputId(bad, &member, &name)) << bad;
  }
  // Manifests of before name files by their path on the API node.
  const ClusterConfig cluster = Cluster({{"api-0", 1}, {"api-1", 2}});
  EXPECT_EQ(NormalizeLateInputId(cluster, "/srv/api-1/late/late-17.sealed"), "api-1/late-17.sealed");
  EXPECT_EQ(NormalizeLateInputId(cluster, "api-0/late-17.sealed"), "api-0/late-17.sealed");
  EXPECT_EQ(NormalizeLateInputId(cluster, "/elsewhere/late/late-17.sealed"), "/elsewhere/late/late-17.sealed");
}

}  // namespace
}  // namespace clickatron::rebuild::late_inputs_test
