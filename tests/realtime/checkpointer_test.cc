#include "checkpointer.h"

#include <gtest/gtest.h>

#include <chrono>
#include <condition_variable>
#include <deque>
#include <filesystem>
#include <fstream>
#include <map>
#include <mutex>
#include <set>

#include "clickatron/key_codec.h"
#include "clickatron/ymdh.h"
#include "counter_merge.h"
#include "record_scan.h"
#include "testutil/testutil.h"

namespace clickatron::realtime {
namespace {

using clickatron::testing::TempDir;

const int64_t kDay = DaysFromCivil({2024, 3, 10});
const std::vector<int64_t> kDays = {kDay, kDay + 1};

// The sketch of a set of tokens, each added once: what any union of parts of
// it must equal.
UniqueSketch SketchOf(const std::set<std::string>& tokens) {
  UniqueSketch s;
  for (const std::string& t : tokens) s.Add(HashVisitor(t));
  return s;
}

std::string Key(const std::string& tkey, int64_t day, int hour, const std::string& skey = "") {
  const std::string ymdh = *YmdhFromUnix(day * kSecondsPerDay + hour * kSecondsPerHour);
  return skey.empty() ? "u|" + tkey + "." + ymdh : "c.u|" + tkey + "." + skey + "." + ymdh;
}

// Stands in for the server's loop: the checkpoint thread posts its results
// here and the test thread runs them, as RunInLoop would.
class LoopQueue {
 public:
  void Post(std::function<void()> fn) {
    std::lock_guard lock(mu_);
    queue_.push_back(std::move(fn));
    cv_.notify_all();
  }
  // Runs posted closures until `done` holds; false after `timeout`.
  bool RunUntil(const std::function<bool()>& done, std::chrono::milliseconds timeout = std::chrono::seconds(20)) {
    const auto deadline = std::chrono::steady_clock::now() + timeout;
    while (true) {
      RunPending();
      if (done()) return true;
      std::unique_lock lock(mu_);
      if (!cv_.wait_until(lock, deadline, [&] { return !queue_.empty(); })) return done();
    }
  }
  // Waits (running nothing) until something is posted.
  bool WaitForPost(std::chrono::milliseconds timeout = std::chrono::seconds(20)) {
    std::unique_lock lock(mu_);
    return cv_.wait_for(lock, timeout, [&] { return !queue_.empty(); });
  }
  void RunPending() {
    std::deque<std::function<void()>> ready;
    {
      std::lock_guard lock(mu_);
      ready.swap(queue_);
    }
    for (auto& fn : ready) fn();
  }
  bool empty() { return !WaitForPost(std::chrono::milliseconds(0)); }

 private:
  std::mutex mu_;
  std::condition_variable cv_;
  std::deque<std::function<void()>> queue_;
};

class CheckpointerTest : public ::testing::Test {
 protected:
  void SetUp() override {
    OpenStore();
    ASSERT_TRUE(store_->CreateDay(kDay).ok());
    ASSERT_TRUE(store_->CreateDay(kDay + 1).ok());
  }

  void OpenStore() {
    Result<std::unique_ptr<ShardStore>> store =
        ShardStore::Open(dir_ / "db", StoreOptions{.write_buffer_mb = 4, .block_cache_mb = 4});
    ASSERT_TRUE(store.ok()) << store.status().ToString();
    store_ = std::move(store).value();
    // A store opened again numbers its versions from 0 again: a new cache.
    scan_cache_ = NewScanCache();
  }

  void Make(bool threaded, size_t budget = size_t{256} << 20) {
    CheckpointOptions options;
    options.threaded = threaded;
    options.post = [this](std::function<void()> fn) { loop_.Post(std::move(fn)); };
    options.memory_budget_bytes = budget;
    options.fault_dir = faults_.path();
    cp_ = std::make_unique<Checkpointer>(store_.get(), std::map<std::string, uint64_t>{}, options);
  }

  void SetFault(const std::string& name, const std::string& text = "") { std::ofstream(faults_ / name) << text; }
  void ClearFault(const std::string& name) { std::filesystem::remove(faults_ / name); }

