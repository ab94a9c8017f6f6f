// Sends one realtime shard its batches, in seq order, exactly once.
//
// The shard applies a batch iff its seq is above the shard's watermark for
// this API node (docs/protocols.md). So:
// - One request in flight per shard. Sending N+1 before N is acknowledged
//   could let N+1 land first and turn N into a "duplicate" — lost.
// - No merging of queued batches into one request: a merged request must
//   carry the highest seq, and if an earlier request (or one sent by the
//   previous process before a crash) is still on its way, it would count
//   twice or make the merge a duplicate. The flush window already merges
//   everything queued while the oplog writer was busy, so batches grow with
//   load; a backlog drains at one request per round trip.
// - An unanswered request (timeout, reset, 5xx) is retried unchanged, same
//   seq, same lines, with exponential backoff: applied or not, the retry is
//   either applied now or acknowledged as a duplicate.
// - 409 DAY_NOT_OPEN (nothing applied): the lines of days not open go to late
//   data (fsynced), then the rest is re-sent under the same seq.
// - After a restart: GET /watermark, then the oplog's batches above it are
//   re-sent (loaded in bounded chunks), minus lines already in late data.
// - A shard applies batches in memory and persists them by checkpoint, so it
//   answers with two watermarks: *applied* and *durable*. The oplog is
//   acknowledged (may be deleted) only up to durable. Every batch carries
//   prev = the applied watermark last heard; a shard that lost what it had
//   not persisted (a restart) answers 409 WATERMARK_MISMATCH with its
//   watermarks, and everything above its applied one is re-sent from the
//   oplog. While nothing else goes out, the watermark is polled (often while
//   applied is ahead of durable, so the oplog is released; every second
//   otherwise), so a restarted or replaced shard is noticed without waiting
//   for the next batch.
// - A shard whose watermark this node cannot have put there (another node
//   under this name, an old or truncated oplog, a forged batch) would take
//   the node's batches up to it for duplicates. Two signs, checked in every
//   answer and poll:
//   * the watermark is above the highest seq this node may have sent the
//     shard: sent in this run, or (sent by an earlier process) anything up
//     to the oplog's last seq at start. What is merely queued does not
//     count: a watermark inside the queue is just as foreign.
//   * the first attempt of a seq above everything sent before is answered
//     "duplicate". A retry's duplicate is fine: its earlier attempt may have
//     landed. (An attempt answered 4xx applied nothing: its resend is a
//     first attempt again.)
//   The sender then holds: it sends nothing, acknowledges nothing more of
//   the oplog, keeps everything in it (the queue pushes back like a shard
//   that is down), logs an error, shows WATERMARK_AHEAD in /stats and
//   /metrics, notes in `held_marker_path` what the shard really applied of
//   ours, and polls the watermark until an operator lowers it (clickatron
//   oplog release); then it re-sends from there. It never renumbers on its
//   own.
// - A shard whose watermark falls below what it once confirmed durable has
//   lost its store (replaced, wiped, or started on another data_dir): the
//   batches up to there reached it durably. When they are re-sent, lines of
//   open days are applied again (the store that had them is gone); lines of
//   days it has closed since are dropped if the archive already reaches
//   their day (the old store's export took them there, and as late data the
//   rebuild would add them a second time), and go to late data otherwise.
// - Only batches the oplog has made durable are sent, so a shard can never
//   hold a seq the oplog could lose in a power cut (which would make later
//   batches with reused seqs look like duplicates).
//
// Thread-safety: everything runs on the API's event loop.
#pragma once

#include <algorithm>
#include <atomic>
#include <cstdint>
#include <deque>
#include <functional>
#include <map>
#include <unordered_set>
#include <utility>
#include <vector>
#include <memory>
#include <optional>
#include <string>
#include <string_view>

#include <nlohmann/json.hpp>

#include "clickatron/config.h"
#include "clickatron/http_client.h"
#include "clickatron/http_server.h"
#include "ingest/late_data.h"
#include "ingest/oplog.h"
#include "clickatron/serial_executor.h"

namespace clickatron::api {

class ShardSender : public std::enable_shared_from_this<ShardSender> {
 public:
  struct Options {
    uint32_t shard = 0;
    std::string member;  // the realtime member's name (for stats and logs)
    HostPort peer;
    std::string source;  // this API member's name: ?source=
    int request_timeout_ms = 5000;
    int backoff_min_ms = 50;
    int backoff_max_ms = 5000;
    size_t replay_chunk_lines = 100000;  // oplog re-reads are loaded this much at a time
    int durable_poll_ms = 250;  // GET /watermark this often while the shard's durable lags its applied
    int idle_poll_ms = 1000;    // and this often otherwise, so a restarted or replaced shard is noticed
    int held_poll_ms = 1000;    // and this often while held (watermark ahead)
    // Where a hold is noted (DATA_DIR/watermark-ahead-shard-N.json), so a
    // restart still knows how far the shard really applied. Empty: nowhere.
    std::string held_marker_path;
    // Where the highest seq the shard confirmed durable is noted
    // (DATA_DIR/durable-shard-N), so that a restart still knows which
    // batches the shard had persisted. Empty: nowhere (this run only).
    std::string durable_marker_path;
    // Asks the archive its last day (nullopt: no archive file yet), for the
    // re-send to a shard that lost its store. Empty: no archive to ask.
    std::function<void(std::function<void(Result<std::optional<int64_t>>)>)> archived_through;
  };
  ShardSender(Options options, HttpServer& server, HttpClient& client, Oplog& oplog, LateData& late,
              SerialExecutor& reader);

