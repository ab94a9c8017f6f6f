// A small cluster on loopback for the read-path integration tests: realtime
// shards, archive replicas and one API node, started as real binaries, plus a
// dataset that knows its own answers (an oracle in plain maps).
//
// The dataset is written the way production writes it, without the API's
// write path: archive files through core's FormatArchiveLine (sorted, with a
// manifest), realtime lines through the realtime /incr endpoint.
#pragma once

#include <algorithm>
#include <ctime>
#include <functional>
#include <map>
#include <ostream>
#include <set>
#include <string>
#include <vector>

#include <fmt/format.h>
#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include "clickatron/file_util.h"
#include "clickatron/key_codec.h"
#include "clickatron/manifest.h"
#include "clickatron/query_string.h"
#include "clickatron/record.h"
#include "clickatron/shard.h"
#include "clickatron/unique_sketch.h"
#include "clickatron/ymdh.h"
#include "api/query/oracle.h"
#include "testutil/cluster.h"
#include "testutil/testutil.h"

namespace clickatron::api::testing {

namespace oracle = clickatron::testing::oracle;
using clickatron::testing::DaemonProcess;
using clickatron::testing::HttpGet;
using clickatron::testing::HttpPost;

// The span codes of the spans of 2^k days (k = 1..7) that hold a day code's
// day: its last day's code, 'z' and k, spans counted from 1970-01-01.
inline std::vector<std::string> SpanCodesOf(std::string_view day_code) {
  std::vector<std::string> codes;
  const int64_t day = *DaysFromDayCode(day_code);
  for (int64_t length = 2, level = 1; level <= 7; length *= 2, ++level) {
    auto last = DayCodeFromDays(day / length * length + length - 1);
    if (last.ok()) codes.push_back(*last + "z" + std::to_string(level));
  }
  return codes;
}

// Increments, with where each one is stored; the oracle counts each once.
class ReadDataset {
 public:
  struct Sub {
    std::string sns, value;
  };
  // One increment of `value` at `hour` (unix s), stored in the archive, in
  // realtime, or in both (the overlap day: exported and deployed, not yet
  // cleared). Counted once by the oracle either way.
  void Add(const std::string& ns, const std::string& key, int64_t hour, int64_t value, const std::vector<Sub>& subs,
           bool in_archive, bool in_realtime) {
    totals_[{ns, key}][hour] += value;
    for (const Sub& s : subs) subtotals_[{s.sns, ns, key}][s.value][hour] += value;
    const StoredKeyPart tkey = StoreKeyPart(key);
    if (tkey.hashed) NoteLookup(tkey.stored, key, in_archive, in_realtime);
    const std::string ymdh = *YmdhFromUnix(hour);
    for (const Sub& s : subs) {
      const StoredKeyPart skey = StoreKeyPart(s.value);
      if (skey.hashed) NoteLookup(skey.stored, s.value, in_archive, in_realtime);
      if (in_archive) archive_[SubtotalArchiveKey(s.sns, ns, tkey.stored, ymdh)][skey.stored] += value;
      if (in_realtime) realtime_[fmt::format("{}.{}|{}.{}.{}", s.sns, ns, tkey.stored, skey.stored, ymdh)] += value;
    }
    if (in_archive) archive_[TotalArchiveKey(ns, tkey.stored)][ymdh] += value;
    if (in_realtime) realtime_[fmt::format("{}|{}.{}", ns, tkey.stored, ymdh)] += value;
  }