  // Applies a batch of 8 counters (a few groups, both days, old and new
  // keys), a lookup and two unique records (visitors from a small pool, so
  // batches overlap), and adds it to the oracle.
  void ApplyBatch(const std::string& source) {
    std::string body;
    for (int i = 0; i < 8; ++i) {
      const int64_t day = kDay + (i % 2);
      const std::string key = Key(i % 3 ? "jehiah" : "bitly", day, (seq_ + i) % 24, i % 4 ? "" : "US");
      const int64_t delta = 1 + (seq_ * 7 + i) % 11;
      body += key + "," + std::to_string(delta) + "\n";
      counters_[key] += delta;
      days_of_[key] = day;
    }
    for (int i = 0; i < 2; ++i) {
      const std::string key = "~" + Key(i ? "bitly" : "jehiah", kDay + i, seq_ % 3);
      UniqueSketch visitors;
      for (int v = 0; v < 3; ++v) {
        const std::string token = "v" + std::to_string((seq_ + v * 5) % 9);
        visitors.Add(HashVisitor(token));
        visitors_[key].insert(token);
      }
      body += key + "," + visitors.ToText() + "\n";
      days_of_[key] = kDay + i;
    }
    const std::string value = "page " + std::to_string(seq_ % 5);
    body += "l|" + Hash12(value) + "," + value + "\n";
    lookups_["l|" + Hash12(value)] = value;
    Result<ParsedBatch> batch = ParseBatch(body);
    ASSERT_TRUE(batch.ok()) << batch.status().ToString();
    ++seq_;
    ASSERT_TRUE(cp_->Apply(source, seq_, *batch, kDay).ok());
  }

  // Every record as a read must answer it: counters summed, lookups by value.
  std::map<std::string, std::string> Oracle() const {
    std::map<std::string, std::string> out(lookups_.begin(), lookups_.end());
    for (const auto& [key, sum] : counters_) out[key] = std::to_string(sum);
    for (const auto& [key, tokens] : visitors_) out[key] = SketchOf(tokens).ToText();
    return out;
  }

  // Point reads and scans of several prefix shapes through View(), exactly
  // the oracle: nothing missing, nothing counted twice.
  void ExpectReadsEqualOracle(const std::string& when) {
    SCOPED_TRACE(when);
    const ReadView view = cp_->View();
    const std::map<std::string, std::string> oracle = Oracle();
    for (const auto& [key, want] : oracle) {
      Result<std::optional<std::string>> got = ReadRecord(view, kDays, key);
      ASSERT_TRUE(got.ok()) << got.status().ToString();
      EXPECT_EQ(got->value_or("<absent>"), want) << key;
    }
    EXPECT_FALSE(ReadRecord(view, kDays, Key("nobody", kDay, 1))->has_value());
    for (const std::string prefix : {"", "u|", "u|jehiah.", "c.u|jehiah.US.", "c.", "l|", "~", "~u|jehiah."}) {
      EXPECT_EQ(ReadToEnd(ScanPrefix(view, kDays, prefix, 0)), OracleLines(oracle, {prefix}))
          << "prefix \"" << prefix << "\"";
    }
    // The API's multi-prefix scans, through a scan cache that lives across
    // views (as the ring's does): each set twice, the second from the cache
    // (or not looked up at all, on a day whose store is empty).
    for (const std::vector<std::string>& prefixes : std::vector<std::vector<std::string>>{
             {"c.", "l|", "u|", "~"}, {"c.u|jehiah.US.", "u|jehiah.", "~u|jehiah."}}) {
      for (int pass = 0; pass < 2; ++pass) {
        const ScanCache::Figures before = scan_cache_->figures();
        EXPECT_EQ(ReadToEnd(ScanPrefixes(view, kDays, prefixes, scan_cache_)), OracleLines(oracle, prefixes))
            << "prefixes " << prefixes.front() << "…, pass " << pass;
        if (pass == 1) {
          const ScanCache::Figures after = scan_cache_->figures();
          EXPECT_EQ(after.misses, before.misses);
          EXPECT_EQ(after.hits + after.empty_day_skips,
                    before.hits + before.empty_day_skips + prefixes.size() * kDays.size());
        }
      }
    }
  }

  // Every line of a scan, read 256 bytes at a time; "<failed>" when it could
  // not be made or ended on an error.
  static std::string ReadToEnd(Result<std::unique_ptr<LineSource>> scan) {
    if (!scan.ok()) return "<failed> " + scan.status().ToString();
    std::string got;
    while ((*scan)->Fill(&got, 256)) {
    }
    return (*scan)->status().ok() ? got : "<failed> " + (*scan)->status().ToString();
  }