  // Asks the shard's watermark, then re-sends the oplog's batches above it up
  // to `recovered_last_seq`, then the batches enqueued since.
  void Start(uint64_t recovered_last_seq);
  // A committed batch (seqs ascending).
  void Enqueue(BatchPtr batch);
  // Sends the next batch if nothing is in flight (e.g. after durable_seq advanced).
  void Pump();

  uint64_t queued_lines() const { return queued_lines_; }
  // Sending normally: not recovering, backing off, down or held.
  bool up() const { return state_ == State::kUp; }
  nlohmann::json StatsJson() const;

 private:
  enum class State { kRecovering, kUp, kDown, kBackoff, kHeld };
  static const char* StateName(State s);

  // GET /watermark for this source; `done` runs on the loop if the sender
  // still exists.
  void GetWatermark(std::function<void(ShardSender& self, HttpResponse r)> done);
  // The watermarks in a 200 answer to GET /watermark; false for any other.
  static bool WatermarksIn(const HttpResponse& r, uint64_t* applied, uint64_t* durable);
  void AskWatermark();
  // An idle watermark poll answered, or not: what it says of the shard's
  // state (down after no answer, up again after one).
  void PollAnswered();
  void PollUnanswered(const HttpResponse& r);
  void OnWatermark(HttpResponse r);
  void LoadReplay();
  void OnReplayLoaded(Result<Oplog::ReadResult> r, uint64_t epoch);
  // Re-sends the oplog above `applied` (after GET /watermark or a rewind).
  void StartFrom(uint64_t applied, uint64_t durable);
  BatchPtr Head();
  void Send(const BatchPtr& b);
  // `first`: no attempt of b->seq (nor of a higher seq) may have reached the
  // shard before this one. `sent_before`: sent_seq_ before this attempt.
  void OnAnswer(const BatchPtr& b, HttpResponse r, bool first, uint64_t sent_before);
  void HandleDayNotOpen(const BatchPtr& b, const nlohmann::json& open_days);
  void Done(const BatchPtr& b, bool duplicate);
  void Fail(State state, const std::string& why);
  // The shard's watermarks from an answer ("applied_seq", "durable_seq").
  // The oplog is acknowledged up to durable, but never past `ours`: the
  // highest seq the shard has confirmed applying of this node's batches.
  void Heard(uint64_t applied, uint64_t durable, uint64_t ours);
  // The shard has applied only up to `applied`: re-send from there.
  void Rewind(uint64_t applied, uint64_t durable, const std::string& why);
  void SchedulePoll();
  // The highest seq this node ever wrote for the shard (this run or before).
  uint64_t HighestWritten() const { return std::max(written_seq_, replay_until_); }
  // The highest seq this node may have put on the wire to the shard: sent
  // in this run, or up to the oplog's last seq at start (an earlier process).
  uint64_t HighestSent() const { return std::max(sent_seq_, recovered_seq_); }
  // When the shard's applied watermark is above HighestSent() (or a marker
  // says an earlier run held): holds and returns true (see the header
  // comment). `heard_in` names the answer; `ours` is how far the shard
  // applied this node's batches (default: what this run saw acknowledged,
  // or, before the watermark was known, the whole oplog).
  bool HoldIfAhead(uint64_t applied, uint64_t durable, std::string_view heard_in,
                   std::optional<uint64_t> ours = std::nullopt);
  // Holds: the shard claims `watermark`, of ours it applied up to `ours`.
  void Hold(uint64_t watermark, uint64_t ours, std::string why, std::string_view heard_in);
  void ScheduleHeldPoll();
  // Whether watermarks heard while held end the hold (see the .cc).
  bool ReleasedAt(uint64_t applied, uint64_t durable) const;
  // The shard's watermark is back where the hold can end.
  void Release(uint64_t applied, uint64_t durable);
  void LoadHeldMarker();
  // durable_confirmed_ from, and to, durable_marker_path.
  void LoadDurableMarker();
  void NoteDurable(uint64_t durable);       // raises durable_confirmed_
  void SetDurableConfirmed(uint64_t seq);   // and notes it in the marker file
  // `seq` reached a store of the shard that has since been lost (see the
  // header comment).
  bool RedeliveredAfterLoss(uint64_t seq) const { return seq <= lost_upto_; }
  // Whether `day` ("YYYY-MM-DD") is in the archive (archived_through_ known).
  bool Archived(const std::string& day) const;
  // Learns archived_through_, then handles b's DAY_NOT_OPEN again.
  void AskArchivedThrough(const BatchPtr& b, const nlohmann::json& open_days);
  // Continues with b's lines other than `removed` of them (moved to late data
  // or dropped): sends the rest under the same seq, or is done.
  void ContinueWithout(const BatchPtr& b, std::string rest, size_t rest_count, size_t removed);