  // Visitor `token` at `hour` of a key and of each of `subs`' values, stored
  // like Add (the caller adds the hour's clicks too: an hour with visitors
  // always has clicks). The oracle keeps the tokens themselves.
  void AddVisitor(const std::string& ns, const std::string& key, int64_t hour, const std::string& token,
                  const std::vector<Sub>& subs, bool in_archive, bool in_realtime) {
    visitors_[{"", ns, key}][""][hour].insert(token);
    for (const Sub& s : subs) visitors_[{s.sns, ns, key}][s.value][hour].insert(token);
    const std::string tkey = StoreKeyPart(key).stored;
    const std::string ymdh = *YmdhFromUnix(hour);
    const uint64_t hash = HashVisitor(token);
    if (in_archive) archive_uniques_[UniqueTotalKey(ns, tkey, ymdh)][""].insert(hash);
    if (in_realtime) realtime_uniques_[UniqueTotalKey(ns, tkey, ymdh)].insert(hash);
    for (const Sub& s : subs) {
      const std::string skey = StoreKeyPart(s.value).stored;
      if (in_archive) archive_uniques_[UniqueSubtotalArchiveKey(s.sns, ns, tkey, ymdh)][skey].insert(hash);
      if (in_realtime) {
        realtime_uniques_[fmt::format("{}{}.{}|{}.{}.{}", kUniqueMark, s.sns, ns, tkey, skey, ymdh)].insert(hash);
      }
    }
  }
  void AddVisitorAtRing(const std::string& ns, const std::string& key, int64_t hour, const std::string& token,
                        const std::vector<Sub>& subs, int64_t today) {
    const int64_t day = FloorDiv(hour, kSecondsPerDay);
    AddVisitor(ns, key, hour, token, subs, day <= today - 1, day >= today - 1);
  }
  // Oracle: token -> hours it visited, of a key (sns "") or of one subtotal
  // value.
  std::map<std::string, std::map<int64_t, int64_t>> VisitorHours(const std::string& sns, const std::string& ns,
                                                                 const std::string& key,
                                                                 const std::string& value) const {
    std::map<std::string, std::map<int64_t, int64_t>> out;
    auto it = visitors_.find({sns, ns, key});
    if (it == visitors_.end()) return out;
    auto v = it->second.find(sns.empty() ? "" : value);
    if (v == it->second.end()) return out;
    for (const auto& [hour, tokens] : v->second) {
      for (const std::string& token : tokens) out[token][hour] = 1;
    }
    return out;
  }

  // The same, stored as a running cluster holds it with the ring at Today =
  // `today` (days since the epoch): days before D-1 in the archive only, D-1
  // in both (exported and deployed, not yet cleared), later in realtime only.
  void AddAtRing(const std::string& ns, const std::string& key, int64_t hour, int64_t value,
                 const std::vector<Sub>& subs, int64_t today) {
    const int64_t day = FloorDiv(hour, kSecondsPerDay);
    Add(ns, key, hour, value, subs, day <= today - 1, day >= today - 1);
  }

  // Oracle: what a deletion (POST /delete) of `key` of `ns` ("" = every key)
  // over [from, to) takes away: its clicks, every subtotal namespace's and
  // its visitors'. What the files and the realtime shards hold is left (the
  // cluster must take it away).
  void Forget(const std::string& ns, const std::string& key, int64_t from, int64_t to) {
    const auto covered = [&](const std::string& n, const std::string& k) { return n == ns && (key.empty() || k == key); };
    const auto erase = [&](auto& by_hour) { by_hour.erase(by_hour.lower_bound(from), by_hour.lower_bound(to)); };
    for (auto& [nk, hours] : totals_) {
      if (covered(nk.first, nk.second)) erase(hours);
    }
    for (auto& [snk, values] : subtotals_) {
      if (!covered(std::get<1>(snk), std::get<2>(snk))) continue;
      for (auto& [value, hours] : values) erase(hours);
    }
    for (auto& [snk, values] : visitors_) {
      if (!covered(std::get<1>(snk), std::get<2>(snk))) continue;
      for (auto& [value, hours] : values) erase(hours);
    }
  }

  // Oracle: hour -> count of a key.
  std::map<int64_t, int64_t> Hours(const std::string& ns, const std::string& key) const {
    auto it = totals_.find({ns, key});
    return it == totals_.end() ? std::map<int64_t, int64_t>{} : it->second;
  }
  // Oracle: full subtotal value -> hour -> count.
  std::map<std::string, std::map<int64_t, int64_t>> SubHours(const std::string& sns, const std::string& ns,
                                                             const std::string& key) const {
    auto it = subtotals_.find({sns, ns, key});
    return it == subtotals_.end() ? std::map<std::string, std::map<int64_t, int64_t>>{} : it->second;
  }

