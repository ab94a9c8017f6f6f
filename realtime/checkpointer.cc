#include "checkpointer.h"

#include <fmt/format.h>
#include <spdlog/spdlog.h>

#include <atomic>
#include <charconv>
#include <condition_variable>
#include <mutex>
#include <thread>

#include "clickatron/file_util.h"
#include "clickatron/ymdh.h"

namespace clickatron::realtime {

// One freeze of the active table and its way to disk. The loop thread owns
// every field but the results, which the checkpoint thread writes before it
// posts Finish (and Drain waits on `finished`).
struct Checkpointer::Job {
  uint64_t generation = 0;
  std::shared_ptr<const MemTable> table;
  std::map<std::string, uint64_t> watermarks;  // applied at the freeze (lowerings included)
  std::map<std::string, uint64_t> lowered;     // the lowerings it persists (LowerWatermark)
  SnapshotPtr before;                          // the store before this job's write
  bool resume_first = false;  // a try failed: resume the store before the next
  // Results of the last try.
  Status status;
  double seconds = 0;
  uint64_t records = 0;
  std::mutex mu;
  std::condition_variable cv;
  bool finished = false;  // GUARDED_BY(mu)
};

namespace {

// The stall asked for by DIR/checkpoint-delay-ms, 0 without the file.
int FaultDelayMs(const std::string& fault_dir) {
  if (fault_dir.empty()) return 0;
  Result<std::string> text = ReadFileToString(fault_dir + "/checkpoint-delay-ms");
  if (!text.ok()) return 0;
  int ms = 0;
  std::from_chars(text->data(), text->data() + text->size(), ms);
  return ms;
}

bool FaultFail(const std::string& fault_dir) {
  return !fault_dir.empty() && FileExists(fault_dir + "/checkpoint-fail");
}

}  // namespace

Checkpointer::Checkpointer(ShardStore* store, std::map<std::string, uint64_t> durable, CheckpointOptions options)
    : store_(store),
      options_(std::move(options)),
      applied_(durable),
      durable_(std::move(durable)),
      active_(std::make_unique<MemTable>()) {
  if (options_.threaded) thread_ = std::make_unique<SerialExecutor>("checkpoint");
}

Checkpointer::~Checkpointer() { thread_.reset(); }  // a running job finishes first

bool Checkpointer::Admit() {
  if (memory_bytes() < options_.memory_budget_bytes) return true;
  StartJob(/*retry_failed=*/false);  // unthreaded, this frees the memory at once
  if (memory_bytes() < options_.memory_budget_bytes) return true;
  ++stats_.refused_batches;
  return false;
}

Status Checkpointer::Apply(const std::string& source, uint64_t seq, const ParsedBatch& batch, int64_t lookup_day) {
  CLICKATRON_RETURN_IF_ERROR(active_->Apply(batch, lookup_day));
  applied_[source] = seq;
  if (active_->bytes() >= options_.memory_budget_bytes / 2) StartJob(/*retry_failed=*/false);
  return Status::Ok();
}

uint64_t Checkpointer::Applied(const std::string& source) const {
  auto it = applied_.find(source);
  return it == applied_.end() ? 0 : it->second;
}

uint64_t Checkpointer::Durable(const std::string& source) const {
  auto it = durable_.find(source);
  return it == durable_.end() ? 0 : it->second;
}

void Checkpointer::LowerWatermark(const std::string& source, uint64_t seq, uint64_t expect,
                                  std::function<void(Status)> done) {
  WhenPersisted([this, alive = std::weak_ptr<int>(alive_), source, seq, expect,
                 done = std::move(done)](Status st) mutable {
    if (!alive.lock()) return;
    if (!st.ok()) {
      done(st);
      return;
    }
    if (job_) {  // a checkpoint started meanwhile holds the old marks: wait for it
      LowerWatermark(source, seq, expect, std::move(done));
      return;
    }
    if (const uint64_t applied = Applied(source); applied != expect) {
      done(Status::FailedPrecondition(
          fmt::format("{}'s applied watermark is {}, not {}: nothing changed", source, applied, expect),
          "WATERMARK_CHANGED"));
      return;
    }
    // Persisted by the next checkpoint, and only then applied (Finish): a
    // crash before leaves the old watermark, as if nothing was asked.
    lowering_[source] = seq;
    waiters_.push_back({next_generation_, std::move(done)});
    Start();
  });
}

bool Checkpointer::Lowering(const std::string& source) const { return lowering_.count(source) > 0; }

void Checkpointer::Start() { StartJob(/*retry_failed=*/true); }

void Checkpointer::StartJob(bool retry_failed) {
  // Once draining, Drain() runs everything on its own thread: a second
  // runner would write the same job twice.
  if (running_ || draining_) return;
  if (job_ && !retry_failed) return;  // a failed job waits for the next tick
  if (!job_) {
    if (active_->empty() && applied_ == durable_ && lowering_.empty()) return;
    Freeze();
  }
  Dispatch();
}

void Checkpointer::Freeze() {
  job_ = std::make_shared<Job>();
  job_->generation = next_generation_++;
  job_->watermarks = applied_;
  for (const auto& [source, seq] : lowering_) job_->watermarks[source] = seq;
  job_->lowered = lowering_;
  // Taken before the job can write anything: reads keep using it (with the
  // frozen table) until the job is done, so they never see a record twice.
  job_->before = store_->Snapshot();
  job_->table = std::shared_ptr<const MemTable>(std::move(active_));
  active_ = std::make_unique<MemTable>();
  // The reservation is counted (the group indexes are in the new table's
  // arena): after a table far past the budget (one huge batch may make
  // one), a new table reserved like it could be past the budget while
  // empty, and refuse every batch with nothing to checkpoint.
  if (job_->table->bytes() <= options_.memory_budget_bytes) active_->ReserveLike(*job_->table);
}

void Checkpointer::Dispatch() {
  running_ = true;
  std::shared_ptr<Job> job = job_;
  {
    std::lock_guard lock(job->mu);
    job->finished = false;
  }
  if (!thread_) {
    RunJob(store_, options_.fault_dir, *job);
    Finish(job);
    return;
  }
  thread_->Post([store = store_, fault_dir = options_.fault_dir, post = options_.post,
                 alive = std::weak_ptr<int>(alive_), this, job] {
    RunJob(store, fault_dir, *job);
    post([alive, this, job] {
      if (alive.lock()) Finish(job);
    });
  });
}

void Checkpointer::RunJob(ShardStore* store, const std::string& fault_dir, Job& job) {
  const auto start = std::chrono::steady_clock::now();
  Status st;
  if (job.resume_first) st = store->Resume();
  if (st.ok() && FaultFail(fault_dir)) {
    st = Status::IoError("injected fault: checkpoint-fail (as a full disk would fail it)");
  }
  if (st.ok()) {
    StoreWrite write;
    write.day_counters = job.table->CheckpointCounters();
    // Sized once: growing by doubling would take up to three times what
    // the budget charges a record (MemTable::bytes()).
    write.puts.reserve(job.table->lookup_records());
    write.sketches.reserve(job.table->sketch_records());
    job.table->ForEachLookup([&](int64_t day, std::string_view key, std::string_view value) {
      write.puts.push_back({day, key, value});
    });
    job.table->ForEachSketch([&](int64_t day, std::string_view counter_key, const UniqueSketch& sketch) {
      write.sketches.push_back({day, counter_key, &sketch});  // the frozen table outlives the write
    });
    write.watermarks = job.watermarks;
    size_t records = write.puts.size() + write.sketches.size();
    for (const auto& [day, counters] : write.day_counters) records += counters.size();
    st = store->Write(std::move(write));
    if (st.ok()) job.records = records;
  }
  // The records are in the store now, and still in the frozen table until
  // Finish runs on the loop: the window a stall widens for the tests.
  if (st.ok()) {
    if (const int ms = FaultDelayMs(fault_dir); ms > 0) std::this_thread::sleep_for(std::chrono::milliseconds(ms));
  }
  job.status = std::move(st);
  job.seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  {
    std::lock_guard lock(job.mu);
    job.finished = true;
  }
  job.cv.notify_all();
}

void Checkpointer::Finish(const std::shared_ptr<Job>& job) {
  if (!running_ || job_ != job) return;  // Drain() finished it already
  running_ = false;
  stats_.last_seconds = job->seconds;
  stats_.total_seconds += job->seconds;
  stats_.max_seconds = std::max(stats_.max_seconds, job->seconds);
  if (!job->status.ok()) {
    ++stats_.failed;
    const auto now = std::chrono::steady_clock::now();
    // At once for a new kind of failure (another code), else once a minute.
    if (stats_.last_error.empty() || job->status.code() != failure_logged_code_ ||
        now - failure_logged_at_ >= std::chrono::minutes(1)) {
      spdlog::error("checkpoint {} failed ({} keys in memory stay there, durable watermarks unchanged; retried on "
                    "the next tick{}): {}",
                    job->generation, job->table->keys(),
                    failures_unlogged_ > 0 ? fmt::format("; {} more failures since the last message",
                                                         failures_unlogged_)
                                           : std::string(),
                    job->status.ToString());
      failure_logged_at_ = now;
      failure_logged_code_ = job->status.code();
      failures_unlogged_ = 0;
    } else {
      ++failures_unlogged_;
    }
    stats_.last_error = job->status.ToString();
    job->resume_first = true;
    FireWaiters(0, job->status);
    return;
  }
  if (!stats_.last_error.empty()) {
    spdlog::info("checkpoint {} succeeded after {} failed tries: persisting again", job->generation, stats_.failed);
  }
  stats_.last_error.clear();
  failures_unlogged_ = 0;
  ++stats_.completed;
  stats_.records_written += job->records;
  stats_.bytes_written += job->table->bytes();
  for (const auto& [source, seq] : job->watermarks) durable_[source] = seq;
  // A lowered watermark takes effect only now that it is durable: until
  // then the source saw the old one, and nothing of it was applied.
  for (const auto& [source, seq] : job->lowered) {
    applied_[source] = seq;
    if (auto it = lowering_.find(source); it != lowering_.end() && it->second == seq) lowering_.erase(it);
  }
  const uint64_t generation = job->generation;
  job_.reset();
  // Freeing a large table (its arena's chunks, and a sketch per unique
  // record) took ~7% of the loop's time when it was a node per key:
  // let the checkpoint thread do it. Reads no longer reach the table.
  if (thread_) thread_->Post([table = std::move(job->table), snapshot = std::move(job->before)]() mutable {
    table.reset();
    snapshot.reset();
  });
  FireWaiters(generation, Status::Ok());
  if (persisted_listener_) persisted_listener_();
  // Waiters for a later generation, or a table already past half the
  // budget: go again at once.
  if (!waiters_.empty() || active_->bytes() >= options_.memory_budget_bytes / 2) StartJob(/*retry_failed=*/false);
}

void Checkpointer::FireWaiters(uint64_t durable_generation, const Status& failure) {
  std::vector<Waiter> ready;
  for (auto it = waiters_.begin(); it != waiters_.end();) {
    if (!failure.ok() || it->generation <= durable_generation) {
      ready.push_back(std::move(*it));
      it = waiters_.erase(it);
    } else {
      ++it;
    }
  }
  for (Waiter& w : ready) w.done(failure);
}

void Checkpointer::WhenPersisted(std::function<void(Status)> done) {
  if (draining_) {
    // Drain() runs no job for a waiter that comes after it started.
    done(Status::Unavailable("the shard is shutting down", "SHUTTING_DOWN"));
    return;
  }
  const std::map<std::string, uint64_t>& frozen_marks = job_ ? job_->watermarks : durable_;
  if (active_->empty() && applied_ == frozen_marks) {
    if (!job_) {
      done(Status::Ok());
      return;
    }
    waiters_.push_back({job_->generation, std::move(done)});
  } else {
    waiters_.push_back({next_generation_, std::move(done)});
  }
  Start();
}

Status Checkpointer::Drain() {
  draining_ = true;  // no more background runs: this thread does the rest
  while (running_) {  // the one on the checkpoint thread
    std::shared_ptr<Job> job = job_;
    std::unique_lock lock(job->mu);
    job->cv.wait(lock, [&] { return job->finished; });
    lock.unlock();
    Finish(job);
  }
  Status last;
  for (int attempt = 0; attempt < 3; ++attempt) {
    if (!job_ && active_->empty() && applied_ == durable_ && lowering_.empty()) return Status::Ok();
    if (!job_) Freeze();
    running_ = true;
    std::shared_ptr<Job> job = job_;
    RunJob(store_, options_.fault_dir, *job);
    Finish(job);
    last = job_ == job ? job->status : Status::Ok();  // failed: try again, resuming the store
  }
  return last;
}

bool Checkpointer::HoldsDay(int64_t day) const {
  return active_->HasDay(day) || (job_ && job_->table->HasDay(day));
}

ReadView Checkpointer::View() const {
  ReadView view;
  view.store = store_;
  view.store_version = store_->version();
  if (job_) {
    view.at = job_->before;
    view.store_version = job_->before->version();
    view.tables.push_back(job_->table.get());
  }
  view.tables.push_back(active_.get());
  return view;
}

size_t Checkpointer::memory_bytes() const { return active_->bytes() + (job_ ? job_->table->bytes() : 0); }
size_t Checkpointer::memory_keys(int64_t day) const {
  return active_->keys(day) + (job_ ? job_->table->keys(day) : 0);
}
size_t Checkpointer::memory_keys() const { return active_->keys() + (job_ ? job_->table->keys() : 0); }

nlohmann::json Checkpointer::StatsJson() const {
  nlohmann::json lag = nlohmann::json::object();
  for (const auto& [source, seq] : applied_) {
    const uint64_t durable = Durable(source);
    lag[source] = {{"applied", seq}, {"durable", durable}, {"lag_seqs", seq > durable ? seq - durable : 0}};
  }
  return {{"memory_bytes", memory_bytes()},
          {"memory_keys", memory_keys()},
          {"memory_budget_bytes", options_.memory_budget_bytes},
          {"active_bytes", active_->bytes()},
          {"frozen_bytes", job_ ? job_->table->bytes() : 0},
          {"checkpoint_running", running_},
          {"checkpoints_completed", stats_.completed},
          {"checkpoints_failed", stats_.failed},
          {"checkpoint_records_written", stats_.records_written},
          {"checkpoint_bytes_written", stats_.bytes_written},
          {"checkpoint_last_seconds", stats_.last_seconds},
          {"checkpoint_max_seconds", stats_.max_seconds},
          {"checkpoint_avg_seconds", stats_.completed + stats_.failed == 0
                                         ? 0.0
                                         : stats_.total_seconds / static_cast<double>(stats_.completed + stats_.failed)},
          {"refused_batches", stats_.refused_batches},
          {"last_error", stats_.last_error},
          {"watermarks", std::move(lag)}};
}

}  // namespace clickatron::realtime
