// The cluster the rebuild's integration tests run against: real
// clickatron-realtime, clickatron-archive and clickatron-api daemons on
// loopback, the real clickatron-rebuild binary. Increments go straight into
// the realtime shards (POST /incr with a manual clock); late data is written
// as sealed files into an API node's data dir, which the rebuild fetches over
// HTTP; the archive files the rebuild deploys must equal an expectation
// computed here from the raw increments with std::map.
#pragma once

#include <gtest/gtest.h>

#include <ctime>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <map>
#include <random>
#include <set>

#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include "clickatron/config.h"
#include "clickatron/file_util.h"
#include "clickatron/framed_log.h"
#include "clickatron/key_codec.h"
#include "clickatron/manifest.h"
#include "clickatron/oplog_record.h"
#include "clickatron/shard.h"
#include "clickatron/ymdh.h"
#include "testutil/cluster.h"

namespace clickatron {

using testing::BinaryPath;
using testing::HttpGet;
using testing::HttpPost;
using testing::Loopback;
using testing::RealtimeMemberName;
using testing::RunCommand;
using testing::WaitFor;

inline constexpr const char* kToken = "rebuild-admin-token";
inline constexpr int kShards = 2;
inline constexpr int kApiNodes = 2;

// archive key -> column -> count (lookups: column "" holds no count; see lookups_).
class Expectation {
 public:
  void AddTotal(const std::string& ns, const std::string& tkey, const std::string& ymdh, int64_t v) {
    counters_[ns + "|" + tkey][ymdh] += v;
  }
  void AddSubtotal(const std::string& sns, const std::string& ns, const std::string& tkey, const std::string& skey,
                   const std::string& ymdh, int64_t v) {
    counters_[sns + "." + ns + "|" + tkey + "." + ymdh][skey] += v;
  }
  void AddLookup(const std::string& hash, const std::string& value) { lookups_["l|" + hash] = value; }
  void ForgetLookup(const std::string& hash) { lookups_.erase("l|" + hash); }

  // A restatement's taking out: every hour of [from, to) of namespace `ns`
  // (only of the tkeys in `keys`, when given) is forgotten. Lookups stay.
  void Forget(const std::string& ns, int64_t from, int64_t to, const std::set<std::string>* keys = nullptr) {
    auto in_range = [&](const std::string& ymdh) {
      const int64_t hour = *UnixFromYmdh(ymdh);
      return hour >= from && hour < to;
    };
    for (auto it = counters_.begin(); it != counters_.end();) {
      const std::string& key = it->first;
      const size_t bar = key.find('|');
      const size_t dot = key.find('.');
      const bool total = dot == std::string::npos || dot > bar;
      const std::string key_ns = total ? key.substr(0, bar) : key.substr(dot + 1, bar - dot - 1);
      const std::string rest = key.substr(bar + 1);
      const std::string tkey = total ? rest : rest.substr(0, rest.rfind('.'));
      if (key_ns != ns || (keys != nullptr && keys->count(tkey) == 0)) {
        ++it;
        continue;
      }
      if (total) {
        std::erase_if(it->second, [&](const auto& column) { return in_range(column.first); });
      } else if (in_range(rest.substr(rest.rfind('.') + 1))) {
        it->second.clear();
      }
      it = it->second.empty() ? counters_.erase(it) : std::next(it);
    }
  }