  // The archive file of one shard as the rebuild writes it (format 2):
  // whole lines, bytewise sorted; each UTC day of subtotal hours of a key
  // also summed into one record keyed by the day's code (the hour code
  // without its hour character), and each aligned span of 2^k days with
  // hours into one keyed by its span code, worked out here.
  std::string ArchiveFile(int shard, int shards) const {
    std::map<std::string, std::map<std::string, int64_t>> records = archive_;
    for (const auto& [key, columns] : archive_) {
      if (RecordTypeOfKey(key) != RecordType::kSubtotal) continue;
      const std::string day = key.substr(0, key.size() - 1);
      for (const auto& [name, count] : columns) records[day][name] += count;
      const std::string prefix = day.substr(0, day.rfind('.') + 1);
      for (const std::string& code : SpanCodesOf(std::string_view(day).substr(prefix.size()))) {
        for (const auto& [name, count] : columns) records[prefix + code][name] += count;
      }
    }
    std::vector<std::string> lines;
    // Unique records, each day's union and each span's: a sketch of all the
    // day's (span's) hashes, each added (never a union of sketches).
    std::map<std::string, std::map<std::string, std::set<uint64_t>>> uniques = archive_uniques_;
    for (const auto& [key, columns] : archive_uniques_) {
      const std::string day_key = key.substr(0, key.size() - 1);
      auto& day = uniques[day_key];
      for (const auto& [name, hashes] : columns) day[name].insert(hashes.begin(), hashes.end());
      const std::string prefix = day_key.substr(0, day_key.rfind('.') + 1);
      for (const std::string& code : SpanCodesOf(std::string_view(day_key).substr(prefix.size()))) {
        for (const auto& [name, hashes] : columns) uniques[prefix + code][name].insert(hashes.begin(), hashes.end());
      }
    }
    for (const auto& [key, columns] : uniques) {
      auto shard_key = ShardKeyOfArchiveKey(key);
      EXPECT_TRUE(shard_key.ok()) << key;
      if (static_cast<int>(ShardOf(*shard_key, shards)) != shard) continue;
      const auto sketch_of = [](const std::set<uint64_t>& hashes) {
        UniqueSketch sketch;
        for (uint64_t h : hashes) sketch.Add(h);
        return sketch;
      };
      ArchiveRecord record;
      record.type = RecordTypeOfKey(key);
      record.key = key;
      if (IsSketchValueType(record.type)) {
        record.sketch = sketch_of(columns.at(""));
      } else {
        for (const auto& [name, hashes] : columns) record.columns.push_back({name, 0, sketch_of(hashes)});
      }
      lines.push_back(FormatArchiveLine(record));
    }
    for (const auto& [key, columns] : records) {
      auto shard_key = ShardKeyOfArchiveKey(key);
      EXPECT_TRUE(shard_key.ok()) << key;
      if (static_cast<int>(ShardOf(*shard_key, shards)) != shard) continue;
      ArchiveRecord record;
      record.type = RecordTypeOfKey(key);
      record.key = key;
      for (const auto& [name, count] : columns) record.columns.push_back({name, count});
      lines.push_back(FormatArchiveLine(record));
    }
    for (const auto& [hash, value] : archive_lookups_) {
      if (static_cast<int>(ShardOf(hash, shards)) != shard) continue;
      ArchiveRecord record;
      record.type = RecordType::kLookup;
      record.key = LookupKey(hash);
      record.lookup_value = value;
      lines.push_back(FormatArchiveLine(record));
    }
    // Sorted as key + "," (a day's key is a prefix of its hours' keys).
    std::sort(lines.begin(), lines.end(), [](const std::string& a, const std::string& b) {
      return CompareArchiveKeys(LineKey(a), LineKey(b)) < 0;
    });
    std::string file;
    for (const std::string& l : lines) file += l + "\n";
    return file;
  }