  // The oracle's lines whose key starts with any of `prefixes`, in key order.
  static std::string OracleLines(const std::map<std::string, std::string>& oracle,
                                 const std::vector<std::string>& prefixes) {
    std::string want;
    for (const auto& [key, value] : oracle) {
      for (const std::string& prefix : prefixes) {
        if (key.starts_with(prefix)) {
          want += key + "," + value + "\n";
          break;
        }
      }
    }
    return want;
  }

  // The store alone (what a restart would find) holds exactly the oracle.
  void ExpectStoreEqualsOracle() {
    for (const auto& [key, sum] : counters_) {
      Result<std::optional<std::string>> raw = store_->Get(days_of_[key], key);
      ASSERT_TRUE(raw.ok() && raw->has_value()) << key;
      int64_t v = 0;
      ASSERT_TRUE(DecodeCounter(**raw, &v));
      EXPECT_EQ(v, sum) << key;
    }
    for (const auto& [key, value] : lookups_) EXPECT_EQ(store_->Get(kDay, key)->value_or("<absent>"), value);
    for (const auto& [key, tokens] : visitors_) {
      Result<std::optional<std::string>> raw = store_->Get(days_of_[key], key);
      ASSERT_TRUE(raw.ok() && raw->has_value()) << key;
      EXPECT_EQ(**raw, SketchOf(tokens).ToBinary()) << key;  // every batch's visitors, united once
    }
  }

  // Closes the checkpointer and the store, and opens the store again. A
  // result the thread posted while stopping holds its job's snapshot, and so
  // the database: drop it (alive_ makes it a no-op) before reopening.
  void Reopen() {
    cp_.reset();
    loop_.RunPending();
    store_.reset();
    OpenStore();
  }

