// Archive reads through the node's read cache: a layer over ArchiveReader
// (archive_reader.h), which only routes, fails over and coalesces. A get or
// mget answered by kept answers sends nothing; the others go on to the
// reader, and their answers are kept (archive_reply_cache.h).
//
// Kept answers are keyed by the file they came from, so they need no timing.
// One is used for a session on a replica whose newest answer named its file,
// unless realtime says a newer generation is deployed or hands over a day
// that file lacks (ArchiveReader::BehindRealtime): no deploy waits for it.
// The layer learns which file each replica serves from every answer the
// reader gets (ArchiveReader::OnAnswer).
//
// With the cache off (capacity 0) every read goes straight to the reader.
//
// Thread-safety: loop thread only, as the reader. Callbacks never run after
// the layer is destroyed; the reader must outlive it.
#pragma once

#include <chrono>
#include <cstddef>
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "query/cache/archive_reply_cache.h"
#include "query/cache/read_cache.h"
#include "query/fetch/archive_reader.h"
#include "query/read_stats.h"

namespace clickatron::api {

class CachedArchiveReader {
 public:
  using Session = ArchiveReader::Session;
  using ReplyCallback = ArchiveReader::ReplyCallback;
  using MGetCallback = std::function<void(Result<std::vector<ArchiveReply>>)>;

  // `cache` null: nothing kept.
  CachedArchiveReader(ArchiveReader& reader, std::shared_ptr<ReadCache> cache, ReadStats& stats);
  ~CachedArchiveReader();

  // A replica not heard from for this long is asked which file it serves
  // (GET /manifest) when a kept answer of it is looked up: how soon a file
  // replaced by hand is noticed. Deploys by the rebuild are known sooner
  // (realtime's answers say them), and nothing waits on this.
  static constexpr std::chrono::milliseconds kReconfirmEvery{1000};

  // The reader below: sessions, routing and manifest facts are its.
  ArchiveReader& reader() { return reader_; }

  // As ArchiveReader::Get. A kept answer comes marked `kept` (and calls back
  // inside Get); a fetched one is kept but not marked: only an answer read a
  // second time is worth decoding whole.
  void Get(const std::shared_ptr<Session>& session, std::string_view key, ReplyCallback done);
  // As ArchiveReader::MGet, with the keys answered from the cache as one
  // more reply (kept = true): their lines, or their decoded columns
  // (decoded_lines) once a query decoded them (KeepDecodedColumns).
  void MGet(const std::shared_ptr<Session>& session, const std::vector<std::string>& keys, MGetCallback done);

  // Keeps the decoded columns of a kept total record's answer with it
  // (ArchiveReply::total_hours), for the queries that read it next.
  void KeepDecodedTotal(const Session& session, std::string_view key, const ArchiveReply& reply,
                        std::shared_ptr<const ArchiveTotalHours> hours);
  // The same for a kept subtotal or unique record (ArchiveReply::columns)
  // read from an mget answer of the cache (its `view`).
  void KeepDecodedColumns(const Session& session, std::string_view key, const ArchiveView& view,
                          std::shared_ptr<const DecodedColumns> columns);
  // Drops the kept answer of `key` from the file of `view`: its value did
  // not decode. Values are not parsed here, so a replica's garbage under
  // good headers was kept, and every later query of the key got it again,
  // without asking, until the generation changed.
  void Forget(const Session& session, std::string_view key, const ArchiveView& view);

 private:
  // What a replica's newest answer (by the time its request was sent) said
  // it serves, and whether a probe is out.
  struct Confirmed {
    ArchiveView view;
    std::chrono::steady_clock::time_point sent{};
    bool probe_out = false;
  };

  void GetRouted(const std::shared_ptr<Session>& session, std::string key, ReplyCallback done);
  void MGetRouted(const std::shared_ptr<Session>& session, std::vector<std::string> keys, MGetCallback done);
  // The file kept answers for `session` must be of: the one its replica's
  // newest answer named, while realtime says of no newer one (nullopt: none,
  // a file that does not say its crc32, a file older than the deployed
  // generation or lacking a day realtime handed over, or the cache is off).
  // Asks the replica again (Probe) when it has said nothing for
  // kReconfirmEvery.
  std::optional<ServedFile> CachedFile(const Session& session);
  void Probe(size_t shard, size_t replica);
  // An answer sent at `sent` said `view`: newer than what the replica last
  // confirmed unless a later request's answer came first.
  void Confirm(size_t shard, size_t replica, const ArchiveView& view, std::chrono::steady_clock::time_point sent);
  // Whether `reply` may be kept: the cache is on and it is of the file its
  // replica confirmed, cut by `shard_count`.
  bool Keepable(int shard, const ArchiveReply& reply, int shard_count) const;
  // Keeps every key of mget answers (absent ones as not found), when they
  // all come from one confirmed file.
  void KeepMget(int shard, const std::vector<std::string>& keys, const std::vector<ArchiveReply>& replies,
                int shard_count);

  ArchiveReader& reader_;
  ReadStats& stats_;
  std::shared_ptr<ReadCache> read_cache_;  // never null (capacity 0: off)
  ArchiveReplyCache cache_;
  std::vector<std::vector<Confirmed>> confirmed_;  // by shard, replica
  std::shared_ptr<bool> alive_ = std::make_shared<bool>(true);
};

}  // namespace clickatron::api