  // The realtime /incr body for one shard.
  std::string RealtimeBody(int shard, int shards) const {
    std::string body;
    for (const auto& [key, count] : realtime_) {
      auto shard_key = ShardKeyOfRealtimeKey(key);
      EXPECT_TRUE(shard_key.ok()) << key;
      if (static_cast<int>(ShardOf(*shard_key, shards)) == shard) body += fmt::format("{},{}\n", key, count);
    }
    for (const auto& [hash, value] : realtime_lookups_) {
      if (static_cast<int>(ShardOf(hash, shards)) == shard) body += fmt::format("l|{},{}\n", hash, value);
    }
    for (const auto& [key, hashes] : realtime_uniques_) {
      auto shard_key = ShardKeyOfRealtimeKey(key);
      EXPECT_TRUE(shard_key.ok()) << key;
      if (static_cast<int>(ShardOf(*shard_key, shards)) != shard) continue;
      UniqueSketch sketch;
      for (uint64_t h : hashes) sketch.Add(h);
      body += fmt::format("{},{}\n", key, sketch.ToText());
    }
    return body;
  }

 private:
  void NoteLookup(const std::string& hash, const std::string& value, bool in_archive, bool in_realtime) {
    if (in_archive) archive_lookups_[hash] = value;
    if (in_realtime) realtime_lookups_[hash] = value;
  }

