// Issue 53 §2: a served archive file changed or truncated in place (which the
// docs forbid, and which disks and careless copies still do) is caught and
// refused, never answered from: the scrub finds an edit within its period,
// a truncation ends in a 503 and a log line instead of a SIGBUS death, and
// the daemon goes on answering from the next good generation.
#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <strings.h>

#include <algorithm>
#include <chrono>
#include <fstream>
#include <string>
#include <thread>

#include <fmt/format.h>
#include <gtest/gtest.h>

#include "replica_fixture.h"

namespace clickatron::archive {
namespace {

using testing::ReplicaTest;
using testing::WriteArchive;

// 2,000 lines "u|d0000,100\n"…, about 24 KB: several pages, so a truncation
// to the first page leaves keys whose lines are past the new end.
std::string DamageContents() {
  std::string out;
  for (int i = 0; i < 2000; ++i) out += fmt::format("u|d{:04d},{}\n", i, 100 + i);
  return out;
}

// Overwrites bytes at `offset` of the file in place (same inode, as an editor
// that writes through, or a bad disk, would), making it writable first.
void OverwriteInPlace(const std::string& path, off_t offset, std::string_view bytes) {
  ASSERT_EQ(::chmod(path.c_str(), 0600), 0);
  const int fd = ::open(path.c_str(), O_WRONLY);
  ASSERT_GE(fd, 0);
  ASSERT_EQ(::pwrite(fd, bytes.data(), bytes.size(), offset), static_cast<ssize_t>(bytes.size()));
  ::close(fd);
}

class DamageTest : public ReplicaTest {
 protected:
  void StartScrubbed() {
    clickatron::testing::TomlTable archive;
    archive.SetInt("scrub_interval_seconds", 1).SetInt("scrub_mb_per_second", 64);
    StartReplica("", archive);
  }
  nlohmann::json Damage() { return ArchiveStats()["damage"]; }
};

TEST_F(DamageTest, ServedFilesAreReadOnly) {
  WriteArchive(file(), DamageContents(), 1, "2012-03-24");
  StartScrubbed();
  for (const std::string& path : {file(), ManifestPathFor(file())}) {
    struct stat st {};
    ASSERT_EQ(::stat(path.c_str(), &st), 0) << path;
    EXPECT_EQ(st.st_mode & 0222, 0u) << path << " is writable: " << std::oct << (st.st_mode & 07777);
  }
}

TEST_F(DamageTest, AnEditInPlaceIsFoundByTheScrubAndNeverAnsweredAfter) {
  const std::string contents = DamageContents();
  WriteArchive(file(), contents, 1, "2012-03-24");
  StartScrubbed();
  HttpResponse before = Get("/get?key=u%7Cd0596");
  ASSERT_EQ(before.status_code, 200);
  ASSERT_EQ(before.body, "696\n");

  // The value of u|d0596 becomes 165 where the truth is 696 (same length).
  const size_t at = contents.find("u|d0596,") + std::string("u|d0596,").size();
  OverwriteInPlace(file(), static_cast<off_t>(at), "165");
  // Within the scrub's period (1 s, plus a pass over 24 KB) the file is
  // refused. Until then the mapping shows the edit: that window is what the
  // period bounds.
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(20);
  HttpResponse r;
  while (std::chrono::steady_clock::now() < deadline) {
    r = Get("/get?key=u%7Cd0596");
    if (r.status_code == 503) break;
    ASSERT_EQ(r.status_code, 200) << r.body;
    std::this_thread::sleep_for(std::chrono::milliseconds(50));  // polling a condition with a deadline
  }
  ASSERT_EQ(r.status_code, 503) << r.body;
  EXPECT_EQ(Json(r)["status_txt"], "ARCHIVE_DAMAGED");
  // From detection on, nothing is answered from the file: every read is 503.
  for (const char* target : {"/get?key=u%7Cd0596", "/get?key=u%7Cd0001", "/mget?key=u%7Cd0002&key=u%7Cd0596",
                             "/fwmatch?key=u%7Cd05"}) {
    HttpResponse again = Get(target);
    EXPECT_EQ(again.status_code, 503) << target << ": " << again.body;
  }
  nlohmann::json d = Damage();
  EXPECT_EQ(d["serving_damaged"], true) << d.dump();
  EXPECT_EQ(d["scrub_mismatches"], 1) << d.dump();
  EXPECT_EQ(d["damaged_generations"], 1) << d.dump();
  EXPECT_GE(d["refused_reads"].get<int>(), 5) << d.dump();
  EXPECT_NE(LogTail().find("is damaged"), std::string::npos) << LogTail();

  // A good generation reloaded: answered again, right.
  WriteArchive(file(), contents, 2, "2012-03-24");
  ASSERT_EQ(Reload().status_code, 200);
  HttpResponse after = Get("/get?key=u%7Cd0596");
  EXPECT_EQ(after.status_code, 200);
  EXPECT_EQ(after.body, "696\n");
  EXPECT_EQ(Damage()["serving_damaged"], false);
}

// A reload that finds the served file itself (the same inode, its
// manifest unchanged) failing its check: that file's bytes changed under the
// mapping, so it stops being answered from at once, not at the next scrub.
// The refusal names the damaged file, so API nodes can stop using what they
// kept of it.
TEST_F(DamageTest, AReloadThatFindsTheServedFileChangedStopsAnsweringFromIt) {
  const std::string contents = DamageContents();
  WriteArchive(file(), contents, 1, "2012-03-24");
  clickatron::testing::TomlTable archive;
  archive.SetInt("scrub_interval_seconds", 0);  // no scrub: the reload alone finds it
  StartReplica("", archive);
  const HttpResponse good = Get("/get?key=u%7Cd0596");
  ASSERT_EQ(good.status_code, 200);
  const size_t at = contents.find("u|d0596,") + std::string("u|d0596,").size();
  OverwriteInPlace(file(), static_cast<off_t>(at), "165");
  EXPECT_EQ(Get("/get?key=u%7Cd0596").body, "165\n") << "the mapping shows the edit until it is found";

  HttpResponse reload = Reload();
  EXPECT_EQ(reload.status_code, 500) << reload.body;
  EXPECT_NE(reload.body.find("is damaged"), std::string::npos) << reload.body;
  HttpResponse r = Get("/get?key=u%7Cd0596");
  ASSERT_EQ(r.status_code, 503) << r.body;
  EXPECT_EQ(Json(r)["status_txt"], "ARCHIVE_DAMAGED");
  // Which file: as every answer of it says.
  for (const char* header : {"X-Archive-Generation", "X-Archive-Crc32", "X-Archive-Last-Day"}) {
    const auto it = std::find_if(r.headers.begin(), r.headers.end(), [&](const auto& h) {
      return strcasecmp(h.first.c_str(), header) == 0;
    });
    ASSERT_NE(it, r.headers.end()) << header;
    const auto was = std::find_if(good.headers.begin(), good.headers.end(), [&](const auto& h) {
      return strcasecmp(h.first.c_str(), header) == 0;
    });
    ASSERT_NE(was, good.headers.end()) << header;
    EXPECT_EQ(it->second, was->second) << header;
  }
  EXPECT_EQ(Damage()["serving_damaged"], true);

  // A good generation in its place is served again.
  WriteArchive(file(), contents, 2, "2012-03-24");
  ASSERT_EQ(Reload().status_code, 200);
  EXPECT_EQ(Get("/get?key=u%7Cd0596").body, "696\n");
}

TEST_F(DamageTest, ATruncationInPlaceIsA503AndALogLineNotADeadDaemon) {
  const std::string contents = DamageContents();
  WriteArchive(file(), contents, 1, "2012-03-24");
  // No scrub passes and no time for the size check: the read itself faults.
  clickatron::testing::TomlTable archive;
  archive.SetInt("scrub_interval_seconds", 0);
  StartReplica("", archive);
  ASSERT_EQ(Get("/get?key=u%7Cd1999").body, "2099\n");

  ASSERT_EQ(::chmod(file().c_str(), 0600), 0);
  ASSERT_EQ(::truncate(file().c_str(), 4096), 0);
  // The key's line is now past the end of the file: the binary search's
  // reads fault (SIGBUS), or the once-a-second size check got there first.
  HttpResponse r = Get("/get?key=u%7Cd1999");
  EXPECT_EQ(r.status_code, 503) << r.body;
  EXPECT_EQ(Json(r)["status_txt"], "ARCHIVE_DAMAGED");
  EXPECT_EQ(Get("/ping").status_code, 200) << "the daemon died: " << LogTail();
  EXPECT_EQ(Get("/get?key=u%7Cd0000").status_code, 503);
  const std::string log = LogTail();
  EXPECT_TRUE(log.find("SIGBUS") != std::string::npos || log.find("size changed") != std::string::npos) << log;
  const nlohmann::json d = Damage();
  EXPECT_EQ(d["serving_damaged"], true) << d.dump();
  // Found by the read's fault, or by the size check if its second came first.
  EXPECT_GE(d["mapping_faults"].get<int>() + d["scrub_mismatches"].get<int>(), 1) << d.dump();

  // A good generation in its place is served again.
  WriteArchive(file(), contents, 2, "2012-03-24");
  ASSERT_EQ(Reload().status_code, 200);
  EXPECT_EQ(Get("/get?key=u%7Cd1999").body, "2099\n");
}

}  // namespace
}  // namespace clickatron::archive
