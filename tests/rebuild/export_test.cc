// The export step against a stand-in realtime shard (the core HTTP server in
// this process): only a complete answer becomes the export file; an error
// answer, a stream that breaks off with "!ERROR …" (the realtime daemon's
// mid-stream failure line) or a missing token leaves no file behind.
#include "export.h"

#include <gtest/gtest.h>

#include "clickatron/file_util.h"
#include "clickatron/http_server.h"
#include "testutil/stand_in_server.h"
#include "testutil/testutil.h"

namespace clickatron::rebuild {
namespace {

using clickatron::testing::TempDir;

constexpr const char* kToken = "tok";

class FakeRealtime {
 public:
  FakeRealtime() {
    stand_in_.server().AdminRoute("/export", [this](const HttpExchangePtr& ex) { Export(ex); }, kGet);
    stand_in_.Start();
  }
  HostPort peer() const { return stand_in_.peer(); }

  // Lines the good export streams, in two chunks.
  static std::string GoodBody() {
    std::string body;
    for (int i = 0; i < 1000; ++i) body += "u|k" + std::to_string(1000 + i) + ".c41l," + std::to_string(i + 1) + "\n";
    return body;
  }

 private:
  void Export(const HttpExchangePtr& ex) {
    const std::string* arg = ex->args().Get("date");
    const std::string date = arg != nullptr ? *arg : "";
    if (date == "2012-03-25") {
      const std::string body = GoodBody();
      ex->StartStream(200, "text/plain");
      ex->SendChunk(body.substr(0, 7000));  // cuts a line in two: the reader must not care
      ex->SendChunk(body.substr(7000));
      ex->EndStream();
    } else if (date == "2012-03-26") {
      ex->StartStream(200, "text/plain");
      ex->SendChunk("u|a.c41l,1\nu|b.c41l,2\n");
      ex->SendChunk("!ERROR rocksdb: IO error while iterating\n");
      ex->EndStream();
    } else {
      ex->ReplyError(404, "DAY_NOT_IN_RING", "no store for " + date);
    }
  }

  clickatron::testing::StandInServer stand_in_{"fake-realtime", kToken};
};

ExportOptions Options(const FakeRealtime& fake, const std::string& date, const std::string& path) {
  ExportOptions options;
  options.peer = fake.peer();
  options.member_name = "realtime-0";
  options.date = date;
  options.admin_token = kToken;
  options.path = path;
  options.timeout_ms = 10000;
  return options;
}

TEST(Export, CompleteAnswerBecomesTheFile) {
  FakeRealtime fake;
  TempDir tmp;
  auto result = ExportDay(Options(fake, "2012-03-25", tmp / "export-0.csv"));
  ASSERT_TRUE(result.ok()) << result.status().ToString();
  EXPECT_EQ(ReadFileToString(tmp / "export-0.csv").value(), FakeRealtime::GoodBody());
  EXPECT_EQ(result->lines, 1000u);
  EXPECT_FALSE(FileExists(tmp / "export-0.csv.tmp"));
}

TEST(Export, StreamThatBreaksOffLeavesNoFile) {
  FakeRealtime fake;
  TempDir tmp;
  auto result = ExportDay(Options(fake, "2012-03-26", tmp / "export-0.csv"));
  ASSERT_FALSE(result.ok());
  EXPECT_NE(result.status().message().find("rocksdb: IO error"), std::string::npos) << result.status().ToString();
  EXPECT_FALSE(FileExists(tmp / "export-0.csv"));
  EXPECT_FALSE(FileExists(tmp / "export-0.csv.tmp"));
}

TEST(Export, ErrorAnswerNamesTheReason) {
  FakeRealtime fake;
  TempDir tmp;
  auto result = ExportDay(Options(fake, "2012-01-01", tmp / "export-0.csv"));
  ASSERT_FALSE(result.ok());
  EXPECT_NE(result.status().message().find("DAY_NOT_IN_RING"), std::string::npos) << result.status().ToString();
  EXPECT_FALSE(FileExists(tmp / "export-0.csv"));
}

TEST(Export, WithoutTheAdminTokenNothingIsExported) {
  FakeRealtime fake;
  TempDir tmp;
  ExportOptions options = Options(fake, "2012-03-25", tmp / "export-0.csv");
  options.admin_token.clear();
  auto result = ExportDay(options);
  ASSERT_FALSE(result.ok());
  EXPECT_NE(result.status().message().find("401"), std::string::npos) << result.status().ToString();
  EXPECT_FALSE(FileExists(tmp / "export-0.csv"));
}

TEST(Export, NobodyListeningFailsClearly) {
  TempDir tmp;
  ExportOptions options;
  options.peer = HostPort{"127.0.0.1", clickatron::testing::FreePort()};
  options.member_name = "realtime-9";
  options.date = "2012-03-25";
  options.path = tmp / "export-9.csv";
  options.timeout_ms = 5000;
  auto result = ExportDay(options);
  ASSERT_FALSE(result.ok());
  EXPECT_NE(result.status().message().find("realtime-9"), std::string::npos) << result.status().ToString();
  EXPECT_FALSE(FileExists(tmp / "export-9.csv"));
}

}  // namespace
}  // namespace clickatron::rebuild
