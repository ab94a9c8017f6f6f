// ArchiveServer: the HTTP face of one archive replica (docs/protocols.md;
// docs/protocols.md "Archive replica").
//
//   GET /get?key=K                 200 "VALUE\n" | 404 empty | 400 MISSING_ARG_KEY
//   GET /mget?key=A&key=B…         200 the "key,value" line of each hit, in request order
//   GET /fwmatch?key=P[&limit=N]   200 the whole lines starting with P (chunked when large)
//   GET /manifest[?shard=S]        the serving generation's manifest, data null without a file
//   GET /file?shard=S (internal)   the serving file's bytes (another replica catching up)
//   POST /reload (admin), SIGHUP   swap in the file now at the member's path
//   POST /fetch?source=H:P&generation=G (admin)
//                                  fetch generation G from a source (the rebuild's
//                                  publish server), check it, swap it in
// shard=S names the shard the caller means: another answers 400 WRONG_SHARD,
// so a misconfigured peer is never copied from.
// Every get/mget/fwmatch/manifest answer carries X-Archive-Generation and
// X-Archive-Last-Day, naming the generation that produced it, and (a file with
// a manifest) X-Archive-Shard-Count, the shard count that file was cut with.
//
// When no generation could be loaded at start (a file that fails its checks)
// the reads answer 503 ARCHIVE_UNAVAILABLE until a reload succeeds: an empty
// answer would look like "no clicks" to the API, a 503 makes it fail over.
//
// At start, a replica with peers (the other replicas of its shard) asks them
// what they serve and fetches a newer generation if one has it: a replica that
// was down while a generation was deployed catches up by itself.
//
// Thread-safety: everything runs on the server's loop thread; only file
// loads and fetches run on the Reloader's thread.
#pragma once

#include <atomic>
#include <chrono>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "archive_stats.h"
#include "clickatron/http_server.h"
#include "clickatron/status.h"
#include "file_loader.h"
#include "generation_fetcher.h"
#include "reloader.h"
#include "scrubber.h"
#include "sorted_file.h"

namespace clickatron::archive {

struct ArchiveServerOptions {
  LoadOptions load;
  // fwmatch blocks up to this size are answered in one piece; larger ones
  // are streamed in chunks of stream_chunk_bytes.
  size_t single_reply_max_bytes = 256 << 10;
  size_t stream_chunk_bytes = 64 << 10;
  // Fetching generations (archive/generation_fetcher.h): this replica's
  // shard, the requests' signing and TLS, and the other replicas of the shard.
  FetcherOptions fetch;
  std::vector<HostPort> peers;
  // The background check of the served file against its manifest (scrubber.h).
  Scrubber::Options scrub;
};

class ArchiveServer {
 public:
  // Loads the file now (before the daemon answers /ping), registers the
  // routes and SIGHUP on `server`. A file that fails its checks does not stop
  // the daemon (see above); only a bad option would.
  static Result<std::unique_ptr<ArchiveServer>> Create(HttpServer& server, ArchiveServerOptions options);
  // Ends a fetch under way (FetcherOptions::cancelled), then waits for it.
  ~ArchiveServer();

  nlohmann::json StatsJson() const;
  std::string StatsPrometheus() const;

 private:
  ArchiveServer(HttpServer& server, ArchiveServerOptions options);
  void RegisterRoutes();
  // Asks the other replicas of the shard for a newer generation than the
  // one served and fetches it (catch_up in /stats); while none answers,
  // asks again after `retry_after`, doubling to a minute.
  void CatchUp(std::chrono::seconds retry_after);

  void HandleGet(const HttpExchangePtr& ex);
  void HandleMget(const HttpExchangePtr& ex);
  void HandleFwmatch(const HttpExchangePtr& ex);
  void HandleManifest(const HttpExchangePtr& ex);
  void HandleReload(const HttpExchangePtr& ex);
  void HandleFile(const HttpExchangePtr& ex);
  void HandleFetch(const HttpExchangePtr& ex);
  // False after answering 400 when shard=S names another shard.
  bool ShardMatches(const HttpExchangePtr& ex);
  // What a successful reload or fetch answers: what is served now.
  void ReplyServing(const HttpExchangePtr& ex);

  // The serving generation, with its headers added to `ex`; or null after
  // answering 503 when there is none, or it is damaged.
  SortedFilePtr Serving(const HttpExchangePtr& ex);
  // After reading `file`: false (and 503 ARCHIVE_DAMAGED answered) when it
  // was found damaged meanwhile, so what was read is thrown away.
  bool StillIntact(const HttpExchangePtr& ex, const SortedFile& file);
  void ReplyDamaged(const HttpExchangePtr& ex, const SortedFile& file);
  // The first time the serving file is seen damaged: counted, and fetches
  // and catch-up no longer take "already served" for an answer.
  void NoteDamaged();
  // Puts a finished load in place if it may replace the serving one.
  Status Install(Result<SortedFilePtr> loaded);
  Result<SortedFilePtr> TimedLoad();

  HttpServer& server_;
  ArchiveServerOptions options_;
  SortedFilePtr current_;            // null: nothing valid loaded yet
  std::string unavailable_reason_;   // why current_ is null
  ArchiveCounters counters_;
  bool catch_up_warned_ = false;  // loop thread: "could not catch up" is said once
  std::atomic<int64_t> last_load_ms_{0};  // written by the reload thread
  // Set by a reload of the served path that failed its check, for the
  // Install of that same job (jobs run one at a time).
  std::atomic<bool> path_failed_check_{false};
  // What current_ is, for fetches deciding on the reload thread whether
  // there is anything to do.
  std::atomic<uint64_t> serving_generation_{0};
  std::atomic<uint32_t> serving_crc32_{0};
  bool damage_noted_ = false;  // for current_
  // Since when the served path names another file than the one served (it
  // was removed or renamed over without a reload), and whether that was
  // said; loop thread. See NoteFileMoved.
  std::optional<std::chrono::steady_clock::time_point> moved_since_;
  bool moved_warned_ = false;
  // Warns once when the served path has named another file (or none) for
  // 30 s: the replica still serves what it loaded, but a restart would load
  // what is there now (a rollback's rename followed by its /reload is not
  // warned of).
  void NoteFileMoved();
  std::unique_ptr<Scrubber> scrubber_;
  // Last: destroyed first, so a running load ends before the rest goes.
  std::unique_ptr<Reloader> reloader_;
  std::atomic<bool> stopping_{false};  // what options_.fetch.cancelled reads
};

}  // namespace clickatron::archive
