// The query side of the API node: /clicks, /breakdown, /uniques, /lookup
// (see read_path.h, read_path_impl.h).
#include "query/read_path.h"

#include "query/read_path_impl.h"

namespace clickatron::api {

void ReadPathImpl::Resolve(const HttpExchangePtr& ex, const std::string& ns, const WindowParams& w,
                           std::optional<QueryWindows> windows,
                           const std::function<std::optional<int64_t>()>& first_hour, const RealtimeGap& archive,
                           std::function<void(const QueryWindows&, const nlohmann::json&)> then) {
  if (!windows) {
    auto over = WindowsOverData(w, first_hour(), max_query_hours_);
    if (!over.ok()) return Fail(ex, over.status());
    windows = std::move(*over);
  }
  if (!archive.CoversWindow(windows->window.end_ts())) return Fail(ex, archive.realtime_missing);
  const uint64_t generation = archive.archive_generation;
  if (generation == 0 || archive.archive_session == nullptr) return then(*windows, nlohmann::json());
  auto held = std::make_shared<QueryWindows>(std::move(*windows));
  auto decide = [this, ex, ns, generation, held, w, then = std::move(then)](const ArchiveReader::ManifestFacts& rules) {
    if (!rules.manifest_read) {
      return Fail(ex, Status::Unavailable(fmt::format("the archive replica that answered did not say which days of "
                                                      "generation {} are rolled up (GET /manifest: no answer, or a "
                                                      "newer generation by then); try again",
                                                      generation),
                                          "SHARD_UNAVAILABLE"));
    }
    if (!rules.whole) {
      return Fail(ex, Status::Unavailable(
                          fmt::format("archive generation {} is of an older format (its manifest does not say "
                                      "format 2 with every day and span record): the API reads format 2 only; "
                                      "the rebuild's next run converts it, `clickatron manifest --force "
                                      "--generation N FILE` (N above {}) a file brought in by hand",
                                      generation, generation),
                          "OLD_ARCHIVE_FORMAT"));
    }
    const AppliedRetention* applied = rules.retention ? RetentionOf(*rules.retention, ns) : nullptr;
    const HourSpan read = held->Span();
    auto resolution = CheckResolution(applied, read.begin_ts, read.end_ts, w, zones_);
    if (!resolution.ok()) return Fail(ex, resolution.status());
    then(*held, *resolution);
  };
  // Every shard's manifest of a generation lists the same boundaries: the
  // shard and replica that served the data serve that generation (answered
  // at once once known: only manifests read are kept).
  archive_.ReadManifestFacts(archive.archive_session, generation, archive.archive_crc32, std::move(decide));
}

void ReadPathImpl::OnLookup(const HttpExchangePtr& ex) {
  auto hash = RequiredArg(ex->args(), "hash", "INVALID_HASH");
  if (!hash.ok()) return Fail(ex, hash.status());
  if (!LooksLikeHash(*hash)) {
    return Fail(ex, Status::InvalidArgument(
                        fmt::format("hash {} is not 12 characters of base64", QuoteForMessage(*hash)),
                        "INVALID_HASH"));
  }
  gather_.ResolveHashes({*hash}, [this, ex, hash = *hash](Result<std::map<std::string, std::string>> values) {
    if (!values.ok()) return Fail(ex, values.status());
    auto it = values->find(hash);
    if (it == values->end()) return Fail(ex, Status::NotFound(fmt::format("no lookup record for {}", hash)));
    ex->ReplyJson({{"hash", hash}, {"value", it->second}});
  });
}

std::shared_ptr<ReadShared> ReadShared::Make(const DaemonContext& ctx) {
  auto shared = std::make_shared<ReadShared>();
  shared->stats = std::make_shared<ReadStats>();
  shared->known_generation = std::make_shared<KnownGeneration>(
      ctx.member.data_dir.empty() ? std::string() : ctx.member.data_dir + "/archive-generation");
  shared->loops = ctx.cluster.api.ReadLoops();
  // Keys read once (most of a long tail) are not let push out the busy ones.
  shared->cache = std::make_shared<ReadCache>(static_cast<size_t>(ctx.cluster.api.read_cache_mb) << 20,
                                              ReadCache::Admission::kSeenBefore);
  shared->stats->cache = shared->cache.get();
  return shared;
}

Result<std::unique_ptr<ReadPath>> ReadPath::Create(const DaemonContext& ctx, HttpServer& server, HttpClient& client,
                                                   const Clock& clock, std::shared_ptr<ReadShared> shared) {
  if (ctx.cluster.api.max_query_hours < 1) {
    return Status::InvalidArgument("api.max_query_hours must be at least 1");
  }
  if (!shared) {
    shared = ReadShared::Make(ctx);
    shared->loops = 1;  // this read path is the node's only one
  }
  return std::unique_ptr<ReadPath>(std::make_unique<ReadPathImpl>(ctx, server, client, clock, std::move(shared)));
}

}  // namespace clickatron::api

