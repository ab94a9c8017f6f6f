// One clickatron-archive daemon started for a test: its own temp dir, port,
// cluster file and log; stopped by PID when the test ends.
#pragma once

#include <signal.h>

#include <filesystem>
#include <string>

#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include "archive_fixture.h"
#include "clickatron/file_util.h"
#include "clickatron/manifest.h"
#include "testutil/testutil.h"

namespace clickatron::archive::testing {

class ReplicaTest : public ::testing::Test {
 protected:
  void TearDown() override {
    if (daemon_.running()) {
      EXPECT_EQ(daemon_.Stop(), 0) << daemon_.LogTail();
    }
  }

  // Starts the replica over file() (which may not exist yet).
  void StartReplica(const std::string& admin_token = "", const std::string& archive_table = "") {
    port_ = clickatron::testing::FreePort();
    config_ = dir_ / "cluster.toml";
    ASSERT_TRUE(WriteFileAtomically(config_, OneReplicaCluster(port_, file(), admin_token, archive_table)).ok());
    std::string error;
    ASSERT_TRUE(daemon_.Start(clickatron::testing::BinaryPath("clickatron-archive"),
                              {"--config", config_, "--member", "archive-0"}, dir_ / "archive-0.log", peer(),
                              &error))
        << error;
  }

  // Puts `staged` (a file with its manifest, written earlier) at file() the
  // way the rebuild deploys: manifest renamed first, then the file. Hard
  // links keep the staged copies for the next swap.
  void Deploy(const std::string& staged) {
    LinkOver(ManifestPathFor(staged), ManifestPathFor(file()));
    LinkOver(staged, file());
  }

  std::string file() const { return dir_ / "shard-0.csv"; }
  HostPort peer() const { return clickatron::testing::Loopback(port_); }
  HttpResponse Get(const std::string& target) { return clickatron::testing::HttpGet(peer(), target); }
  HttpResponse Reload(const std::string& token = "") {
    return clickatron::testing::HttpPost(peer(), "/reload", "", 20000, token);
  }
  nlohmann::json ArchiveStats() {
    HttpResponse r = Get("/stats");
    EXPECT_EQ(r.status_code, 200);
    nlohmann::json j = nlohmann::json::parse(r.body, nullptr, false);
    if (j.is_discarded() || !j.contains("data") || !j["data"].contains("archive")) return nlohmann::json::object();
    return j["data"]["archive"];
  }
  static nlohmann::json Json(const HttpResponse& r) { return nlohmann::json::parse(r.body, nullptr, false); }

  clickatron::testing::TempDir dir_;
  clickatron::testing::DaemonProcess daemon_;
  uint16_t port_ = 0;
  std::string config_;

 private:
  static void LinkOver(const std::string& from, const std::string& to) {
    std::string tmp = to + ".deploying";
    std::error_code ec;
    std::filesystem::remove(tmp, ec);
    std::filesystem::create_hard_link(from, tmp, ec);
    ASSERT_FALSE(ec) << ec.message();
    std::filesystem::rename(tmp, to, ec);
    ASSERT_FALSE(ec) << ec.message();
  }
};

}  // namespace clickatron::archive::testing