  TempDir dir_;
  TempDir faults_;
  LoopQueue loop_;  // outlives cp_: its thread may still post while it stops
  std::unique_ptr<ShardStore> store_;
  std::unique_ptr<Checkpointer> cp_;
  static std::shared_ptr<ScanCache> NewScanCache() {
    return std::make_shared<ScanCache>(ScanCacheOptions{.max_bytes = 1 << 20, .min_records = 0});
  }
  std::shared_ptr<ScanCache> scan_cache_ = NewScanCache();
  uint64_t seq_ = 0;
  std::map<std::string, int64_t> counters_;
  std::map<std::string, int64_t> days_of_;
  std::map<std::string, std::string> lookups_;
  std::map<std::string, std::set<std::string>> visitors_;  // unique key -> every token sent for it
};

TEST_F(CheckpointerTest, ApplyRaisesAppliedNotDurableAndStartPersists) {
  Make(/*threaded=*/false);
  ApplyBatch("api-0");
  ApplyBatch("api-1");
  ApplyBatch("api-0");
  EXPECT_EQ(cp_->Applied("api-0"), 3u);
  EXPECT_EQ(cp_->Durable("api-0"), 0u);
  EXPECT_TRUE(cp_->HoldsDay(kDay));
  EXPECT_FALSE(store_->Get(days_of_.begin()->second, days_of_.begin()->first)->has_value());
  ExpectReadsEqualOracle("from memory only");

  cp_->Start();
  EXPECT_FALSE(cp_->running());
  EXPECT_EQ(cp_->durable(), cp_->applied());
  EXPECT_EQ(cp_->stats().completed, 1u);
  EXPECT_EQ(cp_->stats().records_written, counters_.size() + lookups_.size() + visitors_.size());
  EXPECT_EQ(cp_->memory_keys(), 0u);
  EXPECT_FALSE(cp_->HoldsDay(kDay));
  ExpectStoreEqualsOracle();
  EXPECT_EQ(*store_->LoadWatermarks(), cp_->applied());
  ExpectReadsEqualOracle("from the store only");

  // Same keys again: the store's sums plus memory's deltas, each once.
  ApplyBatch("api-1");
  ExpectReadsEqualOracle("store and memory");
  cp_->Start();
  ExpectStoreEqualsOracle();
  ExpectReadsEqualOracle("after the second checkpoint");
  cp_->Start();  // nothing pending: no checkpoint at all
  EXPECT_EQ(cp_->stats().completed, 2u);
}

TEST_F(CheckpointerTest, WhenPersistedFiresAtOnceWithNothingPendingElseAfterACheckpoint) {
  Make(/*threaded=*/false);
  int fired = 0;
  cp_->WhenPersisted([&](Status st) { fired += st.ok(); });
  EXPECT_EQ(fired, 1);
  EXPECT_EQ(cp_->stats().completed, 0u);  // no checkpoint was needed

  ApplyBatch("api-0");
  std::map<std::string, uint64_t> durable_when_fired;
  cp_->WhenPersisted([&](Status st) {
    EXPECT_TRUE(st.ok()) << st.ToString();
    durable_when_fired = cp_->durable();
    ++fired;
  });
  EXPECT_EQ(fired, 2);  // inline: the checkpoint ran inside the call
  EXPECT_EQ(durable_when_fired, (std::map<std::string, uint64_t>{{"api-0", 1}}));
  ExpectStoreEqualsOracle();
}

TEST_F(CheckpointerTest, FailingCheckpointChangesNothingAndItsRetryPersistsOnce) {
  Make(/*threaded=*/false);
  ApplyBatch("api-0");
  ApplyBatch("api-0");
  SetFault("checkpoint-fail");
  cp_->Start();
  EXPECT_FALSE(cp_->running());
  EXPECT_EQ(cp_->stats().failed, 1u);
  EXPECT_EQ(cp_->stats().completed, 0u);
  EXPECT_NE(cp_->stats().last_error.find("checkpoint-fail"), std::string::npos) << cp_->stats().last_error;
  EXPECT_EQ(cp_->Durable("api-0"), 0u);
  EXPECT_TRUE(cp_->HoldsDay(kDay));
  ExpectReadsEqualOracle("after a failed checkpoint");
  Status waited;
  cp_->WhenPersisted([&](Status st) { waited = st; });  // retries, fails again, says why
  EXPECT_FALSE(waited.ok());
  EXPECT_EQ(cp_->stats().failed, 2u);

  ApplyBatch("api-0");  // into a fresh active table beside the failed frozen one
  cp_->Start();
  EXPECT_EQ(cp_->stats().failed, 3u);
  EXPECT_EQ(cp_->Durable("api-0"), 0u);
  ExpectReadsEqualOracle("frozen and active, both unpersisted");

  ClearFault("checkpoint-fail");
  cp_->Start();  // the retry persists the frozen table (seqs 1 and 2)
  EXPECT_TRUE(cp_->stats().last_error.empty());
  EXPECT_EQ(cp_->stats().completed, 1u);
  EXPECT_EQ(cp_->Durable("api-0"), 2u);
  ExpectReadsEqualOracle("after the retry");
  ASSERT_TRUE(cp_->Drain().ok());
  EXPECT_EQ(cp_->Durable("api-0"), 3u);
  Reopen();
  ExpectStoreEqualsOracle();
  EXPECT_EQ(*store_->LoadWatermarks(), (std::map<std::string, uint64_t>{{"api-0", 3}}));
}

TEST_F(CheckpointerTest, AdmitRefusesAtTheBudgetWhileCheckpointsFail) {
  Make(/*threaded=*/false, /*budget=*/4096);
  SetFault("checkpoint-fail");
  int admitted = 0;
  while (cp_->Admit() && admitted < 200) {
    ApplyBatch("api-0");
    ++admitted;
  }
  ASSERT_LT(admitted, 200) << "never refused; memory " << cp_->memory_bytes();
  EXPECT_GT(admitted, 1);  // something fit first
  EXPECT_FALSE(cp_->Admit());
  EXPECT_GE(cp_->memory_bytes(), size_t{4096});
  EXPECT_GE(cp_->stats().refused_batches, 2u);
  EXPECT_GT(cp_->stats().failed, 0u);
  EXPECT_EQ(cp_->Durable("api-0"), 0u);
  ExpectReadsEqualOracle("at the budget");

  ClearFault("checkpoint-fail");
  const uint64_t frozen_at = cp_->Applied("api-0");
  cp_->Start();  // persists the frozen table: memory falls below the budget
  EXPECT_TRUE(cp_->Admit());
  EXPECT_LT(cp_->memory_bytes(), size_t{4096});
  EXPECT_GT(cp_->Durable("api-0"), 0u);
  EXPECT_LE(cp_->Durable("api-0"), frozen_at);
  ExpectReadsEqualOracle("after recovering");
  cp_->Start();  // the batches applied after the freeze, if any are left
  EXPECT_EQ(cp_->durable(), cp_->applied());
  ExpectStoreEqualsOracle();
}

// A batch undone after an overflow leaves its new keys at 0; a day that
// holds only those has no counter to write. The checkpoint writes the other
// days and completes, instead of failing on an empty file on every retry
// (which would refuse every batch with MEMORY_FULL once the table filled).
TEST_F(CheckpointerTest, ADayOfUndoneCountersLeavesTheCheckpointWhole) {
  Make(/*threaded=*/false);
  const std::string hot = Key("hot", kDay, 1);
  const std::string first_body = hot + "," + std::to_string(INT64_MAX) + "\n";  // the batch views it
  Result<ParsedBatch> first = ParseBatch(first_body);
  ASSERT_TRUE(first.ok()) << first.status().ToString();
  ASSERT_TRUE(cp_->Apply("api-0", 1, *first, kDay).ok());
  counters_[hot] = INT64_MAX;
  days_of_[hot] = kDay;
  // A new key on the next day, then a line that overflows: undone.
  const std::string second_body = Key("fresh", kDay + 1, 2) + ",1\n" + hot + ",1\n";
  Result<ParsedBatch> second = ParseBatch(second_body);
  ASSERT_TRUE(second.ok()) << second.status().ToString();
  EXPECT_EQ(cp_->Apply("api-0", 2, *second, kDay).reason(), "COUNTER_OVERFLOW");

  cp_->Start();
  EXPECT_EQ(cp_->stats().completed, 1u);
  EXPECT_EQ(cp_->stats().failed, 0u) << cp_->stats().last_error;
  EXPECT_EQ(cp_->Durable("api-0"), 1u);
  ExpectStoreEqualsOracle();
  EXPECT_FALSE(store_->Get(kDay + 1, Key("fresh", kDay + 1, 2))->has_value());
}

// One batch can make a table far past the budget (Admit is asked before
// it). Once that table is persisted the next one takes batches again: it is
// not reserved like the huge one (its group index would count against the
// budget while it is empty, with nothing to checkpoint).
TEST_F(CheckpointerTest, AfterABatchFarPastTheBudgetTheNextTableAdmitsAgain) {
  Make(/*threaded=*/false, /*budget=*/4096);
  std::string body;
  for (int i = 0; i < 2000; ++i) body += Key("k" + std::to_string(i), kDay, i % 24) + ",1\n";
  Result<ParsedBatch> batch = ParseBatch(body);
  ASSERT_TRUE(batch.ok()) << batch.status().ToString();
  ASSERT_TRUE(cp_->Admit());
  ASSERT_TRUE(cp_->Apply("api-0", 1, *batch, kDay).ok());  // starts and finishes a checkpoint (unthreaded)
  cp_->Start();
  EXPECT_EQ(cp_->Durable("api-0"), 1u);
  EXPECT_LT(cp_->memory_bytes(), size_t{4096});
  EXPECT_TRUE(cp_->Admit());
  ApplyBatch("api-0");
  EXPECT_TRUE(cp_->Admit());
}

// Threaded: the checkpoint stalls 200 ms after its files are ingested, so
// the test reads while it runs, with the records in the store before the
// loop has heard of it.
TEST_F(CheckpointerTest, ThreadedReadsDuringACheckpointEqualTheOracle) {
  Make(/*threaded=*/true);
  SetFault("checkpoint-delay-ms", "200");
  for (int i = 0; i < 5; ++i) ApplyBatch("api-0");
  cp_->Start();
  ASSERT_TRUE(cp_->running());
  int rounds_while_working = 0;
  while (loop_.empty() && rounds_while_working < 50) {  // the job has not posted its result yet
    ApplyBatch("api-1");
    ExpectReadsEqualOracle("while the checkpoint thread works");
    ++rounds_while_working;
  }
  EXPECT_GE(rounds_while_working, 1);
  EXPECT_EQ(cp_->Durable("api-0"), 0u);
  // Once the result is posted the files are ingested, yet the loop
  // still reads the snapshot before them plus the frozen table.
  ASSERT_TRUE(loop_.WaitForPost());
  ASSERT_TRUE(cp_->running());
  ApplyBatch("api-1");
  ExpectReadsEqualOracle("write landed, result not yet handled");
  ASSERT_TRUE(loop_.RunUntil([&] { return !cp_->running(); }));
  EXPECT_EQ(cp_->Durable("api-0"), 5u);
  EXPECT_EQ(cp_->Durable("api-1"), 0u);  // its batches came after the freeze
  ExpectReadsEqualOracle("after the checkpoint");

  cp_->Start();
  ASSERT_TRUE(loop_.RunUntil([&] { return !cp_->running(); }));
  EXPECT_EQ(cp_->durable(), cp_->applied());
  ExpectStoreEqualsOracle();
  ExpectReadsEqualOracle("everything persisted");
}

TEST_F(CheckpointerTest, ThreadedWhenPersistedFiresOnlyOnceItsBatchesAreDurable) {
  Make(/*threaded=*/true);
  SetFault("checkpoint-delay-ms", "100");
  bool idle_fired = false;
  cp_->WhenPersisted([&](Status) { idle_fired = true; });
  EXPECT_TRUE(idle_fired);

  ApplyBatch("api-0");
  std::optional<uint64_t> first, second;
  cp_->WhenPersisted([&](Status st) { first = st.ok() ? cp_->Durable("api-0") : 0; });
  ASSERT_TRUE(cp_->running());
  ApplyBatch("api-0");  // after the freeze: needs a second checkpoint
  cp_->WhenPersisted([&](Status st) { second = st.ok() ? cp_->Durable("api-0") : 0; });
  EXPECT_FALSE(first.has_value());  // only the loop runs results, and it has not yet
  ASSERT_TRUE(loop_.RunUntil([&] { return first.has_value(); }));
  EXPECT_EQ(*first, 1u);
  EXPECT_FALSE(second.has_value());  // the first checkpoint does not cover seq 2
  ASSERT_TRUE(loop_.RunUntil([&] { return second.has_value(); }));
  EXPECT_EQ(*second, 2u);
  EXPECT_EQ(cp_->stats().completed, 2u);
  ExpectStoreEqualsOracle();
}

TEST_F(CheckpointerTest, ThreadedDrainWhileACheckpointRunsPersistsEverything) {
  Make(/*threaded=*/true);
  SetFault("checkpoint-delay-ms", "200");
  for (int i = 0; i < 3; ++i) ApplyBatch("api-0");
  cp_->Start();
  ASSERT_TRUE(cp_->running());
  for (int i = 0; i < 3; ++i) ApplyBatch("api-1");  // left in the active table
  ASSERT_TRUE(cp_->Drain().ok());
  EXPECT_FALSE(cp_->running());
  EXPECT_EQ(cp_->durable(), cp_->applied());
  EXPECT_EQ(cp_->memory_keys(), 0u);
  loop_.RunPending();  // the thread's own result, if posted: a no-op now
  EXPECT_EQ(cp_->stats().completed, 2u);
  const std::map<std::string, uint64_t> applied = cp_->applied();
  Reopen();
  ExpectStoreEqualsOracle();
  EXPECT_EQ(*store_->LoadWatermarks(), applied);
}

}  // namespace
}  // namespace clickatron::realtime

