#include "clickatron/config.h"
#include "clickatron/ymdh.h"

#include <fcntl.h>
#include <gtest/gtest.h>

#include <algorithm>
#include <thread>
#include <sys/stat.h>
#include <unistd.h>

#include <fmt/format.h>

#include "clickatron/daemon.h"
#include "clickatron/file_util.h"
#include "testutil/testutil.h"

namespace clickatron {
namespace {

const char* kGood = R"(
[cluster]
realtime_shards = 2
archive_shards = 1
clock = "manual"
[api]
flush_window_ms = 5
[[member]]
name = "api-0"
role = "api"
listen = "127.0.0.1:8080"
[[member]]
name = "realtime-0"
role = "realtime"
listen = "127.0.0.1:8090"
shard = 0
[[member]]
name = "realtime-1"
role = "realtime"
listen = "127.0.0.1:8091"
shard = 1
[[member]]
name = "archive-0a"
role = "archive"
listen = "127.0.0.1:8100"
shard = 0
[[member]]
name = "archive-0b"
role = "archive"
listen = "127.0.0.1:8101"
shard = 0
)";

TEST(ConfigTest, ParsesMembersAndSections) {
  auto c = ClusterConfig::Parse(kGood, "good.toml");
  ASSERT_TRUE(c.ok()) << c.status().ToString();
  EXPECT_EQ(c->realtime_shards, 2);
  EXPECT_TRUE(c->manual_clock());
  EXPECT_EQ(c->api.flush_window_ms, 5);
  EXPECT_EQ(c->api.oplog_sync, "always");  // default
  ASSERT_NE(c->RealtimeMember(1), nullptr);
  EXPECT_EQ(c->RealtimeMember(1)->listen.port, 8091);
  EXPECT_EQ(c->ArchiveReplicas(0).size(), 2u);
  EXPECT_EQ(c->FindMember("api-0")->data_dir, "var/api-0");  // default data dir
  EXPECT_EQ(c->ArchiveReplicas(0)[0]->file, "var/archive/shard-0.csv");
}

Status ParseError(const std::string& text) { return ClusterConfig::Parse(text, "bad.toml").status(); }

TEST(ConfigTest, ErrorsNameLineAndField) {
  std::string bad = kGood;
  bad.replace(bad.find("flush_window_ms = 5"), 19, "flush_window_ms = \"x\"");
  Status st = ParseError(bad);
  ASSERT_FALSE(st.ok());
  EXPECT_NE(st.message().find("line 7"), std::string::npos) << st.message();
  EXPECT_NE(st.message().find("flush_window_ms"), std::string::npos) << st.message();
}

TEST(ConfigTest, RejectsUnknownFieldsAndBadValues) {
  EXPECT_NE(ParseError(std::string(kGood) + "\n[api]\n").message().find("line"), std::string::npos);
  std::string misspelt = kGood;
  misspelt.replace(misspelt.find("flush_window_ms"), 15, "flush_windw_ms");
  EXPECT_NE(ParseError(misspelt).message().find("unknown field"), std::string::npos);
  std::string clock = kGood;
  clock.replace(clock.find("\"manual\""), 8, "\"sundial\"");
  EXPECT_NE(ParseError(clock).message().find("clock"), std::string::npos);
  std::string syntax = kGood;
  syntax += "\n[[member]\n";
  EXPECT_NE(ParseError(syntax).message().find("line"), std::string::npos);
}

// [rebuild] publish_address: a free port is allowed (unlike a member's
// listen); a wildcard host is not, because replicas are told this address.
TEST(ConfigTest, PublishAddressTakesPortZeroAndRefusesWildcards) {
  auto defaults = ClusterConfig::Parse(kGood, "test.toml");
  ASSERT_TRUE(defaults.ok()) << defaults.status().ToString();
  EXPECT_EQ(defaults->rebuild.publish_address.ToString(), "127.0.0.1:0");
  const auto with = [](const std::string& address) {
    return std::string(kGood) + "\n[rebuild]\npublish_address = \"" + address + "\"\n";
  };
  auto fixed = ClusterConfig::Parse(with("10.0.0.5:9300"), "test.toml");
  ASSERT_TRUE(fixed.ok()) << fixed.status().ToString();
  EXPECT_EQ(fixed->rebuild.publish_address.host, "10.0.0.5");
  EXPECT_EQ(fixed->rebuild.publish_address.port, 9300);
  auto any_port = ClusterConfig::Parse(with("10.0.0.5:0"), "test.toml");
  ASSERT_TRUE(any_port.ok()) << any_port.status().ToString();
  EXPECT_EQ(any_port->rebuild.publish_address.port, 0);
  EXPECT_NE(ParseError(with("0.0.0.0:9300")).message().find("wildcard"), std::string::npos);
  EXPECT_NE(ParseError(with("no-port")).message().find("publish_address"), std::string::npos);
  EXPECT_NE(ParseError(with("10.0.0.5:70000")).message().find("publish_address"), std::string::npos);
}

// [cluster] realtime_shards_since + previous_realtime_shards: a change of the
// realtime shard count at a day boundary; members cover the larger count.
TEST(ConfigTest, RealtimeShardChangeNeedsBothKeysAndMembersForTheLargerCount) {
  std::string text = kGood;
  ASSERT_NE(text.find("realtime_shards = "), std::string::npos);
  auto with = [&](const std::string& lines) {
    std::string t = text;
    t.replace(t.find("[cluster]\n"), 10, "[cluster]\n" + lines + "\n");
    return t;
  };
  auto base = ClusterConfig::Parse(kGood, "test.toml");
  ASSERT_TRUE(base.ok()) << base.status().ToString();
  const int n = base->realtime_shards;
  // Growing by one from a day: members of the new count.
  auto grow = ClusterConfig::Parse(
      [&] {
        std::string t = kGood;
        const std::string from = fmt::format("realtime_shards = {}", n);
        t.replace(t.find(from), from.size(),
                  fmt::format("realtime_shards = {}\nrealtime_shards_since = \"2026-12-01\"\n"
                              "previous_realtime_shards = {}",
                              n, n - 1));
        return t;
      }(),
      "test.toml");
  ASSERT_TRUE(grow.ok()) << grow.status().ToString();
  EXPECT_EQ(grow->previous_realtime_shards, n - 1);
  EXPECT_EQ(grow->realtime_shards_since_day, *ParseDate("2026-12-01"));
  // The same count, or a smaller one, is refused.
  EXPECT_NE(ParseError(with(fmt::format("realtime_shards_since = \"2026-12-01\"\nprevious_realtime_shards = {}", n)))
                .message()
                .find("only grows"),
            std::string::npos);
  EXPECT_NE(ParseError(with("realtime_shards_since = \"2200-01-01\"\nprevious_realtime_shards = 1"))
                .message()
                .find("hour codes"),
            std::string::npos);
  EXPECT_NE(ParseError(with("realtime_shards_since = \"2026-12-01\"")).message().find("previous_realtime_shards"),
            std::string::npos);
  EXPECT_NE(ParseError(with("previous_realtime_shards = 1")).message().find("realtime_shards_since"),
            std::string::npos);
  EXPECT_NE(ParseError(with("realtime_shards_since = \"2026-13-01\"\nprevious_realtime_shards = 1"))
                .message()
                .find("realtime_shards_since"),
            std::string::npos);
}

// [rebuild] engine: local by default; gnu-parallel needs the hosts it runs on.
TEST(ConfigTest, RebuildEngineIsLocalOrGnuParallelWithHosts) {
  auto defaults = ClusterConfig::Parse(kGood, "test.toml");
  ASSERT_TRUE(defaults.ok()) << defaults.status().ToString();
  EXPECT_EQ(defaults->rebuild.engine, "local");
  EXPECT_EQ(defaults->rebuild.engine_command, "clickatron-rebuild");
  EXPECT_EQ(defaults->rebuild.engine_retries, 3);
  const auto with = [](const std::string& lines) { return std::string(kGood) + "\n[rebuild]\n" + lines + "\n"; };
  auto engine = ClusterConfig::Parse(with("engine = \"gnu-parallel\"\nengine_hosts = [\"4/a\", \"b\"]\n"
                                          "engine_ssh = \"ssh -p 2222\"\nengine_retries = 5"),
                                     "test.toml");
  ASSERT_TRUE(engine.ok()) << engine.status().ToString();
  EXPECT_EQ(engine->rebuild.engine_hosts, (std::vector<std::string>{"4/a", "b"}));
  EXPECT_EQ(engine->rebuild.engine_ssh, "ssh -p 2222");
  EXPECT_EQ(engine->rebuild.engine_retries, 5);
  EXPECT_NE(ParseError(with("engine = \"gnu-parallel\"")).message().find("engine_hosts"), std::string::npos);
  EXPECT_NE(ParseError(with("engine = \"slurm\"")).message().find("engine"), std::string::npos);
  EXPECT_NE(ParseError(with("engine_retries = 0")).message().find("engine_retries"), std::string::npos);
  EXPECT_NE(ParseError(with("engine_command = \"\"")).message().find("engine_command"), std::string::npos);
}

// [rebuild] oplog_dirs pointed the rebuild at API data dirs by path; late
// data is fetched over HTTP now, and a file still setting it is told so.
TEST(ConfigTest, RemovedOplogDirsNamesWhatReplacedIt) {
  std::string old = kGood;
  old.replace(old.find("[api]"), 5, "[rebuild]\noplog_dirs = [\"/var/lib/clickatron/api-0\"]\n[api]");
  const Status st = ParseError(old);
  ASSERT_FALSE(st.ok());
  EXPECT_EQ(st.reason(), "BAD_CONFIG");
  EXPECT_NE(st.message().find("[rebuild] oplog_dirs: removed"), std::string::npos) << st.message();
  EXPECT_NE(st.message().find("GET /late/files"), std::string::npos) << st.message();
  EXPECT_NE(st.message().find("line 7"), std::string::npos) << st.message();
}

TEST(ConfigTest, RejectsInconsistentShards) {
  std::string missing = kGood;
  missing.replace(missing.find("shard = 1"), 9, "shard = 0");
  EXPECT_FALSE(ParseError(missing).ok());  // shard 0 twice, shard 1 missing
  std::string outside = kGood;
  outside.replace(outside.find("realtime_shards = 2"), 19, "realtime_shards = 1");
  Status st = ParseError(outside);
  EXPECT_NE(st.message().find("shard 1"), std::string::npos) << st.message();
}

TEST(ConfigTest, RejectsDuplicateNamesAndAddresses) {
  std::string dup = kGood;
  dup.replace(dup.find("name = \"realtime-1\""), 19, "name = \"realtime-0\"");
  EXPECT_NE(ParseError(dup).message().find("duplicate member"), std::string::npos);
  std::string addr = kGood;
  addr.replace(addr.find("127.0.0.1:8091"), 14, "127.0.0.1:8090");
  EXPECT_NE(ParseError(addr).message().find("used twice"), std::string::npos);
}

TEST(ConfigTest, ShippedLocalConfigParsesAndNamesItsSecretFiles) {
  // Parse, not Load: the secret files exist once scripts/run has created them.
  auto text = ReadFileToString(std::string(CLICKATRON_SOURCE_DIR) + "/conf/local.toml");
  ASSERT_TRUE(text.ok()) << text.status().ToString();
  auto c = ClusterConfig::Parse(*text, "conf/local.toml");
  ASSERT_TRUE(c.ok()) << c.status().ToString();
  EXPECT_EQ(c->cluster_secret_file, "var/cluster.secret");
  EXPECT_EQ(c->admin_token_file, "var/admin.token");
  EXPECT_EQ(c->MembersWithRole(MemberRole::kRealtime).size(), 2u);
  EXPECT_EQ(c->MembersWithRole(MemberRole::kArchive).size(), 2u);
  EXPECT_EQ(c->MembersWithRole(MemberRole::kApi).size(), 1u);
}

TEST(HostPortTest, ParsesAndRejects) {
  auto hp = ParseHostPort("127.0.0.1:8080");
  ASSERT_TRUE(hp.ok());
  EXPECT_EQ(hp->port, 8080);
  EXPECT_FALSE(ParseHostPort("127.0.0.1").ok());
  EXPECT_FALSE(ParseHostPort("127.0.0.1:0").ok());
  EXPECT_FALSE(ParseHostPort("127.0.0.1:70000").ok());
  EXPECT_FALSE(ParseHostPort("h:12x").ok());
}

// --- Secrets, tokens and exposure ([cluster] cluster_secret_file,
// admin_token_file, [api] client_token, CheckExposure) ---

using clickatron::testing::WriteWithMode;

// kGood with `lines` added at the top of its `table` ("[cluster]", "[api]").
std::string GoodWith(const std::string& table, const std::string& lines) {
  std::string text = kGood;
  const std::string header = table + "\n";
  text.insert(text.find(header) + header.size(), lines);
  return text;
}

// Writes the cluster file into `dir` and loads it.
Result<ClusterConfig> LoadText(const testing::TempDir& dir, const std::string& text) {
  const std::string path = dir / "cluster.toml";
  if (!WriteWithMode(path, text, 0644)) return Status::IoError("cannot write " + path);
  return ClusterConfig::Load(path);
}

constexpr const char* kSecretValue = "cluster-secret-for-config-test-0123";
constexpr const char* kAdminTokenValue = "admin-token-for-config-test-4567";

TEST(ConfigTest, LoadReadsClusterSecretFile) {
  testing::TempDir dir;
  const std::string secret_path = dir / "cluster.secret";
  ASSERT_TRUE(WriteWithMode(secret_path, std::string(kSecretValue) + "\n", 0600));
  const std::string text = GoodWith("[cluster]", "cluster_secret_file = \"" + secret_path + "\"\n");

  // Parse names the file but reads no other file.
  auto parsed = ClusterConfig::Parse(text, "cluster.toml");
  ASSERT_TRUE(parsed.ok()) << parsed.status().ToString();
  EXPECT_EQ(parsed->cluster_secret_file, secret_path);
  EXPECT_EQ(parsed->cluster_secret, "");

  auto c = LoadText(dir, text);
  ASSERT_TRUE(c.ok()) << c.status().ToString();
  EXPECT_EQ(c->cluster_secret_file, secret_path);
  EXPECT_EQ(c->cluster_secret, kSecretValue);
  EXPECT_EQ(c->admin_token, "");
}

TEST(ConfigTest, LoadRefusesClusterSecretFileOthersCanRead) {
  testing::TempDir dir;
  const std::string secret_path = dir / "cluster.secret";
  ASSERT_TRUE(WriteWithMode(secret_path, std::string(kSecretValue) + "\n", 0644));
  auto c = LoadText(dir, GoodWith("[cluster]", "cluster_secret_file = \"" + secret_path + "\"\n"));
  ASSERT_FALSE(c.ok());
  const std::string& msg = c.status().message();
  EXPECT_NE(msg.find(secret_path), std::string::npos) << msg;
  EXPECT_NE(msg.find("cluster_secret_file"), std::string::npos) << msg;
  EXPECT_NE(msg.find("chmod 600"), std::string::npos) << msg;
  EXPECT_NE(msg.find(dir / "cluster.toml"), std::string::npos) << "names the cluster file too: " << msg;
  EXPECT_EQ(msg.find(kSecretValue), std::string::npos) << "must not show the secret: " << msg;
}

TEST(ConfigTest, LoadRefusesMissingClusterSecretFile) {
  testing::TempDir dir;
  const std::string secret_path = dir / "no-such.secret";
  auto c = LoadText(dir, GoodWith("[cluster]", "cluster_secret_file = \"" + secret_path + "\"\n"));
  ASSERT_FALSE(c.ok());
  EXPECT_NE(c.status().message().find(secret_path), std::string::npos) << c.status().message();
}

TEST(ConfigTest, LoadReadsAdminTokenFile) {
  testing::TempDir dir;
  const std::string token_path = dir / "admin.token";
  ASSERT_TRUE(WriteWithMode(token_path, std::string(kAdminTokenValue) + "  \n", 0600));
  auto c = LoadText(dir, GoodWith("[cluster]", "admin_token_file = \"" + token_path + "\"\n"));
  ASSERT_TRUE(c.ok()) << c.status().ToString();
  EXPECT_EQ(c->admin_token_file, token_path);
  EXPECT_EQ(c->admin_token, kAdminTokenValue);
  EXPECT_EQ(c->cluster_secret, "");

  ASSERT_EQ(::chmod(token_path.c_str(), 0640), 0);
  auto refused = LoadText(dir, GoodWith("[cluster]", "admin_token_file = \"" + token_path + "\"\n"));
  ASSERT_FALSE(refused.ok());
  EXPECT_NE(refused.status().message().find("admin_token_file"), std::string::npos) << refused.status().message();
  EXPECT_NE(refused.status().message().find(token_path), std::string::npos) << refused.status().message();
}

TEST(ConfigTest, RefusesAdminTokenAndAdminTokenFileTogether) {
  testing::TempDir dir;
  const std::string token_path = dir / "admin.token";
  ASSERT_TRUE(WriteWithMode(token_path, std::string(kAdminTokenValue) + "\n", 0600));
  const std::string both =
      GoodWith("[cluster]", "admin_token = \"inline-token-0123456789\"\nadmin_token_file = \"" + token_path + "\"\n");
  Status parsed = ParseError(both);
  ASSERT_FALSE(parsed.ok());
  EXPECT_NE(parsed.message().find("admin_token_file"), std::string::npos) << parsed.message();
  auto loaded = LoadText(dir, both);
  ASSERT_FALSE(loaded.ok());
  EXPECT_NE(loaded.status().message().find("admin_token_file"), std::string::npos) << loaded.status().message();
  // Either one alone is fine.
  EXPECT_TRUE(ClusterConfig::Parse(GoodWith("[cluster]", "admin_token = \"inline-token-0123456789\"\n"), "a.toml").ok());
  EXPECT_TRUE(LoadText(dir, GoodWith("[cluster]", "admin_token_file = \"" + token_path + "\"\n")).ok());
}

// Written but empty, or an inline token shorter than a token file may be:
// each would leave routes open, or nearly, without a word.
TEST(ConfigTest, RefusesEmptySecretSettingsAndShortInlineTokens) {
  const std::vector<std::pair<std::string, std::string>> bad = {
      {"[cluster]", "admin_token = \"\"\n"},
      {"[cluster]", "admin_token = \"abc\"\n"},
      {"[cluster]", "admin_token_file = \"\"\n"},
      {"[cluster]", "cluster_secret_file = \"\"\n"},
      {"[api]", "client_token = \"short\"\n"},
  };
  for (const auto& [table, lines] : bad) {
    Status st = ParseError(GoodWith(table, lines));
    EXPECT_FALSE(st.ok()) << lines;
    const std::string field = lines.substr(0, lines.find(' '));
    EXPECT_NE(st.message().find(field), std::string::npos) << st.message();
  }
}

// [[cluster]] is an array of tables: its settings were passed over, the
// secret and the admin token with them.
TEST(ConfigTest, RefusesASectionWrittenAsAnArrayOfTables) {
  for (const std::string name : {"cluster", "api"}) {
    std::string text = kGood;
    const size_t at = text.find("[" + name + "]");
    ASSERT_NE(at, std::string::npos) << name;
    text.replace(at, name.size() + 2, "[[" + name + "]]");
    Status st = ParseError(text);
    ASSERT_FALSE(st.ok()) << name;
    EXPECT_NE(st.message().find("[" + name + "], a table"), std::string::npos) << st.message();
  }
}

TEST(ConfigTest, RefusesABackoffFloorOverItsCeilingAndAStatsdPortTakenByAMember) {
  Status backoff = ParseError(GoodWith("[api]", "retry_backoff_min_ms = 60000\nretry_backoff_max_ms = 5000\n"));
  ASSERT_FALSE(backoff.ok());
  EXPECT_NE(backoff.message().find("retry_backoff_min_ms"), std::string::npos) << backoff.message();
  // The API's statsd over TCP on realtime-0's listen address.
  std::string clash = kGood;
  clash.insert(clash.find("listen = \"127.0.0.1:8080\"\n") + 26, "statsd_tcp = \"127.0.0.1:8090\"\n");
  Status st = ParseError(clash);
  ASSERT_FALSE(st.ok());
  EXPECT_NE(st.message().find("127.0.0.1:8090"), std::string::npos) << st.message();
  // On UDP the same port is no clash.
  std::string udp = kGood;
  udp.insert(udp.find("listen = \"127.0.0.1:8080\"\n") + 26, "statsd_udp = \"127.0.0.1:8090\"\n");
  EXPECT_TRUE(ParseError(udp).ok()) << ParseError(udp).ToString();
}

TEST(ConfigTest, ADirectoryIsNoClusterFile) {
  testing::TempDir dir;
  auto loaded = ClusterConfig::Load(dir.path());
  ASSERT_FALSE(loaded.ok());
  EXPECT_NE(loaded.status().message().find("is a directory"), std::string::npos) << loaded.status().message();
}

TEST(ConfigTest, RefusesANanRatio) {
  Status st = ParseError(std::string(kGood) + "\n[rebuild]\nmax_bad_line_ratio = nan\n");
  ASSERT_FALSE(st.ok());
  EXPECT_NE(st.message().find("max_bad_line_ratio"), std::string::npos) << st.message();
}

TEST(ConfigTest, ParsesApiClientToken) {
  auto none = ClusterConfig::Parse(kGood, "good.toml");
  ASSERT_TRUE(none.ok()) << none.status().ToString();
  EXPECT_EQ(none->api.client_token, "");  // default: no token
  auto c = ClusterConfig::Parse(GoodWith("[api]", "client_token = \"client-token-abc\"\n"), "good.toml");
  ASSERT_TRUE(c.ok()) << c.status().ToString();
  EXPECT_EQ(c->api.client_token, "client-token-abc");
  EXPECT_EQ(c->api.flush_window_ms, 5);  // the rest of [api] still parsed
}

TEST(ConfigTest, RealtimeUniteDaysIsOnUnlessTurnedOff) {
  auto defaults = ClusterConfig::Parse(kGood, "good.toml");
  ASSERT_TRUE(defaults.ok()) << defaults.status().ToString();
  EXPECT_TRUE(defaults->api.realtime_unite_days);
  auto off = ClusterConfig::Parse(GoodWith("[api]", "realtime_unite_days = false\n"), "a.toml");
  ASSERT_TRUE(off.ok()) << off.status().ToString();
  EXPECT_FALSE(off->api.realtime_unite_days);
  EXPECT_FALSE(ClusterConfig::Parse(GoodWith("[api]", "realtime_unite_days = 1\n"), "bad.toml").ok());
}

TEST(ConfigTest, ReadLoopsDefaultToOneAndZeroMeansACore) {
  auto defaults = ClusterConfig::Parse(kGood, "good.toml");
  ASSERT_TRUE(defaults.ok()) << defaults.status().ToString();
  EXPECT_EQ(defaults->api.ReadLoops(), 1);
  auto set = ClusterConfig::Parse(GoodWith("[api]", "read_loops = 3\n"), "a.toml");
  ASSERT_TRUE(set.ok()) << set.status().ToString();
  EXPECT_EQ(set->api.ReadLoops(), 3);
  auto per_core = ClusterConfig::Parse(GoodWith("[api]", "read_loops = 0\n"), "a.toml");
  ASSERT_TRUE(per_core.ok()) << per_core.status().ToString();
  const int cores = static_cast<int>(std::max(1u, std::thread::hardware_concurrency()));
  EXPECT_EQ(per_core->api.ReadLoops(), std::min(cores, 8));
  for (const char* bad : {"read_loops = -1\n", "read_loops = 65\n"}) {
    auto refused = ClusterConfig::Parse(GoodWith("[api]", bad), "bad.toml");
    ASSERT_FALSE(refused.ok()) << bad;
    EXPECT_NE(refused.status().message().find("read_loops"), std::string::npos) << refused.status().message();
  }
}

TEST(ConfigTest, ReadCacheMbIsTheApiNodesOneCacheSetting) {
  auto defaults = ClusterConfig::Parse(kGood, "good.toml");
  ASSERT_TRUE(defaults.ok()) << defaults.status().ToString();
  EXPECT_EQ(defaults->api.read_cache_mb, 64);
  auto set = ClusterConfig::Parse(GoodWith("[api]", "read_cache_mb = 8\n"), "a.toml");
  ASSERT_TRUE(set.ok()) << set.status().ToString();
  EXPECT_EQ(set->api.read_cache_mb, 8);
  auto off = ClusterConfig::Parse(GoodWith("[api]", "read_cache_mb = 0\n"), "a.toml");
  ASSERT_TRUE(off.ok()) << off.status().ToString();
  EXPECT_EQ(off->api.read_cache_mb, 0);
  auto negative = ClusterConfig::Parse(GoodWith("[api]", "read_cache_mb = -1\n"), "bad.toml");
  ASSERT_FALSE(negative.ok());
  EXPECT_NE(negative.status().message().find("read_cache_mb"), std::string::npos) << negative.status().message();
  // An older file's setting is refused with what replaced it, not ignored:
  // its value would silently stop bounding anything.
  auto older = ClusterConfig::Parse(GoodWith("[api]", "archive_cache_mb = 64\n"), "old.toml");
  ASSERT_FALSE(older.ok());
  EXPECT_EQ(older.status().reason(), "BAD_CONFIG");
  EXPECT_NE(older.status().message().find("replaced by read_cache_mb"), std::string::npos)
      << older.status().message();
}

TEST(ConfigTest, RealtimeScanCacheDefaultsTo64MiBAndZeroTurnsItOff) {
  auto defaults = ClusterConfig::Parse(kGood, "good.toml");
  ASSERT_TRUE(defaults.ok()) << defaults.status().ToString();
  EXPECT_EQ(defaults->realtime.scan_cache_mb, 64);
  for (int mb : {0, 8}) {
    auto set = ClusterConfig::Parse(std::string(kGood) + "\n[realtime]\nscan_cache_mb = " + std::to_string(mb) + "\n",
                                    "a.toml");
    ASSERT_TRUE(set.ok()) << set.status().ToString();
    EXPECT_EQ(set->realtime.scan_cache_mb, mb);
  }
  auto refused = ClusterConfig::Parse(std::string(kGood) + "\n[realtime]\nscan_cache_mb = -1\n", "bad.toml");
  ASSERT_FALSE(refused.ok());
  EXPECT_NE(refused.status().message().find("scan_cache_mb"), std::string::npos) << refused.status().message();
}

TEST(ConfigTest, RealtimeMemoryBudgetBoundsTheWholeShard) {
  auto RealtimeWith = [](const std::string& lines) { return std::string(kGood) + "\n[realtime]\n" + lines; };
  auto defaults = ClusterConfig::Parse(kGood, "good.toml");
  ASSERT_TRUE(defaults.ok()) << defaults.status().ToString();
  // 448 = the table's 256 + the block cache's 128 + the scan cache's 64.
  EXPECT_EQ(defaults->realtime.memory_budget_mb, 448);
  EXPECT_EQ(defaults->realtime.TableBudgetMb(), 256);
  auto set = ClusterConfig::Parse(
      RealtimeWith("memory_budget_mb = 64\nblock_cache_mb = 32\nscan_cache_mb = 8\nwrite_buffer_mb = 16\n"),
      "a.toml");
  ASSERT_TRUE(set.ok()) << set.status().ToString();
  EXPECT_EQ(set->realtime.TableBudgetMb(), 24);
  // The parts must leave the table its least (16 MiB).
  auto too_small = ClusterConfig::Parse(
      RealtimeWith("memory_budget_mb = 64\nblock_cache_mb = 32\nscan_cache_mb = 17\nwrite_buffer_mb = 16\n"),
      "bad.toml");
  ASSERT_FALSE(too_small.ok());
  EXPECT_NE(too_small.status().message().find("memory_budget_mb = 64"), std::string::npos)
      << too_small.status().message();
  // The write buffers are charged to the block cache: at most half of it.
  auto buffers = ClusterConfig::Parse(RealtimeWith("block_cache_mb = 32\nwrite_buffer_mb = 17\n"), "bad.toml");
  ASSERT_FALSE(buffers.ok());
  EXPECT_NE(buffers.status().message().find("write_buffer_mb = 17"), std::string::npos) << buffers.status().message();
  EXPECT_TRUE(ClusterConfig::Parse(RealtimeWith("block_cache_mb = 32\nwrite_buffer_mb = 16\n"), "a.toml").ok());
}

// kGood's api-0, listening on `host`.
MemberConfig MemberOn(const ClusterConfig& c, const std::string& host) {
  MemberConfig m = *c.FindMember("api-0");
  m.listen.host = host;
  return m;
}

TEST(ConfigTest, CheckExposureRefusesOpenListenWithoutSecret) {
  auto c = ClusterConfig::Parse(kGood, "good.toml");
  ASSERT_TRUE(c.ok()) << c.status().ToString();
  ASSERT_TRUE(c->cluster_secret.empty());
  ASSERT_TRUE(c->admin_token.empty());
  for (const std::string host : {"0.0.0.0", "10.0.0.1", "192.168.1.1", "::"}) {
    Status st = CheckExposure(*c, MemberOn(*c, host));
    EXPECT_FALSE(st.ok()) << host;
    EXPECT_EQ(st.reason(), "INSECURE_LISTEN") << host << ": " << st.ToString();
    EXPECT_NE(st.message().find("cluster_secret_file"), std::string::npos) << st.message();
  }
  // An admin token alone is not enough.
  c->admin_token = kAdminTokenValue;
  Status st = CheckExposure(*c, MemberOn(*c, "0.0.0.0"));
  EXPECT_FALSE(st.ok());
  EXPECT_EQ(st.reason(), "INSECURE_LISTEN") << st.ToString();
}

TEST(ConfigTest, CheckExposureRefusesOpenListenWithSecretButNoAdminToken) {
  auto c = ClusterConfig::Parse(kGood, "good.toml");
  ASSERT_TRUE(c.ok()) << c.status().ToString();
  c->cluster_secret = kSecretValue;
  Status st = CheckExposure(*c, MemberOn(*c, "0.0.0.0"));
  EXPECT_FALSE(st.ok());
  EXPECT_EQ(st.reason(), "INSECURE_LISTEN") << st.ToString();
  EXPECT_NE(st.message().find("admin"), std::string::npos) << st.message();
}

TEST(ConfigTest, CheckExposureAcceptsOpenListenWithSecretAndAdminToken) {
  auto c = ClusterConfig::Parse(kGood, "good.toml");
  ASSERT_TRUE(c.ok()) << c.status().ToString();
  c->cluster_secret = kSecretValue;
  c->admin_token = kAdminTokenValue;
  Status st = CheckExposure(*c, MemberOn(*c, "0.0.0.0"));
  EXPECT_TRUE(st.ok()) << st.ToString();

  // The same through files, as Load fills them.
  testing::TempDir dir;
  const std::string secret_path = dir / "cluster.secret";
  const std::string token_path = dir / "admin.token";
  ASSERT_TRUE(WriteWithMode(secret_path, std::string(kSecretValue) + "\n", 0600));
  ASSERT_TRUE(WriteWithMode(token_path, std::string(kAdminTokenValue) + "\n", 0600));
  auto loaded = LoadText(dir, GoodWith("[cluster]", "cluster_secret_file = \"" + secret_path +
                                                        "\"\nadmin_token_file = \"" + token_path + "\"\n"));
  ASSERT_TRUE(loaded.ok()) << loaded.status().ToString();
  Status from_files = CheckExposure(*loaded, MemberOn(*loaded, "0.0.0.0"));
  EXPECT_TRUE(from_files.ok()) << from_files.ToString();
}

TEST(ConfigTest, CheckExposureAcceptsLoopbackWithoutSecretOrToken) {
  auto c = ClusterConfig::Parse(kGood, "good.toml");
  ASSERT_TRUE(c.ok()) << c.status().ToString();
  ASSERT_TRUE(c->cluster_secret.empty());
  ASSERT_TRUE(c->admin_token.empty());
  for (const std::string host : {"127.0.0.1", "::1", "localhost"}) {
    Status st = CheckExposure(*c, MemberOn(*c, host));
    EXPECT_TRUE(st.ok()) << host << ": " << st.ToString();
  }
  // Every member of kGood listens on 127.0.0.1 as written.
  for (const auto& m : c->members) {
    EXPECT_TRUE(CheckExposure(*c, m).ok()) << m.name;
  }
}

// [[retention]] tables (clickatron/retention.h).
bool Contains(const std::string& text, std::string_view part) { return text.find(part) != std::string::npos; }



Result<ClusterConfig> ParseWithRetention(const std::string& retention) {
  return ClusterConfig::Parse(std::string(kGood) + retention, "retention.toml");
}

TEST(RetentionConfigTest, ParsesPolicies) {
  auto none = ParseWithRetention("");
  ASSERT_TRUE(none.ok()) << none.status().ToString();
  EXPECT_TRUE(none->retention.empty());
  EXPECT_EQ(none->RetentionFor("u"), nullptr);

  auto c = ParseWithRetention(R"(
[[retention]]
ns = "u"
hourly_days = 90
daily_days = 400
zone = "America/New_York"
[[retention]]
ns = "clicks_2"
hourly_days = 30
[[retention]]
ns = "east"
hourly_days = 0
daily_days = 10
zone = "+9"
)");
  ASSERT_TRUE(c.ok()) << c.status().ToString();
  ASSERT_EQ(c->retention.size(), 3u);
  const RetentionPolicy* u = c->RetentionFor("u");
  ASSERT_NE(u, nullptr);
  EXPECT_EQ(u->ns, "u");
  EXPECT_EQ(u->hourly_days, 90);
  EXPECT_EQ(u->daily_days, 400);
  EXPECT_EQ(u->zone, "America/New_York");
  const RetentionPolicy* clicks = c->RetentionFor("clicks_2");
  ASSERT_NE(clicks, nullptr);
  EXPECT_EQ(clicks->hourly_days, 30);
  EXPECT_EQ(clicks->daily_days, 0);  // forever
  EXPECT_EQ(clicks->zone, "UTC");    // the default
  const RetentionPolicy* east = c->RetentionFor("east");
  ASSERT_NE(east, nullptr);
  EXPECT_EQ(east->hourly_days, 0);
  EXPECT_EQ(east->zone, "+9");
  EXPECT_EQ(c->RetentionFor("v"), nullptr);
  EXPECT_EQ(c->RetentionFor("clicks"), nullptr);

  // daily_days alone: data dropped after it, and its hours kept until then.
  auto dropped_only = ParseWithRetention("[[retention]]\nns = \"d\"\ndaily_days = 30\n");
  ASSERT_TRUE(dropped_only.ok()) << dropped_only.status().ToString();
  EXPECT_EQ(dropped_only->RetentionFor("d")->hourly_days, 30);
  EXPECT_EQ(dropped_only->RetentionFor("d")->daily_days, 30);
}

void ExpectRetentionRefused(const std::string& retention, std::string_view field, std::string_view also = {}) {
  auto c = ParseWithRetention(retention);
  ASSERT_FALSE(c.ok()) << retention;
  EXPECT_EQ(c.status().reason(), "BAD_CONFIG") << c.status().ToString();
  EXPECT_TRUE(Contains(c.status().message(), "retention")) << c.status().message();
  EXPECT_TRUE(Contains(c.status().message(), field)) << c.status().message();
  if (!also.empty()) {
    EXPECT_TRUE(Contains(c.status().message(), also)) << c.status().message();
  }
}

TEST(RetentionConfigTest, RefusesPoliciesThatCannotBeApplied) {
  // Nothing kept at all.
  ExpectRetentionRefused("[[retention]]\nns = \"u\"\nhourly_days = 0\ndaily_days = 0\n", "hourly_days");
  ExpectRetentionRefused("[[retention]]\nns = \"u\"\n", "hourly_days");
  // Kept for less time than kept hourly.
  ExpectRetentionRefused("[[retention]]\nns = \"u\"\nhourly_days = 90\ndaily_days = 30\n", "daily_days");
  // Zones: unknown, and not whole hours off UTC.
  ExpectRetentionRefused("[[retention]]\nns = \"u\"\nhourly_days = 90\nzone = \"Nowhere/Land\"\n", "zone", "Nowhere/Land");
  ExpectRetentionRefused("[[retention]]\nns = \"u\"\nhourly_days = 90\nzone = \"Asia/Kolkata\"\n", "zone", "Asia/Kolkata");
  ExpectRetentionRefused("[[retention]]\nns = \"u\"\nhourly_days = 90\nzone = \"+5:30\"\n", "zone");
  // Two policies for one namespace.
  ExpectRetentionRefused("[[retention]]\nns = \"u\"\nhourly_days = 90\n[[retention]]\nns = \"u\"\nhourly_days = 30\n", "ns");
  // Unknown keys, bad namespaces, bad values.
  ExpectRetentionRefused("[[retention]]\nns = \"u\"\nhourly_days = 90\nweekly_days = 3\n", "weekly_days");
  ExpectRetentionRefused("[[retention]]\nns = \"a.b\"\nhourly_days = 90\n", "ns");
  ExpectRetentionRefused("[[retention]]\nns = \"l\"\nhourly_days = 90\n", "ns");  // the lookup namespace
  ExpectRetentionRefused("[[retention]]\nhourly_days = 90\n", "ns");
  ExpectRetentionRefused("[[retention]]\nns = \"u\"\nhourly_days = -1\ndaily_days = 10\n", "hourly_days");
  ExpectRetentionRefused("[[retention]]\nns = \"u\"\nhourly_days = \"90\"\n", "hourly_days");
  ExpectRetentionRefused("[retention]\nns = \"u\"\nhourly_days = 90\n", "retention");
}

}  // namespace
}  // namespace clickatron