  // Every click of `ns|tkey`, and per subtotal value (full values, as the
  // API shows hashed ones), what a query over all its hours answers.
  int64_t Clicks(const std::string& total_key) const {
    int64_t sum = 0;
    if (auto it = counters_.find(total_key); it != counters_.end()) {
      for (const auto& [hour, count] : it->second) sum += count;
    }
    return sum;
  }
  // The clicks of `ns|tkey` in one hour.
  int64_t HourClicks(const std::string& total_key, const std::string& ymdh) const {
    auto it = counters_.find(total_key);
    if (it == counters_.end()) return 0;
    auto hour = it->second.find(ymdh);
    return hour == it->second.end() ? 0 : hour->second;
  }
  std::map<std::string, int64_t> Breakdown(const std::string& sns, const std::string& total_key) const {
    std::map<std::string, int64_t> by_value;
    const std::string prefix = sns + "." + total_key + ".";
    for (auto it = counters_.lower_bound(prefix); it != counters_.end() && it->first.starts_with(prefix); ++it) {
      for (const auto& [stored, count] : it->second) {
        auto lookup = lookups_.find("l|" + stored);
        by_value[lookup == lookups_.end() ? stored : lookup->second] += count;
      }
    }
    return by_value;
  }

  // Sorted archive lines of one archive shard of `shard_count`, formatted here.
  std::vector<std::string> ShardLines(int shard, int shard_count = kShards) const {
    // Day subtotals beside the hours: every day with subtotal hours of a key
    // (also one hour) gets their sum under the day's code (the hours' code
    // without its hour character); every span of 2^k days (k = 1..7, counted
    // from 1970-01-01) holding such a day gets the sum of its days, under its
    // last day's code, 'z' and k.
    std::map<std::string, std::map<std::string, int64_t>> records = counters_;
    for (const auto& [key, columns] : counters_) {
      if (key.find('.') > key.find('|')) continue;  // a total
      const std::string day = key.substr(0, key.size() - 1);
      for (const auto& [name, count] : columns) records[day][name] += count;
      const std::string prefix = day.substr(0, day.rfind('.') + 1);
      const int64_t day_number = *DaysFromDayCode(day.substr(prefix.size()));
      for (int64_t length = 2, level = 1; level <= 7; length *= 2, ++level) {
        auto last = DayCodeFromDays(day_number / length * length + length - 1);
        if (!last.ok()) continue;  // a span past 2127 has no code
        const std::string span = prefix + *last + "z" + std::to_string(level);
        for (const auto& [name, count] : columns) records[span][name] += count;
      }
    }
    std::vector<std::string> lines;
    for (const auto& [key, columns] : records) {
      const std::string ns_tkey = key.substr(key.find('.') < key.find('|') ? key.find('.') + 1 : 0);
      const std::string shard_key = ns_tkey.substr(0, ns_tkey.find('.'));
      if (static_cast<int>(Crc32(shard_key) % static_cast<uint32_t>(shard_count)) != shard) continue;
      std::string line = key + ",";
      for (const auto& [name, count] : columns) {
        if (line.back() != ',') line += ' ';
        line += name + ":" + std::to_string(count);
      }
      lines.push_back(line);
    }
    for (const auto& [key, value] : lookups_) {
      if (static_cast<int>(Crc32(key.substr(2)) % static_cast<uint32_t>(shard_count)) == shard) {
        lines.push_back(key + "," + value);
      }
    }
    std::sort(lines.begin(), lines.end());
    return lines;
  }

