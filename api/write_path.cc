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
#include "write_path.h"

#include <algorithm>
#include <ctime>

#include <fmt/format.h>
#include <fmt/ranges.h>
#include <spdlog/spdlog.h>

#include "combiner.h"
#include "increment_parser.h"
#include "increment_records.h"
#include "late_data.h"
#include "oplog.h"
#include "clickatron/serial_executor.h"
#include "shard_sender.h"

namespace clickatron::api {
namespace {

constexpr int64_t kLateSealAgeSeconds = 3600;
constexpr auto kHousekeepingPeriod = std::chrono::seconds(30);

bool HasIncrementArgs(const QueryArgs& args) {
  for (const auto& [k, v] : args.items()) {
    if (k == "ns" || k == "key" || k == "ts" || k == "value" || k == "sub") return true;
  }
  return false;
}

class WritePathImpl : public WritePath {
 public:
  WritePathImpl(const DaemonContext& ctx, HttpServer& server, HttpClient& client)
      : ctx_(ctx),
        server_(server),
        client_(client),
        shard_count_(static_cast<uint32_t>(ctx.cluster.realtime_shards)),
        max_batch_bytes_(std::clamp<size_t>(ctx.cluster.http.max_body_bytes / 2, 4096, 16u << 20)),
        combiner_(shard_count_),
        next_seq_(shard_count_, 0),
        committing_lines_(shard_count_, 0) {}

  ~WritePathImpl() override {
    *alive_ = false;
    senders_.clear();
    reader_.reset();  // replay loads use the oplog and late data
    if (oplog_) oplog_->Stop();
    late_.reset();
  }

  Status Init();
  nlohmann::json StatsJson() const override;
  std::string StatsPrometheus() const override;

 private:
  struct Waiter {
    HttpExchangePtr ex;
    size_t increments;
  };

  void HandleIncr(const HttpExchangePtr& ex);
  void HandleSeal(const HttpExchangePtr& ex);
  void ArmWindow(std::chrono::microseconds delay);
  void MaybeFlush(bool from_timer);
  void Flush(bool force);
  void OnCommitted(const std::vector<BatchPtr>& batches, const std::vector<Waiter>& waiters, const Status& st);
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
  const uint32_t shard_count_;
  // Largest batch (one POST to a shard): well under the shards' body limit.
  const size_t max_batch_bytes_;
  std::shared_ptr<bool> alive_ = std::make_shared<bool>(true);

  // Destroyed in reverse: senders, then the reader thread, then late data
  // and the oplog they use.
  std::unique_ptr<Oplog> oplog_;
  std::unique_ptr<LateData> late_;
  std::unique_ptr<SerialExecutor> reader_;
  std::vector<std::shared_ptr<ShardSender>> senders_;

  Combiner combiner_;
  std::vector<uint64_t> next_seq_;          // per shard: the last seq given out
  std::vector<uint64_t> committing_lines_;  // per shard: lines in commits not yet done
  std::vector<Waiter> waiters_;             // clients of the window being filled
  std::vector<RoutedRecord> scratch_;
  HourCache hour_cache_;
  bool window_armed_ = false;
  bool committing_ = false;
  std::chrono::steady_clock::time_point last_flush_{};

  // Stats.
  uint64_t incr_requests_ = 0;
  uint64_t increments_in_ = 0;
  uint64_t records_in_ = 0;
  uint64_t records_out_ = 0;
  uint64_t batches_out_ = 0;
  uint64_t rejected_invalid_ = 0;
  uint64_t rejected_overloaded_ = 0;
  uint64_t commit_errors_ = 0;
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
  o.retention_hours = cfg.oplog_retention_hours;
  auto oplog = Oplog::Open(std::move(o), Poster());
  if (!oplog.ok()) return oplog.status();
  oplog_ = std::move(oplog).value();

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
    senders_.push_back(std::make_shared<ShardSender>(so, server_, client_, *oplog_, *late_, *reader_));
  }
  oplog_->SetDurableListener(Guarded([this] {
    for (auto& s : senders_) s->Pump();
  }));