  std::map<std::pair<std::string, std::string>, std::map<int64_t, int64_t>> totals_;
  std::map<std::tuple<std::string, std::string, std::string>, std::map<std::string, std::map<int64_t, int64_t>>>
      subtotals_;
  std::map<std::string, std::map<std::string, int64_t>> archive_;  // archive key -> column -> count
  std::map<std::string, int64_t> realtime_;                        // realtime key -> count
  std::map<std::string, std::string> archive_lookups_, realtime_lookups_;
  // (sns or "", ns, key) -> subtotal value ("" for the key) -> hour -> tokens
  std::map<std::tuple<std::string, std::string, std::string>,
           std::map<std::string, std::map<int64_t, std::set<std::string>>>>
      visitors_;
  // unique archive key -> column ("" for a unique total) -> hashes
  std::map<std::string, std::map<std::string, std::set<uint64_t>>> archive_uniques_;
  std::map<std::string, std::set<uint64_t>> realtime_uniques_;  // unique realtime key -> hashes
};

// Expected /clicks data.clicks (rollup=false) from the oracle.
inline nlohmann::json ExpectedSeries(const std::vector<oracle::UnitSum>& sums) {
  nlohmann::json list = nlohmann::json::array();
  for (const auto& u : sums) list.push_back({{"dt", u.dt}, {"clicks", u.clicks}});
  return list;
}

// The oracle's distinct visitors per unit of a window, newest first (the
// units of oracle::Rollup with the same arguments, `clicks` holding the
// count): a visitor counts in a unit when it visited any hour of it.
// `visitor_hours` is ReadDataset::VisitorHours's (token -> hours visited).
inline std::vector<oracle::UnitSum> ExpectedVisitors(
    const std::string& unit, int64_t offset_hours, int64_t reference_ts, int64_t units,
    const std::map<std::string, std::map<int64_t, int64_t>>& visitor_hours, int64_t first_data_ts = 0) {
  std::vector<oracle::UnitSum> out = oracle::Rollup(unit, offset_hours, reference_ts, units, {}, first_data_ts);
  for (const auto& [token, hours] : visitor_hours) {
    const std::vector<oracle::UnitSum> seen =
        oracle::Rollup(unit, offset_hours, reference_ts, units, hours, first_data_ts);
    for (size_t i = 0; i < out.size(); ++i) out[i].clicks += seen[i].clicks > 0 ? 1 : 0;
  }
  return out;
}

// Expected /uniques data.uniques (rollup=false) from ExpectedVisitors.
inline nlohmann::json ExpectedUniqueSeries(const std::vector<oracle::UnitSum>& visitors) {
  nlohmann::json list = nlohmann::json::array();
  for (const auto& u : visitors) list.push_back({{"dt", u.dt}, {"uniques", u.clicks}});
  return list;
}

// Expected breakdown list for per-value sums: zero sums left out, the top
// `limit` by clicks (of values tied at the cut, the first by stored form:
// the value, or its hash when it is stored hashed), listed most clicks
// first, ties by value.
inline nlohmann::json ExpectedTop(const std::map<std::string, int64_t>& by_value, size_t limit) {
  struct Row {
    std::string value, stored;
    int64_t clicks;
  };
  std::vector<Row> all;
  for (const auto& [v, c] : by_value) {
    if (c != 0) all.push_back({v, NeedsHash(v) ? Hash12(v) : v, c});
  }
  std::sort(all.begin(), all.end(),
            [](const Row& a, const Row& b) { return a.clicks != b.clicks ? a.clicks > b.clicks : a.stored < b.stored; });
  all.resize(std::min(all.size(), limit));
  std::sort(all.begin(), all.end(),
            [](const Row& a, const Row& b) { return a.clicks != b.clicks ? a.clicks > b.clicks : a.value < b.value; });
  nlohmann::json list = nlohmann::json::array();
  for (const Row& r : all) list.push_back({{"value", r.value}, {"clicks", r.clicks}});
  return list;
}

// Checks the "complete": false markers of a query answer's series (/clicks,
// /uniques, /breakdown per unit, and compare='s) against the oracle's unit
// ends and the time of the request (`before` .. `after`: a unit ending in
// between may say either), then removes them, so a test compares the rest
// with the oracle as it did before answers had them.
inline void CheckAndStripComplete(nlohmann::json* data, int64_t before, int64_t after, const std::string& target) {
  if (!data->is_object() || !data->contains("unit") || !data->contains("tz_offset")) return;
  const std::string unit = (*data)["unit"];
  const int64_t tz = (*data)["tz_offset"];
  const auto check = [&](nlohmann::json* series) {
    if (!series->is_array()) return;
    for (auto& entry : *series) {
      if (!entry.is_object() || !entry.contains("dt")) continue;
      const int64_t end = oracle::UnitEnd(unit, tz, entry["dt"].get<int64_t>());
      const bool marked = entry.contains("complete");
      if (marked) {
        EXPECT_EQ(entry["complete"], false) << target;
      }
      if (end <= before) {
        EXPECT_FALSE(marked) << target << ": the unit at " << entry["dt"] << " is over";
      }
      if (end > after) {
        EXPECT_TRUE(marked) << target << ": the unit at " << entry["dt"] << " is not over";
      }
      entry.erase("complete");
    }
  };
  for (const char* field : {"clicks", "uniques", "breakdown"}) {
    if (data->contains(field)) check(&(*data)[field]);
  }
  if (data->contains("compare") && (*data)["compare"].is_object()) {
    for (const char* field : {"clicks", "uniques"}) {
      if ((*data)["compare"].contains(field)) check(&(*data)["compare"][field]);
    }
  }
}

// The cluster (on testutil/cluster.h): realtime shards (one member each),
// archive shards with `replicas` members each (serving one file per shard),
// one API node.
class ReadCluster {
 public:
  // The API member whose name realtime batches of the dataset carry.
  static constexpr const char* kLoader = "api-1";

  struct Spec {
    int realtime_shards = 2;
    int archive_shards = 2;
    int replicas = 1;
    int request_timeout_ms = 5000;
    // The API's read cache ([api] read_cache_mb; 0: off, as in the rest of
    // the suite).
    int read_cache_mb = 0;
    int read_loops = 1;  // [api] read_loops
  };

  explicit ReadCluster(Spec spec) : spec_(spec) {}

  const std::string& dir() const { return cluster_.dir(); }
  Spec& spec() { return spec_; }
  std::string ArchiveFilePath(int shard) const { return cluster_.ArchiveFile(shard); }
  std::string ArchiveMember(int shard, int replica) const { return cluster_.ArchiveName(shard, replica); }