 private:
  std::map<std::string, std::map<std::string, int64_t>> counters_;
  std::map<std::string, std::string> lookups_;
};

inline std::vector<std::string> FileLines(const std::string& path) {
  std::vector<std::string> lines;
  auto text = ReadFileToString(path);
  if (!text.ok()) return lines;
  size_t start = 0;
  while (start < text->size()) {
    const size_t nl = text->find('\n', start);
    lines.push_back(text->substr(start, nl - start));
    start = nl + 1;
  }
  return lines;
}

inline std::string Ymdh(int64_t day, int hour) { return *YmdhFromUnix(day * kSecondsPerDay + hour * kSecondsPerHour); }

class RebuildIntegration : public ::testing::Test {
 protected:
  void SetUp() override {
    testing::ClusterSpec spec;
    spec.realtime_shards = kShards;
    spec.archive_shards = kShards;
    spec.archive_replicas = replicas_;
    // Every replica reads and writes only its own directory.
    for (int shard = 0; shard < kShards; ++shard) {
      for (int r = 0; r < replicas_; ++r) {
        const std::string name = testing::ArchiveMemberName(shard, r, replicas_);
        spec.members[name].file = cluster_ / fmt::format("{}/shard-{}.csv", name, shard);
      }
    }
    // api-0 and api-1 hold late data; each test starts the ones it needs (a
    // member that is not running is one the rebuild cannot reach).
    spec.api_nodes = kApiNodes;
    // SendRealtimeLines posts under this API member's name: a member never
    // started, or (loader_ an API node's name) one that takes no increments
    // itself, for tests that need every API member up.
    if (loader_.starts_with("api-")) {
      spec.loaders.clear();
    } else {
      spec.loaders = {loader_};
    }
    spec.cluster.SetString("clock", "manual").SetString("admin_token", kToken).SetString("log_level", "info");
    spec.api.SetInt("read_cache_mb", read_cache_mb_);
    spec.rebuild.SetString("work_dir", cluster_ / "work")
        .SetString("backup_dir", cluster_ / "backup")
        .SetInt("memory_mb", 1)
        .SetInt("threads", 2)
        .SetRaw("max_bad_line_ratio", "0.1");
    const Status written = cluster_.Write(spec);
    ASSERT_TRUE(written.ok()) << written.ToString();
    for (int i = 0; i < kShards; ++i) {
      realtime_ports_[i] = cluster_.Address(RealtimeMemberName(i)).port;
      archive_ports_[i] = cluster_.Address(ArchiveName(i)).port;  // its first replica
    }
    for (int i = 0; i < kShards; ++i) {
      StartRealtime(i);
      StartArchive(i);
    }
    // A run folds in the deletions the API nodes know, so one must answer:
    // api-0 runs unless a test stops it.
    StartApi(0);
    // The realtime ring only turns forward from the system date: the first
    // test day is tomorrow.
    day_ = FloorDiv(static_cast<int64_t>(std::time(nullptr)), kSecondsPerDay) + 1;
  }

  std::string ArchiveName(int shard, int replica = 0) const {
    return testing::ArchiveMemberName(shard, replica, replicas_);
  }
  void StartRealtime(int i) {
    std::string error;
    ASSERT_TRUE(cluster_.Start(RealtimeMemberName(i), &error)) << error;
  }
  void StartArchive(int i) {
    for (int r = 0; r < replicas_; ++r) StartArchiveReplica(i, r);
  }
  void StartArchiveReplica(int shard, int replica) {
    std::string error;
    ASSERT_TRUE(cluster_.Start(ArchiveName(shard, replica), &error)) << error;
  }
  void StartApi(int i) {
    if (cluster_.Running(testing::ApiMemberName(i))) return;
    std::string error;
    ASSERT_TRUE(cluster_.Start(testing::ApiMemberName(i), &error)) << error;
  }
  // API node `i` started again, reading the cluster file as it is now.
  void RestartApi(int i) {
    if (cluster_.Running(testing::ApiMemberName(i))) {
      EXPECT_EQ(cluster_.Stop(testing::ApiMemberName(i)), 0);
    }
    StartApi(i);
  }
  std::string LateDir(int api) const { return cluster_.DataDir(testing::ApiMemberName(api)) + "/late"; }

