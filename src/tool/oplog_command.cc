// `clickatron oplog`: inspect and replay an API node's oplog (and late-data
// files, which share the frame and payload format).
//
//   list DIR                      segments, records, first/last seq per shard, size
//   dump PATH…                    every record as text (header line, then its lines)
//   verify PATH…                  checksums and headers; exit 1 on corruption
//   replay DIR --to HOST:PORT --shard S [--source NAME] [--after-seq N] [--config FILE]
//                                 re-sends one shard's batches in seq order; the
//                                 shard's watermark makes a replay safe to repeat
//   release --config FILE --api NAME --shard S
//                                 ends a "watermark ahead" hold (oplog_release.h)
#include <fmt/format.h>

#include <algorithm>
#include <filesystem>
#include <functional>
#include <map>
#include <optional>

#include <nlohmann/json.hpp>

#include "clickatron/config.h"
#include "clickatron/file_util.h"
#include "clickatron/framed_log.h"
#include "clickatron/http_client.h"
#include "clickatron/oplog_record.h"
#include "clickatron/query_string.h"
#include "commands.h"
#include "oplog_release.h"

namespace clickatron::tool {
namespace {

// The oplog segments of DIR in id order, then its late-data files by name;
// or PATH itself when it is a file.
Result<std::vector<std::string>> ExpandPath(const std::string& path) {
  std::error_code ec;
  if (!std::filesystem::is_directory(path, ec)) {
    if (!std::filesystem::exists(path, ec)) return Status::NotFound(fmt::format("{} does not exist", path));
    return std::vector<std::string>{path};
  }
  std::map<uint64_t, std::string> segments;
  std::vector<std::string> late;
  for (const auto& e : std::filesystem::directory_iterator(path, ec)) {
    const std::string name = e.path().filename().string();
    uint64_t id = 0;
    bool gz = false;
    int64_t created = 0;
    bool sealed = false;
    if (ParseOplogSegmentName(name, &id, &gz)) {
      // If both forms exist (a crash mid-gzip), the .gz is the whole one.
      if (gz || !segments.count(id)) segments[id] = e.path().string();
    } else if (ParseLateFileName(name, &created, &sealed)) {
      late.push_back(e.path().string());
    } else if (name.size() > 8 && name.ends_with(".damaged")) {
      // Set aside by the API at start: damaged, and every batch in it
      // confirmed durable by its shard. What reads this oplog must say
      // that those batches are not here.
      fmt::print(stderr,
                 "note: {} was set aside as damaged (every shard had confirmed its batches durable); what "
                 "follows lacks its batches: they are on their shards, and in the archive once exported\n",
                 e.path().string());
    }
  }
  if (ec) return Status::IoError(fmt::format("list {}: {}", path, ec.message()));
  std::vector<std::string> out;
  for (auto& [id, p] : segments) out.push_back(std::move(p));
  std::sort(late.begin(), late.end());
  out.insert(out.end(), late.begin(), late.end());
  return out;
}

struct FileSummary {
  uint64_t records = 0;
  uint64_t lines = 0;
  std::map<int, std::pair<uint64_t, uint64_t>> seqs;  // shard -> first, last
  bool torn = false;
  uint64_t good_bytes = 0;
};

// Reads every record of `path`, calling fn on each; stops at the first error.
Result<FileSummary> ForEachRecord(const std::string& path,
                                  const std::function<Status(const OplogPayload&)>& fn) {
  auto reader = FramedLogReader::Open(path);
  if (!reader.ok()) return reader.status();
  FileSummary s;
  while (true) {
    auto next = (*reader)->Next();
    if (!next.ok()) return next.status();
    if (!next->has_value()) break;
    auto payload = ParseOplogPayload(**next);
    if (!payload.ok()) return payload.status().WithContext(fmt::format("{} record {}", path, s.records + 1));
    ++s.records;
    const OplogHeader& h = payload->header;
    if (h.kind == OplogHeader::Kind::kBatch) {
      auto [it, inserted] = s.seqs.try_emplace(h.shard, h.seq, h.seq);
      if (!inserted) it->second.second = h.seq;
      s.lines += static_cast<uint64_t>(std::count(payload->lines.begin(), payload->lines.end(), '\n'));
    }
    CLICKATRON_RETURN_IF_ERROR(fn(*payload));
  }
  s.torn = (*reader)->truncated_tail();
  s.good_bytes = (*reader)->good_bytes();
  return s;
}

uint64_t FileSize(const std::string& path) {
  std::error_code ec;
  auto n = std::filesystem::file_size(path, ec);
  return ec ? 0 : static_cast<uint64_t>(n);
}

Status List(const std::string& dir) {
  auto files = ExpandPath(dir);
  if (!files.ok()) return files.status();
  PrintLine(fmt::format("{:<34} {:>12} {:>8} {:>10}  {}", "file", "bytes", "records", "lines", "shard:first-last"));
  for (const std::string& f : *files) {
    auto s = ForEachRecord(f, [](const OplogPayload&) { return Status::Ok(); });
    if (!s.ok()) return s.status();
    std::string seqs;
    for (const auto& [shard, range] : s->seqs) seqs += fmt::format("{}:{}-{} ", shard, range.first, range.second);
    PrintLine(fmt::format("{:<34} {:>12} {:>8} {:>10}  {}{}", std::filesystem::path(f).filename().string(),
                          FileSize(f), s->records, s->lines, seqs, s->torn ? " (torn tail)" : ""));
  }
  return Status::Ok();
}

Status Dump(const std::vector<std::string>& paths, std::optional<int> shard) {
  for (const std::string& p : paths) {
    auto files = ExpandPath(p);
    if (!files.ok()) return files.status();
    for (const std::string& f : *files) {
      auto s = ForEachRecord(f, [&](const OplogPayload& payload) {
        const OplogHeader& h = payload.header;
        if (shard && (h.kind != OplogHeader::Kind::kBatch || h.shard != *shard)) return Status::Ok();
        if (h.kind == OplogHeader::Kind::kCheckpoint) {
          std::string last;
          for (const auto& [sh, seq] : h.last_seq) last += fmt::format("{}{}:{}", last.empty() ? "" : ",", sh, seq);
          PrintLine(fmt::format("# checkpoint source={} last_seq={}{}", h.source, last, h.commits ? " commits=1" : ""));
        } else if (h.kind == OplogHeader::Kind::kCommit) {
          PrintLine(fmt::format("# commit source={} unix={}", h.source, h.unix));
        } else {
          PrintLine(fmt::format("# source={} shard={} seq={}", h.source, h.shard, h.seq));
        }
        ForEachPayloadLine(payload.lines, [](std::string_view line) { PrintLine(line); });
        return Status::Ok();
      });
      if (!s.ok()) return s.status();
    }
  }
  return Status::Ok();
}

// The bytes the API noted for segment `f` when it last stopped cleanly
// (OplogCleanStop); nullopt when it did not note that segment.
std::optional<uint64_t> CleanStopBytes(const std::string& f) {
  const std::filesystem::path path(f);
  uint64_t id = 0;
  bool compressed = false;
  if (!ParseOplogSegmentName(path.filename().string(), &id, &compressed) || compressed) return std::nullopt;
  Result<std::optional<OplogCleanStop>> note = ReadOplogCleanStop(path.parent_path().string());
  if (!note.ok() || !note->has_value() || (*note)->segment != id) return std::nullopt;
  return (*note)->bytes;
}

Status Verify(const std::vector<std::string>& paths) {
  uint64_t bad = 0;
  for (const std::string& p : paths) {
    auto files = ExpandPath(p);
    if (!files.ok()) return files.status();
    for (const std::string& f : *files) {
      auto s = ForEachRecord(f, [](const OplogPayload&) { return Status::Ok(); });
      if (!s.ok()) {
        ++bad;
        PrintLine(fmt::format("CORRUPT {}: {}", f, s.status().message()));
        continue;
      }
      const std::string name = std::filesystem::path(f).filename().string();
      if (s->torn && IsClosedLateFileName(name)) {
        // A sealed late-data file was closed whole: the API refuses to start on this.
        ++bad;
        PrintLine(fmt::format("CORRUPT {}: a sealed late-data file, but its frames check only up to byte {}", f,
                              s->good_bytes));
        continue;
      }
      if (const std::optional<uint64_t> whole = CleanStopBytes(f); whole && (s->torn || s->good_bytes != *whole)) {
        // Not a crash's torn write: the node stopped cleanly with the segment whole.
        ++bad;
        PrintLine(fmt::format("CORRUPT {}: ended whole at {} bytes when the API node last stopped (clean-stop), "
                              "but its frames check only up to byte {}",
                              f, *whole, s->good_bytes));
        continue;
      }
      PrintLine(fmt::format("ok      {}: {} records{}", f, s->records,
                            s->torn ? fmt::format(", torn tail after byte {} (cut when the API opens it)",
                                                  s->good_bytes)
                                    : ""));
    }
  }
  if (bad > 0) return Status::Corruption(fmt::format("{} damaged file(s)", bad));
  return Status::Ok();
}

// Calls `fn` with every batch of `shard` in the oplog files (late-data files
// among them skipped), in order; stops at its first error.
Status ForEachShardBatch(const std::vector<std::string>& files, int shard,
                         const std::function<Status(const OplogPayload&)>& fn) {
  for (const std::string& f : files) {
    int64_t created;
    bool sealed;
    if (ParseLateFileName(std::filesystem::path(f).filename().string(), &created, &sealed)) continue;
    auto s = ForEachRecord(f, [&](const OplogPayload& payload) -> Status {
      const OplogHeader& h = payload.header;
      if (h.kind != OplogHeader::Kind::kBatch || h.shard != shard) return Status::Ok();
      return fn(payload);
    });
    if (!s.ok()) return s.status();
  }
  return Status::Ok();
}

struct ReplayOptions {
  std::string dir;
  std::string to;
  int shard = 0;
  std::string source;
  uint64_t after_seq = 0;
  std::string config;  // the cluster file: its secret signs the batches
};

Status Replay(const ReplayOptions& o) {
  auto peer = ParseHostPort(o.to);
  if (!peer.ok()) return peer.status();
  auto files = ExpandPath(o.dir);
  if (!files.ok()) return files.status();
  ClusterConfig cluster;  // none: unsigned, plain HTTP
  if (!o.config.empty()) {
    auto loaded = ClusterConfig::Load(o.config);
    if (!loaded.ok()) return loaded.status();
    cluster = std::move(loaded).value();
    // A realtime member of another shard would apply this shard's batches
    // as its own: their keys then count on two shards, and this source's
    // watermark there moves past what the API sent it.
    for (const MemberConfig* m : cluster.MembersWithRole(MemberRole::kRealtime)) {
      if (m->listen.ToString() == peer->ToString() && m->shard != o.shard) {
        return Status::InvalidArgument(
            fmt::format("--to {} is realtime member {}, shard {} in {}; these are shard {}'s batches: send them "
                        "to that shard's member",
                        o.to, m->name, m->shard, o.config, o.shard),
            "WRONG_SHARD");
      }
    }
  }
  BlockingHttpClient client(cluster);
  uint64_t after = o.after_seq;
  std::string source = o.source;
  // The highest seq of this shard's batches in the oplog, sent as `heard` on
  // the poll and on every batch: a shard restarted after a crash answers no
  // read until it has applied that much again (realtime/recovery_gate.h).
  // Without it the first batch would release the reads while the rest of the
  // replay was still to come, and they would answer short meanwhile.
  uint64_t highest = 0;
  CLICKATRON_RETURN_IF_ERROR(ForEachShardBatch(*files, o.shard, [&](const OplogPayload& payload) {
    highest = std::max(highest, payload.header.seq);
    return Status::Ok();
  }));
  uint64_t sent = 0, applied = 0, duplicates = 0;
  bool asked_watermark = false;
  Status s = ForEachShardBatch(*files, o.shard, [&](const OplogPayload& payload) -> Status {
    const OplogHeader& h = payload.header;
    if (source.empty()) source = h.source;
    if (!asked_watermark) {
      // Skip what the shard already has (it would answer "duplicate" anyway).
      asked_watermark = true;
      HttpRequestSpec spec;
      spec.target = "/watermark?source=" + PercentEncode(source);
      if (highest > 0) spec.target += fmt::format("&heard={}", highest);  // none: nothing of this shard to say
      HttpResponse r = client.Fetch(*peer, spec);
      if (!r.ok()) return r.transport;
      if (r.status_code == 401) {
        return Status::Unauthorized(
            "GET /watermark: HTTP 401: the shard wants a signature made with the cluster secret (--config) for "
            "its address exactly as the cluster file's listen gives it (--to)");
      }
      if (r.status_code != 200) return Status::Unavailable(fmt::format("GET /watermark: HTTP {}", r.status_code));
      auto j = nlohmann::json::parse(r.body, nullptr, false);
      if (!j.is_discarded() && j["data"].is_object() && j["data"]["seq"].is_number_unsigned()) {
        after = std::max(after, j["data"]["seq"].get<uint64_t>());
      }
      fmt::print(stderr, "shard {} at {}: watermark of {} is {}\n", o.shard, o.to, source, after);
    }
    if (h.seq <= after || payload.lines.empty()) return Status::Ok();
    HttpRequestSpec spec;
    spec.method = "POST";
    spec.target = fmt::format("/incr?source={}&seq={}&heard={}", PercentEncode(source), h.seq, highest);
    spec.body = std::string(payload.lines);
    HttpResponse r = client.Fetch(*peer, spec);
    if (!r.ok()) return r.transport.WithContext(fmt::format("seq {}", h.seq));
    ++sent;
    if (r.status_code == 200) {
      auto j = nlohmann::json::parse(r.body, nullptr, false);
      bool dup = !j.is_discarded() && j["data"].is_object() && j["data"].value("duplicate", false);
      (dup ? duplicates : applied)++;
      return Status::Ok();
    }
    if (r.status_code == 409) {
      return Status::FailedPrecondition(fmt::format(
          "seq {}: DAY_NOT_OPEN ({}); stopping: only the API node moves such lines to late data", h.seq,
          r.body.substr(0, 300)));
    }
    return Status::Unavailable(fmt::format("seq {}: HTTP {} {}", h.seq, r.status_code, r.body.substr(0, 300)));
  });
  if (!s.ok()) {
    fmt::print(stderr, "sent {} batches ({} applied, {} duplicates) before stopping\n", sent, applied, duplicates);
    return s;
  }
  PrintLine(fmt::format("sent {} batches: {} applied, {} duplicates", sent, applied, duplicates));
  return Status::Ok();
}

void AddOplogCommand(Command& app) {
  Command oplog = app.AddCommand("oplog", "Inspect or replay an API node's oplog and late-data files");
  oplog.RequireCommand();
  SetDetails(oplog,
             "DIR is an API node's DATA_DIR/oplog (or DATA_DIR/late); PATH a directory or one file.\n"
             "Examples:\n"
             "  clickatron oplog list var/api-0/oplog\n"
             "  clickatron oplog dump --shard 1 var/api-0/oplog\n"
             "  clickatron oplog verify var/api-0/oplog var/api-0/late\n"
             "  clickatron oplog replay var/api-0/oplog --to 127.0.0.1:8091 --shard 1");

  Command list = oplog.AddCommand("list", "Segments: records, lines, first/last seq per shard, size");
  auto list_dir = std::make_shared<std::string>();
  list.Option("DIR", *list_dir, "oplog directory").Required();
  SetAction(list, [list_dir] { return List(*list_dir); });

  Command dump = oplog.AddCommand("dump", "Print every record as text");
  auto dump_paths = std::make_shared<std::vector<std::string>>();
  auto dump_shard = std::make_shared<int>(-1);
  dump.Option("PATH", *dump_paths, "directories or files").Required();
  dump.Option("--shard", *dump_shard, "only this shard's batches").NonNegative();
  SetAction(dump, [dump_paths, dump_shard] {
    return Dump(*dump_paths, *dump_shard >= 0 ? std::optional<int>(*dump_shard) : std::nullopt);
  });

  Command verify = oplog.AddCommand("verify", "Check every frame's checksum and header (exit 1 if damaged)");
  auto verify_paths = std::make_shared<std::vector<std::string>>();
  verify.Option("PATH", *verify_paths, "directories or files").Required();
  SetAction(verify, [verify_paths] { return Verify(*verify_paths); });

  Command replay = oplog.AddCommand("replay", "Re-send one shard's batches to a realtime daemon");
  auto ro = std::make_shared<ReplayOptions>();
  replay.Option("DIR", ro->dir, "oplog directory").Required();
  replay.Option("--to", ro->to, "the realtime daemon, HOST:PORT").Required();
  replay.Option("--shard", ro->shard, "which shard's batches").Required().NonNegative();
  replay.Option("--source", ro->source, "source name to send as (default: the one recorded)");
  replay.Option("--after-seq", ro->after_seq, "skip batches up to this seq (the shard's watermark is skipped anyway)");
  replay.Option("--config", ro->config, "the cluster file (its cluster secret signs the requests)");
  SetAction(replay, [ro] { return Replay(*ro); });
  AddOplogReleaseCommand(oplog);
}

const bool kOplogRegistered = RegisterCommand(60, AddOplogCommand);

}  // namespace
}  // namespace clickatron::tool
