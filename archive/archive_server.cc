#include "archive_server.h"

#include <fmt/format.h>
#include <spdlog/spdlog.h>

#include <charconv>
#include <csignal>
#include <optional>
#include <utility>

#include "clickatron/byte_stream.h"
#include "clickatron/generation_fetch.h"
#include "clickatron/http_args.h"

namespace clickatron::archive {
namespace {

constexpr std::string_view kGenerationHeader = kArchiveGenerationHeader;
constexpr std::string_view kLastDayHeader = "X-Archive-Last-Day";
// The shard count the served file was cut with (its manifest's shard_count):
// the API routes its archive reads by it, so that between a change of
// archive_shards and the deploy of the re-partitioned generation it still
// asks the shard that holds a key. Absent for a file without a manifest.
constexpr std::string_view kShardCountHeader = "X-Archive-Shard-Count";
// The served file's crc32 (its manifest's): which file, not only which
// generation number. A rolled-back generation's number is built again, as
// another file; API nodes keep answers per file (archive_reply_cache.h).
constexpr std::string_view kFileCrc32Header = "X-Archive-Crc32";

// limit=N: a non-negative decimal integer.
Result<std::optional<uint64_t>> ParseLimit(const QueryArgs& args) {
  auto single = args.GetSingle("limit", "INVALID_LIMIT");  // twice: which bound was meant?
  if (!single.ok()) return single.status();
  const std::string* text = *single;
  if (text == nullptr) return std::optional<uint64_t>();
  uint64_t value = 0;
  auto [end, ec] = std::from_chars(text->data(), text->data() + text->size(), value);
  if (text->empty() || ec != std::errc() || end != text->data() + text->size()) {
    return Status::InvalidArgument(fmt::format("limit must be a non-negative integer, got \"{}\"", *text),
                                   "INVALID_LIMIT");
  }
  return std::optional<uint64_t>(value);
}

}  // namespace

ArchiveServer::ArchiveServer(HttpServer& server, ArchiveServerOptions options)
    : server_(server), options_(std::move(options)) {}

ArchiveServer::~ArchiveServer() {
  stopping_.store(true);
  reloader_.reset();  // joins the reload thread: a fetch ends within 200 ms now
}

Result<std::unique_ptr<ArchiveServer>> ArchiveServer::Create(HttpServer& server, ArchiveServerOptions options) {
  if (options.load.path.empty()) return Status::InvalidArgument("archive member has no file", "BAD_CONFIG");
  options.fetch.load = options.load;  // a fetched file is checked and served as a reloaded one
  // A file shrinking under the mapping becomes damage, not a dead daemon.
  GuardMappedFiles();
  std::unique_ptr<ArchiveServer> self(new ArchiveServer(server, std::move(options)));
  ArchiveServer* s = self.get();
  // A fetch under way ends once the daemon stops (the destructor) instead
  // of holding the stop for up to its timeout. The reloader, whose thread
  // runs fetches, goes before the rest of the server.
  s->options_.fetch.cancelled = [s] { return s->stopping_.load(); };
  s->scrubber_ = std::make_unique<Scrubber>(s->options_.scrub);
  s->reloader_ = std::make_unique<Reloader>(
      server, [s] { return s->TimedLoad(); }, [s](Result<SortedFilePtr> loaded) { return s->Install(std::move(loaded)); });
  // The first load runs here, before the loop: /ping answers only once the
  // replica knows what it serves.
  Result<SortedFilePtr> first = s->TimedLoad();
  if (!first.ok()) {
    s->unavailable_reason_ = first.status().ToString();
    s->counters_.last_reload_error = s->unavailable_reason_;
    spdlog::error("not serving {}: {}; reads answer 503 until a reload succeeds", s->options_.load.path,
                  s->unavailable_reason_);
  } else {
    s->current_ = std::move(first).value();
    if (s->current_->has_file()) {
      spdlog::info("serving {}: generation {}, {} records, {} bytes, last day {} (loaded in {} ms)", s->current_->path(),
                   s->current_->generation(), s->current_->records(), s->current_->data().size(),
                   s->current_->last_day(), s->last_load_ms_.load());
    } else {
      spdlog::info("{} does not exist yet: answering as an empty archive until a reload finds it", s->current_->path());
    }
  }
  s->counters_.last_load_ms = s->last_load_ms_.load();
  if (s->current_) {
    s->serving_generation_.store(s->current_->generation());
    s->serving_crc32_.store(s->current_->manifest() ? s->current_->manifest()->crc32 : 0);
  }
  s->scrubber_->SetFile(s->current_);
  s->RegisterRoutes();
  // A truncation in place is seen within a second even between scrubs (and
  // at once by a read that faults).
  server.Every(std::chrono::seconds(1), [s] {
    // A size changed now, or the scrub's thread found damage since
    // (NoteDamaged acts once, and only on a damaged file).
    if (!s->current_) return;
    s->scrubber_->CheckSize(*s->current_);
    s->NoteDamaged();
    s->NoteFileMoved();
  });
  if (!s->options_.peers.empty()) s->CatchUp(std::chrono::seconds(5));
  return self;
}

void ArchiveServer::NoteFileMoved() {
  // A load running may be the reload that follows a rename (a rollback's
  // steps): it takes minutes on a large file, and is not warned of.
  if (!current_->has_file() || current_->IsFileAt(current_->path()) || reloader_->loading()) {
    moved_since_.reset();
    moved_warned_ = false;
    return;
  }
  const auto now = std::chrono::steady_clock::now();
  if (!moved_since_) moved_since_ = now;
  if (moved_warned_ || now - *moved_since_ < std::chrono::seconds(30)) return;
  moved_warned_ = true;
  spdlog::warn("{} (generation {}) is no longer the file at that path (removed, or another renamed over it, without "
               "a reload): it is still served from what was loaded, but a restart would load what is there now "
               "(nothing: then a fetch from a peer). Put the file back, or, with another file there, POST /reload "
               "to serve it",
               current_->path(), current_->generation());
}

void ArchiveServer::CatchUp(std::chrono::seconds retry_after) {
  // Runs once the loop does; reads are served from what was loaded meanwhile.
  counters_.catch_up = "running";
  const uint64_t before = serving_generation_.load();
  // No peer answering is no failed reload (the metric that says so would
  // alarm whenever replicas start together): it only shows in catch_up.
  auto unasked = std::make_shared<std::string>();
  reloader_->RequestLoad(
      [this, unasked]() -> Result<SortedFilePtr> {
        auto caught_up =
            CatchUpFromPeers(options_.fetch, options_.peers, ServingId{serving_generation_.load(), serving_crc32_.load()});
        if (caught_up.ok() || caught_up.status().code() != StatusCode::kUnavailable) return caught_up;
        *unasked = caught_up.status().message();
        return SortedFilePtr();
      },
      [this, before, unasked, retry_after](const Status& outcome) {
        if (!outcome.ok()) {
          spdlog::warn("catching up from the other replicas failed: {}", outcome.ToString());
          counters_.catch_up = "failed: " + outcome.message();
        } else if (!unasked->empty()) {
          // A replica started on an old file (a restored backup, a disk
          // put back) while its peers were away would serve that file until
          // a deploy: it asks again, every 5 s doubling to a minute, until
          // a peer answers.
          if (!catch_up_warned_) spdlog::warn("could not catch up: {}; asking again", *unasked);
          catch_up_warned_ = true;
          counters_.catch_up = "not done: " + *unasked + fmt::format("; asking again in {} s", retry_after.count());
          server_.After(retry_after, [this, retry_after] {
            if (!stopping_.load()) CatchUp(std::min(retry_after * 2, std::chrono::seconds(60)));
          });
          return;
        } else if (serving_generation_.load() != before) {
          if (catch_up_warned_) spdlog::info("caught up: fetched generation {}", serving_generation_.load());
          counters_.catch_up = fmt::format("fetched generation {}", serving_generation_.load());
        } else {
          counters_.catch_up = "up to date";
        }
      });
}

void ArchiveServer::RegisterRoutes() {
  server_.InternalRoute("/get", [this](const HttpExchangePtr& ex) { HandleGet(ex); });
  server_.InternalRoute("/mget", [this](const HttpExchangePtr& ex) { HandleMget(ex); });
  server_.InternalRoute("/fwmatch", [this](const HttpExchangePtr& ex) { HandleFwmatch(ex); });
  // Open like /stats: what generation is served, no data.
  server_.Route("/manifest", [this](const HttpExchangePtr& ex) { HandleManifest(ex); }, kGet | kBoundedAnswers);
  server_.AdminRoute("/reload", [this](const HttpExchangePtr& ex) { HandleReload(ex); }, kPost);
  // Streamed with back-pressure: never refused as SLOW_READERS. A whole
  // file may take minutes: a restart does not wait for it (the replica
  // fetching it tries again).
  server_.InternalRoute("/file", [this](const HttpExchangePtr& ex) { HandleFile(ex); },
                        kGet | kBoundedAnswers | kLongStreams);
  server_.AdminRoute("/fetch", [this](const HttpExchangePtr& ex) { HandleFetch(ex); }, kPost);
  // A signal only asks for a reload; the work happens on the reload thread.
  server_.OnSignal(SIGHUP, [this] {
    spdlog::info("SIGHUP: reloading {}", options_.load.path);
    reloader_->Request(nullptr);
  });
}

void ArchiveServer::NoteDamaged() {
  if (damage_noted_ || !current_ || !current_->damaged()) return;
  damage_noted_ = true;
  ++counters_.damaged_generations;
  // What is served can no longer be trusted: a fetch or catch-up of this
  // same generation must not be skipped as "already served".
  serving_generation_.store(0);
  serving_crc32_.store(0);
  spdlog::error("not answering from {} (generation {}): it changed under its mapping; 503 ARCHIVE_DAMAGED until a "
                "good generation is loaded (POST /reload or /fetch)",
                current_->path(), current_->generation());
}

void ArchiveServer::ReplyDamaged(const HttpExchangePtr& ex, const SortedFile& file) {
  NoteDamaged();
  ++counters_.damaged_refusals;
  ex->ReplyError(503, "ARCHIVE_DAMAGED",
                 fmt::format("{} (generation {}) no longer matches its manifest: it was changed or truncated in "
                             "place; reads are refused until a good generation is loaded",
                             file.path(), file.generation()));
}

bool ArchiveServer::StillIntact(const HttpExchangePtr& ex, const SortedFile& file) {
  if (!file.damaged()) return true;
  ReplyDamaged(ex, file);
  return false;
}

SortedFilePtr ArchiveServer::Serving(const HttpExchangePtr& ex) {
  if (!current_) {
    ex->ReplyError(503, "ARCHIVE_UNAVAILABLE", fmt::format("no valid archive file loaded: {}", unavailable_reason_));
    return nullptr;
  }
  // The file's headers on a refusal for damage too: they tell the API nodes
  // which file's kept answers to stop using (a read after this one finds it
  // damaged already carries them).
  ex->AddHeader(kGenerationHeader, current_->generation_text());
  ex->AddHeader(kLastDayHeader, current_->last_day());
  if (const Manifest* manifest = current_->manifest()) {
    ex->AddHeader(kShardCountHeader, std::to_string(manifest->shard_count));
    ex->AddHeader(kFileCrc32Header, std::to_string(manifest->crc32));
  }
  if (current_->damaged()) {
    ReplyDamaged(ex, *current_);
    return nullptr;
  }
  return current_;
}

void ArchiveServer::HandleGet(const HttpExchangePtr& ex) {
  ++counters_.get_requests;
  const std::string* key = nullptr;
  if (!SingleArg(ex, "key", &key)) return;
  if (key == nullptr) {
    ex->ReplyError(400, "MISSING_ARG_KEY", "get needs key=KEY");
    return;
  }
  SortedFilePtr file = Serving(ex);
  if (!file) return;
  std::optional<std::string_view> value = file->Get(*key);
  if (!value) {
    if (!StillIntact(ex, *file)) return;
    ++counters_.misses;
    ex->Reply(404, "");
    return;
  }
  ++counters_.hits;
  std::string body;
  body.reserve(value->size() + 1);
  body.append(*value);
  body.push_back('\n');
  // After the copy: the copy itself reads the mapping, and may fault.
  if (!StillIntact(ex, *file)) return;
  counters_.bytes_served += body.size();
  ex->Reply(200, body);
}

void ArchiveServer::HandleMget(const HttpExchangePtr& ex) {
  ++counters_.mget_requests;
  std::vector<const std::string*> keys = ex->args().GetAll("key");
  if (keys.empty()) {
    ex->ReplyError(400, "MISSING_ARG_KEY", "mget needs key=KEY (repeated)");
    return;
  }
  SortedFilePtr file = Serving(ex);
  if (!file) return;
  std::string body;
  for (const std::string* key : keys) {
    std::optional<std::string_view> line = file->GetLine(*key);
    if (!line) {
      ++counters_.misses;
      continue;
    }
    ++counters_.hits;
    body.append(*line);
    body.push_back('\n');
  }
  if (!StillIntact(ex, *file)) return;
  counters_.bytes_served += body.size();
  ex->Reply(200, body);
}

void ArchiveServer::HandleFwmatch(const HttpExchangePtr& ex) {
  ++counters_.fwmatch_requests;
  const std::string* prefix = nullptr;
  if (!SingleArg(ex, "key", &prefix)) return;
  if (prefix == nullptr) {
    ex->ReplyError(400, "MISSING_ARG_KEY", "fwmatch needs key=PREFIX");
    return;
  }
  auto limit = ParseLimit(ex->args());
  if (!limit.ok()) {
    ex->ReplyError(limit.status());
    return;
  }
  SortedFilePtr file = Serving(ex);
  if (!file) return;
  LineRange range = file->Prefix(*prefix, *limit);
  // The file's last line may lack its newline; the answer never does.
  bool add_newline = !range.empty() && file->data()[range.end - 1] != '\n';
  if (range.size() <= options_.single_reply_max_bytes) {
    std::string body(file->data().substr(range.begin, range.size()));
    if (add_newline) body.push_back('\n');
    if (!StillIntact(ex, *file)) return;
    counters_.bytes_served += body.size();
    ex->Reply(200, body);
    return;
  }
  // Streamed from the mapping: checked before it starts (a fault during the
  // stream itself still cannot kill the daemon, but its bytes were sent).
  if (!StillIntact(ex, *file)) return;
  counters_.bytes_served += range.size() + (add_newline ? 1 : 0);
  ++counters_.fwmatch_streamed;
  const std::string_view block = file->data().substr(range.begin, range.size());
  StreamBytes(ex, std::move(file), block,
              {.chunk_bytes = options_.stream_chunk_bytes, .end_with_newline = true});
}

bool ArchiveServer::ShardMatches(const HttpExchangePtr& ex) {
  const std::string* shard = nullptr;
  if (!SingleArg(ex, "shard", &shard)) return false;
  if (shard == nullptr || *shard == std::to_string(options_.fetch.shard)) return true;
  if (shard->empty()) {
    ex->ReplyError(400, "INVALID_SHARD", "shard= is empty: give the shard number, or leave shard out");
    return false;
  }
  ex->ReplyError(400, "WRONG_SHARD",
                 fmt::format("this replica serves archive shard {}, not {}", options_.fetch.shard, *shard));
  return false;
}

void ArchiveServer::HandleManifest(const HttpExchangePtr& ex) {
  if (!ShardMatches(ex)) return;
  SortedFilePtr file = Serving(ex);
  if (!file) return;
  const Manifest* manifest = file->manifest();
  ex->ReplyJson(manifest ? manifest->ToJson() : nlohmann::json(nullptr));
}

void ArchiveServer::HandleReload(const HttpExchangePtr& ex) {
  if (!OnlyArgs(ex, {})) return;
  reloader_->Request([this, ex](const Status& outcome) {
    if (!outcome.ok()) {
      ex->ReplyError(500, "RELOAD_FAILED", outcome.message());
      return;
    }
    ReplyServing(ex);
  });
}

void ArchiveServer::HandleFile(const HttpExchangePtr& ex) {
  if (ex->args().Get("shard") == nullptr) {
    ex->ReplyError(400, "MISSING_ARG_SHARD", "file needs shard=S");
    return;
  }
  if (!ShardMatches(ex)) return;
  SortedFilePtr file = Serving(ex);
  if (!file) return;
  if (!file->has_file()) {
    ex->ReplyError(404, "NO_FILE", fmt::format("{} does not exist yet", file->path()));
    return;
  }
  ++counters_.files_served;
  const std::string_view bytes = file->data();
  counters_.file_bytes_served += bytes.size();
  StreamBytes(ex, std::move(file), bytes,
              {.chunk_bytes = options_.stream_chunk_bytes, .content_type = "application/octet-stream"});
}

void ArchiveServer::HandleFetch(const HttpExchangePtr& ex) {
  if (!OnlyArgs(ex, {"source", "generation"})) return;
  const std::string* source_text = nullptr;
  if (!SingleArg(ex, "source", &source_text)) return;
  if (source_text == nullptr) {
    ex->ReplyError(400, "MISSING_ARG_SOURCE", "fetch needs source=HOST:PORT");
    return;
  }
  Result<HostPort> source = ParseHostPort(*source_text);
  if (!source.ok()) {
    ex->ReplyError(400, "INVALID_SOURCE", source.status().message());
    return;
  }
  std::optional<uint64_t> want;
  const std::string* g = nullptr;
  if (!SingleArg(ex, "generation", &g)) return;
  if (g != nullptr) {
    uint64_t value = 0;
    auto [end, ec] = std::from_chars(g->data(), g->data() + g->size(), value);
    if (g->empty() || ec != std::errc() || end != g->data() + g->size() || value == 0) {
      ex->ReplyError(400, "INVALID_GENERATION", fmt::format("generation must be a positive integer, got \"{}\"", *g));
      return;
    }
    want = value;
  }
  reloader_->RequestLoad(
      [this, source = *source, want] {
        return FetchGeneration(options_.fetch, source, want,
                               ServingId{serving_generation_.load(), serving_crc32_.load()});
      },
      [this, ex](const Status& outcome) {
        if (outcome.reason() == "GENERATION_MISMATCH") {
          ex->ReplyError(409, outcome.reason(), outcome.message());
        } else if (!outcome.ok()) {
          ex->ReplyError(502, "FETCH_FAILED", outcome.message());
        } else {
          ReplyServing(ex);
        }
      });
}

void ArchiveServer::ReplyServing(const HttpExchangePtr& ex) {
  ex->ReplyJson({{"generation", current_->generation()},
                 {"records", current_->records()},
                 {"bytes", current_->data().size()},
                 {"last_day", current_->last_day()},
                 {"has_file", current_->has_file()},
                 {"load_ms", counters_.last_load_ms}});
}

Result<SortedFilePtr> ArchiveServer::TimedLoad() {
  auto start = std::chrono::steady_clock::now();
  Result<SortedFilePtr> loaded = LoadSortedFile(options_.load);
  // The served path itself failed its check (Install looks at what that means).
  path_failed_check_.store(!loaded.ok() && loaded.status().reason() == kFileMismatch);
  last_load_ms_.store(
      std::chrono::duration_cast<std::chrono::milliseconds>(std::chrono::steady_clock::now() - start).count());
  return loaded;
}

Status ArchiveServer::Install(Result<SortedFilePtr> loaded) {
  counters_.last_load_ms = last_load_ms_.load();
  Status refused;
  if (loaded.ok() && *loaded == nullptr) {
    // A fetch of the generation already served: nothing changes.
    return Status::Ok();
  }
  if (!loaded.ok()) {
    refused = loaded.status();
  } else if (!(*loaded)->has_file() && current_ && current_->has_file()) {
    // Serving "empty" is right for a cluster that never had a file, not for
    // one whose file vanished: that would look like lost history.
    refused = Status::NotFound(fmt::format("{} does not exist", options_.load.path));
  }
  // Only a reload of the path (not a fetch, whose file is another) says
  // anything of the file at it.
  const bool path_failed_check = path_failed_check_.exchange(false);
  if (!refused.ok() && path_failed_check && current_ && current_->has_file() && !current_->damaged() &&
      current_->IsFileAt(options_.load.path)) {
    // The file refused is the one served (changed in place, not renamed
    // over), and its manifest is the one it was served with: its bytes no
    // longer match, so neither do the answers from its mapping. Stop
    // answering from it now rather than at the next scrub.
    auto on_disk = ReadManifest(ManifestPathFor(options_.load.path));
    if (on_disk.ok() && current_->manifest() && on_disk->crc32 == current_->manifest()->crc32 &&
        on_disk->generation == current_->generation()) {
      current_->MarkDamaged();
      spdlog::error("{} (generation {}), the file served, failed its check on reload: {}", current_->path(),
                    current_->generation(), refused.message());
      NoteDamaged();
    }
  }
  if (!refused.ok()) {
    ++counters_.reloads_failed;
    std::string keeping = !current_ ? std::string("still serving nothing")
                          : current_->damaged()
                              ? fmt::format("generation {}, the file served, is damaged: reads answer 503 "
                                            "ARCHIVE_DAMAGED until a good generation is loaded",
                                            current_->generation())
                              : fmt::format("still serving generation {}", current_->generation());
    Status outcome(refused.code(), fmt::format("{}; {}", refused.message(), keeping), refused.reason());
    counters_.last_reload_error = outcome.message();
    spdlog::warn("reload refused: {}", outcome.message());
    return outcome;
  }
  current_ = std::move(loaded).value();  // in-flight streams keep the old one alive
  damage_noted_ = false;
  scrubber_->SetFile(current_);
  serving_generation_.store(current_->generation());
  serving_crc32_.store(current_->manifest() ? current_->manifest()->crc32 : 0);
  unavailable_reason_.clear();
  counters_.last_reload_error.clear();
  ++counters_.reloads_ok;
  spdlog::info("reloaded {}: generation {}, {} records, {} bytes, last day {} (loaded in {} ms)", current_->path(),
               current_->generation(), current_->records(), current_->data().size(), current_->last_day(),
               counters_.last_load_ms);
  return Status::Ok();
}

nlohmann::json ArchiveServer::StatsJson() const {
  return ArchiveStatsJson(counters_, scrubber_->counters(), current_.get(), reloader_->loading());
}

std::string ArchiveServer::StatsPrometheus() const {
  return ArchiveStatsPrometheus(StatsJson(), server_.options().daemon, server_.options().member);
}

}  // namespace clickatron::archive