  // Late-data frames as API node `api` writes them: one per (shard, seq)
  // batch, with lines for hours of `day` drawn from `seed`; each line is
  // added to *expect when given (the same seed gives the same lines).
  std::vector<std::string> LatePayloads(int api, int64_t day, uint32_t seed, int lines, Expectation* expect) {
    std::mt19937 rng(seed);
    std::vector<std::string> payloads;
    for (int frame = 0; frame < 3; ++frame) {
      std::string payload =
          FormatBatchHeader(testing::ApiMemberName(api), frame % kShards, 100 + static_cast<uint64_t>(frame));
      for (int i = 0; i < lines / 3; ++i) {
        // Keys of their own per node. (Found with shared keys: a subtotal
        // hour one generation holds alone, added to again by a later one,
        // gets a day record although its day has that one hour; this test is
        // about late data, not that.)
        const std::string tkey = fmt::format("late{}x{}", api, rng() % 30);
        const std::string ymdh = Ymdh(day, static_cast<int>(rng() % 24));
        const int64_t value = 1 + rng() % 50;
        payload += fmt::format("u|{}.{},{}\n", tkey, ymdh, value);
        if (expect != nullptr) expect->AddTotal("u", tkey, ymdh, value);
        if (i % 4 == 0) {
          payload += fmt::format("c.u|{}.NZ.{},{}\n", tkey, ymdh, value);
          if (expect != nullptr) expect->AddSubtotal("c", "u", tkey, "NZ", ymdh, value);
        }
      }
      payloads.push_back(std::move(payload));
    }
    return payloads;
  }
  // A sealed late-data file of those frames in API node `api`'s data dir.
  std::string WriteLateFile(int api, int64_t created, const std::vector<std::string>& payloads) {
    EXPECT_TRUE(MakeDirs(LateDir(api)).ok());
    const std::string path = LateDir(api) + "/" + LateFileName(created, true);
    auto writer = FramedLogWriter::Open(path);
    EXPECT_TRUE(writer.ok()) << writer.status().ToString();
    for (const std::string& payload : payloads) EXPECT_TRUE((*writer)->Append(payload).ok());
    EXPECT_TRUE((*writer)->Sync().ok());
    EXPECT_TRUE((*writer)->Close().ok());
    return path;
  }
  std::string WriteLateFile(int api, int64_t created, int64_t day, uint32_t seed, int lines, Expectation* expect) {
    return WriteLateFile(api, created, LatePayloads(api, day, seed, lines, expect));
  }
  static std::string DonePath(const std::string& sealed) { return sealed.substr(0, sealed.size() - 7) + ".done"; }
  std::vector<std::string> LateInputs(int shard) const {
    auto manifest = ReadManifest(ManifestPathFor(ArchiveFile(shard)));
    EXPECT_TRUE(manifest.ok());
    return manifest.ok() ? manifest->late_inputs : std::vector<std::string>{};
  }

  HttpResponse Admin(const std::string& method, uint16_t port, const std::string& target) {
    if (method == "POST") return HttpPost(Loopback(port), target, "", 10000, kToken);
    return HttpGet(Loopback(port), target);
  }

  void RotateAll(int64_t today) {
    for (int i = 0; i < kShards; ++i) {
      HttpResponse r = Admin("POST", realtime_ports_[i], "/rotate?today=" + FormatDate(today));
      ASSERT_TRUE(r.ok() && r.status_code == 200) << r.status_code << " " << r.body;
    }
  }

  // Sends realtime lines to the realtime shard each belongs to.
  void SendRealtimeLines(const std::vector<std::string>& lines) {
    std::map<int, std::string> bodies;
    for (const std::string& line : lines) {
      auto shard_key = ShardKeyOfRealtimeKey(line);
      ASSERT_TRUE(shard_key.ok()) << line;
      bodies[static_cast<int>(ShardOf(*shard_key, kShards))] += line + "\n";
    }
    for (const auto& [shard, body] : bodies) {
      HttpResponse r = HttpPost(Loopback(realtime_ports_[shard]),
                                fmt::format("/incr?source={}&seq={}", loader_, ++seq_), body);
      ASSERT_TRUE(r.ok() && r.status_code == 200) << r.status_code << " " << r.body;
    }
  }

