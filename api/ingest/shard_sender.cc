#include "ingest/shard_sender.h"

#include <algorithm>
#include <charconv>
#include <ctime>
#include <filesystem>
#include <set>

#include <fmt/format.h>
#include <spdlog/spdlog.h>

#include "clickatron/file_util.h"
#include "clickatron/oplog_record.h"
#include "clickatron/query_string.h"
#include "clickatron/record.h"
#include "clickatron/ymdh.h"

namespace clickatron::api {
namespace {

// The day ("YYYY-MM-DD") of a realtime counter line; empty for a lookup put
// (lookups have no day and are always accepted).
std::string DayOfLine(std::string_view line) {
  std::string_view key = LineKey(line);
  if (RecordTypeOfKey(key) == RecordType::kLookup) return {};
  size_t dot = key.rfind('.');
  if (dot == std::string_view::npos) return {};
  Result<int64_t> unix = UnixFromYmdh(key.substr(dot + 1));
  if (!unix.ok()) return {};
  return FormatDate(FloorDiv(*unix, kSecondsPerDay));
}

// The shard's applied and durable watermarks in an answer's data. A shard
// that names only "seq" persists every batch as it applies it.
bool ParseWatermarks(const nlohmann::json& data, uint64_t* applied, uint64_t* durable) {
  if (!data.is_object()) return false;
  auto number = [&](const char* name, uint64_t* out) {
    auto it = data.find(name);
    if (it == data.end() || !it->is_number_unsigned()) return false;
    *out = it->get<uint64_t>();
    return true;
  };
  if (!number("applied_seq", applied) && !number("seq", applied)) return false;
  if (!number("durable_seq", durable)) *durable = *applied;
  return true;
}

// Drops from `b` the lines whose keys are in `moved` (already in late data).
template <typename KeySet>
void DropMovedLines(OplogBatch& b, const KeySet& moved) {
  std::string kept;
  size_t count = 0;
  ForEachPayloadLine(b.lines, [&](std::string_view line) {
    if (moved.count(std::string(LineKey(line)))) return;
    kept.append(line).push_back('\n');
    ++count;
  });
  b.lines = std::move(kept);
  b.line_count = count;
}

std::string Snippet(const std::string& body) {
  std::string s = body.substr(0, 200);
  while (!s.empty() && (s.back() == '\n' || s.back() == '\r')) s.pop_back();
  return s;
}

}  // namespace

ShardSender::ShardSender(Options options, HttpServer& server, HttpClient& client, Oplog& oplog, LateData& late,
                         SerialExecutor& reader)
    : options_(std::move(options)),
      server_(server),
      client_(client),
      oplog_(oplog),
      late_(late),
      reader_(reader) {}

const char* ShardSender::StateName(State s) {
  switch (s) {
    case State::kRecovering: return "recovering";
    case State::kUp: return "up";
    case State::kDown: return "down";
    case State::kBackoff: return "backoff";
    case State::kHeld: return "held";
  }
  return "?";
}

void ShardSender::Start(uint64_t recovered_last_seq) {
  replay_until_ = recovered_last_seq;
  written_seq_ = recovered_last_seq;
  recovered_seq_ = recovered_last_seq;
  LoadHeldMarker();
  LoadDurableMarker();
  if (durable_confirmed_ > recovered_last_seq) {
    // The oplog holds less than the shard once persisted of it (moved aside,
    // or cut short by a power cut under oplog_sync = "none"): its seqs
    // start again lower, and only what it holds can be re-sent.
    SetDurableConfirmed(recovered_last_seq);
  }
  AskWatermark();
}

std::optional<uint64_t> ReadDurableMarker(const std::string& path) {
  if (path.empty() || !FileExists(path)) return uint64_t{0};
  Result<std::string> text = ReadFileToString(path);
  uint64_t seq = 0;
  std::string_view digits = text.ok() ? std::string_view(*text) : std::string_view();
  if (!digits.empty() && digits.back() == '\n') digits.remove_suffix(1);
  const auto [end, ec] = std::from_chars(digits.data(), digits.data() + digits.size(), seq);
  if (!text.ok() || digits.empty() || ec != std::errc() || end != digits.data() + digits.size()) return std::nullopt;
  return seq;
}

void ShardSender::LoadDurableMarker() {
  const std::optional<uint64_t> seq = ReadDurableMarker(options_.durable_marker_path);
  if (!seq) {
    spdlog::error("shard {}: {} is unreadable; a shard that lost its store would get batches it had already "
                  "persisted as late data",
                  options_.shard, options_.durable_marker_path);
    return;
  }
  if (*seq > 0) durable_confirmed_ = *seq;
}

void ShardSender::NoteDurable(uint64_t durable) {
  if (durable > durable_confirmed_) SetDurableConfirmed(durable);
}

void ShardSender::SetDurableConfirmed(uint64_t seq) {
  durable_confirmed_ = seq;
  if (options_.durable_marker_path.empty()) return;
  // Off the loop (two fsyncs), and once for however many values came while
  // a write was queued (one per checkpoint otherwise, on the executor that
  // also re-reads the oplog): the job writes the latest value. One that lags
  // after a crash only narrows the guard.
  marker_->latest.store(seq);
  if (marker_->queued.exchange(true)) return;
  reader_.Post([marker = marker_, path = options_.durable_marker_path, shard = options_.shard] {
    marker->queued.store(false);
    const uint64_t value = marker->latest.load();
    if (Status st = WriteFileAtomically(path, fmt::format("{}\n", value)); !st.ok()) {
      spdlog::error("shard {}: cannot write {}: {}", shard, path, st.ToString());
    }
  });
}

void ShardSender::LoadHeldMarker() {
  if (options_.held_marker_path.empty() || !FileExists(options_.held_marker_path)) return;
  Result<std::string> text = ReadFileToString(options_.held_marker_path);
  auto j = text.ok() ? nlohmann::json::parse(*text, nullptr, false) : nlohmann::json();
  if (j.is_discarded() || !j.is_object() || !j.contains("applied") || !j["applied"].is_number_unsigned()) {
    spdlog::error("shard {}: {} is unreadable; if the shard's watermark is still ahead, everything in the oplog "
                  "will be taken as applied",
                  options_.shard, options_.held_marker_path);
    return;
  }
  held_.applied = j["applied"].get<uint64_t>();
  held_.from_marker = true;
}

void ShardSender::GetWatermark(std::function<void(ShardSender& self, HttpResponse r)> done) {
  HttpRequestSpec spec;
  spec.method = "GET";
  spec.target = fmt::format("/watermark?source={}&heard={}", PercentEncode(options_.source), HeardArgValue());
  spec.timeout_ms = options_.request_timeout_ms;
  ++requests_;
  client_.Send(options_.peer, std::move(spec), [weak = weak_from_this(), done = std::move(done)](HttpResponse r) {
    if (auto self = weak.lock()) done(*self, std::move(r));
  });
}

bool ShardSender::WatermarksIn(const HttpResponse& r, uint64_t* applied, uint64_t* durable) {
  if (!r.ok() || r.status_code != 200) return false;
  auto j = nlohmann::json::parse(r.body, nullptr, false);
  return !j.is_discarded() && j.contains("data") && ParseWatermarks(j["data"], applied, durable);
}

void ShardSender::AskWatermark() {
  GetWatermark([](ShardSender& self, HttpResponse r) { self.OnWatermark(std::move(r)); });
}

void ShardSender::OnWatermark(HttpResponse r) {
  uint64_t applied = 0, durable = 0;
  std::string why;
  if (!r.ok()) {
    why = r.transport.ToString();
  } else if (r.status_code != 200) {
    why = fmt::format("GET /watermark: HTTP {} {}", r.status_code, Snippet(r.body));
  } else {
    auto j = nlohmann::json::parse(r.body, nullptr, false);
    if (j.is_discarded() || !j.contains("data") || !ParseWatermarks(j["data"], &applied, &durable)) {
      why = fmt::format("GET /watermark: unexpected answer {}", Snippet(r.body));
    }
  }
  if (!why.empty()) {
    Fail(r.ok() ? State::kBackoff : State::kDown, why);
    return;
  }
  if (HoldIfAhead(applied, durable, "GET /watermark")) return;
  if (held_.from_marker) {  // applied == held_.applied
    // Released while this node was down: the marker has done its job.
    std::error_code ec;
    std::filesystem::remove(options_.held_marker_path, ec);
    held_ = Held{};
  }
  watermark_known_ = true;
  state_ = State::kUp;
  backoff_ms_ = 0;
  last_error_.clear();  // answered: a failed ask before it is history (StartFrom may name a lost store)
  StartFrom(applied, durable);
}

void ShardSender::StartFrom(uint64_t applied, uint64_t durable) {
  if (applied < durable_confirmed_) {
    // Batches up to here reached a store that is gone; the lines of days
    // the shard has closed since are checked against the archive on the
    // re-send (HandleDayNotOpen). New batches are above this.
    lost_upto_ = std::max(lost_upto_, std::min(durable_confirmed_, HighestWritten()));
    archived_through_.reset();  // asked again: a rebuild may have run since
    ++losses_;
    last_error_ = fmt::format(
        "the shard's watermark {} is below seq {}, which it had confirmed durable: its store was lost or replaced "
        "(a wiped or mistyped data_dir?). Seqs up to {} are re-sent; their lines of closed days the archive "
        "already holds are dropped (the old store's export took them there), the others go to late data",
        applied, durable_confirmed_, lost_upto_);
    spdlog::error("shard {} ({}): {}", options_.shard, options_.member, last_error_);
  }
  NoteDurable(std::min(durable, applied));
  acked_seq_ = applied;
  shard_applied_ = applied;
  shard_durable_ = std::min(durable, applied);
  replay_after_ = applied;
  oplog_.Acknowledge(options_.shard, shard_durable_);
  spdlog::info("shard {} ({}): watermark {} (durable {}), oplog holds up to {}; re-sending {} batch seqs",
               options_.shard, options_.member, applied, durable, replay_until_,
               replay_until_ > applied ? replay_until_ - applied : 0);
  SchedulePoll();
  Pump();
}

bool ShardSender::HoldIfAhead(uint64_t applied, uint64_t durable, std::string_view heard_in,
                              std::optional<uint64_t> ours) {
  if (state_ == State::kHeld) return true;
  // A hold noted by an earlier run ends only where the operator's release
  // puts the watermark: at what the shard really applied of ours. (The
  // oplog may by now reach past the claimed watermark: batches written
  // during the hold.)
  const bool still_held = held_.from_marker && !ReleasedAt(applied, durable);
  if (!still_held && applied <= HighestSent()) return false;
  // Seqs the shard has taken for this source that this node cannot have
  // sent it: a second API node under this name, an oplog restored from an
  // old copy or one that lost its tail, or a forged batch. Queued batches
  // count for nothing here: a watermark inside the queue would turn them
  // into duplicates just the same. Keep it all in the oplog and wait for
  // the operator (clickatron oplog release).
  //
  // What the shard really applied of ours: from a marker left by an earlier
  // run (held, then restarted), else what this run saw applied, else (just
  // started: all it has is the oplog) everything in the oplog.
  const uint64_t of_ours = ours.value_or(watermark_known_ ? acked_seq_ : replay_until_);
  Hold(applied, of_ours,
       still_held
           ? fmt::format("WATERMARK_AHEAD: held since an earlier run ({}); the shard's watermark for {} is {}, this "
                         "node's batches were applied up to {}; nothing is sent until an operator runs `clickatron "
                         "oplog release` (docs/operations.md)",
                         options_.held_marker_path, options_.source, applied, held_.applied)
           : fmt::format("WATERMARK_AHEAD: the shard's watermark for {} is {}, above seq {}, the highest this node "
                         "can have sent it (in this run, or up to its oplog's last seq at start, {}); nothing is "
                         "sent until an operator runs `clickatron oplog release` (docs/operations.md)",
                         options_.source, applied, HighestSent(), recovered_seq_),
       heard_in);
  return true;
}

void ShardSender::Hold(uint64_t watermark, uint64_t ours, std::string why, std::string_view heard_in) {
  state_ = State::kHeld;
  held_.shard_watermark = watermark;
  if (!held_.from_marker) held_.applied = ours;
  held_.since_unix = static_cast<int64_t>(std::time(nullptr));
  last_error_ = std::move(why);
  spdlog::error("shard {} ({}): {} (heard in {}); this node's batches up to seq {} were applied",
                options_.shard, options_.member, last_error_, heard_in, held_.applied);
  if (!options_.held_marker_path.empty()) {
    const nlohmann::json marker = {{"source", options_.source},       {"shard", options_.shard},
                                   {"applied", held_.applied},       {"shard_watermark", watermark},
                                   {"highest_written", HighestWritten()}, {"since_unix", held_.since_unix}};
    if (Status st = WriteFileAtomically(options_.held_marker_path, marker.dump() + "\n"); !st.ok()) {
      spdlog::error("shard {}: cannot write {}: {}", options_.shard, options_.held_marker_path, st.ToString());
    }
  }
  ScheduleHeldPoll();
}

void ShardSender::ScheduleHeldPoll() {
  server_.After(std::chrono::milliseconds(options_.held_poll_ms), [weak = weak_from_this()] {
    auto self = weak.lock();
    if (!self || self->state_ != State::kHeld) return;
    self->GetWatermark([](ShardSender& self, HttpResponse r) {
      if (self.state_ != State::kHeld) return;
      ++self.held_polls_;
      uint64_t applied = 0, durable = 0;
      if (WatermarksIn(r, &applied, &durable)) {
        if (self.ReleasedAt(applied, durable)) {
          self.Release(applied, durable);
          return;
        }
        if (applied != self.held_.shard_watermark) {
          spdlog::error("shard {} ({}): watermark for {} moved from {} to {}, not to {} (what it applied of "
                        "ours): still held",
                        self.options_.shard, self.options_.member, self.options_.source, self.held_.shard_watermark,
                        applied, self.held_.applied);
          self.held_.shard_watermark = applied;
        }
      }
      self.ScheduleHeldPoll();
    });
  });
}

bool ShardSender::ReleasedAt(uint64_t applied, uint64_t durable) const {
  // At or below what the shard really applied of ours, and durable there:
  // above, batches this node wrote during the hold would be taken for
  // duplicates. Below is a shard that lost unpersisted batches (ours and
  // the foreign one) in a restart: it has only what it says, and re-sending
  // from there counts each batch once.
  return applied <= held_.applied && durable == applied;
}

void ShardSender::Release(uint64_t applied, uint64_t durable) {
  spdlog::warn("shard {} ({}): watermark for {} is back at {} (was {}): re-sending the oplog above it",
               options_.shard, options_.member, options_.source, applied, held_.shard_watermark);
  if (!options_.held_marker_path.empty()) {
    std::error_code ec;
    std::filesystem::remove(options_.held_marker_path, ec);
  }
  held_ = Held{};
  state_ = State::kUp;
  last_error_.clear();
  watermark_known_ = true;
  ++releases_;
  // Lowered on purpose: not a lost store.
  if (durable_confirmed_ > applied) SetDurableConfirmed(applied);
  Rewind(applied, durable, "released by an operator");
}

void ShardSender::Heard(uint64_t applied, uint64_t durable, uint64_t ours) {
  shard_applied_ = applied;
  // Never release the oplog past what is applied, nor past what the shard
  // has confirmed applying of ours: a watermark may include a foreign batch
  // not yet told apart (a poll answered while a batch is in flight).
  durable = std::min({durable, applied, ours});
  if (durable > shard_durable_) {
    shard_durable_ = durable;
    oplog_.Acknowledge(options_.shard, durable);
    // Kept while the oplog holds the batch: a shard that loses its store
    // gets it re-read, and these lines are in late data already.
    if (!moved_.empty()) moved_.erase(moved_.begin(), moved_.lower_bound(oplog_.OldestSeq(options_.shard)));
    NoteDurable(durable);
  }
}

void ShardSender::Rewind(uint64_t applied, uint64_t durable, const std::string& why) {
  if (HoldIfAhead(applied, durable, why)) return;
  ++rewinds_;
  spdlog::warn("shard {} ({}) has applied only up to seq {} (durable {}), not {}: {}; re-sending from the oplog",
               options_.shard, options_.member, applied, durable, shard_applied_, why);
  // Everything handed to this sender is in the oplog: re-read it all from
  // above what the shard has, and forget what is queued in memory. A load
  // of the old range still under way is ignored when it lands (epoch).
  ++replay_epoch_;
  replay_until_ = std::max(replay_until_, written_seq_);
  replay_.clear();
  queue_.clear();
  queued_lines_ = 0;
  StartFrom(applied, durable);
}

void ShardSender::SchedulePoll() {
  if (poll_pending_) return;
  poll_pending_ = true;
  const int wait_ms = shard_durable_ < shard_applied_ ? options_.durable_poll_ms : options_.idle_poll_ms;
  server_.After(std::chrono::milliseconds(wait_ms), [weak = weak_from_this()] {
    auto self = weak.lock();
    if (!self) return;
    if (self->in_flight_ || self->retry_pending_ || !self->watermark_known_) {
      // A batch's answer will carry the watermarks; look again later.
      self->poll_pending_ = false;
      self->SchedulePoll();
      return;
    }
    self->GetWatermark([sent_before_poll = self->batches_sent_](ShardSender& self, HttpResponse r) {
      self.poll_pending_ = false;
      uint64_t applied = 0, durable = 0;
      if (WatermarksIn(r, &applied, &durable)) {
        if (self.HoldIfAhead(applied, durable, "a watermark poll")) return;
        // A batch sent after the poll may have been answered before it, with
        // a higher watermark than the poll's: that is no sign of a restart.
        const bool batch_sent_meanwhile = self.batches_sent_ != sent_before_poll;
        if (applied < self.shard_applied_ && !batch_sent_meanwhile && !self.in_flight_ && !self.retry_pending_ &&
            !self.late_pending_) {
          self.Rewind(applied, durable, "seen by a watermark poll (the shard restarted?)");
          return;
        }
        if (applied >= self.shard_applied_) self.Heard(applied, durable, self.acked_seq_);
        if (!batch_sent_meanwhile) self.PollAnswered();
      } else if (self.batches_sent_ == sent_before_poll) {
        self.PollUnanswered(r);  // a batch sent meanwhile says the state itself
      }
      self.SchedulePoll();
    });
  });
}

void ShardSender::PollAnswered() {
  // Polls are sent only while nothing is in flight or waiting to be re-sent,
  // and no batch went out since this one: a state the last exchange left
  // down is the poll's to end.
  if (in_flight_ || retry_pending_ || (state_ != State::kDown && state_ != State::kBackoff)) return;
  spdlog::info("shard {} ({}) is up again (a watermark poll was answered)", options_.shard, options_.member);
  state_ = State::kUp;
  backoff_ms_ = 0;
  last_error_.clear();
}

void ShardSender::PollUnanswered(const HttpResponse& r) {
  // An idle node learns of a shard that died or froze from its polls only:
  // without this, /stats, /metrics (shard_up) and `clickatron status` said
  // "up" until the next batch failed.
  if (state_ != State::kUp) return;
  ++failures_;
  state_ = State::kDown;
  last_error_ = r.ok() ? fmt::format("GET /watermark: HTTP {} {}", r.status_code, Snippet(r.body))
                       : "GET /watermark: " + r.transport.ToString();
  spdlog::warn("shard {} ({}) down: {}", options_.shard, options_.member, last_error_);
}

void ShardSender::Enqueue(BatchPtr batch) {
  // Seqs come from the oplog above everything it held at start, and a shard
  // whose watermark is above what this node wrote holds it (HoldIfAhead), so
  // a new batch is always above what is acknowledged, replayed or queued.
  // Were it not, the shard would take it for a duplicate: say so loudly.
  if (const uint64_t last = std::max({acked_seq_, replay_until_, queue_.empty() ? 0 : queue_.back()->seq});
      batch->seq <= last) {
    spdlog::critical("shard {}: batch seq {} is not above seq {} already queued or acknowledged: a bug; the shard "
                     "may take it for a duplicate",
                     options_.shard, batch->seq, last);
  }
  written_seq_ = std::max(written_seq_, batch->seq);
  queued_lines_ += batch->line_count;
  queue_.push_back(std::move(batch));
  Pump();
}

BatchPtr ShardSender::Head() {
  if (!replay_.empty()) return replay_.front();
  if (replay_after_ < replay_until_) {
    LoadReplay();  // pumps again once loaded
    return nullptr;
  }
  return queue_.empty() ? nullptr : queue_.front();
}

void ShardSender::Pump() {
  if (state_ == State::kHeld) return;
  if (!watermark_known_ || in_flight_ || retry_pending_ || late_pending_ || loading_) return;
  BatchPtr b = Head();
  if (!b) return;
  if (b->line_count == 0) {
    // Wholly moved to late data by an earlier run: nothing left to send.
    Done(b, false);
    return;
  }
  // Wait for the oplog to make it durable (policy "interval"); the oplog's
  // durable listener pumps again.
  if (b->seq > oplog_.durable_seq(options_.shard)) return;
  Send(b);
}

void ShardSender::LoadReplay() {
  if (loading_) return;
  loading_ = true;
  const uint32_t shard = options_.shard;
  const uint64_t after = replay_after_, upto = replay_until_;
  const size_t chunk = options_.replay_chunk_lines;
  const uint64_t epoch = replay_epoch_;
  Oplog* oplog = &oplog_;
  LateData* late = &late_;
  HttpServer* server = &server_;
  reader_.Post([weak = weak_from_this(), oplog, late, server, shard, after, upto, chunk, epoch] {
    auto result = oplog->ReadBatches(shard, after, upto, chunk);
    if (result.ok()) {
      // Lines an earlier run already moved to late data are not sent again.
      for (BatchPtr& b : result->batches) {
        auto moved = late->recovered().find({shard, b->seq});
        if (moved != late->recovered().end()) DropMovedLines(*b, moved->second);
      }
    }
    server->RunInLoop([weak, result = std::move(result), epoch]() mutable {
      if (auto self = weak.lock()) self->OnReplayLoaded(std::move(result), epoch);
    });
  });
}

void ShardSender::OnReplayLoaded(Result<Oplog::ReadResult> r, uint64_t epoch) {
  loading_ = false;
  if (epoch != replay_epoch_) {  // loaded for a range a rewind replaced
    Pump();
    return;
  }
  if (!r.ok()) {
    spdlog::error("shard {}: re-reading the oplog failed: {}", options_.shard, r.status().ToString());
    Fail(State::kBackoff, "oplog read: " + r.status().ToString());
    return;
  }
  for (BatchPtr& b : r->batches) {
    // Lines this run already moved to late data are not sent again.
    if (auto moved = moved_.find(b->seq); moved != moved_.end()) DropMovedLines(*b, moved->second);
    queued_lines_ += b->line_count;
    ++replayed_;
    replay_.push_back(std::move(b));
  }
  replay_after_ = std::max(replay_after_, r->scanned_to);
  Pump();
}

void ShardSender::Send(const BatchPtr& b) {
  in_flight_ = true;
  ++requests_;
  ++batches_sent_;
  // A first attempt: nothing this node sent before (this run, or an
  // earlier process: the oplog's last seq at start) reaches this seq. Its
  // "duplicate" could only be someone else's batch.
  const bool first = b->seq > HighestSent();
  const uint64_t sent_before = sent_seq_;
  sent_seq_ = std::max(sent_seq_, b->seq);
  HttpRequestSpec spec;
  spec.method = "POST";
  spec.target = fmt::format("/incr?source={}&seq={}&prev={}&heard={}", PercentEncode(options_.source), b->seq,
                            shard_applied_, HeardArgValue());
  spec.body = b->lines;
  spec.timeout_ms = options_.request_timeout_ms;
  client_.Send(options_.peer, std::move(spec),
               [weak = weak_from_this(), b, epoch = replay_epoch_, first, sent_before](HttpResponse r) {
    auto self = weak.lock();
    if (!self) return;
    if (epoch != self->replay_epoch_) {
      // Sent before a rewind or a release re-read everything from the
      // oplog: its answer says nothing about the batches now queued.
      self->in_flight_ = false;
      self->Pump();
      return;
    }
    self->OnAnswer(b, std::move(r), first, sent_before);
  });
}

void ShardSender::OnAnswer(const BatchPtr& b, HttpResponse r, bool first, uint64_t sent_before) {
  in_flight_ = false;
  if (!r.ok()) {
    Fail(State::kDown, r.transport.ToString());
    return;
  }
  // A 4xx answer applied nothing (docs/protocols.md): this attempt never
  // reached the shard's watermark, so the next one of this seq is a first.
  if (r.status_code >= 400 && r.status_code < 500) sent_seq_ = sent_before;
  if (r.status_code == 200) {
    auto j = nlohmann::json::parse(r.body, nullptr, false);
    uint64_t applied = 0, durable = 0;
    if (j.is_discarded() || !j.contains("data") || !ParseWatermarks(j["data"], &applied, &durable)) {
      Fail(State::kBackoff, fmt::format("seq {}: unexpected answer {}", b->seq, Snippet(r.body)));
      return;
    }
    const bool duplicate = j["data"].value("duplicate", false);
    const std::string heard_in = fmt::format("the answer to seq {}", b->seq);
    // Applied now: ours up to b->seq. A duplicate may be someone else's.
    if (HoldIfAhead(applied, durable, heard_in, duplicate ? acked_seq_ : std::max(acked_seq_, b->seq))) return;
    if (duplicate && first) {
      // The watermark is within what this node sent (b->seq is on the wire
      // now), but this seq never was before: the shard has it from someone
      // else. Acknowledging it would lose this batch (and the oplog past
      // what the shard applied of ours).
      Hold(applied, acked_seq_,
           fmt::format("WATERMARK_AHEAD: the first attempt of seq {} was answered as a duplicate (the shard's "
                       "watermark for {} is {}), yet this node had sent nothing above seq {} before: another writer "
                       "uses this name; nothing is sent until an operator runs `clickatron oplog release` "
                       "(docs/operations.md)",
                       b->seq, options_.source, applied, std::max(sent_before, recovered_seq_)),
           heard_in);
      return;
    }
    Heard(std::max(applied, b->seq), durable, std::max(acked_seq_, b->seq));
    Done(b, duplicate);
    return;
  }
  if (r.status_code == 409) {
    auto j = nlohmann::json::parse(r.body, nullptr, false);
    if (!j.is_discarded() && j.value("status_txt", "") == "WATERMARK_MISMATCH" && j.contains("applied_seq") &&
        j["applied_seq"].is_number_unsigned() && j.contains("durable_seq") && j["durable_seq"].is_number_unsigned()) {
      Rewind(j["applied_seq"].get<uint64_t>(), j["durable_seq"].get<uint64_t>(),
             fmt::format("seq {} refused with WATERMARK_MISMATCH", b->seq));
      return;
    }
    if (!j.is_discarded() && j.value("status_txt", "") == "DAY_NOT_OPEN" && j.contains("open_days") &&
        j["open_days"].is_array()) {
      HandleDayNotOpen(b, j["open_days"]);
      return;
    }
  }
  // 400 BAD_LINE is a bug on our side; 5xx may or may not have applied it.
  // Either way the batch is kept and retried unchanged: never dropped.
  if (r.status_code == 400) {
    spdlog::error("shard {} ({}) refused seq {}: {}", options_.shard, options_.member, b->seq, Snippet(r.body));
  }
  Fail(State::kBackoff, fmt::format("seq {}: HTTP {} {}", b->seq, r.status_code, Snippet(r.body)));
}

void ShardSender::HandleDayNotOpen(const BatchPtr& b, const nlohmann::json& open_days) {
  const bool redelivered = RedeliveredAfterLoss(b->seq);
  if (redelivered && !archived_through_) {
    AskArchivedThrough(b, open_days);
    return;
  }
  std::set<std::string> open;
  for (const auto& d : open_days) {
    if (d.is_string()) open.insert(d.get<std::string>());
  }
  std::string late, rest;
  size_t late_count = 0, rest_count = 0, dropped = 0;
  std::unordered_set<std::string> late_keys;
  ForEachPayloadLine(b->lines, [&](std::string_view line) {
    std::string day = DayOfLine(line);
    if (day.empty() || open.count(day)) {
      rest.append(line).push_back('\n');
      ++rest_count;
    } else if (redelivered && Archived(day)) {
      ++dropped;
    } else {
      late.append(line).push_back('\n');
      late_keys.insert(std::string(LineKey(line)));
      ++late_count;
    }
  });
  if (late_count == 0 && dropped == 0) {
    Fail(State::kBackoff, fmt::format("seq {}: DAY_NOT_OPEN, yet every line's day is open ({})", b->seq,
                                      open_days.dump()));
    return;
  }
  if (dropped > 0) {
    spdlog::warn("shard {} ({}): seq {} had been persisted by the shard's lost store: {} lines of days the archive "
                 "holds dropped, {} to late data, {} re-sent",
                 options_.shard, options_.member, b->seq, dropped, late_count, rest_count);
  }
  if (late_count == 0) {
    lost_store_dropped_lines_ += dropped;
    ContinueWithout(b, std::move(rest), rest_count, dropped);
    return;
  }
  late_pending_ = true;
  late_.Write(options_.shard, b->seq, std::move(late), late_count,
              [weak = weak_from_this(), b, rest = std::move(rest), rest_count, late_count, dropped,
               late_keys = std::move(late_keys), epoch = replay_epoch_](Status st) mutable {
                auto self = weak.lock();
                if (!self) return;
                self->late_pending_ = false;
                if (!st.ok()) {
                  self->Fail(State::kBackoff, "late data: " + st.ToString());
                  return;
                }
                self->moved_[b->seq].merge(late_keys);
                if (self->state_ == State::kHeld) return;  // released later from the oplog, minus these keys
                if (epoch != self->replay_epoch_) {
                  // A rewind replaced the queues meanwhile: the batch comes
                  // back from the oplog, minus the keys just moved.
                  self->Pump();
                  return;
                }
                self->late_lines_ += late_count;
                self->lost_store_dropped_lines_ += dropped;
                self->ContinueWithout(b, std::move(rest), rest_count, late_count + dropped);
              });
}

bool ShardSender::Archived(const std::string& day) const {
  if (!archived_through_ || !*archived_through_) return false;  // no archive file: nothing exported into it
  Result<int64_t> d = ParseDate(day);
  return d.ok() && *d <= **archived_through_;
}

void ShardSender::AskArchivedThrough(const BatchPtr& b, const nlohmann::json& open_days) {
  if (!options_.archived_through) {
    archived_through_ = std::optional<int64_t>();  // no archive to ask: everything goes to late data
    HandleDayNotOpen(b, open_days);
    return;
  }
  late_pending_ = true;  // nothing else goes out meanwhile
  options_.archived_through([weak = weak_from_this(), b, open_days, epoch = replay_epoch_, loss = losses_](
                                Result<std::optional<int64_t>> through) {
    auto self = weak.lock();
    if (!self) return;
    self->late_pending_ = false;
    if (loss != self->losses_) {  // asked before another loss: ask again
      self->Pump();
      return;
    }
    if (!through.ok()) {
      // The batch is tried again after the backoff, and asks again.
      self->Fail(State::kBackoff, "a shard that lost its store: asking the archive how far it reaches: " +
                                      through.status().ToString());
      return;
    }
    self->archived_through_ = *through;
    if (epoch != self->replay_epoch_ || self->state_ == State::kHeld) {
      self->Pump();
      return;
    }
    self->HandleDayNotOpen(b, open_days);
  });
}

void ShardSender::ContinueWithout(const BatchPtr& b, std::string rest, size_t rest_count, size_t removed) {
  queued_lines_ -= removed;
  b->lines = std::move(rest);
  b->line_count = rest_count;
  if (rest_count == 0) {
    Done(b, false);
  } else {
    Pump();  // the rest, same seq
  }
}

void ShardSender::Done(const BatchPtr& b, bool duplicate) {
  if (state_ == State::kHeld) return;  // the batch stays; the release re-reads the oplog
  if (!replay_.empty() && replay_.front() == b) {
    replay_.pop_front();
  } else if (!queue_.empty() && queue_.front() == b) {
    queue_.pop_front();
  }
  queued_lines_ -= b->line_count;
  acked_seq_ = std::max(acked_seq_, b->seq);
  (duplicate ? duplicates_ : applied_)++;
  SchedulePoll();
  if (state_ != State::kUp) {
    spdlog::info("shard {} ({}) is {} again", options_.shard, options_.member, "up");
  }
  state_ = State::kUp;
  backoff_ms_ = 0;
  last_error_.clear();  // "empty when the last exchange succeeded" (the log keeps the history)
  Pump();
}

void ShardSender::Fail(State state, const std::string& why) {
  if (state_ == State::kHeld) return;  // only the held poll (and an operator) ends it
  ++failures_;
  if (state_ == State::kUp || state_ == State::kRecovering || why != last_error_) {
    spdlog::warn("shard {} ({}) {}: {}; retrying", options_.shard, options_.member, StateName(state), why);
  }
  state_ = state;
  last_error_ = why;
  backoff_ms_ = backoff_ms_ == 0 ? options_.backoff_min_ms : std::min(backoff_ms_ * 2, options_.backoff_max_ms);
  retry_pending_ = true;
  server_.After(std::chrono::milliseconds(backoff_ms_), [weak = weak_from_this()] {
    auto self = weak.lock();
    if (!self) return;
    self->retry_pending_ = false;
    if (!self->watermark_known_) {
      self->AskWatermark();
    } else {
      self->Pump();
    }
  });
}

nlohmann::json ShardSender::StatsJson() const {
  return nlohmann::json{
      {"shard", options_.shard},
      {"member", options_.member},
      {"peer", options_.peer.ToString()},
      {"state", StateName(state_)},
      {"queued_batches", replay_.size() + queue_.size()},
      {"queued_lines", queued_lines_},
      {"replay_pending_seqs", replay_until_ > replay_after_ ? replay_until_ - replay_after_ : 0},
      {"written_seq", written_seq_},
      {"acked_seq", acked_seq_},
      {"shard_applied_seq", shard_applied_},
      {"shard_durable_seq", shard_durable_},
      {"rewinds", rewinds_},
      {"lag_seq", written_seq_ > acked_seq_ ? written_seq_ - acked_seq_ : 0},
      {"requests", requests_},
      {"failures", failures_},
      {"applied", applied_},
      {"duplicates", duplicates_},
      {"replayed", replayed_},
      {"late_lines", late_lines_},
      {"durable_confirmed_seq", durable_confirmed_},
      {"lost_store_dropped_lines", lost_store_dropped_lines_},
      {"store_losses", losses_},
      {"releases", releases_},
      {"held_polls", held_polls_},
      {"watermark_ahead", state_ == State::kHeld ? 1 : 0},
      {"held", state_ == State::kHeld ? nlohmann::json{{"applied", held_.applied},
                                                        {"shard_watermark", held_.shard_watermark},
                                                        {"highest_written", HighestWritten()},
                                                        {"since_unix", held_.since_unix}}
                                      : nlohmann::json(nullptr)},
      {"last_error", last_error_},
  };
}

}  // namespace clickatron::api
