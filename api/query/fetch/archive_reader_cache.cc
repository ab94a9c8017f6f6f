// ArchiveReader's use of the read cache: which file a replica serves, kept answers; see archive_reader.h.
#include "query/fetch/archive_reader.h"

#include <fmt/format.h>

#include <unordered_set>

namespace clickatron::api {

std::optional<ServedFile> ArchiveReader::CachedFile(const Session& session) {
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
  if (confirmed.view.generation == 0 || BehindRealtime(confirmed.view)) return std::nullopt;
  return ArchiveReplyCache::FileOf(confirmed.view);
}

void ArchiveReader::Probe(size_t shard, size_t replica) {
  Confirmed& confirmed = confirmed_[shard][replica];
  if (confirmed.probe_out) return;
  confirmed.probe_out = true;
  ++stats_.archive_cache_probes;
  auto session = std::make_shared<Session>();
  session->shard = static_cast<int>(shard);
  session->replica = replica;
  std::weak_ptr<bool> alive = alive_;
  // One attempt: a replica that does not answer stays as it last said, and
  // the next lookup that needs it probes again.
  Send(session, fmt::format("/manifest?shard={}", shard), 1, [this, alive, shard, replica](Result<ArchiveReply>) {
    if (alive.expired()) return;
    confirmed_[shard][replica].probe_out = false;
  });
}

void ArchiveReader::Confirm(size_t shard, size_t replica, const ArchiveView& view,
                            std::chrono::steady_clock::time_point sent) {
  if (shard >= confirmed_.size() || replica >= confirmed_[shard].size()) return;
  Confirmed& confirmed = confirmed_[shard][replica];
  if (sent < confirmed.sent) return;  // a later request already said what the replica serves
  confirmed.view = view;
  confirmed.sent = sent;
}

bool ArchiveReader::Keepable(int shard, const ArchiveReply& reply, int shard_count) const {
  if (!cache_.enabled() || shard < 0 || static_cast<size_t>(shard) >= confirmed_.size()) return false;
  const auto& replicas = confirmed_[static_cast<size_t>(shard)];
  // Of the file the replica said it serves by its newest answer.
  if (reply.replica >= replicas.size() || !(replicas[reply.replica].view == reply.view)) return false;
  return reply.view.generation != 0 && (reply.view.shard_count == 0 || reply.view.shard_count == shard_count);
}

void ArchiveReader::Keep(int shard, std::string_view key, ArchiveReply reply, int shard_count) {
  if (Keepable(shard, reply, shard_count)) cache_.Insert(shard, key, std::move(reply), shard_count);
}

void ArchiveReader::KeepDecodedTotal(const Session& session, std::string_view key, const ArchiveReply& reply,
                                     std::shared_ptr<const ArchiveTotalHours> hours) {
  cache_.AttachTotalHours(session.shard, key, reply.view, reply.found, session.shard_count, std::move(hours));
}

void ArchiveReader::KeepDecodedColumns(const Session& session, std::string_view key, const ArchiveView& view,
                                       std::shared_ptr<const DecodedColumns> columns) {
  cache_.AttachColumns(session.shard, key, view, session.shard_count, std::move(columns));
}

void ArchiveReader::Forget(const Session& session, std::string_view key, const ArchiveView& view) {
  const std::optional<ServedFile> file = ArchiveReplyCache::FileOf(view);
  if (file) cache_.Forget(session.shard, key, *file, session.shard_count);
}

void ArchiveReader::KeepMget(int shard, const std::vector<std::string>& keys, const std::vector<ArchiveReply>& replies,
                             int shard_count) {
  if (replies.empty()) return;
  for (const ArchiveReply& reply : replies) {
    if (!(reply.view == replies.front().view) || reply.replica != replies.front().replica) return;  // a reload between them
  }
  // Each key's answer as a get of it would have come: its line, or not found.
  auto answer = [&](bool found, std::string body) {
    ArchiveReply one;
    one.view = replies.front().view;
    one.replica = replies.front().replica;
    one.found = found;
    one.body = std::move(body);
    return one;
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
      Keep(shard, key, answer(true, std::move(body)), shard_count);
      found.insert(key);
    }
  }
  for (const std::string& key : keys) {
    if (!found.contains(key)) Keep(shard, key, answer(false, std::string()), shard_count);
  }
}

}  // namespace clickatron::api