  // Random increments for `day`: totals, country subtotals, and a referrer
  // subtotal whose value is hashed (with its lookup put).
  void PutRandomDay(int64_t day, uint32_t seed, int increments, Expectation* expect) {
    std::mt19937 rng(seed);
    const std::vector<std::string> countries = {"US", "JP", "DE", "FR"};
    const std::vector<std::string> referrers = {"http://www.facebook.com/", "direct", "http://t.co/abc"};
    for (int round = 0; round < 4; ++round) {
      std::vector<std::string> lines;
      for (int i = 0; i < increments / 4; ++i) {
        const std::string tkey = "key" + std::to_string(rng() % 40);
        const std::string ymdh = Ymdh(day, static_cast<int>(rng() % 24));
        const int64_t value = 1 + rng() % 9;
        const std::string& country = countries[rng() % countries.size()];
        const std::string& referrer = referrers[rng() % referrers.size()];
        const StoredKeyPart ref = StoreKeyPart(referrer);
        lines.push_back(fmt::format("u|{}.{},{}", tkey, ymdh, value));
        lines.push_back(fmt::format("c.u|{}.{}.{},{}", tkey, country, ymdh, value));
        lines.push_back(fmt::format("r.u|{}.{}.{},{}", tkey, ref.stored, ymdh, value));
        expect->AddTotal("u", tkey, ymdh, value);
        expect->AddSubtotal("c", "u", tkey, country, ymdh, value);
        expect->AddSubtotal("r", "u", tkey, ref.stored, ymdh, value);
        if (ref.hashed) {
          lines.push_back("l|" + ref.stored + "," + referrer);
          expect->AddLookup(ref.stored, referrer);
        }
      }
      SendRealtimeLines(lines);
    }
  }

  // Day day_ taken in by realtime, then rebuilt into generation 1.
  // `extra`: realtime lines of the day sent beside the random ones (the
  // caller adds them to *expect).
  void ArchiveFirstDay(uint32_t seed, int increments, Expectation* expect, const std::vector<std::string>& extra = {}) {
    RotateAll(day_);
    PutRandomDay(day_, seed, increments, expect);
    if (!extra.empty()) SendRealtimeLines(extra);
    RotateAll(day_ + 1);
    std::string out;
    ASSERT_EQ(RunDay(day_, &out), 0) << out;
  }

  // The ```sh block under `heading` in docs/operations.md (a runbook), with
  // a newline before it so every variable is set on a line of its own.
  static std::string RunbookBlock(const std::string& heading) {
    auto doc = ReadFileToString(std::string(CLICKATRON_SOURCE_DIR) + "/docs/operations.md");
    EXPECT_TRUE(doc.ok());
    if (!doc.ok()) return "";
    const size_t at = doc->find(heading);
    const size_t begin = at == std::string::npos ? at : doc->find("```sh\n", at);
    const size_t end = begin == std::string::npos ? begin : doc->find("```\n", begin + 6);
    EXPECT_NE(end, std::string::npos) << heading << " has no ```sh block in docs/operations.md";
    return end == std::string::npos ? "" : "\n" + doc->substr(begin + 6, end - begin - 6);
  }
  // Sets `name` (a variable the runbook assigns on a line of its own) to `value`.
  static void SetRunbookVariable(std::string* block, const std::string& name, const std::string& value) {
    const size_t at = block->find("\n" + name + "=");
    ASSERT_NE(at, std::string::npos) << name << " is not set in the runbook:\n" << *block;
    const size_t line_end = block->find('\n', at + 1);
    block->replace(at + 1, line_end - at - 1, name + "='" + value + "'");
  }
  // Runs a runbook's block with /bin/sh -e in the cluster's dir, the built
  // binaries first on PATH.
  int RunRunbook(const std::string& block, std::string* output) {
    const std::string bin = DirName(BinaryPath("clickatron-rebuild"));
    return RunCommand({"/bin/sh", "-ec", fmt::format("cd '{}' && PATH='{}':\"$PATH\"\n{}", cluster_.dir(), bin, block)},
                      output);
  }

