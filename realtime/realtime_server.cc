#include "realtime_server.h"

#include <fmt/format.h>
#include <spdlog/spdlog.h>

#include <cctype>
#include <charconv>

#include "apply_batch.h"
#include "clock_rotation.h"
#include "clickatron/proc_status.h"
#include "clickatron/key_codec.h"
#include "clickatron/metrics_table.h"
#include "clickatron/generation_fetch.h"
#include "clickatron/http_args.h"
#include "clickatron/ymdh.h"
#include "counter_merge.h"
#include "line_stream.h"
#include "multi_prefix_scan.h"

namespace clickatron::realtime {
namespace {

// API node names become metadata keys and log text: keep them plain.
constexpr size_t kMaxSourceLength = 128;

bool ValidSource(std::string_view s) {
  if (s.empty() || s.size() > kMaxSourceLength) return false;
  for (char c : s) {
    const bool ok = (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') || c == '_' ||
                    c == '-' || c == '.' || c == ':';
    if (!ok) return false;
  }
  return true;
}

bool ParseUint(std::string_view text, uint64_t* out) {
  if (text.empty()) return false;
  auto [ptr, ec] = std::from_chars(text.data(), text.data() + text.size(), *out);
  return ec == std::errc() && ptr == text.data() + text.size();
}

// The optional non-negative integer argument `name` (nullopt when absent):
// false, answered 400 `code`, when it is not one.
bool OptionalCountArg(const HttpExchangePtr& ex, std::string_view name, std::string_view code,
                      std::optional<uint64_t>* out) {
  const std::string* text = ex->args().Get(name);
  if (text == nullptr) return true;
  uint64_t n = 0;
  if (!ParseUint(*text, &n)) {
    ex->ReplyError(400, code, fmt::format("{} must be a non-negative integer", name));
    return false;
  }
  *out = n;
  return true;
}

// The value of a required argument, or nullptr after answering 400
// MISSING_ARG_<NAME> (or INVALID_<NAME> when it is given twice).
const std::string* Required(const HttpExchangePtr& ex, std::string_view name) {
  const std::string* v = nullptr;
  if (!SingleArg(ex, name, &v)) return nullptr;
  if (v == nullptr) {
    std::string reason = "MISSING_ARG_";
    for (char c : name) reason += static_cast<char>(std::toupper(static_cast<unsigned char>(c)));
    ex->ReplyError(400, reason, fmt::format("the argument {} is required", name));
  }
  return v;
}

// A YYYY-MM-DD argument; false after answering 400.
bool DateArg(const HttpExchangePtr& ex, std::string_view name, bool required, std::optional<int64_t>* out) {
  const std::string* v = nullptr;
  if (required) {
    v = Required(ex, name);
  } else if (!SingleArg(ex, name, &v)) {
    return false;
  }
  if (v == nullptr) return !required;
  Result<int64_t> day = ParseDate(*v);
  if (!day.ok()) {
    ex->ReplyError(400, "INVALID_DATE", fmt::format("{}: {}", name, day.status().message()));
    return false;
  }
  *out = *day;
  return true;
}

// The optional unite=day argument of /fwmatch and /mfwmatch (record_scan.h's
// unite_days); false after answering 400.
bool UniteArg(const HttpExchangePtr& ex, bool* unite_days) {
  const std::string* v = nullptr;
  if (!SingleArg(ex, "unite", &v)) return false;
  *unite_days = v != nullptr;
  if (v == nullptr || *v == "day") return true;
  ex->ReplyError(400, "INVALID_UNITE", fmt::format("unite must be day, not {}", QuoteForMessage(*v)));
  return false;
}

// Prefixes one /mfwmatch may carry: bounds the work of one request (the API
// sends at most 64).
constexpr size_t kMaxMfwmatchPrefixes = 256;

// GET /mfwmatch?key=P1&key=P2…[&date=D][&after=D][&unite=day]: every record
// matching any prefix, once, sorted (see multi_prefix_scan.h); streamed like
// /fwmatch.
void HandleMfwmatch(const Ring& ring, const HttpExchangePtr& ex) {
  std::vector<const std::string*> keys = ex->args().GetAll("key");
  if (keys.empty()) {
    ex->ReplyError(400, "MISSING_ARG_KEY", "the argument key is required (once per prefix)");
    return;
  }
  if (keys.size() > kMaxMfwmatchPrefixes) {
    ex->ReplyError(400, "TOO_MANY_KEYS", fmt::format("at most {} prefixes per request", kMaxMfwmatchPrefixes));
    return;
  }
  std::optional<int64_t> day, after;
  bool unite_days = false;
  if (!DateArg(ex, "date", false, &day) || !DateArg(ex, "after", false, &after) || !UniteArg(ex, &unite_days)) return;
  std::vector<std::string> prefixes;
  prefixes.reserve(keys.size());
  for (const std::string* k : keys) prefixes.push_back(*k);
  Result<std::unique_ptr<LineSource>> scan = ring.ScanMany(DisjointPrefixes(std::move(prefixes)), day, after, unite_days);
  if (!scan.ok()) return ex->ReplyError(scan.status());
  StreamLines(ex, std::move(scan).value());
}

nlohmann::json DateList(const std::vector<int64_t>& days) {
  nlohmann::json out = nlohmann::json::array();
  for (int64_t d : days) out.push_back(FormatDate(d));
  return out;
}

}  // namespace

Result<std::unique_ptr<RealtimeServer>> RealtimeServer::Create(const DaemonContext& context, const Clock& clock) {
  std::unique_ptr<RealtimeServer> server(new RealtimeServer());
  server->cluster_clock_ = context.cluster.clock;
  server->clock_ = &clock;
  for (const MemberConfig* api : context.cluster.MembersWithRole(MemberRole::kApi)) server->api_sources_.insert(api->name);
  server->member_ = context.member.name;
  if (context.member.data_dir.empty()) {
    return Status::InvalidArgument(fmt::format("member {} has no data_dir", context.member.name), "BAD_CONFIG");
  }
  StoreOptions options;
  options.write_buffer_mb = context.cluster.realtime.write_buffer_mb;
  options.block_cache_mb = context.cluster.realtime.block_cache_mb;
  Result<std::unique_ptr<ShardStore>> store = ShardStore::Open(context.member.data_dir + "/db", options);
  if (!store.ok()) return store.status();
  server->store_ = std::move(store).value();
  // A new ring starts at the clock's date, under the cluster clock "manual"
  // too (until the first POST /rotate).
  Result<std::unique_ptr<HttpServer>> http = HttpServer::Create(context.http);
  if (!http.ok()) return http.status();
  server->http_ = std::move(http).value();
  CheckpointOptions checkpoints;
  checkpoints.threaded = true;
  checkpoints.post = [h = server->http_.get()](std::function<void()> fn) { h->RunInLoop(std::move(fn)); };
  // memory_budget_mb bounds the whole shard: the table has what the block
  // cache and the scan cache leave (the config refuses less than 16 MiB).
  checkpoints.memory_budget_bytes = static_cast<size_t>(context.cluster.realtime.TableBudgetMb()) << 20;
  server->memory_budget_bytes_ = static_cast<uint64_t>(context.cluster.realtime.memory_budget_mb) << 20;
  // Said at start: a budget of an older config (where it bounded the table
  // alone) now also holds the caches, and leaves the table less.
  spdlog::info("memory_budget_mb {}: in-memory table {} MiB, block cache {} MiB (write buffers {} MiB within it), "
               "scan cache {} MiB",
               context.cluster.realtime.memory_budget_mb, context.cluster.realtime.TableBudgetMb(),
               context.cluster.realtime.block_cache_mb, context.cluster.realtime.write_buffer_mb,
               context.cluster.realtime.scan_cache_mb);
  if (context.cluster.realtime.fault_injection) {
    checkpoints.fault_dir = context.member.data_dir + "/fault";
    spdlog::warn("fault injection is on: files in {} make checkpoints fail or stall", checkpoints.fault_dir);
  }
  const ScanCacheOptions scan_cache{.max_bytes = static_cast<size_t>(context.cluster.realtime.scan_cache_mb) << 20};
  Result<std::unique_ptr<Ring>> ring =
      Ring::Open(server->store_.get(), clock.TodayUtc(), std::move(checkpoints), scan_cache);
  if (!ring.ok()) return ring.status();
  server->ring_ = std::move(ring).value();
  Result<Tombstones> tombstones = Tombstones::Load(server->store_.get());
  if (!tombstones.ok()) return tombstones.status();
  server->tombstones_ = std::make_unique<Tombstones>(std::move(tombstones).value());
  server->tombstone_worker_ = std::make_unique<SerialExecutor>("tombstones");
  Result<RecoveryGate> recovery = RecoveryGate::Open(context.member.data_dir, server->ring_->checkpointer().durable(),
                                                     server->api_sources_, context.cluster.api.RecoveryWait());
  if (!recovery.ok()) return recovery.status();
  server->recovery_ = std::move(recovery).value();
  server->LearnArchivedThrough(context.cluster);
  server->RegisterRoutes();
  server->http_->Every(std::chrono::milliseconds(context.cluster.realtime.checkpoint_interval_ms),
                       [s = server.get()] {
                         if (Status st = s->ring_->Tick(); !st.ok()) spdlog::error("ring: {}", st.ToString());
                         s->ring_->checkpointer().Start();
                         if (Status st = s->tombstones_->Retire(s->ring_->checkpointer().durable()); !st.ok()) {
                           spdlog::error("tombstones: {}", st.ToString());
                         }
                       });
  // A clean stop persists what is in memory, so the API has nothing to
  // re-send; a crash loses only that work, never data (the oplog has it).
  server->http_->OnStop([s = server.get()] {
    if (Status st = s->ring_->checkpointer().Drain(); !st.ok()) {
      spdlog::error("last checkpoint before stopping failed (the API re-sends from its oplog): {}", st.ToString());
    } else if (Status marked = s->recovery_->MarkStoppedCleanly(); !marked.ok()) {
      spdlog::error("could not mark this stop clean (the next start waits for the API nodes): {}", marked.ToString());
    }
  });
  if (!server->ClockIsManual()) {
    server->RotateByClock();  // the daemon may have been down over midnight
    // A one-second check rather than a midnight timer: it also follows a
    // clock that is stepped, and costs one clock read a second.
    server->http_->Every(std::chrono::seconds(1), [s = server.get()] { s->RotateByClock(); });
  }
  spdlog::info("realtime shard {}: clock {}, today {}, stores [{}]", context.member.shard, server->cluster_clock_,
               FormatDate(server->ring_->today()), DateList(server->ring_->ReadableDays()).dump());
  // Asking the archive above may have taken seconds: the API nodes' time
  // to re-send counts from now, when the shard can first answer them.
  server->recovery_->StartServing();
  return server;
}

RealtimeServer::~RealtimeServer() = default;

Status RealtimeServer::Run() { return http_->Run(); }

void RealtimeServer::RotateByClock() {
  if (ClockIsManual()) return;
  if (Result<std::optional<RotateReport>> r = RotateToClockDay(*ring_, *clock_); !r.ok()) {
    spdlog::error("rotation to {} failed: {}", FormatDate(clock_->TodayUtc()), r.status().ToString());
  }
}

void RealtimeServer::RegisterRoutes() {
  HttpServer& h = *http_;
  h.InternalRoute("/incr", [this](const HttpExchangePtr& ex) { HandleIncr(ex); }, kPost | kBoundedAnswers);
  h.InternalRoute("/watermark", [this](const HttpExchangePtr& ex) { HandleWatermark(ex); }, kGetOrPost | kBoundedAnswers);
  // Reads: none while a restart after a crash holds them back; every answer
  // says what this shard handed over to the archive.
  const auto read = [this](void (RealtimeServer::*handle)(const HttpExchangePtr&)) {
    return [this, handle](const HttpExchangePtr& ex) {
      if (ReadsHeldBack(ex)) return;
      SayHandover(ex);
      (this->*handle)(ex);
    };
  };
  h.InternalRoute("/get", read(&RealtimeServer::HandleGet));
  h.InternalRoute("/mget", read(&RealtimeServer::HandleMget));
  h.InternalRoute("/fwmatch", read(&RealtimeServer::HandleFwmatch));
  h.InternalRoute("/mfwmatch", read(&RealtimeServer::HandleMfwmatchOnRing));
  h.InternalRoute("/ring", [this](const HttpExchangePtr& ex) { HandleRing(ex); }, kGetOrPost | kBoundedAnswers);
  h.AdminRoute("/watermark/reset", [this](const HttpExchangePtr& ex) { HandleWatermarkReset(ex); }, kPost);
  // GET /export seals the day it exports: HEAD must not.
  h.AdminRoute("/export", [this](const HttpExchangePtr& ex) { HandleExport(ex); }, kGet | kUnsafeGet);
  h.AdminRoute("/exported", [this](const HttpExchangePtr& ex) { HandleExported(ex); }, kPost);
  h.AdminRoute("/archived", [this](const HttpExchangePtr& ex) { HandleArchived(ex); }, kPost);
  h.AdminRoute("/rotate", [this](const HttpExchangePtr& ex) { HandleRotate(ex); }, kPost);
  h.AdminRoute("/clear", [this](const HttpExchangePtr& ex) { HandleClear(ex); }, kPost);
  h.InternalRoute("/tombstone", [this](const HttpExchangePtr& ex) { HandleTombstone(ex); }, kPost);
  h.InternalRoute("/tombstone/cut", [this](const HttpExchangePtr& ex) { HandleTombstoneCut(ex); }, kPost);
  h.InternalRoute("/tombstones", [this](const HttpExchangePtr& ex) { HandleTombstones(ex); });
  h.SetStatsProvider([this] { return StatsJson(); }, [this] { return StatsPrometheus(); });
}

void RealtimeServer::HandleIncr(const HttpExchangePtr& ex) {
  const std::string* source = Required(ex, "source");
  if (source == nullptr) return;
  if (!ValidSource(*source)) {
    ex->ReplyError(400, "INVALID_SOURCE",
                   fmt::format("source must be 1-{} characters of [A-Za-z0-9_.:-]", kMaxSourceLength));
    return;
  }
  if (!api_sources_.count(*source)) {
    ++counters_.unknown_sources;
    spdlog::warn("POST /incr source={}: not an API member of the cluster file; refused", *source);
    ex->ReplyError(403, "UNKNOWN_SOURCE",
                   fmt::format("source \"{}\" is not an API member of this cluster: only their batches count", *source));
    return;
  }
  const std::string* seq_text = Required(ex, "seq");
  if (seq_text == nullptr) return;
  uint64_t seq = 0;
  if (!ParseUint(*seq_text, &seq) || seq == 0) {
    ex->ReplyError(400, "INVALID_SEQ", "seq must be a positive integer");
    return;
  }
  std::optional<uint64_t> heard;
  if (!OptionalCountArg(ex, "heard", "INVALID_HEARD", &heard)) return;
  if (ring_->checkpointer().Lowering(*source)) {
    ex->ReplyError(503, "WATERMARK_RESETTING",
                   fmt::format("{}'s watermark is being lowered (POST /watermark/reset): retry shortly", *source));
    return;
  }
  // A replay is answered before its body is even parsed.
  const uint64_t applied = ring_->Watermark(*source);
  if (seq <= applied) {
    recovery_->Heard(*source, heard, applied);
    nlohmann::json data = Watermarks(*source);
    data.update({{"applied", 0}, {"duplicate", true}, {"seq", applied}});
    ex->ReplyJson(std::move(data));
    return;
  }
  // prev: the applied watermark the sender last heard of. Another value
  // means this shard lost batches since (a restart drops what was not yet
  // durable): applying this one would skip them for good.
  if (const std::string* prev_text = ex->args().Get("prev")) {
    uint64_t prev = 0;
    if (!ParseUint(*prev_text, &prev)) {
      ex->ReplyError(400, "INVALID_PREV", "prev must be a non-negative integer");
      return;
    }
    if (prev != applied) {
      ++counters_.watermark_mismatches;
      spdlog::warn("POST /incr source={} seq={}: sender expects applied watermark {}, this shard has {} (durable {}); "
                   "asking it to re-send from there",
                   *source, seq, prev, applied, ring_->DurableWatermark(*source));
      nlohmann::json env = Envelope(409, "WATERMARK_MISMATCH", nullptr);
      env["message"] = fmt::format("this shard has applied up to seq {} for {}, not {}: re-send from {}", applied,
                                   *source, prev, applied + 1);
      env.update(Watermarks(*source));
      ex->Reply(409, env.dump() + "\n", "application/json");
      return;
    }
  }
  Result<ParsedBatch> batch = ParseBatch(ex->body());
  if (!batch.ok()) {
    ++counters_.bad_batches;
    spdlog::warn("POST /incr source={} seq={}: {}", *source, seq, batch.status().message());
    ex->ReplyError(batch.status());
    return;
  }
  // A deletion's tombstones take out what was acknowledged before it
  // (tombstones.h), before the days are checked: a deleted line of a closed
  // day must not go on to late data.
  uint64_t dropped = 0;
  if (tombstones_->Filter(*source, seq, &*batch, &dropped) == Tombstones::Verdict::kRefuse) {
    ++counters_.tombstone_refusals;
    ex->AddHeader("Retry-After", "1");
    ex->ReplyError(503, "TOMBSTONE_PENDING",
                   "a deletion of records this batch adds is being made: retry shortly (it takes a checkpoint)");
    return;
  }
  counters_.tombstone_dropped_lines += dropped;
  Result<ApplyOutcome> outcome = ring_->Apply(*source, seq, *batch);
  if (!outcome.ok()) {
    const Status& st = outcome.status();
    if (st.reason() == "DAY_NOT_OPEN") {
      nlohmann::json env = Envelope(409, "DAY_NOT_OPEN", nullptr);
      env["message"] = st.message();
      env["open_days"] = DateList(ring_->OpenDays());
      ex->Reply(409, env.dump() + "\n", "application/json");
      return;
    }
    if (st.reason() != "MEMORY_FULL") spdlog::error("POST /incr source={} seq={}: {}", *source, seq, st.ToString());
    ex->ReplyError(st);
    return;
  }
  recovery_->Heard(*source, heard, ring_->Watermark(*source));
  // Before the answer: a crash from here on must wait for this node.
  if (Status noted = recovery_->NoteSender(*source); !noted.ok()) {
    spdlog::error("could not note {} as a sender (a crash before the next checkpoint would not wait for it): {}",
                  *source, noted.ToString());
  }
  nlohmann::json data = Watermarks(*source);
  data.update({{"applied", outcome->applied}, {"duplicate", outcome->duplicate}, {"seq", outcome->seq}});
  ex->ReplyJson(std::move(data));
}

nlohmann::json RealtimeServer::Watermarks(const std::string& source) const {
  return {{"applied_seq", ring_->Watermark(source)}, {"durable_seq", ring_->DurableWatermark(source)}};
}

void RealtimeServer::HandleWatermark(const HttpExchangePtr& ex) {
  const std::string* source = Required(ex, "source");
  std::optional<uint64_t> heard;
  if (source == nullptr || !OptionalCountArg(ex, "heard", "INVALID_HEARD", &heard)) return;
  // A poll that does not say what it heard (a tool, a look by hand) only
  // reads: it must not release reads the API node's re-send is still due for.
  if (heard) recovery_->Heard(*source, heard, ring_->Watermark(*source));
  nlohmann::json data = Watermarks(*source);
  data.update({{"source", *source}, {"seq", ring_->Watermark(*source)}});
  ex->ReplyJson(std::move(data));
}

void RealtimeServer::HandleWatermarkReset(const HttpExchangePtr& ex) {
  if (!OnlyArgs(ex, {"source", "seq", "expect"})) return;
  // An empty source names none (it was taken for an unknown one, 403).
  if (const std::string* named = ex->args().Get("source"); named != nullptr && named->empty()) {
    ex->ReplyError(400, "MISSING_ARG_SOURCE", "source= is empty: name the API node whose watermark is reset");
    return;
  }
  const std::string* source = Required(ex, "source");
  const std::string* seq_text = source ? Required(ex, "seq") : nullptr;
  const std::string* expect_text = seq_text ? Required(ex, "expect") : nullptr;
  if (expect_text == nullptr) return;
  // Only an API member's watermark is lowered, as only their batches count
  // (HandleIncr): nothing is recorded for any other name.
  if (!api_sources_.count(*source)) {
    spdlog::warn("POST /watermark/reset source={}: not an API member of the cluster file; refused", *source);
    ex->ReplyError(403, "UNKNOWN_SOURCE",
                   fmt::format("source \"{}\" is not an API member of this cluster: it has no watermark to lower",
                               *source));
    return;
  }
  uint64_t seq = 0, expect = 0;
  if (!ParseUint(*seq_text, &seq) || !ParseUint(*expect_text, &expect)) {
    ex->ReplyError(400, "INVALID_SEQ", "seq and expect must be non-negative integers");
    return;
  }
  if (seq > expect) {
    ex->ReplyError(400, "INVALID_SEQ", "seq must not be above expect: a reset only lowers a watermark");
    return;
  }
  spdlog::warn("POST /watermark/reset: lowering {}'s watermark from {} to {} (operator repair)", *source, expect, seq);
  ring_->checkpointer().LowerWatermark(*source, seq, expect, [this, ex, source = *source, seq, expect](Status st) {
    if (!st.ok()) {
      ex->ReplyError(st);
      return;
    }
    ++counters_.watermark_resets;
    spdlog::warn("{}'s watermark is now {} (was {}), durable", source, seq, expect);
    nlohmann::json data = Watermarks(source);
    data.update({{"source", source}, {"previous_seq", expect}});
    ex->ReplyJson(std::move(data));
  });
}

// X-Realtime-Archived-Through: the newest day this store may have cleared
// because the archive holds it (Ring::HandedOverThrough), and
// X-Realtime-Archive-Generation: the generation the rebuild last said every
// replica serves. An API node reads them to know when an archive answer it
// kept (or got just before a deploy) is older than what realtime relies on.
void RealtimeServer::SayHandover(const HttpExchangePtr& ex) const {
  if (const std::optional<int64_t> through = ring_->HandedOverThrough()) {
    ex->AddHeader("X-Realtime-Archived-Through", FormatDate(*through));
  }
  if (const uint64_t generation = ring_->archive_generation(); generation > 0) {
    ex->AddHeader("X-Realtime-Archive-Generation", std::to_string(generation));
  }
}

// The optional generation=G of /exported and /archived (the rebuild's
// deploy): raises the ring's archive generation (persisted). False (and
// answered) when it is not a number or cannot be persisted.
bool RealtimeServer::NoteGenerationArg(const HttpExchangePtr& ex) {
  std::optional<uint64_t> generation;
  if (!OptionalCountArg(ex, "generation", "INVALID_GENERATION", &generation)) return false;
  if (!generation) return true;
  if (Status st = ring_->NoteArchiveGeneration(*generation); !st.ok()) {
    ex->ReplyError(st);
    return false;
  }
  return true;
}

bool RealtimeServer::ReadsHeldBack(const HttpExchangePtr& ex) {
  const std::optional<std::string> why = recovery_->HeldBack();
  if (!why) return false;
  recovery_->CountHeldBack();
  ex->AddHeader("Retry-After", "1");
  ex->ReplyError(503, "SHARD_RECOVERING", *why);
  return true;
}

void RealtimeServer::HandleMfwmatchOnRing(const HttpExchangePtr& ex) { HandleMfwmatch(*ring_, ex); }

void RealtimeServer::HandleGet(const HttpExchangePtr& ex) {
  const std::string* key = Required(ex, "key");
  std::optional<int64_t> day;
  if (key == nullptr || !DateArg(ex, "date", false, &day)) return;
  Result<std::optional<std::string>> value = ring_->Get(*key, day);
  if (!value.ok()) {
    ex->ReplyError(value.status());
    return;
  }
  if (!value->has_value()) {
    ex->Reply(404, "");
    return;
  }
  ex->Reply(200, **value + "\n");
}

void RealtimeServer::HandleMget(const HttpExchangePtr& ex) {
  std::vector<const std::string*> keys = ex->args().GetAll("key");
  if (keys.empty()) {
    ex->ReplyError(400, "MISSING_ARG_KEY", "the argument key is required (once per key)");
    return;
  }
  std::optional<int64_t> day;
  if (!DateArg(ex, "date", false, &day)) return;
  std::string out;
  for (const std::string* key : keys) {
    Result<std::optional<std::string>> value = ring_->Get(*key, day);
    if (!value.ok()) {
      ex->ReplyError(value.status());
      return;
    }
    if (!value->has_value()) continue;
    out += *key;
    out += ',';
    out += **value;
    out += '\n';
  }
  ex->Reply(200, out);
}

void RealtimeServer::HandleFwmatch(const HttpExchangePtr& ex) {
  const std::string* prefix = Required(ex, "key");
  std::optional<int64_t> day, after;
  bool unite_days = false;
  if (prefix == nullptr || !DateArg(ex, "date", false, &day) || !DateArg(ex, "after", false, &after) ||
      !UniteArg(ex, &unite_days)) {
    return;
  }
  uint64_t limit = 0;
  if (const std::string* l = ex->args().Get("limit"); l != nullptr && (!ParseUint(*l, &limit) || limit == 0)) {
    ex->ReplyError(400, "INVALID_LIMIT", "limit must be a positive integer");
    return;
  }
  Result<std::unique_ptr<LineSource>> scan = ring_->Scan(*prefix, day, limit, after, unite_days);
  if (!scan.ok()) {
    ex->ReplyError(scan.status());
    return;
  }
  StreamLines(ex, std::move(scan).value());
}

nlohmann::json RealtimeServer::RingJson() const {
  nlohmann::json stores = nlohmann::json::array();
  for (int64_t day : ring_->ReadableDays()) {
    const DayState& s = ring_->days().at(day);
    stores.push_back({{"date", FormatDate(day)},
                      {"position", PositionName(ring_->PositionOf(day))},
                      {"state", Ring::StateName(s)},
                      {"open", ring_->IsOpen(day)},
                      {"records_in_memory", ring_->checkpointer().memory_keys(day)},
                      {"records_estimate", store_->DayProperty(day, "rocksdb.estimate-num-keys").value_or(0)}});
  }
  return {{"clock", ClockIsManual() ? "manual" : "system"},
          {"today", FormatDate(ring_->today())},
          {"open_days", DateList(ring_->OpenDays())},
          {"archived_through", ring_->archived_through() ? FormatDate(*ring_->archived_through()) : ""},
          {"recovering", recovery_->recovering(RecoveryGate::Clock::now())},
          {"stores", std::move(stores)}};
}

void RealtimeServer::HandleRing(const HttpExchangePtr& ex) { ex->ReplyJson(RingJson()); }

void RealtimeServer::HandleExport(const HttpExchangePtr& ex) {
  if (!OnlyArgs(ex, {"date"})) return;
  std::optional<int64_t> day;
  if (!DateArg(ex, "date", true, &day)) return;
  // Not before the API nodes have re-sent what a crash lost: sealed now, the
  // day would take their lines as late data and be archived short (a probe's
  // nightly run exported a shard 100 ms after its restart).
  if (ReadsHeldBack(ex)) return;
  RotateByClock();  // an export just after midnight must see the new ring
  if (Status st = ring_->Seal(*day); !st.ok()) {
    ex->ReplyError(st);
    return;
  }
  // The day is sealed: no batch adds to it any more. Once what memory holds
  // of it is persisted, the store alone has the whole day.
  ring_->checkpointer().WhenPersisted([this, ex, d = *day](Status persisted) {
    if (!persisted.ok()) {
      ++counters_.exports_failed;
      spdlog::error("export of {}: its records in memory could not be persisted: {}", FormatDate(d),
                    persisted.ToString());
      ex->ReplyError(503, "CHECKPOINT_FAILED",
                     fmt::format("the day's records are not all persisted yet ({}); retry the export later",
                                 persisted.message()));
      return;
    }
    StartExport(ex, d);
  });
}

void RealtimeServer::StartExport(const HttpExchangePtr& ex, int64_t day) {
  Result<std::unique_ptr<LineSource>> scan = ring_->Export(day);
  if (!scan.ok()) {
    ex->ReplyError(scan.status());
    return;
  }
  ++counters_.exports_started;
  // Which deletions' records the export cannot hold: the rebuild takes the
  // others' out of it (docs/protocols.md, "Deletions").
  ex->AddHeader("X-Tombstone-Epoch", std::to_string(tombstones_->DeletedThrough()));
  spdlog::info("export of {} started", FormatDate(day));
  StreamLines(ex, std::move(scan).value(), [this, d = day](const Status& st, uint64_t lines) {
    counters_.export_lines += lines;
    if (st.ok()) {
      ++counters_.exports_completed;
      spdlog::info("export of {} done: {} records", FormatDate(d), lines);
    } else {
      ++counters_.exports_failed;
      spdlog::warn("export of {} ended early after {} records: {}", FormatDate(d), lines, st.ToString());
    }
  });
}

void RealtimeServer::HandleExported(const HttpExchangePtr& ex) {
  if (!OnlyArgs(ex, {"date", "generation"})) return;
  std::optional<int64_t> day;
  if (!DateArg(ex, "date", true, &day) || !NoteGenerationArg(ex)) return;
  Result<std::string> state = ring_->MarkExported(*day);
  if (!state.ok()) {
    ex->ReplyError(state.status());
    return;
  }
  ex->ReplyJson({{"date", FormatDate(*day)}, {"state", *state}});
}

// POST /archived?through=L: the rebuild, after a deploy, says the archive
// holds every day through L (ring.h).
void RealtimeServer::HandleArchived(const HttpExchangePtr& ex) {
  if (!OnlyArgs(ex, {"through", "generation"})) return;
  std::optional<int64_t> through;
  if (!DateArg(ex, "through", true, &through) || !NoteGenerationArg(ex)) return;
  if (Status st = NoteArchivedThrough(*through); !st.ok()) {
    ex->ReplyError(st);
    return;
  }
  ex->ReplyJson(RingJson());
}

Status RealtimeServer::NoteArchivedThrough(int64_t through) {
  // A generation holds only days the ring closed: under the system clock an
  // archive reaching Today (or later) is a damaged manifest or a wrong
  // clock. Taken as said it would mark Today exported, send every later
  // increment of it to late data and hide it from reads. (A manual clock
  // may replay a ring behind an archive built ahead of it: tests.)
  // By the clock, not the ring: a shard starting on an old store learns
  // the archive's reach before its ring catches up with the clock.
  const int64_t today = std::max(ring_->today(), clock_->TodayUtc());
  if (!ClockIsManual() && through >= today) {
    return Status::FailedPrecondition(
        fmt::format("the archive says it holds every day through {}, but today is {} on this shard: a generation "
                    "holds closed days only (a damaged manifest, or a host's clock is wrong); not noted",
                    FormatDate(through), FormatDate(today)),
        "ARCHIVE_AHEAD_OF_RING");
  }
  return ring_->NoteArchivedThrough(through);
}

// Before the first batch: a store that was wiped (or is new in a cluster
// whose archive already reaches some days) learns which days it must not
// open. Best effort: with no replica answering (a cluster starting, a
// replica down) the rebuild's POST /archived after its next deploy tells it.
void RealtimeServer::LearnArchivedThrough(const ClusterConfig& cluster) {
  constexpr int kTimeoutMs = 2000;
  Result<std::optional<int64_t>> last_day = FetchArchiveLastDay(cluster, kTimeoutMs);
  if (!last_day.ok()) {
    spdlog::warn("could not learn how far the archive reaches ({}); the rebuild's next deploy tells this shard",
                 last_day.status().message());
    return;
  }
  if (!last_day->has_value()) return;
  if (Status st = NoteArchivedThrough(**last_day); !st.ok()) {
    spdlog::error("noting that the archive reaches {}: {}", FormatDate(**last_day), st.ToString());
  }
}

void RealtimeServer::HandleRotate(const HttpExchangePtr& ex) {
  if (!OnlyArgs(ex, {"today"})) return;
  std::optional<int64_t> today;
  if (!DateArg(ex, "today", ClockIsManual(), &today)) return;
  if (!ClockIsManual()) {
    // The system clock owns the ring; an operator may only ask it to catch up.
    const int64_t clock_today = clock_->TodayUtc();
    if (today && *today != clock_today) {
      ex->ReplyError(409, "CLOCK_IS_SYSTEM",
                     fmt::format("the cluster clock is \"system\": today is {} by the clock", FormatDate(clock_today)));
      return;
    }
    today = clock_today;
  }
  Result<RotateReport> report = ring_->RotateTo(*today);
  if (!report.ok()) {
    ex->ReplyError(report.status());
    return;
  }
  nlohmann::json data = RingJson();
  data["from"] = FormatDate(report->from);
  data["created"] = DateList(report->created);
  data["cleared"] = DateList(report->cleared);
  data["retained"] = DateList(report->retained);
  ex->ReplyJson(std::move(data));
}

void RealtimeServer::HandleClear(const HttpExchangePtr& ex) {
  if (!OnlyArgs(ex, {"date"})) return;
  std::optional<int64_t> day;
  if (!DateArg(ex, "date", true, &day)) return;
  if (Status st = ring_->Clear(*day); !st.ok()) {
    ex->ReplyError(st);
    return;
  }
  ex->ReplyJson({{"date", FormatDate(*day)}, {"state", "cleared"}});
}

namespace {

nlohmann::json ScanCacheJson(const ScanCache::Figures& f) {
  return {{"hits", f.hits},
          {"misses", f.misses},
          {"empty_day_skips", f.empty_day_skips},
          {"entries", f.entries},
          {"bytes", f.bytes},
          {"budget_bytes", f.budget_bytes}};
}

}  // namespace

// Each part of the shard's memory against its bound, and what the kernel
// counts for the process: the difference is the process's own overhead
// (code, stacks, allocator slack), docs/scaling.md.
nlohmann::json RealtimeServer::MemoryPartsJson() const {
  const StoreMemory store = store_->Memory();
  const ScanCache::Figures scan = ring_->scan_cache_figures();
  const Checkpointer& table = ring_->checkpointer();
  auto kb_to_bytes = [](int64_t kb) { return kb < 0 ? uint64_t{0} : static_cast<uint64_t>(kb) * 1024; };
  return {{"budget_bytes", memory_budget_bytes_},
          {"table_bytes", table.memory_bytes()},
          {"table_bound_bytes", table.memory_budget_bytes()},
          {"block_cache_bytes", store.block_cache_bytes},
          {"block_cache_pinned_bytes", store.block_cache_pinned_bytes},
          {"block_cache_bound_bytes", store.block_cache_capacity_bytes},
          {"write_buffer_bytes", store.write_buffer_bytes},
          {"write_buffer_bound_bytes", store.write_buffer_bound_bytes},
          {"scan_cache_bytes", scan.bytes},
          {"scan_cache_bound_bytes", scan.budget_bytes},
          {"rss_bytes", kb_to_bytes(ProcStatusKb(0, "VmRSS"))},
          {"peak_rss_bytes", kb_to_bytes(ProcStatusKb(0, "VmHWM"))}};
}

nlohmann::json RealtimeServer::StatsJson() const {
  const RingCounters& rc = ring_->counters();
  nlohmann::json stores = RingJson()["stores"];
  for (nlohmann::json& s : stores) {
    const int64_t day = *ParseDate(s["date"].get<std::string>());
    s["pending_compaction_bytes"] = store_->DayProperty(day, "rocksdb.estimate-pending-compaction-bytes").value_or(0);
    s["memtable_bytes"] = store_->DayProperty(day, "rocksdb.cur-size-all-mem-tables").value_or(0);
    s["sst_bytes"] = store_->DayProperty(day, "rocksdb.live-sst-files-size").value_or(0);
  }
  auto db = [&](const char* name) { return store_->DbProperty(name).value_or(0); };
  return {{"realtime",
           {{"today", FormatDate(ring_->today())},
            {"batches_applied", rc.batches_applied},
            {"increments_applied", rc.increments_applied},
            {"lookups_applied", rc.lookups_applied},
            {"uniques_applied", rc.uniques_applied},
            {"duplicate_batches", rc.duplicate_batches},
            {"day_not_open_batches", rc.day_not_open_batches},
            {"bad_batches", counters_.bad_batches},
            {"rotations", rc.rotations},
            {"days_cleared", rc.days_cleared},
            {"exports_started", counters_.exports_started},
            {"exports_completed", counters_.exports_completed},
            {"exports_failed", counters_.exports_failed},
            {"export_lines", counters_.export_lines},
            {"merge_failures", CounterMergeFailures()},
            {"watermark_mismatches", counters_.watermark_mismatches},
            {"unknown_sources", counters_.unknown_sources},
            {"watermark_resets", counters_.watermark_resets},
            {"recovering", recovery_->recovering(RecoveryGate::Clock::now())},
            {"reads_held_back", recovery_->reads_held_back()},
            {"tombstones", tombstones_->all().size()},
            {"tombstone_refusals", counters_.tombstone_refusals},
            {"tombstone_dropped_lines", counters_.tombstone_dropped_lines},
            {"tombstone_deleted_records", counters_.tombstone_deleted_records},
            {"durable_watermarks", ring_->checkpointer().durable()},
            {"memory", ring_->checkpointer().StatsJson()},
            {"memory_parts", MemoryPartsJson()},
            {"scan_cache", ScanCacheJson(ring_->scan_cache_figures())},
            {"watermarks", ring_->watermarks()},
            {"stores", std::move(stores)},
            {"rocksdb",
             {{"actual_delayed_write_rate", db("rocksdb.actual-delayed-write-rate")},
              {"is_write_stopped", db("rocksdb.is-write-stopped")},
              {"estimate_pending_compaction_bytes", db("rocksdb.estimate-pending-compaction-bytes")},
              {"num_running_compactions", db("rocksdb.num-running-compactions")},
              {"num_running_flushes", db("rocksdb.num-running-flushes")},
              {"mem_table_flush_pending", db("rocksdb.mem-table-flush-pending")},
              {"cur_size_all_mem_tables", db("rocksdb.cur-size-all-mem-tables")},
              {"live_sst_files_size", db("rocksdb.live-sst-files-size")},
              {"background_errors", db("rocksdb.background-errors")}}}}}};
}

// /metrics is rendered from the /stats JSON by this table (metrics_table.h):
// every figure of /stats has its row, so the two views cannot drift. Left
// out, as they are not figures: realtime.today (a date), stores[].state (a
// word; stores[].position and stores[].date are labels) and
// memory.last_error (text). memory.watermarks.{source}.applied / .durable
// repeat realtime.watermarks / realtime.durable_watermarks, exported once as
// clickatron_realtime_watermark_seq{state="applied"|"durable"}.
constexpr MetricRow kMetricRows[] = {
    {"/realtime/batches_applied", "clickatron_realtime_batches_applied_total", "counter", "Batches applied."},
    {"/realtime/increments_applied", "clickatron_realtime_increments_applied_total", "counter",
     "Counter lines applied."},
    {"/realtime/lookups_applied", "clickatron_realtime_lookups_applied_total", "counter", "Lookup puts applied."},
    {"/realtime/uniques_applied", "clickatron_realtime_uniques_applied_total", "counter",
     "Unique-record (sketch) lines applied."},
    {"/realtime/duplicate_batches", "clickatron_realtime_duplicate_batches_total", "counter",
     "Batches at or below the watermark."},
    {"/realtime/day_not_open_batches", "clickatron_realtime_day_not_open_total", "counter",
     "Batches refused with DAY_NOT_OPEN."},
    {"/realtime/bad_batches", "clickatron_realtime_bad_batches_total", "counter", "Batches refused with BAD_LINE."},
    {"/realtime/rotations", "clickatron_realtime_rotations_total", "counter", "Ring rotations."},
    {"/realtime/days_cleared", "clickatron_realtime_day_stores_cleared_total", "counter",
     "Day stores cleared (dropped by a rotation or POST /clear)."},
    {"/realtime/exports_started", "clickatron_realtime_exports_started_total", "counter", "Day exports started."},
    {"/realtime/exports_completed", "clickatron_realtime_exports_completed_total", "counter",
     "Day exports streamed to the end."},
    {"/realtime/exports_failed", "clickatron_realtime_exports_failed_total", "counter",
     "Day exports that failed (not persisted, scan or stream error)."},
    {"/realtime/export_lines", "clickatron_realtime_export_lines_total", "counter", "Records streamed by exports."},
    {"/realtime/merge_failures", "clickatron_realtime_merge_failures_total", "counter",
     "Counter merges refused as corrupt."},
    {"/realtime/watermark_mismatches", "clickatron_realtime_watermark_mismatches_total", "counter",
     "Batches refused because the sender's prev was not this shard's applied watermark."},
    {"/realtime/unknown_sources", "clickatron_realtime_unknown_sources_total", "counter",
     "Batches refused (403) because their source is not an API member of the cluster file."},
    {"/realtime/watermark_resets", "clickatron_realtime_watermark_resets_total", "counter",
     "Watermarks lowered by an operator (POST /watermark/reset)."},
    {"/realtime/recovering", "clickatron_realtime_recovering", "gauge",
     "1 while reads wait, after a crash, for the API nodes to re-send what the shard lost."},
    {"/realtime/reads_held_back", "clickatron_realtime_reads_held_back_total", "counter",
     "Reads and exports answered 503 SHARD_RECOVERING after a crash."},
    {"/realtime/tombstones", "clickatron_realtime_tombstones", "gauge",
     "Deletions this shard still applies to incoming batches (installed, not yet retired)."},
    {"/realtime/tombstone_refusals", "clickatron_realtime_tombstone_refusals_total", "counter",
     "Batches refused (503 TOMBSTONE_PENDING) while a deletion of their records waited for its cut."},
    {"/realtime/tombstone_dropped_lines", "clickatron_realtime_tombstone_dropped_lines_total", "counter",
     "Lines of batches acknowledged before a deletion, taken out by it."},
    {"/realtime/tombstone_deleted_records", "clickatron_realtime_tombstone_deleted_records_total", "counter",
     "Stored records deleted by deletions."},
    {"/realtime/watermarks/{source}", "clickatron_realtime_watermark_seq", "gauge",
     "Per source: the last seq applied in memory (state=applied) and persisted (state=durable).",
     "state=\"applied\""},
    {"/realtime/durable_watermarks/{source}", "clickatron_realtime_watermark_seq", "gauge", "", "state=\"durable\""},
    {"/realtime/memory/watermarks/{source}/lag_seqs", "clickatron_realtime_watermark_lag_seqs", "gauge",
     "Per source: seqs applied in memory but not yet persisted."},
    {"/realtime/memory/memory_bytes", "clickatron_realtime_memory_bytes", "gauge",
     "Estimated bytes of the in-memory tables (active + persisting)."},
    {"/realtime/memory/memory_keys", "clickatron_realtime_memory_keys", "gauge", "Records in the in-memory tables."},
    {"/realtime/memory/memory_budget_bytes", "clickatron_realtime_memory_budget_bytes", "gauge",
     "The in-memory tables' budget."},
    {"/realtime/memory/active_bytes", "clickatron_realtime_memory_active_bytes", "gauge",
     "Estimated bytes of the active in-memory table."},
    {"/realtime/memory/frozen_bytes", "clickatron_realtime_memory_frozen_bytes", "gauge",
     "Estimated bytes of the table a checkpoint is persisting (0: none)."},
    {"/realtime/memory/checkpoint_running", "clickatron_realtime_checkpoint_running", "gauge",
     "1 while a checkpoint runs."},
    {"/realtime/memory/checkpoints_completed", "clickatron_realtime_checkpoints_total", "counter",
     "Checkpoints completed."},
    {"/realtime/memory/checkpoints_failed", "clickatron_realtime_checkpoint_failures_total", "counter",
     "Checkpoint tries that failed."},
    {"/realtime/memory/checkpoint_records_written", "clickatron_realtime_checkpoint_records_total", "counter",
     "Records written by checkpoints."},
    {"/realtime/memory/checkpoint_bytes_written", "clickatron_realtime_checkpoint_bytes_total", "counter",
     "In-memory table bytes persisted by checkpoints."},
    {"/realtime/memory/checkpoint_last_seconds", "clickatron_realtime_checkpoint_last_seconds", "gauge",
     "Duration of the last checkpoint try."},
    {"/realtime/memory/checkpoint_max_seconds", "clickatron_realtime_checkpoint_max_seconds", "gauge",
     "Longest checkpoint try since start."},
    {"/realtime/memory/checkpoint_avg_seconds", "clickatron_realtime_checkpoint_avg_seconds", "gauge",
     "Average checkpoint try since start."},
    {"/realtime/memory/refused_batches", "clickatron_realtime_memory_full_batches_total", "counter",
     "Batches refused with 503 MEMORY_FULL."},
    {"/realtime/memory_parts/budget_bytes", "clickatron_realtime_memory_bound_bytes", "gauge",
     "Bounds of the shard's memory: the whole ([realtime] memory_budget_mb, part=\"all\") and each part's.",
     "part=\"all\""},
    {"/realtime/memory_parts/table_bound_bytes", "clickatron_realtime_memory_bound_bytes", "gauge", "",
     "part=\"table\""},
    {"/realtime/memory_parts/block_cache_bound_bytes", "clickatron_realtime_memory_bound_bytes", "gauge", "",
     "part=\"block_cache\""},
    {"/realtime/memory_parts/write_buffer_bound_bytes", "clickatron_realtime_memory_bound_bytes", "gauge", "",
     "part=\"write_buffers\""},
    {"/realtime/memory_parts/scan_cache_bound_bytes", "clickatron_realtime_memory_bound_bytes", "gauge", "",
     "part=\"scan_cache\""},
    {"/realtime/memory_parts/table_bytes", "clickatron_realtime_memory_part_bytes", "gauge",
     "Bytes each part of the shard's memory holds (write_buffers are within block_cache; "
     "block_cache_pinned is what is in use there now).",
     "part=\"table\""},
    {"/realtime/memory_parts/block_cache_bytes", "clickatron_realtime_memory_part_bytes", "gauge", "",
     "part=\"block_cache\""},
    {"/realtime/memory_parts/block_cache_pinned_bytes", "clickatron_realtime_memory_part_bytes", "gauge", "",
     "part=\"block_cache_pinned\""},
    {"/realtime/memory_parts/write_buffer_bytes", "clickatron_realtime_memory_part_bytes", "gauge", "",
     "part=\"write_buffers\""},
    {"/realtime/memory_parts/scan_cache_bytes", "clickatron_realtime_memory_part_bytes", "gauge", "",
     "part=\"scan_cache\""},
    {"/realtime/memory_parts/rss_bytes", "clickatron_realtime_rss_bytes", "gauge",
     "The process's resident memory as the kernel counts it (VmRSS)."},
    {"/realtime/memory_parts/peak_rss_bytes", "clickatron_realtime_peak_rss_bytes", "gauge",
     "The process's peak resident memory (VmHWM)."},
    {"/realtime/scan_cache/hits", "clickatron_realtime_scan_cache_hits_total", "counter",
     "Store scans of a day and prefix answered by the scan cache."},
    {"/realtime/scan_cache/misses", "clickatron_realtime_scan_cache_misses_total", "counter",
     "Store scans of a day and prefix the scan cache could not answer (read from RocksDB)."},
    {"/realtime/scan_cache/empty_day_skips", "clickatron_realtime_scan_cache_empty_day_skips_total", "counter",
     "Store scans of a day and prefix not made: the day has no stored record at the store's version."},
    {"/realtime/scan_cache/entries", "clickatron_realtime_scan_cache_entries", "gauge",
     "Day and prefix scans kept by the scan cache."},
    {"/realtime/scan_cache/bytes", "clickatron_realtime_scan_cache_bytes", "gauge",
     "Bytes the scan cache's entries are charged."},
    {"/realtime/scan_cache/budget_bytes", "clickatron_realtime_scan_cache_budget_bytes", "gauge",
     "The scan cache's budget ([realtime] scan_cache_mb; 0: off)."},
    {"/realtime/stores/[date,position]/records_estimate", "clickatron_realtime_store_records_estimate", "gauge",
     "Estimated records per day store."},
    {"/realtime/stores/[date]/records_in_memory", "clickatron_realtime_store_memory_records", "gauge",
     "Records of the day in the in-memory tables."},
    {"/realtime/stores/[date]/open", "clickatron_realtime_store_open", "gauge", "1 while the day takes batches."},
    {"/realtime/stores/[date]/memtable_bytes", "clickatron_realtime_store_memtable_bytes", "gauge",
     "RocksDB memtable bytes of the day store."},
    {"/realtime/stores/[date]/sst_bytes", "clickatron_realtime_store_sst_bytes", "gauge",
     "RocksDB live SST file bytes of the day store."},
    {"/realtime/stores/[date]/pending_compaction_bytes", "clickatron_realtime_store_pending_compaction_bytes", "gauge",
     "RocksDB estimated pending compaction bytes of the day store."},
    {"/realtime/rocksdb/actual_delayed_write_rate", "clickatron_realtime_delayed_write_rate", "gauge",
     "RocksDB delayed write rate (bytes/s, 0: no delay)."},
    {"/realtime/rocksdb/is_write_stopped", "clickatron_realtime_write_stopped", "gauge",
     "1 while RocksDB stops writes."},
    {"/realtime/rocksdb/estimate_pending_compaction_bytes", "clickatron_realtime_pending_compaction_bytes", "gauge",
     "RocksDB estimated pending compaction bytes."},
    {"/realtime/rocksdb/num_running_compactions", "clickatron_realtime_rocksdb_running_compactions", "gauge",
     "RocksDB compactions running."},
    {"/realtime/rocksdb/num_running_flushes", "clickatron_realtime_rocksdb_running_flushes", "gauge",
     "RocksDB memtable flushes running."},
    {"/realtime/rocksdb/mem_table_flush_pending", "clickatron_realtime_rocksdb_memtable_flush_pending", "gauge",
     "1 while a RocksDB memtable flush is pending."},
    {"/realtime/rocksdb/cur_size_all_mem_tables", "clickatron_realtime_rocksdb_memtable_bytes", "gauge",
     "RocksDB memtable bytes, all day stores."},
    {"/realtime/rocksdb/live_sst_files_size", "clickatron_realtime_rocksdb_live_sst_bytes", "gauge",
     "RocksDB live SST file bytes, all day stores."},
    {"/realtime/rocksdb/background_errors", "clickatron_realtime_rocksdb_background_errors_total", "counter",
     "RocksDB background errors since the database opened."},
};

std::string RealtimeServer::StatsPrometheus() const {
  const std::string labels = BaseLabels("clickatron-realtime", member_);
  std::string out = RenderMetrics(StatsJson(), kMetricRows, labels);
  // The summary's sum is not a /stats figure (its average is).
  const CheckpointStats& cs = ring_->checkpointer().stats();
  out += fmt::format(
      "# HELP clickatron_realtime_checkpoint_seconds Duration of checkpoint tries.\n"
      "# TYPE clickatron_realtime_checkpoint_seconds summary\n"
      "clickatron_realtime_checkpoint_seconds_sum{{{}}} {}\nclickatron_realtime_checkpoint_seconds_count{{{}}} {}\n",
      labels, cs.total_seconds, labels, cs.completed + cs.failed);
  return out;
}

}  // namespace clickatron::realtime
