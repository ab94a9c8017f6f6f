// The increment side of the API node: /incr -> validate -> expand -> combine
// per shard for one flush window -> oplog (durable) -> answer -> send.
//
// Flow of one flush window, all on the event loop except the oplog write:
//   1. /incr requests are validated whole (a bad line rejects its batch) and
//      their records added to the Combiner; the exchange waits.
//   2. The window closes as soon as the oplog writer is free and at least
//      flush_window_ms have passed since the previous window closed (at the
//      end of the current loop turn, so requests that arrived together share
//      it). Each shard's combined lines become one batch with its next seq.
//      So a hot counter costs at most one line per window, while an idle node
//      adds no waiting to a lone increment beyond its fsync.
//   3. The oplog writer thread appends the window's batches and fsyncs once.
//   4. Back on the loop: every client of the window gets its 200, and the
//      batches join their shard's send queue.
// While a commit runs, the next window keeps filling, so under load windows
// grow, combining improves, and there is one fsync per window.
// Before step 1, a request for a shard that is behind (or that older
// requests wait for) waits its turn: flow control, flow_queue.h.
#include "ingest/write_path.h"

#include <algorithm>
#include <strings.h>

#include <fmt/format.h>
#include <fmt/ranges.h>
#include <spdlog/spdlog.h>

#include "ingest/combiner.h"
#include "ingest/flow_queue.h"
#include "clickatron/gzip_file.h"
#include "clickatron/home_node.h"
#include "clickatron/http_args.h"
#include "clickatron/metrics_table.h"
#include "clickatron/serial_executor.h"
#include "ingest/idempotency_table.h"
#include "ingest/increment_parser.h"
#include "ingest/increment_records.h"
#include "ingest/keyed_request.h"
#include "ingest/late_data.h"
#include "ingest/late_files_http.h"
#include "ingest/line_protocol.h"
#include "ingest/oplog.h"
#include "ingest/shard_sender.h"
#include "ingest/statsd_door.h"
#include "ingest/write_door.h"
#include "query/fetch/archive_reader.h"

namespace clickatron::api {
namespace {

// A request body's Content-Encoding. Content codings are case-insensitive,
// and x-gzip is gzip (RFC 9110 section 8.4.1).
enum class BodyCoding { kIdentity, kGzip, kUnsupported };
BodyCoding BodyCodingOf(std::string_view encoding) {
  auto is = [&](std::string_view name) {
    return encoding.size() == name.size() && strncasecmp(encoding.data(), name.data(), name.size()) == 0;
  };
  if (encoding.empty() || is("identity")) return BodyCoding::kIdentity;
  if (is("gzip") || is("x-gzip")) return BodyCoding::kGzip;
  return BodyCoding::kUnsupported;
}

constexpr int64_t kLateSealAgeSeconds = 3600;
constexpr auto kHousekeepingPeriod = std::chrono::seconds(30);
// How often requests waiting for a shard's queue look again (a check of a
// few counters each: a request is parsed once, when it comes).
constexpr auto kResumeCheckPeriod = std::chrono::milliseconds(2);
// Bodies from this size on are parsed and expanded on the parse thread, so
// one 60 MB batch does not hold up every small request behind it (a 1-line
// /incr waited 3.9 s behind one); smaller ones are parsed on the loop, where
// the hand-over would cost more than the parse.
constexpr size_t kParseOffLoopBytes = 256 << 10;

bool HasIncrementArgs(const QueryArgs& args) {
  for (const auto& [k, v] : args.items()) {
    if (IsIncrementParameter(k)) return true;
  }
  return false;
}

class WritePathImpl : public WritePath {
 public:
  WritePathImpl(const DaemonContext& ctx, HttpServer& server, HttpClient& client, const Clock& clock)
      : ctx_(ctx),
        server_(server),
        client_(client),
        clock_(clock),
        shard_map_(ctx.cluster),
        shard_count_(static_cast<uint32_t>(shard_map_.slots())),
        max_batch_bytes_(std::clamp<size_t>(ctx.cluster.http.max_body_bytes / 2, 4096, 16u << 20)),
        combiner_(shard_count_),
        next_seq_(shard_count_, 0),
        committing_lines_(shard_count_, 0),
        parked_(shard_count_),
        keys_({.window_seconds = int64_t{ctx.cluster.api.idempotency_window_hours} * 3600,
               .max_keys = static_cast<size_t>(ctx.cluster.api.idempotency_max_keys)}),
        home_(ctx.cluster, ctx.member.name) {}

  ~WritePathImpl() override {
    *alive_ = false;
    parser_.reset();  // a parse in progress finishes; its answer finds *alive_ false
    statsd_.reset();
    senders_.clear();
    reader_.reset();  // replay loads use the oplog and late data
    if (oplog_) oplog_->Stop();
    late_.reset();
  }

  Status Init();
  std::vector<uint64_t> OplogHeads() const override { return next_seq_; }
  LateData& late() override { return *late_; }
  nlohmann::json StatsJson() const override;
  std::string StatsPrometheus() const override;

 private:
  struct Waiter {
    HttpExchangePtr ex;
    WriteDoor door;
    size_t increments;
    std::optional<KeyedRequest> key;  // its Idempotency-Key, in flight in keys_
  };

  // A request that waits for a shard's queue (flow control, flow_queue.h),
  // parsed and routed already.
  struct Parked {
    HttpExchangePtr ex;
    WriteDoor door;
    std::vector<RoutedRecord> records;
    size_t increments = 0;
    std::optional<KeyedRequest> key;
  };