  int Rebuild(const std::vector<std::string>& args, std::string* output) {
    std::vector<std::string> argv = {BinaryPath("clickatron-rebuild")};
    argv.insert(argv.end(), args.begin(), args.end());
    return RunCommand(argv, output);
  }
  int RunDay(int64_t day, std::string* output) {
    return Rebuild({"run", "--config", cluster_.config_path(), "--date", FormatDate(day)}, output);
  }
  // 24 realtime lines "u|PREFIXn.YMDH,v" of day `day` over 12 keys
  // (first_key..first_key+11: both archive shards get some), added to *expect.
  std::string TwelveKeysOfHistory(const std::string& prefix, int first_key, int64_t day, Expectation* expect) {
    std::string data;
    for (int i = 0; i < 24; ++i) {
      const std::string key = fmt::format("{}{}", prefix, first_key + i % 12);
      data += fmt::format("u|{}.{},{}\n", key, Ymdh(day, i), i + 1);
      expect->AddTotal("u", key, Ymdh(day, i), i + 1);
    }
    return data;
  }

  // `run --build-only`: the generation built, not deployed.
  int BuildDayOnly(int64_t day, std::string* output) {
    return Rebuild({"run", "--config", cluster_.config_path(), "--date", FormatDate(day), "--build-only"}, output);
  }

  // Every shard's served file and manifest copied aside (what a backup of
  // that generation holds), for RollBackToSetAside.
  void SetAsideServedFiles() {
    for (int s = 0; s < kShards; ++s) {
      for (const std::string& path : {ArchiveFile(s), ManifestPathFor(ArchiveFile(s))}) {
        std::filesystem::copy_file(path, path + ".aside", std::filesystem::copy_options::overwrite_existing);
      }
    }
  }
  // Generation 1 (the first day, set aside for RollBackToSetAside), then
  // the next day built and deployed by its nightly run as generation 2.
  void SecondDayOverASetAsideFirst(uint32_t seed, int increments, Expectation* expect, std::string* out) {
    ASSERT_NO_FATAL_FAILURE(ArchiveFirstDay(seed, increments, expect));
    SetAsideServedFiles();
    PutRandomDay(day_ + 1, seed + 1, increments, expect);
    RotateAll(day_ + 2);
    ASSERT_EQ(RunDay(day_ + 1, out), 0) << *out;
    ASSERT_EQ(ServedGeneration(0), 2);
  }
  // A replica restarted with its disk wiped: no archive file, no manifest.
  void WipeArchiveReplica(int shard, int replica) {
    cluster_.Stop(ArchiveName(shard, replica));
    for (const std::string& path : {ArchiveFile(shard, replica), ManifestPathFor(ArchiveFile(shard, replica))}) {
      ASSERT_TRUE(std::filesystem::remove(path)) << path;
    }
    ASSERT_NO_FATAL_FAILURE(StartArchiveReplica(shard, replica));
  }
  // operations.md section 6: the files set aside put back on every shard
  // and reloaded; each must then serve `generation`.
  void RollBackToSetAside(int64_t generation) {
    for (int s = 0; s < kShards; ++s) {
      for (const std::string& path : {ArchiveFile(s), ManifestPathFor(ArchiveFile(s))}) {
        ASSERT_EQ(::rename((path + ".aside").c_str(), path.c_str()), 0) << path;
      }
      const HttpResponse reloaded = Admin("POST", archive_ports_[s], "/reload");
      ASSERT_EQ(reloaded.status_code, 200) << reloaded.body;
      ASSERT_EQ(ServedGeneration(s), generation);
    }
  }

  // The file of the shard's first replica (each replica has its own).
  std::string ArchiveFile(int shard, int replica = 0) const { return cluster_.Member(ArchiveName(shard, replica)).file; }