  Options options_;
  HttpServer& server_;
  HttpClient& client_;
  Oplog& oplog_;
  LateData& late_;
  SerialExecutor& reader_;

  State state_ = State::kRecovering;
  bool watermark_known_ = false;
  bool in_flight_ = false;
  bool retry_pending_ = false;
  bool late_pending_ = false;
  bool loading_ = false;
  int backoff_ms_ = 0;

  uint64_t acked_seq_ = 0;     // every seq up to here is applied or in late data
  uint64_t shard_applied_ = 0; // the shard's watermarks, as last heard
  // The heard=N of every batch and poll (realtime/recovery_gate.h): the
  // most the shard can have applied, and shown, of ours: the highest seq
  // this node (or, before a restart, the process whose oplog it took) may
  // have sent it. Not the highest applied watermark heard: a batch applied
  // just before a crash may never have been answered, and an API node
  // restarted too knows only what was durable. Whatever the shard lost is
  // re-sent up to here.
  uint64_t HeardArgValue() const { return std::max(HighestSent(), durable_confirmed_); }
  uint64_t shard_durable_ = 0;
  // The highest seq of ours the shard ever confirmed durable, in this run
  // or (durable_marker_path) an earlier one.
  uint64_t durable_confirmed_ = 0;
  // The value for the marker file's writer job (on reader_), shared with it.
  struct MarkerWrite {
    std::atomic<uint64_t> latest{0};
    std::atomic<bool> queued{false};
  };
  std::shared_ptr<MarkerWrite> marker_ = std::make_shared<MarkerWrite>();
  // Batches up to here reached a store of the shard that was lost since.
  uint64_t lost_upto_ = 0;
  // The archive's last day, asked once a lost store's batches are re-sent
  // (outer nullopt: not asked yet; inner: the archive has no file).
  std::optional<std::optional<int64_t>> archived_through_;
  uint64_t losses_ = 0;  // stores lost, seen in this run: an archive answer is for the loss it was asked for
  bool poll_pending_ = false;
  uint64_t batches_sent_ = 0;  // attempts: a poll's answer is trusted only if none went out meanwhile
  // Keys of batches this run moved to late data (partly or wholly), until
  // the shard has them durable: a rewind re-reads the oplog's full batch.
  std::map<uint64_t, std::unordered_set<std::string>> moved_;
  uint64_t written_seq_ = 0;   // highest seq handed to this sender
  uint64_t recovered_seq_ = 0; // the oplog's last seq at start: an earlier process may have sent up to here
  uint64_t sent_seq_ = 0;      // highest seq sent in this run (an attempt answered 4xx excepted)
  struct Held {
    uint64_t applied = 0;          // this node's batches the shard really applied: up to here
    uint64_t shard_watermark = 0;  // what the shard claims
    int64_t since_unix = 0;
    bool from_marker = false;      // `applied` came from the marker file
  };
  Held held_;
  uint64_t replay_after_ = 0;  // oplog batches in (replay_after_, replay_until_] still to load
  uint64_t replay_until_ = 0;
  uint64_t replay_epoch_ = 0;  // raised by a rewind: loads for older ranges are dropped
  std::deque<BatchPtr> replay_;  // loaded from the oplog; sent before queue_
  std::deque<BatchPtr> queue_;   // committed in this run
  uint64_t queued_lines_ = 0;

  // Stats.
  uint64_t requests_ = 0;
  uint64_t failures_ = 0;
  uint64_t applied_ = 0;
  uint64_t duplicates_ = 0;
  uint64_t late_lines_ = 0;
  uint64_t lost_store_dropped_lines_ = 0;  // closed-day lines of batches re-sent after a store loss
  uint64_t rewinds_ = 0;
  uint64_t replayed_ = 0;
  uint64_t releases_ = 0;
  uint64_t held_polls_ = 0;  // watermark polls answered while held
  std::string last_error_;
};

// The seq a durable-shard-N marker file records: the highest seq the shard
// confirmed durable (0 when there is no file); nullopt when it is unreadable.
std::optional<uint64_t> ReadDurableMarker(const std::string& path);

}  // namespace clickatron::api
