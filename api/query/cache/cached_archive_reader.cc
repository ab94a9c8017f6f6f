// Archive reads through the read cache; see cached_archive_reader.h.
#include "query/cache/cached_archive_reader.h"

#include <spdlog/spdlog.h>

#include <unordered_set>
#include <utility>

namespace clickatron::api {

CachedArchiveReader::CachedArchiveReader(ArchiveReader& reader, std::shared_ptr<ReadCache> cache, ReadStats& stats)
    : reader_(reader),
      stats_(stats),
      read_cache_(cache ? std::move(cache) : std::make_shared<ReadCache>(0)),
      cache_(*read_cache_) {
  confirmed_.resize(reader_.Shards());
  for (size_t shard = 0; shard < confirmed_.size(); ++shard) confirmed_[shard].resize(reader_.Replicas(shard));
  if (!cache_.enabled()) return;
  std::weak_ptr<bool> alive = alive_;
  reader_.OnAnswer([this, alive](size_t shard, size_t replica, const ArchiveView& view,
                                 std::chrono::steady_clock::time_point sent) {
    if (!alive.expired()) Confirm(shard, replica, view, sent);
  });
  reader_.OnDamage([this, alive](size_t shard, size_t replica, const ArchiveView& view) {
    const std::optional<ServedFile> file = ArchiveReplyCache::FileOf(view);
    if (alive.expired() || !file || cache_.Retired(static_cast<int>(shard), *file)) return;
    // What was kept of it may be what the damage made (read before the
    // replica noticed): not used again, on any loop; another replica's
    // answers of the same name are read as they come.
    cache_.RetireFile(static_cast<int>(shard), *file);
    spdlog::warn("archive shard {}: replica {} found generation {} (crc32 {}) damaged: answers kept from that file "
                 "are not used again",
                 shard, reader_.ReplicaName(shard, replica), file->generation, file->crc32);
  });
}

CachedArchiveReader::~CachedArchiveReader() {
  alive_.reset();
  if (cache_.enabled()) {
    reader_.OnAnswer(nullptr);
    reader_.OnDamage(nullptr);
  }
}

void CachedArchiveReader::Get(const std::shared_ptr<Session>& session, std::string_view key, ReplyCallback done) {
  if (!cache_.enabled()) return reader_.Get(session, key, std::move(done));
  std::weak_ptr<bool> alive = alive_;
  reader_.Route(session, [this, alive, session, key = std::string(key), done = std::move(done)]() mutable {
    if (!alive.expired()) GetRouted(session, std::move(key), std::move(done));
  });
}

void CachedArchiveReader::GetRouted(const std::shared_ptr<Session>& session, std::string key, ReplyCallback done) {
  if (const std::optional<ServedFile> file = CachedFile(*session)) {
    if (const auto kept = cache_.Find(session->shard, key, *file, session->shard_count)) {
      ++stats_.archive_cache_hits;
      ArchiveReply reply;
      reply.view = kept->view;
      reply.found = kept->found;
      reply.kept = true;
      reply.total_hours = kept->total_hours;
      // A decoded total is read from its hours (QueryGather::AddArchiveTotal):
      // its text (a busy key's years of hours) is not copied again.
      if (!reply.total_hours) reply.body = kept->body;
      reply.replica = reader_.ReplicaOf(*session);
      return done(std::move(reply));
    }
    ++stats_.archive_cache_misses;
  }
  // Kept for the shard and count it is asked of now (the session may be
  // rerouted by another of its requests while this one is out). The answer
  // handed on is not marked kept: only one found in the cache, read a second
  // time, is worth decoding whole (a key read once, as most are, costs one
  // insert, not two, and the decoding of its window alone).
  std::weak_ptr<bool> alive = alive_;
  reader_.GetRouted(session, key,
                    [this, alive, shard = session->shard, shard_count = session->shard_count, key,
                     done = std::move(done)](Result<ArchiveReply> reply) mutable {
                      // The answer goes on to its caller: copied for the cache only when kept.
                      if (!alive.expired() && reply.ok() && Keepable(shard, *reply, shard_count)) {
                        cache_.Insert(shard, key, ArchiveReply(*reply), shard_count);
                      }
                      done(std::move(reply));
                    });
}

void CachedArchiveReader::MGet(const std::shared_ptr<Session>& session, const std::vector<std::string>& keys,
                               MGetCallback done) {
  if (!cache_.enabled()) return reader_.MGet(session, keys, std::move(done));
  std::weak_ptr<bool> alive = alive_;
  reader_.Route(session, [this, alive, session, keys, done = std::move(done)]() mutable {
    if (!alive.expired()) MGetRouted(session, std::move(keys), std::move(done));
  });
}

void CachedArchiveReader::MGetRouted(const std::shared_ptr<Session>& session, std::vector<std::string> keys,
                                     MGetCallback done) {
  // Keys whose answer is kept come back as one more mget answer of their own
  // (the lines a replica would have sent for them); only the others are
  // asked for, and their answers kept (without a confirmed file to look in,
  // every key is asked: its answer confirms one).
  const std::optional<ServedFile> file = CachedFile(*session);
  std::vector<std::string> asked;
  std::optional<ArchiveReply> kept_lines;
  for (const std::string& key : keys) {
    if (!file) {
      asked.push_back(key);
      continue;
    }
    const auto kept = cache_.Find(session->shard, key, *file, session->shard_count);
    if (kept == nullptr) {
      ++stats_.archive_cache_misses;
      asked.push_back(key);
      continue;
    }
    ++stats_.archive_cache_hits;
    if (!kept_lines) {
      kept_lines.emplace();
      kept_lines->view = kept->view;
      kept_lines->found = true;
      kept_lines->replica = reader_.ReplicaOf(*session);
      kept_lines->kept = true;
    }
    if (!kept->found) continue;
    if (kept->columns) {
      kept_lines->decoded_lines.push_back(DecodedLine{key, kept->columns});
    } else {
      kept_lines->body.append(key).append(",").append(kept->body);
    }
  }
  if (asked.empty() && kept_lines) return done(std::vector<ArchiveReply>{std::move(*kept_lines)});
  std::weak_ptr<bool> alive = alive_;
  const int shard = session->shard;
  const int shard_count = session->shard_count;
  auto asked_keys = std::make_shared<const std::vector<std::string>>(asked);
  reader_.MGetRouted(
      session, std::move(asked),
      [this, alive, session, shard, shard_count, keys = std::move(keys), asked_keys,
       kept_lines = std::move(kept_lines), done = std::move(done)](Result<std::vector<ArchiveReply>> replies) mutable {
        if (alive.expired() || !replies.ok()) return done(std::move(replies));
        // Rerouted while out (a re-partitioned generation being deployed):
        // the kept lines are of the shard first asked. All the keys again,
        // on the shard the session points at now.
        if (session->shard != shard || session->shard_count != shard_count) {
          return MGetRouted(session, std::move(keys), std::move(done));
        }
        KeepMget(shard, *asked_keys, *replies, shard_count);
        if (kept_lines) replies->push_back(std::move(*kept_lines));
        done(std::move(replies));
      });
}

std::optional<ServedFile> CachedArchiveReader::CachedFile(const Session& session) {
  const size_t shard = static_cast<size_t>(session.shard);
  if (!cache_.enabled() || shard >= confirmed_.size() || confirmed_[shard].empty()) return std::nullopt;
  const size_t replica = session.replica % confirmed_[shard].size();
  const Confirmed& confirmed = confirmed_[shard][replica];
  // Freshness only: a file replaced by hand (a restore) is noticed within
  // about kReconfirmEvery; a deploy by the rebuild is known sooner, from
  // realtime's answers, and nothing waits on this.
  if (std::chrono::steady_clock::now() - confirmed.sent >= kReconfirmEvery) Probe(shard, replica);
  // Generation 0 is no file; a file that does not say its crc32 cannot be
  // told from another of its number: nothing to keep answers of. A file
  // older than what realtime says is deployed, or one that lacks a day it
  // handed over, is not what the replica serves any more (or must not be
  // read with realtime's days): its kept answers are left to age out.
  if (confirmed.view.generation == 0 || reader_.BehindRealtime(confirmed.view)) return std::nullopt;
  const std::optional<ServedFile> file = ArchiveReplyCache::FileOf(confirmed.view);
  // A file a replica found damaged: nothing kept of it is used (OnDamage).
  if (file && cache_.Retired(session.shard, *file)) return std::nullopt;
  return file;
}

void CachedArchiveReader::Probe(size_t shard, size_t replica) {
  Confirmed& confirmed = confirmed_[shard][replica];
  if (confirmed.probe_out) return;
  confirmed.probe_out = true;
  ++stats_.archive_cache_probes;
  std::weak_ptr<bool> alive = alive_;
  // One attempt: a replica that does not answer stays as it last said, and
  // the next lookup that needs it probes again. What it answers reaches
  // Confirm through the reader.
  reader_.AskServedFile(shard, replica, [this, alive, shard, replica]() {
    if (!alive.expired()) confirmed_[shard][replica].probe_out = false;
  });
}

void CachedArchiveReader::Confirm(size_t shard, size_t replica, const ArchiveView& view,
                            std::chrono::steady_clock::time_point sent) {
  if (shard >= confirmed_.size() || replica >= confirmed_[shard].size()) return;
  Confirmed& confirmed = confirmed_[shard][replica];
  if (sent < confirmed.sent) return;  // a later request already said what the replica serves
  confirmed.view = view;
  confirmed.sent = sent;
}

bool CachedArchiveReader::Keepable(int shard, const ArchiveReply& reply, int shard_count) const {
  if (!cache_.enabled() || shard < 0 || static_cast<size_t>(shard) >= confirmed_.size()) return false;
  const auto& replicas = confirmed_[static_cast<size_t>(shard)];
  // Of the file the replica said it serves by its newest answer.
  if (reply.replica >= replicas.size() || !(replicas[reply.replica].view == reply.view)) return false;
  if (const std::optional<ServedFile> file = ArchiveReplyCache::FileOf(reply.view);
      file && cache_.Retired(shard, *file)) {
    return false;
  }
  return reply.view.generation != 0 && (reply.view.shard_count == 0 || reply.view.shard_count == shard_count);
}

void CachedArchiveReader::KeepDecodedTotal(const Session& session, std::string_view key, const ArchiveReply& reply,
                                     std::shared_ptr<const ArchiveTotalHours> hours) {
  cache_.AttachTotalHours(session.shard, key, reply.view, reply.found, session.shard_count, std::move(hours));
}

void CachedArchiveReader::KeepDecodedColumns(const Session& session, std::string_view key, const ArchiveView& view,
                                       std::shared_ptr<const DecodedColumns> columns) {
  cache_.AttachColumns(session.shard, key, view, session.shard_count, std::move(columns));
}

void CachedArchiveReader::Forget(const Session& session, std::string_view key, const ArchiveView& view) {
  const std::optional<ServedFile> file = ArchiveReplyCache::FileOf(view);
  if (file) cache_.Forget(session.shard, key, *file, session.shard_count);
}

void CachedArchiveReader::KeepMget(int shard, const std::vector<std::string>& keys,
                                   const std::vector<ArchiveReply>& replies, int shard_count) {
  if (replies.empty()) return;
  for (const ArchiveReply& reply : replies) {
    if (!(reply.view == replies.front().view) || reply.replica != replies.front().replica) return;  // a reload between them
  }
  if (!Keepable(shard, replies.front(), shard_count)) return;
  // Each key's answer as a get of it would have come: its line, or not found.
  auto keep = [&](std::string_view key, bool found, std::string body) {
    ArchiveReply one;
    one.view = replies.front().view;
    one.replica = replies.front().replica;
    one.found = found;
    one.body = std::move(body);
    cache_.Insert(shard, key, std::move(one), shard_count);
  };
  std::unordered_set<std::string_view> found;
  for (const ArchiveReply& reply : replies) {
    if (!reply.found) continue;
    auto lines = SplitKeyValueLines(reply.body);
    if (!lines.ok()) return;  // the caller reports it
    for (const auto& [key, value] : *lines) {
      std::string body;
      body.reserve(value.size() + 1);
      body.append(value).push_back('\n');
      keep(key, true, std::move(body));
      found.insert(key);
    }
  }
  for (const std::string& key : keys) {
    if (!found.contains(key)) keep(key, false, std::string());
  }
}

}  // namespace clickatron::api
