// One clickatron-archive replica of a test cluster (testutil/cluster.h)
// started for a test; stopped by PID when the test ends.
#pragma once

#include <filesystem>
#include <string>

#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include "archive_fixture.h"
#include "clickatron/manifest.h"
#include "testutil/cluster.h"

namespace clickatron::archive::testing {

class ReplicaTest : public ::testing::Test {
 protected:
  static constexpr const char* kReplica = "archive-0";

  // The cluster file exists from the start, so a test can write file()
  // before it starts the replica.
  ReplicaTest() { WriteCluster("", {}); }

  void TearDown() override {
    if (cluster_.Running(kReplica)) {
      EXPECT_EQ(cluster_.Stop(kReplica), 0) << LogTail();
    }
  }

  // Starts the replica over file() (which may not exist yet). `archive`
  // adds keys to the [archive] table.
  void StartReplica(const std::string& admin_token = "", const clickatron::testing::TomlTable& archive = {}) {
    WriteCluster(admin_token, archive);
    std::string error;
    ASSERT_TRUE(cluster_.Start(kReplica, &error)) << error;
  }

  // Puts `staged` (a file with its manifest, written earlier) at file() the
  // way the rebuild deploys: manifest renamed first, then the file. Hard
  // links keep the staged copies for the next swap.
  void Deploy(const std::string& staged) {
    LinkOver(ManifestPathFor(staged), ManifestPathFor(file()));
    LinkOver(staged, file());
  }

  std::string file() const { return cluster_.ArchiveFile(0); }
  HostPort peer() const { return cluster_.Address(kReplica); }
  pid_t pid() const { return cluster_.Pid(kReplica); }
  std::string LogTail() const { return cluster_.LogTail(kReplica); }
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

  // The cluster's directory holds the file, its manifest and whatever a test stages.
  clickatron::testing::Cluster cluster_;

 private:
  // One realtime and one archive member (the realtime one is required by the
  // cluster file and never started).
  void WriteCluster(const std::string& admin_token, const clickatron::testing::TomlTable& archive) {
    clickatron::testing::ClusterSpec spec;
    spec.api_nodes = 0;
    spec.cluster.SetString("log_level", "info");
    if (!admin_token.empty()) spec.cluster.SetString("admin_token", admin_token);
    spec.archive = archive;
    const Status written = cluster_.Write(spec);
    ASSERT_TRUE(written.ok()) << written.ToString();
  }

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