namespace clickatron::realtime {
namespace {

// An operator's repair (POST /watermark/reset): the lowered watermark takes
// effect only once a checkpoint has made it durable; a failed checkpoint
// leaves the old one in force (and refuses nothing silently).
TEST_F(CheckpointerTest, LoweredWatermarkTakesEffectOnlyOnceDurable) {
  Make(/*threaded=*/false);
  for (int i = 0; i < 5; ++i) ApplyBatch("api-0");
  cp_->Start();
  ASSERT_EQ(cp_->Applied("api-0"), 5u);
  ASSERT_EQ(cp_->Durable("api-0"), 5u);

  Status changed;
  cp_->LowerWatermark("api-0", 2, /*expect=*/4, [&](Status st) { changed = st; });
  EXPECT_EQ(changed.reason(), "WATERMARK_CHANGED");
  EXPECT_EQ(cp_->Applied("api-0"), 5u);
  EXPECT_FALSE(cp_->Lowering("api-0"));

  SetFault("checkpoint-fail");
  Status failed;
  cp_->LowerWatermark("api-0", 2, /*expect=*/5, [&](Status st) { failed = st; });
  EXPECT_FALSE(failed.ok());
  EXPECT_TRUE(cp_->Lowering("api-0"));
  EXPECT_EQ(cp_->Applied("api-0"), 5u);  // not lowered while not durable
  EXPECT_EQ(cp_->Durable("api-0"), 5u);

  ClearFault("checkpoint-fail");
  cp_->Start();  // the retry persists it
  EXPECT_FALSE(cp_->Lowering("api-0"));
  EXPECT_EQ(cp_->Applied("api-0"), 2u);
  EXPECT_EQ(cp_->Durable("api-0"), 2u);
  Reopen();
  EXPECT_EQ(*store_->LoadWatermarks(), (std::map<std::string, uint64_t>{{"api-0", 2}}));
}

}  // namespace
}  // namespace clickatron::realtime