  // `without_uniques`: the files' unique records (which the expectation does
  // not model) are left out of the comparison.
  void ExpectArchiveEquals(const Expectation& expect, bool without_uniques = false) {
    for (int s = 0; s < kShards; ++s) {
      const std::vector<std::string> want = expect.ShardLines(s);
      EXPECT_FALSE(want.empty());
      std::vector<std::string> got = FileLines(ArchiveFile(s));
      if (without_uniques) std::erase_if(got, [](const std::string& line) { return line.starts_with("~"); });
      EXPECT_EQ(got, want) << "archive shard " << s;
      if (got != want) {  // gtest prints 32 elements of each: name the differences
        std::vector<std::string> only_got, only_want;
        std::set_difference(got.begin(), got.end(), want.begin(), want.end(), std::back_inserter(only_got));
        std::set_difference(want.begin(), want.end(), got.begin(), got.end(), std::back_inserter(only_want));
        for (size_t i = 0; i < only_got.size() && i < 10; ++i) ADD_FAILURE() << "only in the archive: " << only_got[i];
        for (size_t i = 0; i < only_want.size() && i < 10; ++i) ADD_FAILURE() << "only expected: " << only_want[i];
      }
    }
  }

  // The cluster file rewritten with `shards` archive shards (one replica
  // each); members keep their ports, a new shard's member gets its own file.
  void RewriteArchiveShards(int shards) {
    testing::ClusterSpec spec = cluster_.spec();
    spec.archive_shards = shards;
    for (int s = 0; s < shards; ++s) {
      const std::string name = ArchiveName(s);
      if (spec.members[name].file.empty()) spec.members[name].file = cluster_ / fmt::format("{}/shard-{}.csv", name, s);
    }
    const Status written = cluster_.Write(spec);
    ASSERT_TRUE(written.ok()) << written.ToString();
  }

  // Every archive file equals the oracle cut by `shards`, and its manifest
  // says generation `generation` of `shards`.
  void ExpectArchiveCutInto(const Expectation& expect, int shards, uint64_t generation) {
    uint64_t records = 0;
    for (int s = 0; s < shards; ++s) {
      const std::vector<std::string> want = expect.ShardLines(s, shards);
      EXPECT_FALSE(want.empty());
      EXPECT_EQ(FileLines(ArchiveFile(s)), want) << "archive shard " << s << " of " << shards;
      auto manifest = ReadManifest(ManifestPathFor(ArchiveFile(s)));
      ASSERT_TRUE(manifest.ok()) << manifest.status().ToString();
      EXPECT_EQ(manifest->generation, generation);
      EXPECT_EQ(manifest->shard, s);
      EXPECT_EQ(manifest->shard_count, shards);
      EXPECT_EQ(ServedGeneration(s), static_cast<int64_t>(generation)) << "archive shard " << s;
      records += manifest->records;
    }
    uint64_t want_records = 0;
    for (int s = 0; s < shards; ++s) want_records += expect.ShardLines(s, shards).size();
    EXPECT_EQ(records, want_records);
  }

  // data.generation at GET /manifest of archive shard i's first replica (0: no file yet; -1: down).
  int64_t ServedGeneration(int i) { return ServedGeneration(i, 0); }
  int64_t ServedGeneration(int shard, int replica) {
    HttpResponse r = HttpGet(cluster_.Address(ArchiveName(shard, replica)), "/manifest");
    if (!r.ok() || r.status_code != 200) return -1;
    auto j = nlohmann::json::parse(r.body, nullptr, false);
    if (!j.is_object() || !j.contains("data")) return -1;
    if (j["data"].is_null()) return 0;
    if (!j["data"].is_object()) return -1;
    return j["data"].value("generation", int64_t{-1});
  }

  int replicas_ = 1;          // archive replicas per shard (set by a subclass's constructor)
  std::string loader_ = "test";  // the source of SendRealtimeLines (set by a subclass's constructor)
  int read_cache_mb_ = 0;     // the API nodes' read cache (0: off, as every cluster's; set by a subclass's constructor)
  testing::Cluster cluster_;  // its directory holds the archive, work and backup dirs
  uint16_t realtime_ports_[kShards] = {};
  uint16_t archive_ports_[kShards] = {};
  int64_t day_ = 0;
  uint64_t seq_ = 0;
};

}  // namespace clickatron