  void WriteConfig() {
    clickatron::testing::ClusterSpec cluster;
    cluster.realtime_shards = spec_.realtime_shards;
    cluster.archive_shards = spec_.archive_shards;
    cluster.archive_replicas = spec_.replicas;
    // LoadRealtime posts batches under api-1's name: an API node no read test
    // starts (a deletion, which asks every API node, starts it).
    cluster.api_nodes = 2;
    cluster.cluster.SetString("clock", "manual").SetString("log_level", "warn");
    cluster.api.SetInt("request_timeout_ms", spec_.request_timeout_ms).SetString("oplog_sync", "none");
    cluster.api.SetInt("read_cache_mb", spec_.read_cache_mb).SetInt("read_loops", spec_.read_loops);
    const Status written = cluster_.Write(cluster);
    ASSERT_TRUE(written.ok()) << written.ToString();
  }

  // Applied to each archive file's contents before it is written (a test
  // that damages a record: its manifest describes the damaged bytes, as a
  // replica's copy gone bad after the rebuild checked it would not).
  std::function<void(std::string* contents)> archive_tamper;

  void WriteArchives(const ReadDataset& data, uint64_t generation, const std::string& last_day) {
    for (int s = 0; s < spec_.archive_shards; ++s) {
      std::string contents = data.ArchiveFile(s, spec_.archive_shards);
      if (archive_tamper) archive_tamper(&contents);
      Manifest m;  // format 2, its day and span records whole
      m.generation = generation;
      m.shard = s;
      m.shard_count = spec_.archive_shards;
      m.last_day = last_day;
      m.created = FormatIsoTime(0);
      DescribeArchiveData(contents, &m);
      ASSERT_TRUE(WriteManifestAtomically(ManifestPathFor(ArchiveFilePath(s)), m).ok());
      ASSERT_TRUE(WriteFileAtomically(ArchiveFilePath(s), contents).ok());
    }
  }

  void Start(const std::string& name) {
    std::string error;
    ASSERT_TRUE(cluster_.Start(name, &error)) << name << ": " << error;
  }
  void Stop(const std::string& name) { EXPECT_EQ(cluster_.Stop(name), 0) << name; }

  void StartStorage() {
    for (int s = 0; s < spec_.realtime_shards; ++s) Start(fmt::format("realtime-{}", s));
    for (int s = 0; s < spec_.archive_shards; ++s) {
      for (int r = 0; r < spec_.replicas; ++r) Start(ArchiveMember(s, r));
    }
  }
  void StartApi() { Start("api-0"); }

  // The usual start: `data` in archive generation `generation` (last day
  // today-1) and in realtime (the ring at Today = `today`), then the API.
  void StartWithData(const ReadDataset& data, int64_t today, uint64_t generation = 1) {
    WriteArchives(data, generation, FormatDate(today - 1));
    StartStorage();
    RotateRealtime(today);
    LoadRealtime(data);
    StartApi();
  }

  // Turns every realtime ring to Today = `today` (days since epoch).
  void RotateRealtime(int64_t today) {
    for (int s = 0; s < spec_.realtime_shards; ++s) {
      auto r = HttpPost(Peer(fmt::format("realtime-{}", s)), "/rotate?today=" + FormatDate(today), "");
      ASSERT_EQ(r.status_code, 200) << r.body;
    }
  }

  void LoadRealtime(const ReadDataset& data) {
    for (int s = 0; s < spec_.realtime_shards; ++s) {
      const std::string body = data.RealtimeBody(s, spec_.realtime_shards);
      if (body.empty()) continue;
      auto r = HttpPost(Peer(fmt::format("realtime-{}", s)), "/incr?source=" + std::string(kLoader) + "&seq=1", body);
      ASSERT_EQ(r.status_code, 200) << r.body;
    }
  }

