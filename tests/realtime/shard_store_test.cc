#include "shard_store.h"

#include <fmt/format.h>
#include <gtest/gtest.h>
#include <rocksdb/perf_context.h>
#include <rocksdb/perf_level.h>
#include <sys/resource.h>
#include <sys/wait.h>

#include <csignal>
#include <cstdlib>
#include <unistd.h>

#include <limits>
#include <map>
#include <random>
#include <string>

#include "clickatron/file_util.h"
#include "clickatron/unique_sketch.h"
#include "clickatron/ymdh.h"
#include "counter_merge.h"
#include "testutil/testutil.h"

// A namespace of this file's own: its names beside those of the other files
// compiled with it in one unity file (tests/CMakeLists.txt).
namespace clickatron::realtime::shard_store_test {
namespace {

using clickatron::testing::TempDir;

const int64_t kDay = DaysFromCivil({2024, 3, 10});

std::unique_ptr<ShardStore> OpenStore(const std::string& dir) {
  StoreOptions options;
  options.write_buffer_mb = 4;
  options.block_cache_mb = 4;
  Result<std::unique_ptr<ShardStore>> store = ShardStore::Open(dir, options);
  EXPECT_TRUE(store.ok()) << store.status().ToString();
  return store.ok() ? std::move(store).value() : nullptr;
}

// The counter's value (at `at` when given), -1 when absent.
int64_t CounterOf(const ShardStore& store, int64_t day, const std::string& key, const StoreSnapshot* at = nullptr) {
  Result<std::optional<std::string>> raw = store.Get(day, key, at);
  EXPECT_TRUE(raw.ok()) << raw.status().ToString();
  if (!raw.ok() || !raw->has_value()) return -1;
  int64_t v = 0;
  EXPECT_TRUE(DecodeCounter(**raw, &v));
  return v;
}

std::vector<std::pair<std::string, std::string>> ReadAll(const ShardStore& store, int64_t day) {
  std::vector<std::pair<std::string, std::string>> out;
  Result<std::unique_ptr<StoreCursor>> c = store.NewCursor(day, CursorOptions{});
  EXPECT_TRUE(c.ok());
  if (!c.ok()) return out;
  for ((*c)->Seek(""); (*c)->Valid(); (*c)->Next()) {
    std::string text;
    EXPECT_TRUE(AppendValueText((*c)->key(), (*c)->raw_value(), &text).ok());
    out.emplace_back(std::string((*c)->key()), text);
  }
  EXPECT_TRUE((*c)->status().ok());
  return out;
}

TEST(ShardStoreTest, IncrementsSumAcrossWritesLikeAnOracle) {
  TempDir tmp;
  auto store = OpenStore(tmp.path());
  ASSERT_TRUE(store);
  ASSERT_TRUE(store->CreateDay(kDay).ok());
  std::map<std::string, int64_t> oracle;
  std::mt19937 rng(7);
  std::vector<std::string> keys;
  for (int i = 0; i < 50; ++i) keys.push_back("u|k" + std::to_string(i) + ".c3p1");
  for (int w = 0; w < 200; ++w) {
    StoreWrite write;
    for (int j = 0; j < 10; ++j) {
      const std::string& key = keys[rng() % keys.size()];
      const int64_t delta = 1 + static_cast<int64_t>(rng() % 5);
      write.increments.push_back({kDay, key, delta});
      oracle[key] += delta;
    }
    ASSERT_TRUE(store->Write(write).ok());
  }
  for (const auto& [key, want] : oracle) EXPECT_EQ(CounterOf(*store, kDay, key), want) << key;
  EXPECT_FALSE(store->Get(kDay, "u|absent.c3p1")->has_value());
}

// A checkpoint sorts its keys by their first 16 bytes before it compares
// them whole: keys that end before, at and after byte 16, share it, or
// differ only past it, with repeats, land in order and fold exactly (an
// SST file refuses keys out of order).
TEST(ShardStoreTest, KeysAroundTheSortPrefixFoldInOrder) {
  TempDir tmp;
  auto store = OpenStore(tmp.path());
  ASSERT_TRUE(store);
  ASSERT_TRUE(store->CreateDay(kDay).ok());
  std::vector<std::string> keys;
  const std::string base = "u|0123456789abcdef";  // 18 bytes
  for (size_t len = 1; len <= base.size(); ++len) keys.push_back(base.substr(0, len));
  for (const char* tail : {".c3p1", ".c3p0", "x", "~", "\x7f", "0"}) keys.push_back(base.substr(0, 14) + tail);
  for (const char* tail : {"", "a", "b.c3p1", "b.c3p0", "bb"}) keys.push_back(base + tail);
  keys.push_back(std::string("u|0123456789abcd") + '\0' + "z");
  std::mt19937 rng(11);
  std::map<std::string, int64_t> oracle;
  StoreWrite write;
  for (int i = 0; i < 2000; ++i) {
    const std::string& key = keys[rng() % keys.size()];
    const int64_t delta = 1 + static_cast<int64_t>(rng() % 7);
    write.increments.push_back({kDay, key, delta});
    oracle[key] += delta;
  }
  ASSERT_TRUE(store->Write(write).ok());
  std::vector<std::pair<std::string, std::string>> want;
  for (const auto& [key, sum] : oracle) want.emplace_back(key, std::to_string(sum));
  EXPECT_EQ(ReadAll(*store, kDay), want);
}

// RocksDB's write buffers are charged to the block cache: what the
// metadata's memtable holds shows in the cache's usage (block_cache_mb
// bounds both).
TEST(ShardStoreTest, WriteBuffersAreChargedToTheBlockCache) {
  TempDir tmp;
  auto store = OpenStore(tmp.path());
  ASSERT_TRUE(store);
  const StoreMemory before = store->Memory();
  EXPECT_EQ(before.block_cache_capacity_bytes, 4u << 20);
  EXPECT_EQ(before.write_buffer_bound_bytes, 4u << 20);
  const std::string value(1024, 'x');
  for (int i = 0; i < 1500; ++i) ASSERT_TRUE(store->PutMeta("note-" + std::to_string(i), value, false).ok());
  const StoreMemory after = store->Memory();
  EXPECT_GE(after.write_buffer_bytes, 1500u * 1024) << after.write_buffer_bytes;
  EXPECT_GE(after.block_cache_bytes, after.write_buffer_bytes);
}

TEST(ShardStoreTest, WatermarkAndDataSurviveReopen) {
  TempDir tmp;
  {
    auto store = OpenStore(tmp.path());
    ASSERT_TRUE(store->CreateDay(kDay).ok());
    ASSERT_TRUE(store->CreateDay(kDay + 1).ok());
    StoreWrite write;
    write.increments.push_back({kDay, "u|a.c3p1", 3});
    write.increments.push_back({kDay + 1, "u|a.c3q0", 4});
    write.puts.push_back({kDay, "l|AAAAAAAAAAA=", "some value"});
    write.watermarks = {{"api-0", 41}};
    ASSERT_TRUE(store->Write(write).ok());
  }
  auto store = OpenStore(tmp.path());
  EXPECT_EQ(store->Days(), (std::vector<int64_t>{kDay, kDay + 1}));
  EXPECT_EQ(CounterOf(*store, kDay, "u|a.c3p1"), 3);
  EXPECT_EQ(CounterOf(*store, kDay + 1, "u|a.c3q0"), 4);
  EXPECT_EQ(store->Get(kDay, "l|AAAAAAAAAAA=")->value_or(""), "some value");
  Result<std::map<std::string, uint64_t>> wm = store->LoadWatermarks();
  ASSERT_TRUE(wm.ok());
  EXPECT_EQ(*wm, (std::map<std::string, uint64_t>{{"api-0", 41}}));
}

// Runs the disabled test `name` of this binary in a process of its own, with
// `dir` in environment variable `env`; its wait status (-1: not waited for).
int RunChildTest(const std::string& name, const char* env, const std::string& dir) {
  const pid_t child = ::fork();
  if (child < 0) return -1;
  if (child == 0) {
    ::setenv(env, dir.c_str(), 1);
    const std::string filter = "--gtest_filter=" + name;
    ::execl("/proc/self/exe", "shard_store_child", filter.c_str(), "--gtest_also_run_disabled_tests",
            static_cast<char*>(nullptr));
    ::_exit(127);
  }
  int wstatus = 0;
  return ::waitpid(child, &wstatus, 0) == child ? wstatus : -1;
}

// Run only by the test below, in a process of its own (a forked copy of this
// multi-threaded test process could not run RocksDB's background threads).
TEST(ShardStoreCrashChild, DISABLED_WritesThenDiesWithTheStoreOpen) {
  const char* dir = std::getenv("CLICKATRON_STORE_CRASH_DIR");
  ASSERT_NE(dir, nullptr);
  auto store = OpenStore(dir);
  bool ok = store->CreateDay(kDay).ok();
  StoreWrite first;
  first.increments.push_back({kDay, "u|a.c3p1", 3});
  first.watermarks = {{"api-0", 7}};
  ok = ok && store->Write(first).ok();
  StoreWrite second;
  second.increments.push_back({kDay, "u|a.c3p1", 100});
  second.increments.push_back({kDay, "u|b.c3p1", 1});
  second.watermarks = {{"api-0", 9}, {"api-1", 2}};
  ok = ok && store->Write(second).ok();
  // A write whose files are made but never ingested leaves nothing.
  StoreWrite third;
  third.increments.push_back({kDay, "u|a.c3p1", 1000});
  third.increments.push_back({kDay, "u|c.c3p1", 5});
  third.watermarks = {{"api-0", 11}};
  third.before_ingest = [](const std::vector<std::string>&) { return Status::IoError("injected"); };
  ok = ok && !store->Write(third).ok();
  ok = ok && CounterOf(*store, kDay, "u|a.c3p1") == 103;
  // The ring state is written with the WAL (synced): it survives.
  ok = ok && store->PutMeta("ring", "{\"x\":1}", true).ok();
  ::_exit(ok ? 0 : 1);  // no destructors: the store is never closed
}

// A write is durable once it returns, records and watermarks together; one
// that failed before its files were ingested left nothing, before the crash
// or after it. The process dies with the store open (no close, no flush).
TEST(ShardStoreTest, WritesSurviveACrashWholeAndAFailedOneLeavesNothing) {
  TempDir tmp;
  const int wstatus = RunChildTest("ShardStoreCrashChild.DISABLED_WritesThenDiesWithTheStoreOpen",
                                   "CLICKATRON_STORE_CRASH_DIR", tmp.path());
  ASSERT_NE(wstatus, -1);
  ASSERT_TRUE(WIFEXITED(wstatus) && WEXITSTATUS(wstatus) == 0) << "child status " << wstatus;
  auto store = OpenStore(tmp.path());
  EXPECT_EQ(CounterOf(*store, kDay, "u|a.c3p1"), 103);
  EXPECT_EQ(CounterOf(*store, kDay, "u|b.c3p1"), 1);
  EXPECT_FALSE(store->Get(kDay, "u|c.c3p1")->has_value());
  EXPECT_EQ(*store->LoadWatermarks(), (std::map<std::string, uint64_t>{{"api-0", 9}, {"api-1", 2}}));
  EXPECT_EQ(store->GetMeta("ring")->value_or(""), "{\"x\":1}");
}

// Run only by the test below: a store used on a "disk" that takes 1 KiB
// per file (RLIMIT_FSIZE; SIGXFSZ ignored, so writes fail with EFBIG as
// they would with ENOSPC). Whatever fails must fail as a status; exits 0
// once something did (3 if nothing failed: the limit tested nothing).
TEST(ShardStoreFullDiskChild, DISABLED_UsesAStoreWhoseWritesFail) {
  const char* dir = std::getenv("CLICKATRON_STORE_FULL_DIR");
  ASSERT_NE(dir, nullptr);
  ::signal(SIGXFSZ, SIG_IGN);
  struct rlimit limit = {1 << 10, 1 << 10};
  ASSERT_EQ(::setrlimit(RLIMIT_FSIZE, &limit), 0);
  StoreOptions options;
  options.write_buffer_mb = 4;
  options.block_cache_mb = 4;
  Result<std::unique_ptr<ShardStore>> store = ShardStore::Open(dir, options);
  bool failed = !store.ok();
  if (store.ok()) {
    for (int64_t day = kDay; day < kDay + 5; ++day) {
      if (!(*store)->CreateDay(day).ok()) {
        failed = true;
        continue;
      }
      StoreWrite write;
      for (int i = 0; i < 20000; ++i) write.increments.push_back({day, "u|k" + std::to_string(i) + ".c3p1", 1});
      failed = !(*store)->Write(write).ok() || failed;
    }
  }
  ::_exit(failed ? 0 : 3);
}

// RocksDB's own log goes to the daemon's log, not to a LOG file: on a full
// disk, the packaged RocksDB aborted the process on the append after a
// failed one to that file (a realtime shard restarted on a full disk, or
// rotated there, died of SIGABRT). Now the store's writes fail as statuses.
TEST(ShardStoreTest, AFullDiskFailsWritesWithoutAbortingAndNoLogFileIsWritten) {
  TempDir tmp;
  {
    auto store = OpenStore(tmp.path());
    ASSERT_NE(store, nullptr);
    ASSERT_TRUE(store->CreateDay(kDay).ok());
  }
  EXPECT_FALSE(FileExists(tmp.path() + "/LOG"));
  TempDir full;
  const int wstatus = RunChildTest("ShardStoreFullDiskChild.DISABLED_UsesAStoreWhoseWritesFail",
                                   "CLICKATRON_STORE_FULL_DIR", full.path());
  ASSERT_NE(wstatus, -1);
  EXPECT_FALSE(WIFSIGNALED(wstatus)) << "the child died of signal " << WTERMSIG(wstatus);
  EXPECT_TRUE(WIFEXITED(wstatus) && WEXITSTATUS(wstatus) == 0) << "child status " << wstatus;
}

// A store in `dir` whose day kDay holds u|a.c3p1 = `value`.
std::unique_ptr<ShardStore> StoreWithOneCounter(const std::string& dir, int64_t value) {
  auto store = OpenStore(dir);
  EXPECT_TRUE(store->CreateDay(kDay).ok());
  StoreWrite first;
  first.increments.push_back({kDay, "u|a.c3p1", value});
  EXPECT_TRUE(store->Write(first).ok());
  return store;
}

TEST(ShardStoreTest, SnapshotGetDoesNotSeeLaterWrites) {
  TempDir tmp;
  auto store = StoreWithOneCounter(tmp.path(), 2);
  SnapshotPtr before = store->Snapshot();
  StoreWrite later;
  later.increments.push_back({kDay, "u|a.c3p1", 5});
  ASSERT_TRUE(store->Write(later).ok());
  EXPECT_EQ(CounterOf(*store, kDay, "u|a.c3p1", before.get()), 2);
  EXPECT_EQ(CounterOf(*store, kDay, "u|a.c3p1"), 7);
}

// version() changes with every change of the days' records (a write, a
// day created or dropped) and with nothing else; a snapshot keeps the
// version of the state it reads.
TEST(ShardStoreTest, TheVersionChangesWithTheRecordsAndASnapshotKeepsItsOwn) {
  TempDir tmp;
  auto store = StoreWithOneCounter(tmp.path(), 2);
  const uint64_t written = store->version();
  SnapshotPtr before = store->Snapshot();
  EXPECT_EQ(before->version(), written);
  ASSERT_TRUE(store->PutMeta("note", "x", /*sync=*/false).ok());  // metadata: no day's records
  EXPECT_EQ(store->version(), written);
  StoreWrite later;
  later.increments.push_back({kDay, "u|a.c3p1", 5});
  ASSERT_TRUE(store->Write(later).ok());
  const uint64_t rewritten = store->version();
  EXPECT_NE(rewritten, written);
  EXPECT_EQ(before->version(), written);
  ASSERT_TRUE(store->CreateDay(kDay + 1).ok());
  EXPECT_NE(store->version(), rewritten);
  const uint64_t created = store->version();
  ASSERT_TRUE(store->DropDay(kDay + 1).ok());
  EXPECT_NE(store->version(), created);
}

TEST(ShardStoreTest, CursorYieldsRecordsSortedAndNoMetadata) {
  TempDir tmp;
  auto store = OpenStore(tmp.path());
  ASSERT_TRUE(store->CreateDay(kDay).ok());
  std::map<std::string, int64_t> oracle;
  std::mt19937 rng(3);
  StoreWrite write;
  std::vector<std::string> owned;
  owned.reserve(300);
  for (int i = 0; i < 300; ++i) owned.push_back("u|" + std::to_string(rng()) + ".c3p1");
  for (const std::string& key : owned) {
    write.increments.push_back({kDay, key, 2});
    oracle[key] += 2;
  }
  write.watermarks = {{"api-1", 5}};
  ASSERT_TRUE(store->Write(write).ok());
  ASSERT_TRUE(store->PutMeta("ring", "{}", true).ok());
  auto records = ReadAll(*store, kDay);
  ASSERT_EQ(records.size(), oracle.size());
  auto it = oracle.begin();
  for (const auto& [key, value] : records) {
    EXPECT_EQ(key, it->first);
    EXPECT_EQ(value, std::to_string(it->second));
    ++it;
  }
}

TEST(ShardStoreTest, DroppedDayIsGoneAfterReopenButCursorKeepsReading) {
  TempDir tmp;
  auto store = OpenStore(tmp.path());
  ASSERT_TRUE(store->CreateDay(kDay).ok());
  std::vector<std::string> keys;
  for (int i = 0; i < 10; ++i) keys.push_back("u|k" + std::to_string(i) + ".c3p1");
  StoreWrite write;
  for (const std::string& k : keys) write.increments.push_back({kDay, k, 1});
  ASSERT_TRUE(store->Write(write).ok());
  Result<std::unique_ptr<StoreCursor>> cursor = store->NewCursor(kDay, CursorOptions{});
  ASSERT_TRUE(cursor.ok());
  ASSERT_TRUE(store->DropDay(kDay).ok());
  EXPECT_FALSE(store->HasDay(kDay));
  size_t seen = 0;
  for ((*cursor)->Seek(""); (*cursor)->Valid(); (*cursor)->Next()) ++seen;
  EXPECT_EQ(seen, keys.size());
  cursor->reset();
  store.reset();
  store = OpenStore(tmp.path());
  EXPECT_TRUE(store->Days().empty());
}

TEST(ShardStoreTest, SnapshotCursorDoesNotSeeLaterWrites) {
  TempDir tmp;
  auto store = StoreWithOneCounter(tmp.path(), 1);
  CursorOptions options;
  options.at = store->Snapshot();
  options.bulk_scan = true;
  Result<std::unique_ptr<StoreCursor>> cursor = store->NewCursor(kDay, options);
  ASSERT_TRUE(cursor.ok());
  StoreWrite later;
  later.increments.push_back({kDay, "u|a.c3p1", 10});
  later.increments.push_back({kDay, "u|b.c3p1", 1});
  ASSERT_TRUE(store->Write(later).ok());
  (*cursor)->Seek("");
  ASSERT_TRUE((*cursor)->Valid());
  EXPECT_EQ((*cursor)->key(), "u|a.c3p1");
  int64_t v = 0;
  ASSERT_TRUE(DecodeCounter((*cursor)->raw_value(), &v));
  EXPECT_EQ(v, 1);
  (*cursor)->Next();
  EXPECT_FALSE((*cursor)->Valid());
}

TEST(ShardStoreTest, MergesStayExactThroughCompactions) {
  TempDir tmp;
  std::map<std::string, int64_t> oracle;
  std::vector<std::string> keys;
  for (int i = 0; i < 2000; ++i) keys.push_back("c.u|key" + std::to_string(i) + ".US.c3p1");
  {
    auto store = OpenStore(tmp.path());
    ASSERT_TRUE(store->CreateDay(kDay).ok());
    std::mt19937 rng(11);
    for (int w = 0; w < 300; ++w) {
      StoreWrite write;
      for (int j = 0; j < 200; ++j) {
        // Skewed: half the increments on 10 hot keys.
        const std::string& key = (j % 2 == 0) ? keys[rng() % 10] : keys[rng() % keys.size()];
        write.increments.push_back({kDay, key, 1});
        ++oracle[key];
      }
      // 300 ingested files: a write waits while level 0 holds 20, so these
      // all land only as compactions fold the files (and their operands).
      ASSERT_TRUE(store->Write(write).ok());
    }
  }
  auto store = OpenStore(tmp.path());
  auto records = ReadAll(*store, kDay);
  std::map<std::string, std::string> got(records.begin(), records.end());
  ASSERT_EQ(got.size(), oracle.size());
  for (const auto& [key, want] : oracle) EXPECT_EQ(got[key], std::to_string(want)) << key;
}

TEST(ShardStoreTest, CorruptCounterIsAnErrorNotANumber) {
  TempDir tmp;
  auto store = OpenStore(tmp.path());
  ASSERT_TRUE(store->CreateDay(kDay).ok());
  StoreWrite bad;
  bad.puts.push_back({kDay, "u|a.c3p1", "xyz"});  // not an 8-byte counter
  ASSERT_TRUE(store->Write(bad).ok());
  StoreWrite inc;
  inc.increments.push_back({kDay, "u|a.c3p1", 1});
  ASSERT_TRUE(store->Write(inc).ok());
  Result<std::optional<std::string>> got = store->Get(kDay, "u|a.c3p1");
  EXPECT_FALSE(got.ok());
  std::string text;
  EXPECT_FALSE(AppendValueText("u|b.c3p1", "xyz", &text).ok());
}

// A checkpoint file takes each key once: repeated keys of one write are
// folded, and a write that fails leaves nothing.
TEST(ShardStoreTest, OneWriteFoldsRepeatedKeysAndAFailedOneLeavesNothing) {
  TempDir tmp;
  auto store = OpenStore(tmp.path());
  ASSERT_TRUE(store->CreateDay(kDay).ok());
  UniqueSketch ab, bc;
  ab.Add(HashVisitor("a"));
  ab.Add(HashVisitor("b"));
  bc.Add(HashVisitor("b"));
  bc.Add(HashVisitor("c"));
  StoreWrite write;
  write.increments = {{kDay, "u|a.c3p1", 2}, {kDay, "u|b.c3p1", 1}, {kDay, "u|a.c3p1", 5}};
  write.puts = {{kDay, "l|AAAAAAAAAAA=", "first"}, {kDay, "l|AAAAAAAAAAA=", "second"}};
  write.sketches = {{kDay, "u|a.c3p1", &ab}, {kDay, "u|a.c3p1", &bc}};
  write.watermarks = {{"api-0", 4}};
  ASSERT_TRUE(store->Write(write).ok());
  EXPECT_EQ(CounterOf(*store, kDay, "u|a.c3p1"), 7);
  EXPECT_EQ(CounterOf(*store, kDay, "u|b.c3p1"), 1);
  EXPECT_EQ(store->Get(kDay, "l|AAAAAAAAAAA=")->value_or(""), "second");  // the last put wins
  Result<std::optional<std::string>> united = store->Get(kDay, "~u|a.c3p1");
  ASSERT_TRUE(united.ok() && united->has_value());
  Result<UniqueSketch> sketch = UniqueSketch::FromBinary(**united);
  ASSERT_TRUE(sketch.ok());
  EXPECT_EQ(sketch->Estimate(), 3u);  // a, b, c

  // A counter summed past int64 within one write: refused, nothing of it lands.
  StoreWrite overflow;
  overflow.increments = {{kDay, "u|b.c3p1", 10}, {kDay, "u|c.c3p1", std::numeric_limits<int64_t>::max()},
                         {kDay, "u|c.c3p1", 1}};
  overflow.watermarks = {{"api-0", 5}};
  Status st = store->Write(overflow);
  EXPECT_FALSE(st.ok());
  EXPECT_EQ(st.reason(), "COUNTER_OVERFLOW");
  EXPECT_EQ(CounterOf(*store, kDay, "u|b.c3p1"), 1);
  EXPECT_FALSE(store->Get(kDay, "u|c.c3p1")->has_value());
  EXPECT_EQ(*store->LoadWatermarks(), (std::map<std::string, uint64_t>{{"api-0", 4}}));
}

// A crash between making a checkpoint's files and ingesting them leaves them
// in the staging directory; the next open removes them, never ingests them.
TEST(ShardStoreTest, OpenRemovesFilesACrashLeftUningested) {
  TempDir tmp;
  {
    auto store = StoreWithOneCounter(tmp.path(), 5);
    ASSERT_TRUE(WriteFileAtomically(tmp.path() + "/checkpoint-staging/1-day-left.sst", "half a file").ok());
  }
  auto store = OpenStore(tmp.path());
  EXPECT_FALSE(FileExists(tmp.path() + "/checkpoint-staging/1-day-left.sst"));
  EXPECT_EQ(CounterOf(*store, kDay, "u|a.c3p1"), 5);
  StoreWrite more;
  more.increments.push_back({kDay, "u|a.c3p1", 1});
  ASSERT_TRUE(store->Write(more).ok());
  EXPECT_EQ(CounterOf(*store, kDay, "u|a.c3p1"), 6);
}

// A failure inside RocksDB's ingestion itself, with files for two days and
// the watermarks: one of them is gone when RocksDB comes to it. Nothing of
// the write may land, in any family, and the store takes the next write.
TEST(ShardStoreTest, AnIngestionFailingPartwayLeavesEveryFamilyAsItWas) {
  TempDir tmp;
  auto store = StoreWithOneCounter(tmp.path(), 5);
  ASSERT_TRUE(store->CreateDay(kDay + 1).ok());
  StoreWrite write;
  write.increments = {{kDay, "u|a.c3p1", 1}, {kDay + 1, "u|a.c3q0", 2}};
  write.watermarks = {{"api-0", 8}};
  size_t staged = 0;
  write.before_ingest = [&](const std::vector<std::string>& files) {
    staged = files.size();
    ::unlink(files[1].c_str());  // the second day's file
    return Status::Ok();
  };
  EXPECT_FALSE(store->Write(write).ok());
  EXPECT_EQ(staged, 3u);  // two days and the watermarks
  EXPECT_EQ(CounterOf(*store, kDay, "u|a.c3p1"), 5);
  EXPECT_FALSE(store->Get(kDay + 1, "u|a.c3q0")->has_value());
  EXPECT_TRUE(store->LoadWatermarks()->empty());
  write.before_ingest = nullptr;
  ASSERT_TRUE(store->Write(write).ok());  // the same write again, whole
  EXPECT_EQ(CounterOf(*store, kDay, "u|a.c3p1"), 6);
  EXPECT_EQ(CounterOf(*store, kDay + 1, "u|a.c3q0"), 2);
  EXPECT_EQ(*store->LoadWatermarks(), (std::map<std::string, uint64_t>{{"api-0", 8}}));
}

// With compactions off, level 0 only grows: once a family holds
// level0_wait_files there, a write waits level0_wait_ms and then fails with
// COMPACTION_BEHIND, leaving nothing; the files it waited for are still
// readable.
TEST(ShardStoreTest, AWriteWaitsForLevel0AndFailsWhenCompactionIsBehind) {
  TempDir tmp;
  StoreOptions options;
  options.block_cache_mb = 4;
  options.auto_compactions = false;
  options.level0_wait_files = 3;
  options.level0_wait_ms = 50;
  Result<std::unique_ptr<ShardStore>> opened = ShardStore::Open(tmp.path(), options);
  ASSERT_TRUE(opened.ok()) << opened.status().ToString();
  ShardStore& store = **opened;
  ASSERT_TRUE(store.CreateDay(kDay).ok());
  int64_t sum = 0;
  Status refused;
  uint64_t seq = 0;
  // Bounded: each write is one file; the first few may land below level 0.
  for (int w = 0; w < 40 && refused.ok(); ++w) {
    StoreWrite write;
    write.increments.push_back({kDay, "u|a.c3p1", 1});
    write.watermarks = {{"api-0", seq + 1}};
    refused = store.Write(write);
    if (refused.ok()) {
      ++sum;
      ++seq;
    }
  }
  ASSERT_FALSE(refused.ok()) << "level 0 never filled";
  EXPECT_EQ(refused.reason(), "COMPACTION_BEHIND");
  EXPECT_NE(refused.message().find("level 0"), std::string::npos) << refused.message();
  EXPECT_EQ(CounterOf(store, kDay, "u|a.c3p1"), sum);
  EXPECT_EQ(*store.LoadWatermarks(), (std::map<std::string, uint64_t>{{"api-0", seq}}));
}

TEST(ShardStoreTest, DayFamilyNamesRoundTrip) {
  EXPECT_EQ(DayFamilyName(kDay), "day-2024-03-10");
  EXPECT_EQ(DayFromFamilyName("day-2024-03-10"), kDay);
  EXPECT_FALSE(DayFromFamilyName("default").has_value());
  EXPECT_FALSE(DayFromFamilyName("day-2024-13-10").has_value());
}

// A table whose Bloom filter is larger than RocksDB's own choice of cache
// shard (512 KiB at a 4 MiB cache): its filter is read from the file once,
// then kept, not read again by every prefix seek (which cost a busy shard
// 29% of its CPU: shard_store.cc, BlockCacheShardBits).
TEST(ShardStoreTest, ALargeFilterIsReadOnceNotAtEverySeek) {
  TempDir tmp;
  auto store = OpenStore(tmp.path());  // a 4 MiB block cache
  ASSERT_TRUE(store);
  ASSERT_TRUE(store->CreateDay(kDay).ok());
  // One write into an empty day: one table, in the last level (whose
  // filters are cached, not pinned as level 0's are). 300,000 keys and
  // their key parts at 10 bits each: a filter of about 750 KB.
  constexpr int kKeys = 300'000;
  std::vector<std::string> keys;
  keys.reserve(kKeys);
  for (int i = 0; i < kKeys; ++i) keys.push_back(fmt::format("u|k{}.c3p1", i));
  StoreWrite write;
  for (const std::string& key : keys) write.increments.push_back({kDay, key, 1});
  ASSERT_TRUE(store->Write(std::move(write)).ok());

  constexpr int kSeeks = 50;
  rocksdb::SetPerfLevel(rocksdb::PerfLevel::kEnableCount);
  rocksdb::get_perf_context()->Reset();
  int found = 0;
  for (int i = 0; i < kSeeks; ++i) {
    CursorOptions by_part;
    by_part.by_key_prefix = true;
    Result<std::unique_ptr<StoreCursor>> cursor = store->NewCursor(kDay, by_part);
    ASSERT_TRUE(cursor.ok());
    (*cursor)->Seek(fmt::format("u|k{}.", i * 997));
    if ((*cursor)->Valid()) ++found;
  }
  const uint64_t filter_reads = rocksdb::get_perf_context()->filter_block_read_count;
  rocksdb::SetPerfLevel(rocksdb::PerfLevel::kDisable);
  EXPECT_EQ(found, kSeeks);
  EXPECT_LE(filter_reads, 1u) << "the filter was read from its file at " << filter_reads << " of " << kSeeks
                              << " seeks";
}

}  // namespace
}  // namespace clickatron::realtime::shard_store_test
