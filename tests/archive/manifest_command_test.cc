// `clickatron manifest FILE`: the real tool over real files in a temp dir,
// and the real clickatron-archive daemon serving what it accepted. The tool
// converts the file to format 2 (its day and span records added) before it
// describes it. Every expected figure is computed here (zlib's crc32 of the
// bytes, newlines counted, shards, hour codes and day sums worked out by
// hand), not by the code under test.
#include <gtest/gtest.h>
#include <zlib.h>

#include <algorithm>
#include <chrono>
#include <cstdlib>
#include <ctime>
#include <string>
#include <vector>

#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include "clickatron/file_util.h"
#include "replica_fixture.h"
#include "testutil/testutil.h"

namespace clickatron::archive {
namespace {

using testing::ReplicaTest;

// Sorted (LC_ALL=C) archive lines: a subtotal, a lookup and a total. Hour
// codes decoded by hand (b32 digits 0-9a-v; "c3hh" = 2000+12, month 3, day
// h=17, hour h=17): the subtotal's c3j2 (2012-03-19 02:00) is the latest hour
// in the file; the total's last column c3i0 is 2012-03-18 00:00.
constexpr std::string_view kGoodFile =
    "c.u|jehiah.c3hh,DE:1 None:5 US:7\n"
    "c.u|jehiah.c3j2,US:4\n"
    "l|h0aMB8AuNw4=,http://www.facebook.com/\n"
    "u|jehiah,c3hh:13 c3i0:7\n";
constexpr const char* kGoodLastDay = "2012-03-19";

uint32_t ZlibCrc32(std::string_view data) {
  return static_cast<uint32_t>(
      crc32(0L, reinterpret_cast<const Bytef*>(data.data()), static_cast<uInt>(data.size())));
}

uint64_t CountNewlines(std::string_view data) {
  return static_cast<uint64_t>(std::count(data.begin(), data.end(), '\n'));
}

struct ToolRun {
  int code = -1;
  std::string output;  // stdout and stderr
};

ToolRun RunManifest(const std::vector<std::string>& args) {
  std::vector<std::string> argv = {clickatron::testing::BinaryPath("clickatron"), "manifest"};
  argv.insert(argv.end(), args.begin(), args.end());
  ToolRun run;
  run.code = clickatron::testing::RunCommand(argv, &run.output);
  return run;
}

nlohmann::json ReadJsonFile(const std::string& path) {
  auto text = ReadFileToString(path);
  EXPECT_TRUE(text.ok()) << text.status().ToString();
  return text.ok() ? nlohmann::json::parse(*text, nullptr, false) : nlohmann::json();
}

class ManifestCommandTest : public ReplicaTest {
 protected:
  // Writes `contents` to dir/name and returns its path.
  std::string WriteData(const std::string& name, std::string_view contents) {
    const std::string path = cluster_ / name;
    EXPECT_TRUE(WriteFileAtomically(path, contents).ok());
    return path;
  }
  // The tool must refuse `contents` with exit code 1, an error naming every
  // piece of `expected`, and no manifest.
  void ExpectRefused(std::string_view contents, const std::vector<std::string>& expected,
                     const std::vector<std::string>& extra_args = {}) {
    const std::string path = WriteData("refused.csv", contents);
    std::vector<std::string> args = extra_args;
    args.push_back(path);
    ToolRun run = RunManifest(args);
    EXPECT_EQ(run.code, 1) << run.output;
    for (const std::string& piece : expected) {
      EXPECT_NE(run.output.find(piece), std::string::npos) << "missing " << piece << " in: " << run.output;
    }
    EXPECT_FALSE(FileExists(ManifestPathFor(path))) << run.output;
  }
};

// The lines of `text` (each ending in '\n').
std::vector<std::string> LinesOf(std::string_view text) {
  std::vector<std::string> lines;
  size_t pos = 0;
  while (pos < text.size()) {
    const size_t end = text.find('\n', pos);
    lines.emplace_back(text.substr(pos, end - pos));
    pos = end + 1;
  }
  return lines;
}

TEST_F(ManifestCommandTest, GoodFileIsConvertedAndGetsAManifestTheArchiveServerServes) {
  ASSERT_TRUE(WriteFileAtomically(file(), kGoodFile).ok());
  ToolRun run = RunManifest({file()});
  ASSERT_EQ(run.code, 0) << run.output;

  // The converted file: every line it had, and the day records of its two
  // days of subtotal hours (2012-03-17 "c3h", 2012-03-19 "c3j"), each the
  // sum of its day's hours; beside them the span records of 2..128 days
  // holding those days (days 15416 and 15418 since 1970: one span of 2 days
  // each, then one span each of 4 .. 128 days holding both): 4 + 2 + 8 lines.
  auto converted_text = ReadFileToString(file());
  ASSERT_TRUE(converted_text.ok()) << converted_text.status().ToString();
  const std::string converted = *converted_text;
  const std::vector<std::string> lines = LinesOf(converted);
  for (const std::string& line : LinesOf(kGoodFile)) {
    EXPECT_NE(std::find(lines.begin(), lines.end(), line), lines.end()) << line << " kept";
  }
  EXPECT_NE(std::find(lines.begin(), lines.end(), "c.u|jehiah.c3h,DE:1 None:5 US:7"), lines.end()) << converted;
  EXPECT_NE(std::find(lines.begin(), lines.end(), "c.u|jehiah.c3j,US:4"), lines.end()) << converted;
  EXPECT_EQ(lines.size(), 14u) << converted;
  EXPECT_TRUE(std::is_sorted(lines.begin(), lines.end())) << converted;

  const uint32_t crc = ZlibCrc32(converted);
  nlohmann::json m = ReadJsonFile(ManifestPathFor(file()));
  ASSERT_TRUE(m.is_object()) << m;
  EXPECT_EQ(m["format"], 2);
  EXPECT_EQ(m["day_subtotals_every_day"], true);
  EXPECT_EQ(m["day_uniques_every_day"], true);
  EXPECT_EQ(m["generation"], 1);
  EXPECT_EQ(m["shard"], 0);
  EXPECT_EQ(m["shard_count"], 1);
  EXPECT_EQ(m["records"], 14u);
  EXPECT_EQ(m["records"], CountNewlines(converted));
  EXPECT_EQ(m["bytes"], converted.size());
  EXPECT_EQ(m["crc32"], crc);
  EXPECT_EQ(m["first_key"], "c.u|jehiah.c3h");
  EXPECT_EQ(m["last_key"], "u|jehiah");
  EXPECT_EQ(m["last_day"], kGoodLastDay);
  // created: UTC now, "YYYY-MM-DDTHH:MM:SSZ".
  std::tm tm{};
  const std::string created = m.value("created", "");
  ASSERT_NE(strptime(created.c_str(), "%Y-%m-%dT%H:%M:%SZ", &tm), nullptr) << created;
  const int64_t created_unix = static_cast<int64_t>(timegm(&tm));
  const int64_t now = std::chrono::duration_cast<std::chrono::seconds>(
                          std::chrono::system_clock::now().time_since_epoch()).count();
  EXPECT_LE(std::abs(now - created_unix), 300) << created;

  // The one-line summary names the figures.
  for (const std::string& piece : {std::string("14 records"), fmt::format("{} bytes", converted.size()),
                                   fmt::format("crc32 {}", crc), std::string("\"c.u|jehiah.c3h\""),
                                   std::string("\"u|jehiah\""), std::string(kGoodLastDay)}) {
    EXPECT_NE(run.output.find(piece), std::string::npos) << piece << " in: " << run.output;
  }

  // A one-shard cluster's replica, with the full order check on, serves it.
  StartReplica("", clickatron::testing::TomlTable().SetBool("verify_sorted_on_load", true));
  HttpResponse total = Get("/get?key=u|jehiah");
  ASSERT_TRUE(total.ok()) << total.transport.ToString() << "\n" << LogTail();
  EXPECT_EQ(total.status_code, 200) << LogTail();
  EXPECT_EQ(total.body, "c3hh:13 c3i0:7\n");
  EXPECT_EQ(total.Header("X-Archive-Generation"), "1");
  EXPECT_EQ(total.Header("X-Archive-Last-Day"), kGoodLastDay);
  HttpResponse lookup = Get("/get?key=l|h0aMB8AuNw4%3D");
  EXPECT_EQ(lookup.status_code, 200);
  EXPECT_EQ(lookup.body, "http://www.facebook.com/\n");
  nlohmann::json served = Json(Get("/manifest"));
  EXPECT_EQ(served["data"]["crc32"], crc) << served;
  EXPECT_EQ(served["data"]["records"], 14u) << served;
  HttpResponse day = Get("/get?key=c.u|jehiah.c3h");
  EXPECT_EQ(day.status_code, 200);
  EXPECT_EQ(day.body, "DE:1 None:5 US:7\n");

  // Converting again changes nothing: the records are made again from the
  // hours, not added to.
  run = RunManifest({"--force", file()});
  ASSERT_EQ(run.code, 0) << run.output;
  EXPECT_EQ(*ReadFileToString(file()), converted);
}

TEST_F(ManifestCommandTest, LastDayIsTheDayOfTheLatestHourOrEmpty) {
  // The latest hour in a total's column: w0111 is the era code of 2032-01-01
  // 01:00 ('w' = 2032 + 0, month 1, day 1, hour 1).
  const std::string totals = cluster_ / "totals.csv";
  ASSERT_TRUE(WriteFileAtomically(totals, "c.u|a.c3hh,US:1\nu|a,c3hh:1 w0111:2\n").ok());
  ToolRun run = RunManifest({totals});
  ASSERT_EQ(run.code, 0) << run.output;
  EXPECT_EQ(ReadJsonFile(ManifestPathFor(totals))["last_day"], "2032-01-01");
  // Span records end after the data they hold (c41z3: 2012-03-25 .. 04-01,
  // written beside the hours of 03-25): the hours date the file.
  const std::string spans = cluster_ / "spans.csv";
  ASSERT_TRUE(WriteFileAtomically(spans, "c.u|a.c3p,US:1\nc.u|a.c3p5,US:1\nc.u|a.c3qz1,US:1\nc.u|a.c41z3,US:1\n"
                                         "c.u|a.c49z4,US:1\nu|a,c3p5:1\n")
                  .ok());
  run = RunManifest({spans});
  ASSERT_EQ(run.code, 0) << run.output;
  EXPECT_EQ(ReadJsonFile(ManifestPathFor(spans))["last_day"], "2012-03-25");
  // A day record of a day without hours (c3q: 2012-03-26) is not data: the
  // conversion drops it (day records are made from the hours), and it does
  // not date the file either.
  const std::string stray = cluster_ / "stray.csv";
  ASSERT_TRUE(WriteFileAtomically(stray, "c.u|a.c3p5,US:1\nc.u|a.c3q,US:9\nu|a,c3p5:1\n").ok());
  run = RunManifest({stray});
  ASSERT_EQ(run.code, 0) << run.output;
  EXPECT_EQ(ReadJsonFile(ManifestPathFor(stray))["last_day"], "2012-03-25");
  EXPECT_EQ(ReadFileToString(stray)->find("c.u|a.c3q,"), std::string::npos) << *ReadFileToString(stray);
  // Only lookups: no dated record, last_day "".
  const std::string lookups = cluster_ / "lookups.csv";
  ASSERT_TRUE(WriteFileAtomically(lookups, "l|h0aMB8AuNw4=,http://www.facebook.com/\n").ok());
  run = RunManifest({lookups});
  ASSERT_EQ(run.code, 0) << run.output;
  EXPECT_EQ(ReadJsonFile(ManifestPathFor(lookups))["last_day"], "");
}

TEST_F(ManifestCommandTest, UnsortedFileIsRefusedNamingTheLineAndBothKeys) {
  ExpectRefused(
      "c.u|jehiah.c3hh,US:7\n"
      "u|zed,c3hh:1\n"
      "u|jehiah,c3hh:13\n"
      "u|zz,c3hh:2\n",
      {"line 3", "line 2", "\"u|jehiah\"", "\"u|zed\""});
  // Bytewise, unsigned: 'U' (0x55) sorts before 'u' (0x75), whatever a
  // locale's collation says.
  ExpectRefused("u|a,c3hh:1\nU|a,c3hh:1\n", {"line 2", "\"U|a\"", "\"u|a\""});
}

TEST_F(ManifestCommandTest, DuplicateKeyIsRefusedNamingBothLines) {
  // Whole lines increase, but the key repeats.
  ExpectRefused("c.u|a.c3hh,US:1\nu|a,c3hh:1\nu|a,c3hh:2\n", {"lines 2 and 3", "same key", "\"u|a\""});
}

TEST_F(ManifestCommandTest, MalformedLinesAreRefusedWithTheLineNumber) {
  ExpectRefused("u|a,c3hh:1\n\nu|b,c3hh:1\n", {"line 2 is empty"});
  ExpectRefused("u|a,c3hh:1\nu|b\n", {"line 2", "no field separator"});
  // Not an archive record: sortdb's own sample keeps totals per hour
  // (realtime shape), which an archive total key cannot be.
  ExpectRefused("c.u|jehiah.c3h5,US:2\nu|jehiah.c3hh,13\n", {"line 2", "u|jehiah.c3hh"});
  // A count that is no number, columns out of order, a CRLF line end.
  ExpectRefused("u|a,c3hh:x\n", {"line 1"});
  ExpectRefused("u|a,c3i0:1 c3hh:2\n", {"line 1", "out of order"});
  ExpectRefused("u|a,c3hh:1\r\nu|b,c3hh:1\r\n", {"line 1"});
  // No newline after the last line: the rebuild could not merge into it.
  ExpectRefused("u|a,c3hh:1\nu|b,c3hh:1", {"line 2", "newline"});
  // Counts a load of the file would refuse: clicks are counted up, and a
  // line carries at most 10^15.
  ExpectRefused("u|a,c3hh:-7\nu|b,c3hh:3\n", {"line 1", "count -7 is not positive"});
  ExpectRefused("u|a,c3hh:1\nu|b,c3hh:0\n", {"line 2", "not positive"});
  ExpectRefused("c.u|a.c3hh,US:1000000000000001\n", {"line 1", "over"});
}

TEST_F(ManifestCommandTest, ShardIsCheckedWithTheArchiveShardFunction) {
  // crc32("ns|tkey") % 2 worked out here for a few tkeys.
  std::vector<std::string> shard0, shard1;
  for (int i = 0; i < 40 && (shard0.size() < 3 || shard1.size() < 3); ++i) {
    const std::string tkey = fmt::format("k{:02d}", i);
    (ZlibCrc32("u|" + tkey) % 2 == 0 ? shard0 : shard1).push_back(tkey);
  }
  ASSERT_GE(shard0.size(), 1u);
  ASSERT_GE(shard1.size(), 3u);
  // Shard 1's file: a subtotal and a total of each (the subtotal's shard key
  // is its ns|tkey as well). tkeys are sorted, and "c." < "u|".
  std::string good;
  for (const std::string& t : shard1) good += fmt::format("c.u|{}.c3hh,US:1\n", t);
  for (const std::string& t : shard1) good += fmt::format("u|{},c3hh:1\n", t);
  const std::string path = WriteData("shard-1.csv", good);
  ToolRun run = RunManifest({"--shard", "1", "--shard-count", "2", path});
  ASSERT_EQ(run.code, 0) << run.output;
  nlohmann::json m = ReadJsonFile(ManifestPathFor(path));
  EXPECT_EQ(m["shard"], 1);
  EXPECT_EQ(m["shard_count"], 2);
  EXPECT_EQ(m["crc32"], ZlibCrc32(*ReadFileToString(path))) << "of the converted file";

  // The same lines for shard 0: refused at line 1.
  ExpectRefused(good, {"line 1", fmt::format("\"c.u|{}.c3hh\"", shard1[0]), "shard 1 of 2", "not to shard 0"},
                {"--shard", "0", "--shard-count", "2"});
  // One shard-0 key among shard-1 keys: refused at its line.
  std::vector<std::string> mixed = {shard1[0], shard1[1], shard0[0], shard1[2]};
  std::sort(mixed.begin(), mixed.end());
  const size_t bad_line = static_cast<size_t>(std::find(mixed.begin(), mixed.end(), shard0[0]) - mixed.begin()) + 1;
  std::string contents;
  for (const std::string& t : mixed) contents += fmt::format("u|{},c3hh:1\n", t);
  ExpectRefused(contents, {fmt::format("line {}", bad_line), fmt::format("\"u|{}\"", shard0[0]), "shard 0 of 2"},
                {"--shard", "1", "--shard-count", "2"});
  // Shards are numbered below the count; --shard needs --shard-count.
  ExpectRefused(good, {"--shard 2"}, {"--shard", "2", "--shard-count", "2"});
  ToolRun alone = RunManifest({"--shard", "1", path + ".other"});
  EXPECT_NE(alone.code, 0) << alone.output;
}

TEST_F(ManifestCommandTest, ExistingManifestIsKeptWithoutForce) {
  const std::string path = WriteData("data.csv", kGoodFile);
  const std::string manifest_path = ManifestPathFor(path);
  ASSERT_TRUE(WriteFileAtomically(manifest_path, "keep me\n").ok());
  ToolRun run = RunManifest({path});
  EXPECT_EQ(run.code, 1) << run.output;
  EXPECT_NE(run.output.find("exists"), std::string::npos) << run.output;
  EXPECT_EQ(*ReadFileToString(manifest_path), "keep me\n");

  run = RunManifest({"--force", "--generation", "7", path});
  ASSERT_EQ(run.code, 0) << run.output;
  nlohmann::json m = ReadJsonFile(manifest_path);
  EXPECT_EQ(m["generation"], 7);
  EXPECT_EQ(m["crc32"], ZlibCrc32(*ReadFileToString(path))) << "of the converted file";
  // A refused file under --force leaves the old manifest as it was.
  ASSERT_TRUE(WriteFileAtomically(path, "u|b,c3hh:1\nu|a,c3hh:1\n").ok());
  run = RunManifest({"--force", path});
  EXPECT_EQ(run.code, 1) << run.output;
  EXPECT_EQ(ReadJsonFile(manifest_path)["generation"], 7);
  // Generation 0 means "no file" to replicas and API nodes.
  ASSERT_TRUE(WriteFileAtomically(path, kGoodFile).ok());
  run = RunManifest({"--force", "--generation", "0", path});
  EXPECT_EQ(run.code, 1) << run.output;
  EXPECT_EQ(ReadJsonFile(manifest_path)["generation"], 7);
}

}  // namespace
}  // namespace clickatron::archive
