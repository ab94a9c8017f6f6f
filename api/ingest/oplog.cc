#include "ingest/oplog.h"

#include <fcntl.h>
#include <pthread.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <ctime>
#include <filesystem>

#include <fmt/format.h>
#include <spdlog/spdlog.h>

#include "clickatron/file_util.h"
#include "clickatron/gzip_file.h"
#include "clickatron/oplog_record.h"

namespace clickatron::api {
namespace {

using SteadyClock = std::chrono::steady_clock;
constexpr size_t kFsyncWindow = 1024;

int64_t FileMtime(const std::string& path, int64_t if_unknown) {
  struct stat st;
  if (::stat(path.c_str(), &st) != 0) return if_unknown;
  return static_cast<int64_t>(st.st_mtime);
}

size_t CountLines(std::string_view text) { return static_cast<size_t>(std::count(text.begin(), text.end(), '\n')); }

// Level 1: segments are compressed on a shared machine while it serves;
// counter lines still shrink several times.
constexpr int kSegmentGzipLevel = 1;

}  // namespace

Result<SyncPolicy> ParseSyncPolicy(std::string_view text) {
  if (text == "always") return SyncPolicy::kAlways;
  if (text == "interval") return SyncPolicy::kInterval;
  if (text == "none") return SyncPolicy::kNone;
  return Status::InvalidArgument(fmt::format("oplog_sync \"{}\": want always, interval or none", text));
}

Oplog::Oplog(OplogOptions options, Post post)
    : options_(std::move(options)),
      post_(std::move(post)),
      recovered_last_seq_(options_.shard_count, 0),
      durable_seq_(new std::atomic<uint64_t>[options_.shard_count]),
      written_seq_(options_.shard_count, 0),
      acked_(options_.shard_count, 0),
      acked_known_(options_.shard_count, false) {
  for (uint32_t s = 0; s < options_.shard_count; ++s) durable_seq_[s].store(0);
}

Result<std::unique_ptr<Oplog>> Oplog::Open(OplogOptions options, Post post) {
  std::unique_ptr<Oplog> log(new Oplog(std::move(options), std::move(post)));
  CLICKATRON_RETURN_IF_ERROR(MakeDirs(log->options_.dir));
  CLICKATRON_RETURN_IF_ERROR(log->Scan());
  if (log->clean_stop_) {
    // Read and checked: from the next append on, a crash may tear a segment again.
    if (::unlink(log->CleanStopPath().c_str()) != 0) return ErrnoStatus("unlink", log->CleanStopPath());
    CLICKATRON_RETURN_IF_ERROR(FsyncDir(log->options_.dir));
  }
  log->written_seq_ = log->recovered_last_seq_;
  for (uint32_t s = 0; s < log->options_.shard_count; ++s) log->durable_seq_[s].store(log->recovered_last_seq_[s]);
  uint64_t next_id = log->segments_.empty() ? 1 : log->segments_.rbegin()->first + 1;
  CLICKATRON_RETURN_IF_ERROR(log->StartSegment(next_id));
  log->last_sync_ = SteadyClock::now();
  log->background_ = std::make_unique<SerialExecutor>("oplog-bg");
  // Idle priority for the gzip alone: a closed segment is already durable as
  // it is, and gzip only saves disk over the retention period, so it takes
  // CPU time ingest does not want (libz was 30.7% of the node's perf samples
  // at ~700k increments/s on 2 cores) and catches up when the load drops. It holds
  // no lock: an idle thread preempted under a lock would stall the writer.
  log->compressor_ = std::make_unique<SerialExecutor>("oplog-gzip", SerialExecutor::Priority::kIdle);
  for (const auto& [id, seg] : log->segments_) {
    if (seg.closed && !seg.compressed) {
      Oplog* self = log.get();
      uint64_t seg_id = id;
      log->background_->Post([self, seg_id] { self->Compress(seg_id); });
    }
  }
  log->writer_ = std::thread([self = log.get()] { self->WriterLoop(); });
  return log;
}

Oplog::~Oplog() { Stop(); }

std::string Oplog::SegmentPath(uint64_t id, bool compressed) const {
  return options_.dir + "/" + OplogSegmentName(id, compressed);
}

Status Oplog::Scan() {
  Result<std::optional<OplogCleanStop>> note = ReadOplogCleanStop(options_.dir);
  if (!note.ok()) return note.status();
  clean_stop_ = *note;
  std::error_code ec;
  std::map<uint64_t, std::pair<bool, bool>> found;  // id -> (plain, gz)
  for (const auto& entry : std::filesystem::directory_iterator(options_.dir, ec)) {
    const std::string name = entry.path().filename().string();
    if (name.ends_with(".tmp") || name.find(".tmp.") != std::string::npos) {
      // An interrupted compression (the plain segment is still there), or
      // a clean-stop note whose writer was killed before its rename (the
      // directory is this process's alone: no writer is alive).
      std::filesystem::remove(entry.path(), ec);
      continue;
    }
    uint64_t id = 0;
    bool gz = false;
    if (!ParseOplogSegmentName(name, &id, &gz)) continue;
    (gz ? found[id].second : found[id].first) = true;
  }
  if (ec) return Status::IoError(fmt::format("list {}: {}", options_.dir, ec.message()));
  for (auto it = found.begin(); it != found.end(); ++it) {
    const auto& [id, kinds] = *it;
    Segment seg;
    seg.id = id;
    seg.closed = true;
    seg.compressed = kinds.second;
    if (kinds.first && kinds.second) {
      // Crash between the gzip's rename and the unlink: the .gz is whole
      // (it was fsynced before the rename).
      ::unlink(SegmentPath(id, false).c_str());
    }
    seg.min_seq.assign(options_.shard_count, 0);
    seg.max_seq.assign(options_.shard_count, 0);
    if (Status scanned = ScanSegment(&seg); !scanned.ok()) {
      const auto next = std::next(it);
      if (next == found.end()) return scanned;  // the newest: its batches may still be needed
      CLICKATRON_RETURN_IF_ERROR(
          SetAsideIfAcknowledged(id, seg.compressed, next->first, next->second.second, scanned));
      continue;
    }
    segments_[id] = std::move(seg);
  }
  return Status::Ok();
}

Status Oplog::SetAsideIfAcknowledged(uint64_t id, bool compressed, uint64_t next, bool next_compressed,
                                     const Status& damage) {
  const std::string path = SegmentPath(id, compressed);
  // Every seq segment `id` holds is at or below the last seqs the next
  // segment's opening checkpoint records (segments close between commits).
  std::vector<std::pair<int, uint64_t>> upto;
  if (auto reader = FramedLogReader::Open(SegmentPath(next, next_compressed)); reader.ok()) {
    if (auto first = (*reader)->Next(); first.ok() && first->has_value()) {
      if (auto payload = ParseOplogPayload(**first);
          payload.ok() && payload->header.kind == OplogHeader::Kind::kCheckpoint) {
        upto = payload->header.last_seq;
      }
    }
  }
  std::string needed;
  if (upto.empty()) needed = "the next segment does not say which seqs it holds";
  for (const auto& [shard, seq] : upto) {
    const uint64_t acked = static_cast<size_t>(shard) < options_.acknowledged_seq.size()
                               ? options_.acknowledged_seq[static_cast<size_t>(shard)]
                               : 0;
    if (seq > acked && needed.empty()) {
      needed = fmt::format("it may hold shard {}'s batches up to seq {}, and the shard confirmed {} durable", shard,
                           seq, acked);
    }
  }
  if (!needed.empty()) {
    return damage.WithContext(fmt::format("{} is needed ({}); move it aside only if you accept losing what it holds",
                                          path, needed));
  }
  const std::string aside = path + ".damaged";
  if (::rename(path.c_str(), aside.c_str()) != 0) return ErrnoStatus("rename", path);
  ++damaged_segments_set_aside_;
  spdlog::error("oplog: {} is damaged ({}), but every shard had confirmed its batches durable: set aside as {}; "
                "the rebuild and `clickatron oplog` no longer have its batches",
                path, damage.message(), aside);
  return Status::Ok();
}

Status Oplog::ScanSegment(Segment* seg) {
  const std::string path = SegmentPath(seg->id, seg->compressed);
  auto reader = FramedLogReader::Open(path);
  if (!reader.ok()) return reader.status();
  uint64_t records = 0;
  // Segments that end every commit in a commit frame (their checkpoint says
  // commits=1): batches count once their commit frame is read.
  bool commits = false;
  uint64_t committed_bytes = 0;
  std::vector<std::pair<int, uint64_t>> uncommitted;  // (shard, seq) since the last commit frame
  auto take = [&](int shard, uint64_t seq) {
    if (seg->min_seq[shard] == 0) seg->min_seq[shard] = seq;
    seg->max_seq[shard] = seq;
    recovered_last_seq_[shard] = std::max(recovered_last_seq_[shard], seq);
  };
  while (true) {
    auto next = (*reader)->Next();
    if (!next.ok()) {
      return next.status().WithContext(
          "the oplog is damaged; refusing to start rather than skip acknowledged increments (inspect it with "
          "`clickatron oplog verify`)");
    }
    if (!next->has_value()) break;
    auto payload = ParseOplogPayload(**next);
    if (!payload.ok()) return payload.status().WithContext(fmt::format("{} record {}", path, records + 1));
    ++records;
    const OplogHeader& h = payload->header;
    if (h.source != options_.source) {
      return Status::Corruption(fmt::format(
          "{}: record {} was written by \"{}\", not \"{}\"; an oplog belongs to one API member", path, records,
          h.source, options_.source));
    }
    if (h.kind == OplogHeader::Kind::kCheckpoint) {
      for (const auto& [shard, seq] : h.last_seq) {
        if (shard < static_cast<int>(options_.shard_count)) {
          recovered_last_seq_[shard] = std::max(recovered_last_seq_[shard], seq);
        }
      }
      if (records == 1) commits = h.commits;
      committed_bytes = (*reader)->good_bytes();
      continue;
    }
    if (h.kind == OplogHeader::Kind::kCommit) {
      auto keys = ParseCommittedKeys(payload->lines);
      if (!keys.ok()) return keys.status().WithContext(fmt::format("{} record {}", path, records));
      for (CommittedKey& k : *keys) recovered_keys_.emplace_back(std::move(k), h.unix);
      for (const auto& [shard, seq] : uncommitted) take(shard, seq);
      uncommitted.clear();
      committed_bytes = (*reader)->good_bytes();
      continue;
    }
    if (h.shard >= static_cast<int>(options_.shard_count)) {
      return Status::FailedPrecondition(fmt::format(
          "{}: record {} is for shard {}, but the cluster has {} realtime shards; replay it with the old "
          "shard count first",
          path, records, h.shard, options_.shard_count));
    }
    if (h.seq <= seg->max_seq[h.shard]) {
      return Status::Corruption(fmt::format("{}: record {}: shard {} seq {} after seq {}", path, records, h.shard,
                                            h.seq, seg->max_seq[h.shard]));
    }
    if (commits) {
      uncommitted.emplace_back(h.shard, h.seq);
    } else {
      take(h.shard, h.seq);
    }
  }
  const bool stopped_whole = clean_stop_ && clean_stop_->segment == seg->id && !seg->compressed;
  if (stopped_whole && (!uncommitted.empty() || (*reader)->truncated_tail() ||
                        (*reader)->good_bytes() != clean_stop_->bytes)) {
    return Status::Corruption(fmt::format(
        "{} ended whole at {} bytes when the node last stopped ({}), but now {} at byte {}: it was damaged since, "
        "and what it holds was acknowledged; refusing to cut it (inspect it with `clickatron oplog verify`; "
        "restore the file, or remove {} to cut it as a crash's torn write)",
        path, clean_stop_->bytes, CleanStopPath(),
        !uncommitted.empty() ? fmt::format("{} batches follow its last commit frame", uncommitted.size())
                             : std::string("its frames stop checking"),
        (*reader)->good_bytes(), CleanStopPath()));
  }
  if (!uncommitted.empty()) {
    // A crash between the appends of one commit: nobody was answered for
    // these batches and none was sent (a batch goes out once its commit is
    // durable), so they go, or a client's retry would count them twice.
    if (seg->compressed) {
      return Status::Corruption(fmt::format("{}: {} batches after the last commit frame of a closed segment", path,
                                            uncommitted.size()));
    }
    spdlog::warn("{}: {} batches after the last commit frame (a crash inside a commit; never acknowledged): cut",
                 path, uncommitted.size());
    uncommitted_batches_cut_ += uncommitted.size();
    auto cut = FramedLogWriter::Open(path);
    if (!cut.ok()) return cut.status();
    CLICKATRON_RETURN_IF_ERROR((*cut)->TruncateTo(committed_bytes));
    CLICKATRON_RETURN_IF_ERROR((*cut)->Sync());
    CLICKATRON_RETURN_IF_ERROR((*cut)->Close());
    seg->bytes = committed_bytes;
    seg->closed_unix = FileMtime(path, options_.clock->NowUnixSeconds());
    return Status::Ok();
  }
  if ((*reader)->truncated_tail()) {
    // The writer cuts the torn frame (a crash during an append: that batch
    // was never acknowledged to anyone).
    auto cut = FramedLogWriter::Open(path);
    if (!cut.ok()) return cut.status();
    CLICKATRON_RETURN_IF_ERROR((*cut)->Close());
  }
  seg->bytes = (*reader)->good_bytes();
  // When it was closed, as near as a restart can tell: its mtime, a reading
  // of the system clock whatever options_.clock is.
  seg->closed_unix = FileMtime(path, options_.clock->NowUnixSeconds());
  return Status::Ok();
}

std::vector<std::pair<int, uint64_t>> Oplog::LastSeqs() const {
  std::vector<std::pair<int, uint64_t>> out;
  for (uint32_t s = 0; s < options_.shard_count; ++s) out.emplace_back(static_cast<int>(s), written_seq_[s]);
  return out;
}

Status Oplog::StartSegment(uint64_t id) {
  auto writer = FramedLogWriter::Open(SegmentPath(id, false));
  if (!writer.ok()) return writer.status();
  const std::string checkpoint = FormatCheckpointHeader(options_.source, LastSeqs(), /*commits=*/true);
  CLICKATRON_RETURN_IF_ERROR((*writer)->Append(checkpoint));
  // Always synced, whatever the policy: it is the seq floor once older
  // segments are gone.
  CLICKATRON_RETURN_IF_ERROR((*writer)->Sync());
  Segment seg;
  seg.id = id;
  seg.min_seq.assign(options_.shard_count, 0);
  seg.max_seq.assign(options_.shard_count, 0);
  seg.bytes = (*writer)->size();
  {
    std::lock_guard lock(mu_);
    segments_[id] = std::move(seg);
  }
  current_ = std::move(writer).value();
  current_id_ = id;
  return Status::Ok();
}

Status Oplog::RollIfFull() {
  if (current_->size() >= options_.segment_bytes) {
    // Close this segment: synced whatever the policy (it is about to be
    // compressed and its data must not depend on the page cache), then gzip
    // it in the background.
    CLICKATRON_RETURN_IF_ERROR(SyncTimed());
    CLICKATRON_RETURN_IF_ERROR(current_->Close());
    const uint64_t closed_id = current_id_;
    {
      std::lock_guard lock(mu_);
      Segment& seg = segments_[closed_id];
      seg.closed = true;
      seg.closed_unix = options_.clock->NowUnixSeconds();
    }
    CLICKATRON_RETURN_IF_ERROR(StartSegment(closed_id + 1));
    background_->Post([this, closed_id] { Compress(closed_id); });
  }
  return Status::Ok();
}

uint64_t Oplog::OldestSeq(uint32_t shard) const {
  std::lock_guard lock(mu_);
  for (const auto& [id, seg] : segments_) {
    if (shard < seg.min_seq.size() && seg.min_seq[shard] != 0) return seg.min_seq[shard];
  }
  return 0;
}

Status Oplog::OplogFailed(const Status& cause) {
  return Status::Unavailable("the oplog failed (" + cause.message() +
                                 "); what it holds is unknown, so these increments may be applied after a restart: "
                                 "fix the disk and restart the node",
                             "OPLOG_FAILED");
}

void Oplog::LogAppendFailure(const Status& st) {
  // A full disk fails every commit, hundreds a second: one line at first,
  // then one every 10 s with the count (commit_errors in the API's /stats
  // counts each).
  const auto now = SteadyClock::now();
  ++append_failures_unlogged_;
  if (now - last_append_failure_log_ < std::chrono::seconds(10)) return;
  if (append_failures_unlogged_ == 1) {
    spdlog::error("oplog append failed: {}", st.ToString());
  } else {
    spdlog::error("oplog append failed ({} times since the last report): {}", append_failures_unlogged_,
                  st.ToString());
  }
  append_failures_unlogged_ = 0;
  last_append_failure_log_ = now;
}

Status Oplog::AppendCommit(const std::vector<BatchPtr>& batches, const std::vector<CommittedKey>& keys) {
  // A segment is closed only between commits, so that a commit that fails
  // part-way can be cut out of one file.
  if (Status rolled = RollIfFull(); !rolled.ok()) {
    LogAppendFailure(rolled);
    return failed_.load() ? OplogFailed(rolled) : rolled;
  }
  const uint64_t start_size = current_->size();
  const std::vector<uint64_t> start_written = written_seq_;
  std::vector<uint64_t> start_min, start_max;
  {
    std::lock_guard lock(mu_);
    const Segment& seg = segments_[current_id_];
    start_min = seg.min_seq;
    start_max = seg.max_seq;
  }
  // The batches, then the commit frame that makes them one commit: a crash
  // between the appends leaves batches without it, which Open cuts.
  for (size_t i = 0; i <= batches.size(); ++i) {
    Status st = i < batches.size() ? AppendBatch(*batches[i]) : AppendCommitFrame(keys);
    if (st.ok()) continue;
    LogAppendFailure(st);
    // The clients get one answer for the whole commit: undo the batches
    // already written, so that an error means nothing was taken and a retry
    // counts once (sent, or replayed after a restart, they would count).
    // Also when nothing of it was written: the cut reports a writer that
    // could not cut its own partial frame.
    if (Status cut = current_->TruncateTo(start_size); !cut.ok()) {
      failed_.store(true);
      spdlog::critical("oplog: a failed commit could not be cut out, refusing further increments: {}",
                       cut.ToString());
      return OplogFailed(st);
    }
    // The answer says "nothing taken", whatever the sync policy: the cut
    // must be on disk before it goes out, or a crash could bring the batches
    // back and a resent request would count twice.
    if (options_.sync != SyncPolicy::kNone) {
      dirty_ = true;
      if (Status synced = SyncTimed(); !synced.ok()) return OplogFailed(synced);
    }
    written_seq_ = start_written;
    std::lock_guard lock(mu_);
    Segment& seg = segments_[current_id_];
    seg.min_seq = std::move(start_min);
    seg.max_seq = std::move(start_max);
    seg.bytes = start_size;
    return st;
  }
  return Status::Ok();
}

Status Oplog::AppendCommitFrame(const std::vector<CommittedKey>& keys) {
  // The system clock, as a segment's mtime is read at restart: the window
  // of a key is wall time.
  const std::string payload = FormatCommitFrame(options_.source, static_cast<int64_t>(std::time(nullptr)), keys);
  CLICKATRON_RETURN_IF_ERROR(current_->Append(payload));
  dirty_ = true;
  bytes_written_.fetch_add(payload.size() + kFrameHeaderBytes, std::memory_order_relaxed);
  std::lock_guard lock(mu_);
  segments_[current_id_].bytes = current_->size();
  return Status::Ok();
}

Status Oplog::AppendBatch(const OplogBatch& batch) {
  std::string payload = FormatBatchHeader(options_.source, static_cast<int>(batch.shard), batch.seq);
  payload.append(batch.lines);
  CLICKATRON_RETURN_IF_ERROR(current_->Append(payload));
  dirty_ = true;
  written_seq_[batch.shard] = batch.seq;
  bytes_written_.fetch_add(payload.size() + kFrameHeaderBytes, std::memory_order_relaxed);
  records_written_.fetch_add(1, std::memory_order_relaxed);
  std::lock_guard lock(mu_);
  Segment& seg = segments_[current_id_];
  if (seg.min_seq[batch.shard] == 0) seg.min_seq[batch.shard] = batch.seq;
  seg.max_seq[batch.shard] = batch.seq;
  seg.bytes = current_->size();
  return Status::Ok();
}

Status Oplog::SyncTimed() {
  if (!dirty_) return Status::Ok();
  auto start = SteadyClock::now();
  Status st = current_->Sync();
  auto us = std::chrono::duration_cast<std::chrono::microseconds>(SteadyClock::now() - start).count();
  last_sync_ = SteadyClock::now();
  if (!st.ok()) {
    // After a failed fsync the kernel may have dropped the dirty pages: what
    // is on disk is unknown. Stop taking writes (fsyncgate) rather than guess.
    failed_.store(true);
    spdlog::critical("oplog fsync failed, refusing further increments: {}", st.ToString());
    return st;
  }
  dirty_ = false;
  std::lock_guard lock(stats_mu_);
  ++fsyncs_;
  fsync_total_us_ += static_cast<uint64_t>(us);
  if (fsync_window_us_.size() < kFsyncWindow) {
    fsync_window_us_.push_back(static_cast<uint32_t>(us));
  } else {
    fsync_window_us_[fsyncs_ % kFsyncWindow] = static_cast<uint32_t>(us);
  }
  return Status::Ok();
}

void Oplog::Commit(std::vector<BatchPtr> batches, std::vector<CommittedKey> keys, std::function<void(Status)> done) {
  {
    std::lock_guard lock(mu_);
    if (!stopping_) {
      queue_.push_back(PendingCommit{std::move(batches), std::move(keys), std::move(done)});
      cv_.notify_one();
      return;
    }
  }
  post_([done = std::move(done)] { done(Status::Unavailable("the oplog is closing", "SHUTTING_DOWN")); });
}

void Oplog::SetDurableListener(std::function<void()> fn) {
  std::lock_guard lock(mu_);
  durable_listener_ = std::move(fn);
}

void Oplog::WriterLoop() {
  pthread_setname_np(pthread_self(), "oplog-writer");
  const auto interval = std::chrono::milliseconds(options_.sync_interval_ms);
  while (true) {
    std::vector<PendingCommit> work;
    bool stop = false;
    {
      std::unique_lock lock(mu_);
      auto ready = [&] { return stopping_ || !queue_.empty(); };
      if (options_.sync == SyncPolicy::kInterval && dirty_) {
        cv_.wait_until(lock, last_sync_ + interval, ready);
      } else {
        cv_.wait(lock, ready);
      }
      work.swap(queue_);
      stop = stopping_;
    }
    HoldWhileFaultStall();
    // Append everything queued, then one fsync for all of it (group commit).
    std::vector<Status> results(work.size());
    for (size_t i = 0; i < work.size(); ++i) {
      if (failed_.load()) {
        results[i] = Status::Unavailable(
            "the oplog failed earlier and takes no increments until the node is restarted: nothing of this request "
            "was taken",
            "OPLOG_REFUSED");
        continue;
      }
      results[i] = AppendCommit(work[i].batches, work[i].keys);
      commits_.fetch_add(1, std::memory_order_relaxed);
    }
    const bool want_sync = options_.sync == SyncPolicy::kAlways ||
                           (options_.sync == SyncPolicy::kInterval && SteadyClock::now() - last_sync_ >= interval) ||
                           (stop && options_.sync != SyncPolicy::kNone);
    if (want_sync && dirty_ && !failed_.load()) (void)SyncTimed();  // a failure sets failed_
    // Synced is what no write is waiting for: dirty_ is cleared by an fsync
    // that succeeded and set by every append. That includes the fsync of a
    // failed commit's cut (AppendCommit), which also covers the commits of
    // this group written before it: answered taken, they are sendable now,
    // not after a later commit succeeds (on a full disk: until space is
    // freed). After a failed fsync nothing is.
    const bool synced = options_.sync != SyncPolicy::kNone && !dirty_ && !failed_.load();
    if (failed_.load()) {
      // An fsync failed (here or when a segment was closed): what is on disk
      // is unknown, and a later fsync that succeeds proves nothing about the
      // pages the failed one dropped. Nothing of this group is durable, and
      // its clients must not be told "nothing taken" (a restart may replay
      // it): OPLOG_FAILED, like every commit after it.
      for (Status& r : results) {
        if (r.reason() != "OPLOG_FAILED" && r.reason() != "OPLOG_REFUSED") {
          r = OplogFailed(r.ok() ? Status::IoError("an fsync failed") : r);
        }
      }
    }
    // What may be sent: synced data, or (policy none) whatever was written.
    if ((synced || options_.sync == SyncPolicy::kNone) && !failed_.load()) {
      for (uint32_t s = 0; s < options_.shard_count; ++s) {
        durable_seq_[s].store(written_seq_[s], std::memory_order_release);
      }
    }
    for (size_t i = 0; i < work.size(); ++i) {
      post_([done = std::move(work[i].done), st = std::move(results[i])] { done(st); });
    }
    if (synced) {
      std::function<void()> listener;
      {
        std::lock_guard lock(mu_);
        listener = durable_listener_;
      }
      if (listener) post_(listener);
    }
    if (stop) {
      std::lock_guard lock(mu_);
      if (queue_.empty()) break;
    }
  }
  if (current_) {
    // Not after a failure: a commit that could not cut itself back may have
    // left batches (or half a frame) the note would then call acknowledged.
    const bool synced = !failed_.load() && options_.sync != SyncPolicy::kNone && SyncTimed().ok();
    const uint64_t bytes = current_->size();
    Status st = current_->Close();
    if (!st.ok()) spdlog::error("closing the oplog: {}", st.ToString());
    if (synced && st.ok()) WriteCleanStop(bytes);
  }
}

void Oplog::WriteCleanStop(uint64_t bytes) {
  if (Status st = WriteFileAtomically(CleanStopPath(), FormatOplogCleanStop({current_id_, bytes})); !st.ok()) {
    // Without it the next start takes a bad last frame for a crash's, as before.
    spdlog::warn("oplog: could not note the clean stop: {}", st.ToString());
  }
}

void Oplog::HoldWhileFaultStall() {
  if (options_.fault_dir.empty()) return;
  const std::string stall = options_.fault_dir + "/oplog-stall";
  const auto until = SteadyClock::now() + std::chrono::minutes(1);
  while (FileExists(stall) && SteadyClock::now() < until) {
    {
      std::lock_guard lock(mu_);
      if (stopping_) return;
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(5));  // a test hook: polls a file
  }
}

void Oplog::Stop() {
  {
    std::lock_guard lock(mu_);
    if (stopping_ && !writer_.joinable()) return;
    stopping_ = true;
  }
  cv_.notify_all();
  if (writer_.joinable()) writer_.join();
  compressor_.reset();  // first: its jobs end by posting to background_
  background_.reset();
}

void Oplog::Compress(uint64_t id) {
  {
    std::lock_guard lock(mu_);
    auto it = segments_.find(id);
    if (stopping_ || it == segments_.end() || it->second.compressed || !it->second.closed) return;
  }
  const std::string plain = SegmentPath(id, false);
  const std::string gz = SegmentPath(id, true);
  compressor_->Post([this, id, plain, gz] {
    {
      // Queued jobs still run when the executor stops: a backlog must not
      // hold up a shutdown (the next Open() compresses what is left), and a
      // segment collected meanwhile needs no copy.
      std::lock_guard lock(mu_);
      if (stopping_ || !segments_.count(id)) return;
    }
    Status st = CompressFileAtomically(plain, gz, kSegmentGzipLevel);
    background_->Post([this, id, plain, st] { FinishCompress(id, plain, st); });
  });
}

void Oplog::FinishCompress(uint64_t id, const std::string& plain, const Status& st) {
  if (!st.ok()) {
    spdlog::error("oplog: compressing {} failed (kept uncompressed): {}", plain, st.ToString());
    return;
  }
  const std::string gz = SegmentPath(id, true);
  {
    // Readers look the path up under the lock; one that opened the plain
    // file already keeps reading it after the unlink.
    std::lock_guard lock(mu_);
    auto it = segments_.find(id);
    if (it == segments_.end()) {
      // Collected while the gzip ran: the copy is an orphan.
      if (::unlink(gz.c_str()) != 0) spdlog::warn("oplog: unlink {}: {}", gz, std::strerror(errno));
      return;
    }
    it->second.compressed = true;
  }
  if (::unlink(plain.c_str()) != 0) spdlog::warn("oplog: unlink {}: {}", plain, std::strerror(errno));
  (void)FsyncDir(options_.dir);
}

Result<Oplog::ReadResult> Oplog::ReadBatches(uint32_t shard, uint64_t after, uint64_t upto,
                                             size_t max_lines) const {
  struct Candidate {
    uint64_t id;
    uint64_t min_seq, max_seq;
  };
  std::vector<Candidate> candidates;
  {
    std::lock_guard lock(mu_);
    for (const auto& [id, seg] : segments_) {
      if (seg.max_seq[shard] == 0 || seg.max_seq[shard] <= after || seg.min_seq[shard] > upto) continue;
      candidates.push_back({id, seg.min_seq[shard], seg.max_seq[shard]});
    }
  }
  ReadResult out;
  out.scanned_to = after;
  size_t lines = 0;
  for (const Candidate& c : candidates) {
    std::unique_ptr<FramedLogReader> reader;
    for (int attempt = 0; attempt < 2 && !reader; ++attempt) {
      bool compressed;
      {
        std::lock_guard lock(mu_);
        auto it = segments_.find(c.id);
        if (it == segments_.end()) return Status::NotFound(fmt::format("oplog segment {} is gone", c.id));
        compressed = it->second.compressed;
      }
      auto r = FramedLogReader::Open(SegmentPath(c.id, compressed));
      if (r.ok()) {
        reader = std::move(r).value();
      } else if (r.status().code() != StatusCode::kNotFound || attempt == 1) {
        return r.status();
      }  // else: compressed meanwhile; look the name up again
    }
    while (true) {
      auto next = reader->Next();
      if (!next.ok()) return next.status();
      // The current segment may end in a frame being written right now: it
      // is beyond `upto` (only durable seqs are asked for), so stopping is right.
      if (!next->has_value()) break;
      auto payload = ParseOplogPayload(**next);
      if (!payload.ok()) return payload.status();
      const OplogHeader& h = payload->header;
      if (h.kind != OplogHeader::Kind::kBatch || h.shard != static_cast<int>(shard) || h.seq <= after) continue;
      if (h.seq > upto) break;
      auto b = std::make_shared<OplogBatch>();
      b->shard = shard;
      b->seq = h.seq;
      b->lines = std::string(payload->lines);
      b->line_count = CountLines(b->lines);
      lines += b->line_count;
      out.batches.push_back(std::move(b));
      out.scanned_to = h.seq;
      if (lines >= max_lines) return out;
    }
  }
  out.scanned_to = upto;
  return out;
}

void Oplog::Acknowledge(uint32_t shard, uint64_t seq) {
  std::lock_guard lock(mu_);
  acked_[shard] = std::max(acked_[shard], seq);
  acked_known_[shard] = true;
}

void Oplog::CollectGarbage(std::function<void(size_t deleted)> done) {
  background_->Post([this, done = std::move(done)] {
    const size_t deleted = DeleteCollectableSegments();
    if (done) done(deleted);
  });
}

size_t Oplog::DeleteCollectableSegments() {
  const int64_t now = options_.clock->NowUnixSeconds();
  std::vector<std::pair<uint64_t, bool>> doomed;
  {
    std::lock_guard lock(mu_);
    if (std::find(acked_known_.begin(), acked_known_.end(), false) != acked_known_.end()) return 0;
    for (const auto& [id, seg] : segments_) {
      if (!seg.closed || now - seg.closed_unix < int64_t{options_.retention_hours} * 3600) continue;
      bool all_acked = true;
      for (uint32_t s = 0; s < options_.shard_count; ++s) {
        if (seg.max_seq[s] > acked_[s]) all_acked = false;
      }
      if (all_acked) doomed.emplace_back(id, seg.compressed);
    }
    for (const auto& [id, gz] : doomed) segments_.erase(id);
  }
  size_t deleted = 0;
  for (const auto& [id, gz] : doomed) {
    const std::string path = SegmentPath(id, gz);
    if (::unlink(path.c_str()) != 0) {
      spdlog::warn("oplog: delete {}: {}", path, std::strerror(errno));
    } else {
      ++deleted;
      spdlog::info("oplog: deleted {} (every batch acknowledged, past retention)", path);
    }
  }
  if (!doomed.empty()) (void)FsyncDir(options_.dir);
  return deleted;
}

nlohmann::json Oplog::StatsJson() const {
  nlohmann::json j;
  j["sync"] = options_.sync == SyncPolicy::kAlways ? "always" : options_.sync == SyncPolicy::kInterval ? "interval" : "none";
  j["bytes_written"] = bytes_written_.load();
  j["records_written"] = records_written_.load();
  j["commits"] = commits_.load();
  j["failed"] = failed_.load();
  j["uncommitted_batches_cut"] = uncommitted_batches_cut_;
  j["damaged_segments_set_aside"] = damaged_segments_set_aside_;
  {
    std::lock_guard lock(mu_);
    uint64_t bytes = 0;
    for (const auto& [id, seg] : segments_) bytes += seg.bytes;
    j["segments"] = segments_.size();
    j["segment_bytes_uncompressed"] = bytes;
  }
  std::lock_guard lock(stats_mu_);
  j["fsyncs"] = fsyncs_;
  j["fsync_avg_us"] = fsyncs_ ? static_cast<double>(fsync_total_us_) / static_cast<double>(fsyncs_) : 0.0;
  std::vector<uint32_t> w = fsync_window_us_;
  uint64_t p99 = 0;
  if (!w.empty()) {
    size_t k = std::min(w.size() - 1, (w.size() * 99) / 100);
    std::nth_element(w.begin(), w.begin() + static_cast<std::ptrdiff_t>(k), w.end());
    p99 = w[k];
  }
  j["fsync_p99_us"] = p99;
  return j;
}

}  // namespace clickatron::api