  // /incr, /write and /api/v2/write: the same path after parsing.
  void HandleWrite(const HttpExchangePtr& ex, WriteDoor door);
  // Parses the request's increments, expanded and routed, into *records
  // (*increments of them). Any thread: `cache` is the caller's, and only
  // the exchange's parsed parts are read (its body and args; the headers
  // live in libevent's request, which only the loop may touch), so the
  // Content-Encoding header is read by the caller.
  // A compressed body is left inflated in *inflated.
  Status ParseRequest(const HttpExchange& ex, const std::string& content_encoding, WriteDoor door, HourCache* cache,
                      std::vector<RoutedRecord>* records, size_t* increments, std::string* inflated) const;
  // After the parse (on the loop): refused, or admitted.
  void Parsed(const HttpExchangePtr& ex, WriteDoor door, const Status& st, std::vector<RoutedRecord>& records,
              size_t increments, std::optional<KeyedRequest>& key);
  // A keyed request whose key lives on another API node goes there
  // (clickatron/home_node.h). True when it was relayed (or refused: a request
  // relayed here whose key's home is another node).
  bool RelayedToHome(const HttpExchangePtr& ex, std::string_view idempotency_key);
  // Takes the routed records of one request (going to `shards`) into the
  // window, or parks the request (a shard it goes to is behind), or refuses
  // it (a queue is full). `resumed`: it waited already (counted once in
  // waited_requests).
  void Admit(const HttpExchangePtr& ex, WriteDoor door, std::vector<RoutedRecord>& records,
             std::vector<uint32_t> shards, size_t increments, std::optional<KeyedRequest>& key,
             std::chrono::steady_clock::time_point deadline, bool resumed);
  // statsd lines: taken into the window at once, or (a shard's queue is
  // full) not at all; nobody waits for an answer. False when refused.
  bool TakeUnanswered(const std::vector<Increment>& increments);
  // Looks the request's Idempotency-Key and digest (`keyed`; nullopt: no
  // key) up. False when it was answered here (a replay, reused, in flight);
  // true to go on, with *key set (and in flight) when it has one.
  bool BeginKeyed(const HttpExchangePtr& ex, WriteDoor door, std::optional<KeyedRequest> keyed,
                  std::optional<KeyedRequest>* key);
  // The request with `key` was answered without taking anything.
  void AbortKeyed(const std::optional<KeyedRequest>& key) {
    if (key) keys_.Abort(key->key);
  }
  // The shards `records` go to, ascending.
  std::vector<uint32_t> ShardsOf(const std::vector<RoutedRecord>& records) const;
  uint64_t QueuedLines(uint32_t shard) const {
    return senders_[shard]->queued_lines() + committing_lines_[shard] + combiner_.lines(shard);
  }
  // Whether the shard is behind: it is up (a shard that is down is not
  // waited for: the oplog keeps its lines) and has the mark's lines waiting.
  bool Behind(uint32_t shard) const;
  void ResumeParked();
  void HandleSeal(const HttpExchangePtr& ex);
  void ArmWindow(std::chrono::microseconds delay);
  void MaybeFlush(bool from_timer);
  void Flush(bool force);
  void OnCommitted(const std::vector<BatchPtr>& batches, const std::vector<Waiter>& waiters, const Status& st);
  // The archive's last day (nullopt: no file yet), from the manifests of
  // archive shard 0's replicas (from `replica` on; `best` so far): the one
  // serving the newest generation. Unavailable if none answers.
  void AskArchiveLastDay(size_t replica, std::optional<ArchiveView> best,
                         std::function<void(Result<std::optional<int64_t>>)> done);
  // A stop began (the server's drain): parked requests are refused, the
  // window goes to the oplog, and `drained` runs once every commit is done
  // and its clients answered.
  void DrainForStop(std::function<void()> drained);
  void NotifyIfDrained();
  std::function<void(std::function<void()>)> Poster() {
    return [server = &server_](std::function<void()> fn) { server->RunInLoop(std::move(fn)); };
  }
  // Runs fn on the loop only while *this lives.
  template <typename Fn>
  auto Guarded(Fn fn) {
    return [alive = std::weak_ptr<bool>(alive_), fn = std::move(fn)](auto&&... args) mutable {
      if (auto a = alive.lock(); a && *a) fn(std::forward<decltype(args)>(args)...);
    };
  }

  DaemonContext ctx_;
  HttpServer& server_;
  HttpClient& client_;
  const Clock& clock_;  // the default hour of an increment, the oplog's retention
  const RealtimeShardMap shard_map_;  // which shard each record goes to
  const uint32_t shard_count_;        // realtime members sent to (slots)
  // Largest batch (one POST to a shard): well under the shards' body limit.
  const size_t max_batch_bytes_;
  std::shared_ptr<bool> alive_ = std::make_shared<bool>(true);

  // Destroyed in reverse: senders, then the reader thread, then late data
  // and the oplog they use.
  std::unique_ptr<Oplog> oplog_;
  std::unique_ptr<LateData> late_;
  std::unique_ptr<SerialExecutor> reader_;
  std::vector<std::shared_ptr<ShardSender>> senders_;
  std::unique_ptr<StatsdDoor> statsd_;  // off unless the member sets statsd_udp or statsd_tcp
  // Big bodies are parsed here (kParseOffLoopBytes); first destroyed.
  std::unique_ptr<SerialExecutor> parser_ = std::make_unique<SerialExecutor>("ingest-parse");
  HourCache parser_hour_cache_;  // the parse thread's
  size_t parses_in_flight_ = 0;
  size_t relays_in_flight_ = 0;  // requests relayed to their key's home, not answered yet

  Combiner combiner_;
  std::vector<uint64_t> next_seq_;          // per shard: the last seq given out
  std::vector<uint64_t> committing_lines_;  // per shard: lines in commits not yet done
  std::vector<Waiter> waiters_;             // clients of the window being filled
  std::vector<RoutedRecord> scratch_;
  FlowQueue<Parked> parked_;
  IdempotencyTable keys_;
  const HomeNode home_;
  const FlowQueue<Parked>::Behind behind_ = [this](uint32_t shard) { return Behind(shard); };
  bool resume_armed_ = false;
  HourCache hour_cache_;
  bool window_armed_ = false;
  // Commits handed to the oplog and not yet answered: one at a time, but a
  // forced flush (the stop) may start one while another is out.
  size_t commits_in_flight_ = 0;
  std::function<void()> stop_drained_;  // set while a stop waits for the commits
  std::chrono::steady_clock::time_point last_flush_{};