  server_.Route("/incr", Guarded([this](const HttpExchangePtr& ex) { HandleIncr(ex); }), kGetOrPost);
  server_.AdminRoute("/late/seal", Guarded([this](const HttpExchangePtr& ex) { HandleSeal(ex); }), kPost);
  server_.Every(kHousekeepingPeriod, Guarded([this] {
    oplog_->CollectGarbage();
    late_->SealIfOlder(kLateSealAgeSeconds);
  }));
  // On SIGTERM: what is combined but not yet logged goes to the oplog (its
  // clients get no answer, but nothing they sent is lost).
  server_.OnStop(Guarded([this] {
    Flush(true);
    oplog_->Stop();
  }));
  for (uint32_t s = 0; s < shard_count_; ++s) senders_[s]->Start(next_seq_[s]);
  spdlog::info("write path: {} realtime shards, oplog sync {}, flush window {} ms, last seqs recovered [{}]",
               shard_count_, cfg.oplog_sync, cfg.flush_window_ms, fmt::join(next_seq_, ", "));
  return Status::Ok();
}

void WritePathImpl::HandleIncr(const HttpExchangePtr& ex) {
  ++incr_requests_;
  if (oplog_->failed()) {
    ex->ReplyError(503, "OPLOG_FAILED", "the oplog could not be synced to disk; this API node takes no increments");
    return;
  }
  IncrementLimits limits;
  limits.now = static_cast<int64_t>(std::time(nullptr));
  limits.future_margin_hours = ctx_.cluster.api.future_margin_hours;
  scratch_.clear();
  size_t increments = 0;
  Status st;
  if (!ex->body().empty()) {
    if (HasIncrementArgs(ex->args())) {
      ++rejected_invalid_;
      ex->ReplyError(400, "INVALID_ARGUMENT",
                     "send one increment in the query string or a batch in the body, not both");
      return;
    }
    st = ParseIncrementBatch(ex->body(), limits, ctx_.cluster.http.max_query_args, [&](const Increment& inc) {
      ExpandIncrement(inc, shard_count_, &scratch_);
      ++increments;
    });
  } else {
    Increment inc;
    st = ParseIncrement(ex->args(), limits, &hour_cache_, &inc);
    if (st.ok()) {
      ExpandIncrement(inc, shard_count_, &scratch_);
      increments = 1;
    }
  }
  if (!st.ok()) {
    ++rejected_invalid_;
    ex->ReplyError(400, st.reason(), st.message());
    return;
  }
  if (increments == 0) {
    ex->ReplyJson({{"increments", 0}});
    return;
  }
  // Back-pressure: a shard that is down keeps its batches queued (and in the
  // oplog); past max_queued_increments lines, refuse rather than grow.
  const uint64_t max_queued = ctx_.cluster.api.max_queued_increments;
  std::vector<bool> touched(shard_count_, false);
  for (const RoutedRecord& r : scratch_) touched[r.shard] = true;
  for (uint32_t s = 0; s < shard_count_; ++s) {
    if (!touched[s]) continue;
    uint64_t queued = senders_[s]->queued_lines() + committing_lines_[s] + combiner_.lines(s);
    if (queued >= max_queued) {
      ++rejected_overloaded_;
      ex->ReplyError(503, "OVERLOADED",
                     fmt::format("realtime shard {} has {} lines waiting (limit {}); retry later", s, queued,
                                 max_queued));
      return;
    }
  }
  records_in_ += scratch_.size();
  increments_in_ += increments;
  for (RoutedRecord& r : scratch_) combiner_.Add(std::move(r));
  waiters_.push_back(Waiter{ex, increments});
  // While a commit runs, its completion flushes this window (MaybeFlush).
  if (!committing_) MaybeFlush(false);
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
  if (combiner_.empty() || committing_) return;
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
  if (committing_ && !force) return;
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
  committing_ = true;
  std::vector<Waiter> waiters;
  waiters.swap(waiters_);
  oplog_->Commit(batches, Guarded([this, batches, waiters = std::move(waiters)](Status st) {
    OnCommitted(batches, waiters, st);
  }));
}

void WritePathImpl::OnCommitted(const std::vector<BatchPtr>& batches, const std::vector<Waiter>& waiters,
                                const Status& st) {
  committing_ = false;
  for (const BatchPtr& b : batches) committing_lines_[b->shard] -= b->line_count;
  if (st.ok()) {
    for (const Waiter& w : waiters) {
      if (w.ex->alive()) w.ex->ReplyJson({{"increments", w.increments}});
    }
  } else {
    ++commit_errors_;
    for (const Waiter& w : waiters) {
      if (w.ex->alive()) w.ex->ReplyError(st.code() == StatusCode::kUnavailable ? 503 : 500,
                                          st.reason().empty() ? "OPLOG_WRITE_FAILED" : st.reason(),
                                          "the oplog could not take these increments: " + st.message());
    }
  }
  // Batches the oplog holds are sent even if the commit failed part-way: a
  // restart would replay them anyway, and their clients were told "unknown".
  for (const BatchPtr& b : batches) {
    if (b->seq <= oplog_->durable_seq(b->shard) || st.ok()) senders_[b->shard]->Enqueue(b);
  }
  MaybeFlush(false);
}

void WritePathImpl::HandleSeal(const HttpExchangePtr& ex) {
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
      {"commit_errors", commit_errors_},
      {"late_lines_written", late_->lines_written()},
      {"late_frames_written", late_->frames_written()},
      {"oplog", oplog_->StatsJson()},
      {"shards", std::move(shards)},
  };
  return nlohmann::json{{"write", std::move(w)}};
}