  // POST /delete?`query` on the API node (no admin token in this cluster);
  // returns once GET /delete/ID says it is effective (its id), or "" after
  // a bounded wait.
  std::string Delete(const std::string& query) {
    // A deletion's cut needs every API member's oplog heads, the loader's
    // too (LoadRealtime's batches are its): it runs as an API node now.
    if (!loader_started_) {
      Start(kLoader);
      loader_started_ = true;
    }
    auto r = HttpPost(Peer("api-0"), "/delete?" + query, "");
    EXPECT_EQ(r.status_code, 202) << query << " " << r.body;
    const nlohmann::json j = nlohmann::json::parse(r.body, nullptr, false);
    if (r.status_code != 202 || !j.is_object()) return "";
    const std::string id = j["data"]["id"];
    nlohmann::json state;
    const bool effective = clickatron::testing::WaitFor(
        [&] {
          state = nlohmann::json::parse(HttpGet(Peer("api-0"), "/delete/" + id).body, nullptr, false);
          return state.is_object() && state["data"].is_object() && state["data"].value("effective", false);
        },
        std::chrono::seconds(60));
    EXPECT_TRUE(effective) << query << "\n" << state.dump() << "\napi-0:\n" << cluster_.LogTail("api-0")
                           << "\nrealtime-0:\n" << cluster_.LogTail("realtime-0") << "\nrealtime-1:\n"
                           << cluster_.LogTail("realtime-1") << "\n" << kLoader << ":\n" << cluster_.LogTail(kLoader);
    return effective ? id : "";
  }

  DaemonProcess& Daemon(const std::string& name) { return cluster_.Process(name); }
  HostPort Peer(const std::string& name) const { return cluster_.Address(name); }

  // A figure of the API's /stats data.read (-1, and a failure, when missing;
  // a failure too when /stats does not answer 200).
  int64_t ReadFigure(const std::string& name) const {
    const nlohmann::json stats = Api("/stats");
    EXPECT_EQ(stats["http_status"], 200) << stats.dump();
    const nlohmann::json& figure = stats["data"]["read"][name];
    EXPECT_TRUE(figure.is_number_integer()) << name << " missing from /stats data.read: " << stats.dump();
    return figure.is_number_integer() ? figure.get<int64_t>() : -1;
  }

  // GET on the API node; the parsed envelope (status_code added from HTTP),
  // its "complete" markers checked and removed (CheckAndStripComplete).
  nlohmann::json Api(const std::string& target) const {
    const int64_t before = static_cast<int64_t>(std::time(nullptr));
    auto r = HttpGet(Peer("api-0"), target, 20000);
    const int64_t after = static_cast<int64_t>(std::time(nullptr)) + 1;
    nlohmann::json j = nlohmann::json::parse(r.body, nullptr, false);
    if (j.is_discarded()) j = nlohmann::json{{"unparsed", r.body}};
    if (j.contains("data")) CheckAndStripComplete(&j["data"], before, after, target);
    j["http_status"] = r.status_code;
    return j;
  }

 private:
  Spec spec_;
  clickatron::testing::Cluster cluster_;
  bool loader_started_ = false;
};

inline std::string Enc(const std::string& s) { return PercentEncode(s); }

// The ring's Today for a test cluster: tomorrow by the system clock (a new
// ring starts at the system's today and only turns forward).
inline int64_t TestRingToday() { return FloorDiv(static_cast<int64_t>(std::time(nullptr)), kSecondsPerDay) + 1; }

// A test on a default ReadCluster started with the dataset it builds.
class ReadClusterTest : public ::testing::Test {
 protected:
  void SetUp() override {
    cluster_.spec().read_cache_mb = ReadCacheMb();
    cluster_.WriteConfig();
    today_ = TestRingToday();
    BuildDataset();
    cluster_.StartWithData(data_, today_);
  }
  // Fills data_ (hours placed by ReadDataset::AddAtRing with today_).
  virtual void BuildDataset() = 0;
  // The API's read cache ([api] read_cache_mb; 0: off).
  virtual int ReadCacheMb() const { return 0; }

  ReadCluster cluster_{ReadCluster::Spec{}};
  ReadDataset data_;
  int64_t today_ = 0;
};

}  // namespace clickatron::api::testing