  // Stats.
  uint64_t incr_requests_ = 0;
  uint64_t increments_in_ = 0;
  uint64_t records_in_ = 0;
  uint64_t records_out_ = 0;
  uint64_t batches_out_ = 0;
  uint64_t rejected_invalid_ = 0;
  uint64_t rejected_overloaded_ = 0;
  uint64_t waited_requests_ = 0;
  uint64_t commit_errors_ = 0;
  uint64_t influx_requests_ = 0;
  uint64_t parsed_off_loop_ = 0;
  uint64_t rejected_too_large_ = 0;
  uint64_t relayed_to_home_ = 0;
  uint64_t home_unavailable_ = 0;
};

Status WritePathImpl::Init() {
  const ApiConfig& cfg = ctx_.cluster.api;
  if (shard_count_ < 1) return Status::InvalidArgument("cluster.realtime_shards must be at least 1");
  auto sync = ParseSyncPolicy(cfg.oplog_sync);
  if (!sync.ok()) return sync.status();
  if (ctx_.member.data_dir.empty()) return Status::InvalidArgument(fmt::format("member {} has no data_dir", ctx_.member.name));

  OplogOptions o;
  o.dir = ctx_.member.data_dir + "/oplog";
  o.source = ctx_.member.name;
  o.shard_count = shard_count_;
  o.sync = *sync;
  o.sync_interval_ms = cfg.oplog_sync_interval_ms;
  o.segment_bytes = cfg.oplog_segment_bytes;
  // The oplog's commit frames are the durable copy of the idempotency keys.
  o.retention_hours = std::max(cfg.oplog_retention_hours, cfg.idempotency_window_hours);
  o.clock = &clock_;
  // What each shard confirmed durable (its marker file): a damaged segment
  // holding nothing above it is set aside instead of stopping the node.
  for (uint32_t s = 0; s < shard_count_; ++s) {
    o.acknowledged_seq.push_back(
        ReadDurableMarker(fmt::format("{}/durable-shard-{}", ctx_.member.data_dir, s)).value_or(0));
  }
  if (cfg.fault_injection) {
    o.fault_dir = ctx_.member.data_dir + "/fault";
    spdlog::warn("fault injection is on: files in {} stall the oplog", o.fault_dir);
  }
  auto oplog = Oplog::Open(std::move(o), Poster());
  if (!oplog.ok()) return oplog.status();
  oplog_ = std::move(oplog).value();
  const int64_t now = static_cast<int64_t>(std::time(nullptr));
  for (auto& [k, unix] : oplog_->TakeRecoveredKeys()) keys_.Restore(k.key, k.digest, k.increments, unix, now);
  if (keys_.size() > 0) spdlog::info("write path: {} idempotency keys restored from the oplog", keys_.size());

  auto late = LateData::Open(ctx_.member.data_dir + "/late", ctx_.member.name, Poster());
  if (!late.ok()) return late.status();
  late_ = std::move(late).value();
  reader_ = std::make_unique<SerialExecutor>("oplog-replay");

  next_seq_ = oplog_->recovered_last_seq();
  for (uint32_t s = 0; s < shard_count_; ++s) {
    const MemberConfig* member = ctx_.cluster.RealtimeMember(static_cast<int>(s));
    if (member == nullptr) return Status::InvalidArgument(fmt::format("no realtime member serves shard {}", s));
    ShardSender::Options so;
    so.shard = s;
    so.member = member->name;
    so.peer = member->listen;
    so.source = ctx_.member.name;
    so.request_timeout_ms = cfg.request_timeout_ms;
    so.backoff_min_ms = cfg.retry_backoff_min_ms;
    so.backoff_max_ms = std::max(cfg.retry_backoff_max_ms, cfg.retry_backoff_min_ms);
    so.replay_chunk_lines = std::max<uint64_t>(1000, cfg.max_queued_increments / 4);
    so.held_marker_path = fmt::format("{}/watermark-ahead-shard-{}.json", ctx_.member.data_dir, s);
    so.durable_marker_path = fmt::format("{}/durable-shard-{}", ctx_.member.data_dir, s);  // as read above
    so.archived_through = [this](std::function<void(Result<std::optional<int64_t>>)> done) {
      AskArchiveLastDay(0, std::nullopt, std::move(done));
    };
    senders_.push_back(std::make_shared<ShardSender>(so, server_, client_, *oplog_, *late_, *reader_));
  }
  oplog_->SetDurableListener(Guarded([this] {
    for (auto& s : senders_) s->Pump();
  }));

  server_.Route("/incr", Guarded([this](const HttpExchangePtr& ex) { HandleWrite(ex, WriteDoor::kIncr); }),
                kGetOrPost | kUnsafeGet | kBoundedAnswers);
  // InfluxDB line protocol, as Influx 2 and Influx 1 clients send it.
  RegisterInfluxRefusalBodies();
  for (const char* path : {"/api/v2/write", "/write"}) {
    server_.Route(path, Guarded([this](const HttpExchangePtr& ex) { HandleWrite(ex, WriteDoor::kInflux); }),
                  kPost | kBoundedAnswers);
  }
  if (ctx_.member.statsd_udp || ctx_.member.statsd_tcp) {
    auto statsd = StatsdDoor::Open(
        server_.base(), ctx_.member.statsd_udp, ctx_.member.statsd_tcp,
        [this] {
          IncrementLimits limits;
          limits.now = clock_.NowUnixSeconds();
          limits.future_margin_hours = ctx_.cluster.api.future_margin_hours;
          return limits;
        },
        [this](const std::vector<Increment>& increments) { return TakeUnanswered(increments); });
    if (!statsd.ok()) return statsd.status();
    statsd_ = std::move(statsd).value();
  }
  server_.AdminRoute("/late/seal", Guarded([this](const HttpExchangePtr& ex) { HandleSeal(ex); }), kPost);
  // The rebuild fetches sealed late files over HTTP (late_files_http.h).
  server_.AdminRoute(
      "/late/files", Guarded([this](const HttpExchangePtr& ex) { HandleLateFiles(ex, *late_, alive_); }), kGet);
  server_.AdminRoute(
      "/late/file", Guarded([this](const HttpExchangePtr& ex) { HandleLateFile(ex, *late_, alive_); }), kGet);
  server_.AdminRoute(
      "/late/done", Guarded([this](const HttpExchangePtr& ex) { HandleLateDone(ex, *late_, alive_); }), kPost);
  server_.Every(kHousekeepingPeriod, Guarded([this] {
    oplog_->CollectGarbage();
    late_->SealIfOlder(kLateSealAgeSeconds);
  }));
  // On SIGTERM: what is combined but not yet logged goes to the oplog, and
  // its clients are answered once it is durable there, before the node
  // exits: a client that got no answer would send again what was taken.
  server_.OnStopDrain(Guarded([this](std::function<void()> drained) { DrainForStop(std::move(drained)); }));
  // After the drain (or when the loop ended otherwise, or the drain ran out
  // of time): whatever is still combined goes to the oplog unanswered, so
  // nothing taken is lost.
  server_.OnStop(Guarded([this] {
    Flush(true);
    oplog_->Stop();
  }));
  for (uint32_t s = 0; s < shard_count_; ++s) senders_[s]->Start(next_seq_[s]);
  spdlog::info("write path: {} realtime shards, oplog sync {}, flush window {} ms, last seqs recovered [{}]",
               shard_count_, cfg.oplog_sync, cfg.flush_window_ms, fmt::join(next_seq_, ", "));
  return Status::Ok();
}

bool WritePathImpl::Behind(uint32_t shard) const {
  const uint64_t mark = ctx_.cluster.api.queue_wait_increments;
  return mark > 0 && senders_[shard]->up() && QueuedLines(shard) >= mark;
}

std::vector<uint32_t> WritePathImpl::ShardsOf(const std::vector<RoutedRecord>& records) const {
  std::vector<bool> touched(shard_count_, false);
  for (const RoutedRecord& r : records) touched[r.shard] = true;
  std::vector<uint32_t> shards;
  for (uint32_t s = 0; s < shard_count_; ++s) {
    if (touched[s]) shards.push_back(s);
  }
  return shards;
}

void WritePathImpl::ResumeParked() {
  resume_armed_ = false;
  // Oldest first; one admitted may park again (at the back, so the order
  // holds). A check of a few counters per request and turn: it was parsed
  // once, when it came.
  parked_.Resume(
      std::chrono::steady_clock::now(), behind_,
      [&](Parked& p, std::vector<uint32_t>& shards, std::chrono::steady_clock::time_point deadline) {
        Admit(p.ex, p.door, p.records, std::move(shards), p.increments, p.key, deadline, /*resumed=*/true);
      },
      [&](Parked& p) {
        ++rejected_overloaded_;
        AbortKeyed(p.key);
        p.ex->AddHeader("Retry-After", "1");
        p.ex->ReplyError(503, "OVERLOADED",
                     fmt::format("realtime shards stayed above {} lines waiting for {} ms; nothing of this "
                                     "request was taken; retry later",
                                     ctx_.cluster.api.queue_wait_increments, ctx_.cluster.api.queue_wait_ms));
      });
  if (!parked_.empty() && !resume_armed_) {
    resume_armed_ = true;
    server_.After(kResumeCheckPeriod, Guarded([this] { ResumeParked(); }));
  }
}

bool WritePathImpl::BeginKeyed(const HttpExchangePtr& ex, WriteDoor door, std::optional<KeyedRequest> keyed,
                              std::optional<KeyedRequest>* key) {
  if (!keyed) return true;
  const IdempotencyTable::Lookup found =
      keys_.Begin(keyed->key, keyed->digest, static_cast<int64_t>(std::time(nullptr)));
  switch (found.verdict) {
    case IdempotencyTable::Verdict::kNew:
      *key = std::move(keyed);
      return true;
    case IdempotencyTable::Verdict::kReplay:
      ReplyTaken(*ex, door, found.increments, /*replayed=*/true);
      return false;
    case IdempotencyTable::Verdict::kReused:
      ex->ReplyError(422, "IDEMPOTENCY_KEY_REUSED",
                   "this Idempotency-Key was used for another request (method, query or body differ); nothing "
                   "was counted");
      return false;
    case IdempotencyTable::Verdict::kInFlight:
      ex->AddHeader("Retry-After", "1");
      ex->ReplyError(409, "IDEMPOTENCY_KEY_IN_FLIGHT",
                   "the first request with this Idempotency-Key is still being made durable; nothing was counted "
                   "now: retry to get its answer");
      return false;
  }
  return false;
}

bool WritePathImpl::RelayedToHome(const HttpExchangePtr& ex, std::string_view idempotency_key) {
  if (home_.nodes() <= 1) return false;
  std::optional<HostPort> home = home_.HomeOf(idempotency_key);
  if (!home) return false;  // this node is the key's home
  if (!ex->header(kRelayedFromHeader).empty()) {
    // Relayed here, yet the key's home is another node: the nodes' cluster
    // files disagree (relayed on, it could go round for ever), or a client
    // set the header itself, which would have the key remembered here as
    // well as at its home, and a retry there counted again.
    ++rejected_invalid_;
    ex->ReplyError(421, "NOT_THE_KEYS_HOME",
                 fmt::format("this request says it was relayed to its Idempotency-Key's home, but the key's home is "
                             "{} (the API nodes' cluster files differ, or {} was sent by a client); nothing was "
                             "counted",
                             home->ToString(), kRelayedFromHeader));
    return true;
  }
  ++relayed_to_home_;
  ++relays_in_flight_;
  // The home may make the request wait for a shard (queue_wait_ms) before
  // its commit: the relay waits as long, and a request's time on top.
  const int timeout_ms = ctx_.cluster.api.queue_wait_ms + ctx_.cluster.api.request_timeout_ms;
  HomeNode::Unanswered unanswered{"IDEMPOTENCY_HOME_DOWN",
                                   "this Idempotency-Key's home API node did not answer; nothing was counted here: "
                                   "retry later with the same key"};
  home_.Relay(ex, *home, client_, timeout_ms, std::move(unanswered), Guarded([this](bool answered) {
    if (!answered) ++home_unavailable_;
    --relays_in_flight_;
    NotifyIfDrained();  // a stop waits for the home's answer to reach its client
  }));
  return true;
}

Status WritePathImpl::ParseRequest(const HttpExchange& ex, const std::string& encoding, WriteDoor door,
                                   HourCache* cache, std::vector<RoutedRecord>* records, size_t* increments,
                                   std::string* inflated) const {
  IncrementLimits limits;
  limits.now = clock_.NowUnixSeconds();
  limits.future_margin_hours = ctx_.cluster.api.future_margin_hours;
  records->clear();
  *increments = 0;
  std::string_view body = ex.body();
  // A gzip body is inflated (Influx clients send them).
  switch (BodyCodingOf(encoding)) {
    case BodyCoding::kIdentity:
      break;
    case BodyCoding::kGzip: {
      Result<std::string> gunzipped = GunzipBuffer(body, ctx_.cluster.http.max_body_bytes);
      if (!gunzipped.ok()) return gunzipped.status();
      *inflated = std::move(gunzipped).value();
      body = *inflated;
      break;
    }
    case BodyCoding::kUnsupported:
      return Status::InvalidArgument(fmt::format("Content-Encoding {} is not taken (gzip or identity)", encoding),
                                     "UNSUPPORTED_ENCODING");
  }
  // The records one request may expand to are bounded (64 subtotals and a
  // visitor each make one increment many records): past the bound the rest
  // is not expanded, and the request is refused whole.
  bool too_many = false;
  const auto take = [&](const Increment& inc) {
    ++*increments;
    if (too_many) return;
    ExpandIncrement(inc, shard_map_, records);
    if (records->size() > kMaxRecordsPerRequest) too_many = true;
  };
  Status st;
  if (door == WriteDoor::kInflux) {
    auto precision = InfluxWritePrecision(ex.args());
    if (!precision.ok()) return precision.status();
    st = ParseLineProtocol(body, *precision, limits, cache, take);
  } else if (!body.empty()) {
    if (HasIncrementArgs(ex.args())) {
      return Status::InvalidArgument("send one increment in the query string or a batch in the body, not both");
    }
    // A batch's increments are its body's lines.
    CLICKATRON_RETURN_IF_ERROR(OnlyKnownArgs(ex.args(), {"_"}, "the query string of POST /incr with a body"));
    st = ParseIncrementBatch(body, limits, ctx_.cluster.http.max_query_args, take);
  } else {
    Increment inc;
    if (Status parsed = ParseIncrement(ex.args(), limits, cache, &inc); !parsed.ok()) {
      // A POST's body is read only with a length (RFC 9112 6.3): one sent
      // without, its increments missing from the query string, hears why.
      if (ex.method() == "POST" && !HasIncrementArgs(ex.args()) && ex.header("Content-Length").empty() &&
          ex.header("Transfer-Encoding").empty()) {
        return Status(parsed.code(),
                      parsed.message() +
                          " (this POST had neither a Content-Length nor Transfer-Encoding: chunked, so no body was "
                          "read; send its length)",
                      parsed.reason());
      }
      return parsed;
    }
    take(inc);
  }
  if (st.ok() && too_many) {
    records->clear();
    return Status(StatusCode::kOutOfRange,
                  fmt::format("the request's {} increments expand to more than {} records (a total, each subtotal and "
                              "each visitor is one); send it in smaller batches",
                              *increments, kMaxRecordsPerRequest),
                  "TOO_MANY_RECORDS");
  }
  return st;
}

void WritePathImpl::HandleWrite(const HttpExchangePtr& ex, WriteDoor door) {
  ++incr_requests_;
  if (door == WriteDoor::kInflux) ++influx_requests_;
  if (oplog_->failed()) {
    ex->AddHeader("Retry-After", "60");
    ex->ReplyError(503, "OPLOG_FAILED",
                 "the oplog could not be synced to disk; this API node takes no increments");
    return;
  }
  Result<std::optional<std::string>> idempotency_key = ReadIdempotencyKey(*ex);
  if (!idempotency_key.ok()) {
    ++rejected_invalid_;
    ex->ReplyError(400, idempotency_key.status().reason(), idempotency_key.status().message());
    return;
  }
  // The home answers in the door's own shape.
  if (*idempotency_key && RelayedToHome(ex, **idempotency_key)) return;
  std::string encoding = ex->header("Content-Encoding");
  // A compressed body's size says little of what it inflates to, and its
  // key is looked up once it is inflated (RequestDigest); any other body's
  // at once, before it is parsed.
  const bool compressed = BodyCodingOf(encoding) != BodyCoding::kIdentity;
  std::optional<KeyedRequest> key;
  if (!compressed && *idempotency_key &&
      !BeginKeyed(ex, door, KeyedRequest{std::move(**idempotency_key), RequestDigest(*ex, ex->body())}, &key)) {
    return;
  }
  if (!compressed && ex->body().size() < kParseOffLoopBytes) {
    size_t increments = 0;
    std::string unused;
    Status st = ParseRequest(*ex, encoding, door, &hour_cache_, &scratch_, &increments, &unused);
    Parsed(ex, door, st, scratch_, increments, key);
    return;
  }
  // A big body: parsed on the parse thread while the loop serves the rest.
  ++parses_in_flight_;
  ++parsed_off_loop_;
  parser_->Post([this, ex, encoding = std::move(encoding), door, key = std::move(key), compressed,
                 idempotency_key = compressed ? std::move(*idempotency_key) : std::optional<std::string>()]() mutable {
    auto records = std::make_shared<std::vector<RoutedRecord>>();
    size_t increments = 0;
    std::string inflated;
    Status st = ParseRequest(*ex, encoding, door, &parser_hour_cache_, records.get(), &increments, &inflated);
    // A compressed body's digest, of what it inflated to, is taken here, off
    // the loop, as its parse is; the inflated body is not carried back.
    std::optional<KeyedRequest> keyed;
    if (compressed && st.ok() && idempotency_key) {
      keyed = KeyedRequest{std::move(*idempotency_key), RequestDigest(*ex, inflated)};
    }
    // The exchange moves into the loop's job: it is let go on the loop.
    server_.RunInLoop(Guarded([this, ex = std::move(ex), door, st = std::move(st), records, increments,
                               key = std::move(key), keyed = std::move(keyed)]() mutable {
      --parses_in_flight_;
      if (stop_drained_) {
        AbortKeyed(key);
        ex->AddHeader("Retry-After", "1");
        ex->ReplyError(503, "STOPPING", "the API node is stopping; nothing of this request was taken; retry");
        NotifyIfDrained();
        return;
      }
      if (keyed && !BeginKeyed(ex, door, std::move(keyed), &key)) return;
      Parsed(ex, door, st, *records, increments, key);
    }));
  });
}

void WritePathImpl::Parsed(const HttpExchangePtr& ex, WriteDoor door, const Status& st,
                           std::vector<RoutedRecord>& records, size_t increments, std::optional<KeyedRequest>& key) {
  if (!st.ok()) {
    const bool too_large = st.reason() == "BODY_TOO_LARGE" || st.reason() == "TOO_MANY_RECORDS";
    ++(too_large ? rejected_too_large_ : rejected_invalid_);
    AbortKeyed(key);
    ex->ReplyError(too_large ? 413 : 400, st.reason(), st.message());
    return;
  }
  if (increments == 0) {
    AbortKeyed(key);
    ReplyTaken(*ex, door, 0, /*replayed=*/false);
    return;
  }
  Admit(ex, door, records, ShardsOf(records), increments, key,
        std::chrono::steady_clock::now() + std::chrono::milliseconds(ctx_.cluster.api.queue_wait_ms),
        /*resumed=*/false);
}

bool WritePathImpl::TakeUnanswered(const std::vector<Increment>& increments) {
  if (oplog_->failed() || stop_drained_) return false;
  scratch_.clear();
  for (const Increment& inc : increments) ExpandIncrement(inc, shard_map_, &scratch_);
  const uint64_t max_queued = ctx_.cluster.api.max_queued_increments;
  for (const uint32_t s : ShardsOf(scratch_)) {
    if (QueuedLines(s) >= max_queued) {
      ++rejected_overloaded_;
      return false;
    }
  }
  records_in_ += scratch_.size();
  increments_in_ += increments.size();
  for (RoutedRecord& r : scratch_) combiner_.Add(std::move(r));
  if (commits_in_flight_ == 0) MaybeFlush(false);
  return true;
}

void WritePathImpl::Admit(const HttpExchangePtr& ex, WriteDoor door, std::vector<RoutedRecord>& records,
                          std::vector<uint32_t> shards, size_t increments, std::optional<KeyedRequest>& key,
                          std::chrono::steady_clock::time_point deadline, bool resumed) {
  // Back-pressure: a shard that is down keeps its batches queued (and in the
  // oplog); past max_queued_increments lines, refuse rather than grow. A
  // shard that is up but behind makes the request wait (flow control).
  const uint64_t max_queued = ctx_.cluster.api.max_queued_increments;
  for (const uint32_t s : shards) {
    const uint64_t queued = QueuedLines(s);
    if (queued >= max_queued) {
      ++rejected_overloaded_;
      AbortKeyed(key);
      ex->AddHeader("Retry-After", "1");
      ex->ReplyError(503, "OVERLOADED",
                   fmt::format("realtime shard {} has {} lines waiting (limit {}); retry later", s, queued,
                               max_queued));
      return;
    }
  }
  if (parked_.MustWait(shards, behind_)) {
    if (!resumed) ++waited_requests_;
    parked_.Park(Parked{ex, door, std::move(records), increments, std::move(key)}, std::move(shards), behind_,
                 deadline);
    records.clear();  // moved from: left valid and empty for the next request
    if (!resume_armed_) {
      resume_armed_ = true;
      server_.After(kResumeCheckPeriod, Guarded([this] { ResumeParked(); }));
    }
    return;
  }
  records_in_ += records.size();
  increments_in_ += increments;
  for (RoutedRecord& r : records) combiner_.Add(std::move(r));
  waiters_.push_back(Waiter{ex, door, increments, std::move(key)});
  // While a commit runs, its completion flushes this window (MaybeFlush).
  if (commits_in_flight_ == 0) MaybeFlush(false);
}

void WritePathImpl::ArmWindow(std::chrono::microseconds delay) {
  if (window_armed_) return;
  window_armed_ = true;
  server_.After(delay, Guarded([this] {
    window_armed_ = false;
    MaybeFlush(true);
  }));
}

void WritePathImpl::MaybeFlush(bool from_timer) {
  if (combiner_.empty() || commits_in_flight_ > 0) return;
  // The timer was armed for the rest of the window: when it fires, the
  // window is over (After() never runs a callback early).
  if (from_timer) {
    Flush(false);
    return;
  }
  const auto window = std::chrono::milliseconds(ctx_.cluster.api.flush_window_ms);
  const auto since = std::chrono::steady_clock::now() - last_flush_;
  if (since < window) {
    ArmWindow(std::chrono::ceil<std::chrono::microseconds>(window - since));
  } else {
    // Close on the next loop turn: requests handled in this one join it.
    ArmWindow(std::chrono::microseconds(0));
  }
}

void WritePathImpl::Flush(bool force) {
  if (combiner_.empty()) return;
  if (commits_in_flight_ > 0 && !force) return;
  last_flush_ = std::chrono::steady_clock::now();
  std::vector<BatchPtr> batches;
  for (uint32_t s = 0; s < shard_count_; ++s) {
    if (combiner_.lines(s) == 0) continue;
    Combiner::Lines lines = combiner_.Take(s);
    records_out_ += lines.count;
    committing_lines_[s] += lines.count;
    // A huge window (one enormous POST) is cut at line ends into batches a
    // shard accepts as one request body; each gets its own seq.
    std::string_view text = lines.text;
    while (!text.empty()) {
      size_t cut = text.size();
      if (cut > max_batch_bytes_) {
        cut = text.rfind('\n', max_batch_bytes_ - 1);
        cut = cut == std::string_view::npos ? text.find('\n') + 1 : cut + 1;
      }
      auto b = std::make_shared<OplogBatch>();
      b->shard = s;
      b->seq = ++next_seq_[s];
      const bool whole = cut == lines.text.size();  // the usual case: no copy
      b->lines = whole ? std::move(lines.text) : std::string(text.substr(0, cut));
      b->line_count = static_cast<size_t>(std::count(b->lines.begin(), b->lines.end(), '\n'));
      text.remove_prefix(std::min(cut, text.size()));
      ++batches_out_;
      batches.push_back(std::move(b));
    }
  }
  ++commits_in_flight_;
  std::vector<Waiter> waiters;
  waiters.swap(waiters_);
  // The keys of this commit's requests go into its commit frame: durable
  // exactly when their increments are.
  std::vector<CommittedKey> keys;
  for (const Waiter& w : waiters) {
    if (w.key) keys.push_back(CommittedKey{w.key->key, w.key->digest, w.increments});
  }
  oplog_->Commit(batches, std::move(keys), Guarded([this, batches, waiters = std::move(waiters)](Status st) {
    OnCommitted(batches, waiters, st);
  }));
}

void WritePathImpl::AskArchiveLastDay(size_t replica, std::optional<ArchiveView> best,
                                      std::function<void(Result<std::optional<int64_t>>)> done) {
  const std::vector<const MemberConfig*> replicas = ctx_.cluster.ArchiveReplicas(0);
  if (replica >= replicas.size()) {
    if (!best) {
      done(Status::Unavailable("no replica of archive shard 0 answered GET /manifest", "SHARD_UNAVAILABLE"));
    } else {
      done(std::optional<int64_t>(best->last_day));
    }
    return;
  }
  HttpRequestSpec spec;
  spec.target = "/manifest?shard=0";
  spec.timeout_ms = ctx_.cluster.api.request_timeout_ms;
  client_.Send(replicas[replica]->listen, std::move(spec),
               Guarded([this, replica, best, done = std::move(done)](HttpResponse r) mutable {
                 if (r.ok() && r.status_code == 200) {
                   // Every replica is asked and the newest generation wins: a
                   // replica that lags, or lost its file, would understate how
                   // far the archive reaches, and lines of days it does reach
                   // would go to late data (counted twice).
                   Result<ArchiveView> view = ParseArchiveView(r);
                   if (view.ok() && (!best || view->generation > best->generation)) best = *view;
                 }
                 AskArchiveLastDay(replica + 1, std::move(best), std::move(done));
               }));
}

void WritePathImpl::OnCommitted(const std::vector<BatchPtr>& batches, const std::vector<Waiter>& waiters,
                                const Status& st) {
  --commits_in_flight_;
  for (const BatchPtr& b : batches) committing_lines_[b->shard] -= b->line_count;
  if (st.ok()) {
    const int64_t now = static_cast<int64_t>(std::time(nullptr));
    for (const Waiter& w : waiters) {
      // Remembered whether or not its client is still there: a client that
      // timed out retries, and must get this answer, not a second count.
      if (w.key) keys_.Complete(w.key->key, w.increments, now);
      if (w.ex->alive()) ReplyTaken(*w.ex, w.door, w.increments, /*replayed=*/false);
    }
  } else {
    ++commit_errors_;
    // Every failure is "try again later" for a client: 503 with
    // Retry-After. OPLOG_FAILED (the node must be restarted; the requests
    // then in flight may or may not count: retry them with their key) and
    // OPLOG_REFUSED keep their reasons; an append that failed and was cut
    // back out (a full disk) took nothing: OPLOG_UNAVAILABLE.
    const bool node_failed = st.reason() == "OPLOG_FAILED" || st.reason() == "OPLOG_REFUSED";
    for (const Waiter& w : waiters) {
      if (st.reason() != "OPLOG_FAILED") AbortKeyed(w.key);
      if (!w.ex->alive()) continue;
      w.ex->AddHeader("Retry-After", node_failed ? "60" : "1");
      w.ex->ReplyError(503, node_failed ? st.reason() : "OPLOG_UNAVAILABLE",
                   "the oplog could not take these increments: " + st.message());
    }
  }
  // A failed commit is not in the oplog (cut back out), or, after a failed
  // fsync or cut, in an unknown state that only a restart's replay settles
  // (its clients were told OPLOG_FAILED): either way nothing is sent now.
  if (st.ok()) {
    for (const BatchPtr& b : batches) senders_[b->shard]->Enqueue(b);
  }
  MaybeFlush(false);
  NotifyIfDrained();
}

void WritePathImpl::DrainForStop(std::function<void()> drained) {
  // Nothing of a parked request was taken: refused as it would be after
  // its wait, so the client sends it again (elsewhere, or after the restart).
  parked_.RefuseAll([this](Parked& p) {
    AbortKeyed(p.key);
    p.ex->AddHeader("Retry-After", "1");
    p.ex->ReplyError(503, "STOPPING", "the API node is stopping; nothing of this request was taken; retry");
  });
  stop_drained_ = std::move(drained);
  Flush(true);
  NotifyIfDrained();
}

void WritePathImpl::NotifyIfDrained() {
  if (!stop_drained_ || commits_in_flight_ > 0 || parses_in_flight_ > 0 || relays_in_flight_ > 0 ||
      !combiner_.empty()) {
    return;
  }
  auto drained = std::move(stop_drained_);
  stop_drained_ = nullptr;
  drained();
}

void WritePathImpl::HandleSeal(const HttpExchangePtr& ex) {
  if (!OnlyArgs(ex, {})) return;
  late_->Seal(Guarded([ex](Result<std::vector<std::string>> sealed) {
    if (!sealed.ok()) {
      ex->ReplyError(sealed.status());
      return;
    }
    ex->ReplyJson({{"sealed", *sealed}});
  }));
}

nlohmann::json WritePathImpl::StatsJson() const {
  nlohmann::json shards = nlohmann::json::array();
  for (const auto& s : senders_) shards.push_back(s->StatsJson());
  nlohmann::json w = {
      {"incr_requests", incr_requests_},
      {"increments_in", increments_in_},
      {"records_in", records_in_},
      {"records_out", records_out_},
      {"batches_out", batches_out_},
      {"combining_ratio", records_out_ ? static_cast<double>(records_in_) / static_cast<double>(records_out_) : 0.0},
      {"rejected_invalid", rejected_invalid_},
      {"rejected_overloaded", rejected_overloaded_},
      {"waiting_requests", parked_.size()},
      {"waited_requests", waited_requests_},
      {"commit_errors", commit_errors_},
      {"influx_requests", influx_requests_},
      {"parsed_off_loop", parsed_off_loop_},
      {"rejected_too_large", rejected_too_large_},
      {"late_lines_written", late_->lines_written()},
      {"late_frames_written", late_->frames_written()},
      {"oplog", oplog_->StatsJson()},
      {"idempotency",
       {{"keys", keys_.size()},
        {"keys_in_flight", keys_.in_flight()},
        {"bytes", keys_.bytes()},
        {"max_keys", keys_.options().max_keys},
        {"window_seconds", keys_.options().window_seconds},
        {"replays", keys_.counters().replays},
        {"reused", keys_.counters().reused},
        {"in_flight_refusals", keys_.counters().in_flight_refusals},
        {"expired", keys_.counters().expired},
        {"evicted", keys_.counters().evicted},
        {"restored", keys_.counters().restored},
        {"relayed_to_home", relayed_to_home_},
        {"home_unavailable", home_unavailable_}}},
      {"statsd", statsd_ ? statsd_->StatsJson() : StatsdDoor::OffStatsJson()},
      {"shards", std::move(shards)},
  };
  return nlohmann::json{{"write", std::move(w)}};
}

// /metrics is rendered from the /stats JSON by this table (metrics_table.h):
// every figure of /stats' "write" object has its row, so the two views cannot
// drift. Left out, not being figures: oplog.sync (a setting),
// shards[].member, shards[].peer, shards[].last_error (text; the shard
// number labels every per-shard sample) and shards[].state (text:
// clickatron_api_shard_up{state=…} below says it).
constexpr MetricRow kMetricRows[] = {
    {"/write/incr_requests", "clickatron_api_incr_requests_total", "counter",
     "Increment requests (GET or POST /incr)."},
    {"/write/increments_in", "clickatron_api_increments_total", "counter",
     "Increments accepted (answered or about to be)."},
    {"/write/records_in", "clickatron_api_records_in_total", "counter",
     "Records expanded from increments, before combining."},
    {"/write/records_out", "clickatron_api_records_out_total", "counter", "Combined lines written to the oplog."},
    {"/write/batches_out", "clickatron_api_batches_out_total", "counter", "Per-shard batches written to the oplog."},
    {"/write/combining_ratio", "clickatron_api_combining_ratio", "gauge",
     "Records in per combined line out, since start (0 before the first)."},
    {"/write/rejected_invalid", "clickatron_api_rejected_invalid_total", "counter",
     "Increment requests refused with a 400."},
    {"/write/rejected_overloaded", "clickatron_api_rejected_overloaded_total", "counter",
     "Increment requests refused with 503 OVERLOADED."},
    {"/write/waiting_requests", "clickatron_api_waiting_requests", "gauge",
     "Increment requests waiting for a realtime shard's queue to fall below queue_wait_increments."},
    {"/write/waited_requests", "clickatron_api_waited_requests_total", "counter",
     "Increment requests that had to wait for a realtime shard's queue (flow control)."},
    {"/write/commit_errors", "clickatron_api_commit_errors_total", "counter",
     "Flush windows whose oplog commit failed (their increments answered with an error)."},
    {"/write/parsed_off_loop", "clickatron_api_parsed_off_loop_total", "counter",
     "Write requests whose body (256 KiB or more) was parsed off the event loop."},
    {"/write/rejected_too_large", "clickatron_api_rejected_too_large_total", "counter",
     "Write requests refused 413 (more than 100,000 increments, TOO_MANY_RECORDS, or a gzip body inflating past "
     "max_body_bytes)."},
    {"/write/influx_requests", "clickatron_api_influx_requests_total", "counter",
     "Line-protocol write requests (POST /api/v2/write and /write); also counted in incr_requests."},
    {"/write/late_lines_written", "clickatron_api_late_lines_total", "counter",
     "Lines moved to late data (DAY_NOT_OPEN)."},
    {"/write/late_frames_written", "clickatron_api_late_frames_total", "counter", "Frames appended to late data."},
    {"/write/idempotency/keys", "clickatron_api_idempotency_keys", "gauge",
     "Idempotency-Key values remembered (done and in flight)."},
    {"/write/idempotency/keys_in_flight", "clickatron_api_idempotency_keys_in_flight", "gauge",
     "Idempotency-Key values whose request's commit has not reported yet."},
    {"/write/idempotency/bytes", "clickatron_api_idempotency_bytes", "gauge",
     "Memory the remembered Idempotency-Key values hold, as counted by the table."},
    {"/write/idempotency/max_keys", "clickatron_api_idempotency_max_keys", "gauge",
     "The bound on remembered keys ([api] idempotency_max_keys)."},
    {"/write/idempotency/window_seconds", "clickatron_api_idempotency_window_seconds", "gauge",
     "How long a key is remembered after its commit ([api] idempotency_window_hours)."},
    {"/write/idempotency/replays", "clickatron_api_idempotency_replays_total", "counter",
     "Requests answered from a remembered key (Idempotent-Replayed: true; nothing counted)."},
    {"/write/idempotency/reused", "clickatron_api_idempotency_reused_total", "counter",
     "Requests refused 422 IDEMPOTENCY_KEY_REUSED."},
    {"/write/idempotency/in_flight_refusals", "clickatron_api_idempotency_in_flight_total", "counter",
     "Requests refused 409 IDEMPOTENCY_KEY_IN_FLIGHT."},
    {"/write/idempotency/expired", "clickatron_api_idempotency_expired_total", "counter",
     "Keys forgotten at the end of their window."},
    {"/write/idempotency/evicted", "clickatron_api_idempotency_evicted_total", "counter",
     "Keys forgotten before the end of their window (idempotency_max_keys reached)."},
    {"/write/idempotency/restored", "clickatron_api_idempotency_restored_total", "counter",
     "Keys read back from the oplog's commit frames at start."},
    {"/write/idempotency/relayed_to_home", "clickatron_api_idempotency_relayed_total", "counter",
     "Keyed write requests relayed to their key's home API node (crc32(K) % API members)."},
    {"/write/idempotency/home_unavailable", "clickatron_api_idempotency_home_unavailable_total", "counter",
     "Relayed requests whose home did not answer (503 IDEMPOTENCY_HOME_DOWN)."},
    {"/write/statsd/datagrams", "clickatron_api_statsd_datagrams_total", "counter", "statsd UDP datagrams received."},
    {"/write/statsd/tcp_connections", "clickatron_api_statsd_tcp_connections_total", "counter",
     "statsd TCP connections accepted."},
    {"/write/statsd/tcp_connections_open", "clickatron_api_statsd_tcp_connections_open", "gauge",
     "statsd TCP connections open."},
    {"/write/statsd/tcp_connections_refused", "clickatron_api_statsd_tcp_connections_refused_total", "counter",
     "statsd TCP connections closed at once: the connection bound was reached."},
    {"/write/statsd/tcp_lines_too_long", "clickatron_api_statsd_tcp_lines_too_long_total", "counter",
     "statsd TCP connections closed for a line over 64 KiB."},
    {"/write/statsd/lines_taken", "clickatron_api_statsd_lines_taken_total", "counter",
     "statsd counter lines taken into the write path."},
    {"/write/statsd/lines_sampled", "clickatron_api_statsd_lines_sampled_total", "counter",
     "Of the lines taken, those with a sample rate below 1 (count scaled by 1/rate and rounded)."},
    {"/write/statsd/dropped/{reason}", "clickatron_api_statsd_dropped_lines_total", "counter",
     "statsd lines dropped, by reason (malformed, not_counter, invalid, overloaded)."},
    {"/write/oplog/bytes_written", "clickatron_oplog_bytes_written_total", "counter", "Bytes appended to the oplog."},
    {"/write/oplog/records_written", "clickatron_oplog_records_written_total", "counter",
     "Batches appended to the oplog."},
    {"/write/oplog/commits", "clickatron_oplog_commits_total", "counter", "Oplog commits (one per flush window)."},
    {"/write/oplog/failed", "clickatron_oplog_failed", "gauge",
     "1 once an oplog fsync has failed (increments are refused until a restart)."},
    {"/write/oplog/uncommitted_batches_cut", "clickatron_oplog_uncommitted_batches_cut", "gauge",
     "Batches found after the last commit frame at start (a crash inside a commit, never acknowledged) and cut."},
    {"/write/oplog/damaged_segments_set_aside", "clickatron_oplog_damaged_segments_set_aside", "gauge",
     "Damaged oplog segments found at start whose batches every shard had confirmed durable: renamed *.damaged."},
    {"/write/oplog/segments", "clickatron_oplog_segments", "gauge", "Oplog segment files kept."},
    {"/write/oplog/segment_bytes_uncompressed", "clickatron_oplog_segment_bytes", "gauge",
     "Uncompressed bytes of the oplog segments kept."},
    {"/write/oplog/fsyncs", "clickatron_oplog_fsyncs_total", "counter", "Oplog fdatasync calls."},
    {"/write/oplog/fsync_avg_us", "clickatron_oplog_fsync_avg_seconds", "gauge", "Average oplog fsync latency.", {},
     1e-6},
    {"/write/oplog/fsync_p99_us", "clickatron_oplog_fsync_p99_seconds", "gauge",
     "99th percentile of recent oplog fsyncs.", {}, 1e-6},
    {"/write/shards/[shard]/queued_lines", "clickatron_api_shard_queued_lines", "gauge",
     "Lines waiting to be sent to a realtime shard."},
    {"/write/shards/[shard]/queued_batches", "clickatron_api_shard_queued_batches", "gauge",
     "Batches waiting to be sent to a realtime shard."},
    {"/write/shards/[shard]/replay_pending_seqs", "clickatron_api_shard_replay_pending_seqs", "gauge",
     "Oplog seqs still to be re-read for a realtime shard."},
    {"/write/shards/[shard]/written_seq", "clickatron_api_shard_written_seq", "gauge",
     "Last seq this node wrote to the oplog for the shard."},
    {"/write/shards/[shard]/acked_seq", "clickatron_api_shard_acked_seq", "gauge",
     "Last seq the shard acknowledged."},
    {"/write/shards/[shard]/shard_applied_seq", "clickatron_api_shard_applied_seq", "gauge",
     "The shard's applied watermark for this node, as last heard."},
    {"/write/shards/[shard]/shard_durable_seq", "clickatron_api_shard_durable_seq", "gauge",
     "The shard's durable watermark for this node, as last heard."},
    {"/write/shards/[shard]/lag_seq", "clickatron_api_shard_lag_seq", "gauge",
     "Last seq written minus last seq acknowledged by the shard."},
    {"/write/shards/[shard]/rewinds", "clickatron_api_shard_rewinds_total", "counter",
     "Re-sends from the oplog because the shard's watermark went back (e.g. after a restart)."},
    {"/write/shards/[shard]/requests", "clickatron_api_shard_requests_total", "counter",
     "Batch sends to a realtime shard."},
    {"/write/shards/[shard]/failures", "clickatron_api_shard_send_failures_total", "counter",
     "Failed sends to a realtime shard."},
    {"/write/shards/[shard]/applied", "clickatron_api_shard_applied_batches_total", "counter",
     "Batches a realtime shard applied."},
    {"/write/shards/[shard]/duplicates", "clickatron_api_shard_duplicate_batches_total", "counter",
     "Batches a realtime shard already had (at or below its watermark)."},
    {"/write/shards/[shard]/replayed", "clickatron_api_shard_replayed_batches_total", "counter",
     "Batches re-read from the oplog to send again."},
    {"/write/shards/[shard]/late_lines", "clickatron_api_shard_late_lines_total", "counter",
     "Lines a shard refused as DAY_NOT_OPEN, moved to late data."},
    {"/write/shards/[shard]/durable_confirmed_seq", "clickatron_api_shard_durable_confirmed_seq", "gauge",
     "The highest seq of this node's the shard ever confirmed persisted (across restarts)."},
    {"/write/shards/[shard]/lost_store_dropped_lines", "clickatron_api_shard_lost_store_dropped_lines_total",
     "counter", "Lines of archived days in batches a shard had persisted before it lost its store, dropped."},
    {"/write/shards/[shard]/store_losses", "clickatron_api_shard_store_losses_total", "counter",
     "Times the shard reported a watermark below what it had confirmed durable: its store lost or replaced."},
    {"/write/shards/[shard]/releases", "clickatron_api_shard_releases_total", "counter",
     "Holds (watermark ahead) ended by an operator's release."},
    {"/write/shards/[shard]/held_polls", "clickatron_api_shard_held_polls_total", "counter",
     "Watermark polls answered while held (watermark ahead)."},
    {"/write/shards/[shard]/watermark_ahead", "clickatron_api_shard_watermark_ahead", "gauge",
     "1 while sending to the shard is held because its watermark is above every seq this node wrote."},
    {"/write/shards/[shard]/held/applied", "clickatron_api_shard_held_applied_seq", "gauge",
     "While held: the seq this node knows the shard applied."},
    {"/write/shards/[shard]/held/shard_watermark", "clickatron_api_shard_held_watermark_seq", "gauge",
     "While held: the watermark the shard claims."},
    {"/write/shards/[shard]/held/highest_written", "clickatron_api_shard_held_highest_written_seq", "gauge",
     "While held: the highest seq this node wrote for the shard."},
    {"/write/shards/[shard]/held/since_unix", "clickatron_api_shard_held_since_seconds", "gauge",
     "While held: unix time the hold began."},
};

std::string WritePathImpl::StatsPrometheus() const {
  const std::string labels = BaseLabels(ctx_.http.daemon, ctx_.http.member);
  const nlohmann::json stats = StatsJson();
  std::string out = RenderMetrics(stats, kMetricRows, labels);
  out += "# HELP clickatron_api_shard_up 1 when the last exchange with the shard succeeded.\n"
         "# TYPE clickatron_api_shard_up gauge\n";
  for (const auto& j : stats["write"]["shards"]) {
    const std::string state = j["state"].get<std::string>();
    out += fmt::format("clickatron_api_shard_up{{{},shard=\"{}\",state=\"{}\"}} {}\n", labels,
                       j["shard"].get<uint32_t>(), EscapeLabelValue(state), state == "up" ? 1 : 0);
  }
  return out;
}

}  // namespace

Result<std::unique_ptr<WritePath>> WritePath::Create(const DaemonContext& ctx, HttpServer& server,
                                                     HttpClient& client, const Clock& clock) {
  auto path = std::make_unique<WritePathImpl>(ctx, server, client, clock);
  CLICKATRON_RETURN_IF_ERROR(path->Init());
  return std::unique_ptr<WritePath>(std::move(path));
}

}  // namespace clickatron::api