std::string WritePathImpl::StatsPrometheus() const {
  const std::string& daemon = ctx_.http.daemon;
  std::string out;
  auto counter = [&](const char* name, const char* help, uint64_t v) {
    out += fmt::format("# HELP {0} {1}\n# TYPE {0} counter\n{0}{{daemon=\"{2}\"}} {3}\n", name, help, daemon, v);
  };
  counter("clickatron_api_increments_total", "Increments accepted (answered or about to be).", increments_in_);
  counter("clickatron_api_records_in_total", "Records expanded from increments, before combining.", records_in_);
  counter("clickatron_api_records_out_total", "Combined lines written to the oplog.", records_out_);
  counter("clickatron_api_rejected_invalid_total", "Increment requests refused with a 400.", rejected_invalid_);
  counter("clickatron_api_rejected_overloaded_total", "Increment requests refused with 503 OVERLOADED.",
          rejected_overloaded_);
  counter("clickatron_api_late_lines_total", "Lines moved to late data (DAY_NOT_OPEN).", late_->lines_written());
  out += oplog_->StatsPrometheus(daemon);
  // Per-shard families, each family's samples together (the text format wants that).
  std::vector<nlohmann::json> shards;
  for (const auto& s : senders_) shards.push_back(s->StatsJson());
  struct Family {
    const char* name;
    const char* type;
    const char* help;
    const char* field;
  };
  static constexpr Family kFamilies[] = {
      {"clickatron_api_shard_queued_lines", "gauge", "Lines waiting to be sent to a realtime shard.", "queued_lines"},
      {"clickatron_api_shard_queued_batches", "gauge", "Batches waiting to be sent to a realtime shard.",
       "queued_batches"},
      {"clickatron_api_shard_lag_seq", "gauge", "Last seq written minus last seq acknowledged by the shard.",
       "lag_seq"},
      {"clickatron_api_shard_send_failures_total", "counter", "Failed sends to a realtime shard.", "failures"},
      {"clickatron_api_shard_late_lines_total", "counter", "Lines a shard refused as DAY_NOT_OPEN, moved to late data.",
       "late_lines"},
      {"clickatron_api_shard_watermark_ahead", "gauge",
       "1 while sending to the shard is held because its watermark is above every seq this node wrote.",
       "watermark_ahead"},
  };
  for (const Family& f : kFamilies) {
    out += fmt::format("# HELP {0} {1}\n# TYPE {0} {2}\n", f.name, f.help, f.type);
    for (const auto& j : shards) {
      out += fmt::format("{}{{daemon=\"{}\",shard=\"{}\"}} {}\n", f.name, daemon, j["shard"].get<uint32_t>(),
                         j[f.field].dump());
    }
  }
  out += "# HELP clickatron_api_shard_up 1 when the last exchange with the shard succeeded.\n"
         "# TYPE clickatron_api_shard_up gauge\n";
  for (const auto& j : shards) {
    out += fmt::format("clickatron_api_shard_up{{daemon=\"{}\",shard=\"{}\",state=\"{}\"}} {}\n", daemon,
                       j["shard"].get<uint32_t>(), j["state"].get<std::string>(), j["state"] == "up" ? 1 : 0);
  }
  return out;
}

}  // namespace

Result<std::unique_ptr<WritePath>> WritePath::Create(const DaemonContext& ctx, HttpServer& server,
                                                     HttpClient& client) {
  auto path = std::make_unique<WritePathImpl>(ctx, server, client);
  CLICKATRON_RETURN_IF_ERROR(path->Init());
  return std::unique_ptr<WritePath>(std::move(path));
}

}  // namespace clickatron::api
