// Payloads of the API node's oplog frames and late-data frames, and the names
// of their files (docs/protocols.md, "Oplog and late data"). Shared by the API
// (writes and replays them), the `clickatron oplog` tool and the rebuild
// (reads late data). Do not change existing forms: they are on disk.
//
// A frame payload is one header line, then realtime lines:
//   batch       "# source=api-0 shard=1 seq=42\n" + "key,delta\n"… + "l|HASH,value\n"…
//   checkpoint  "# checkpoint source=api-0 last_seq=0:41,1:42 commits=1\n"   (no lines)
//   commit      "# commit source=api-0 unix=1733390000\n" + "KEYHEX DIGESTHEX INCREMENTS\n"…
// A commit frame ends every group commit in a segment whose checkpoint says
// commits=1: the batches before it are one all-or-nothing commit, and its
// lines are the Idempotency-Key values (hex) of the requests the commit
// answered, with their request digests and answers. Batches after a
// segment's last commit frame were never acknowledged (a crash between the
// appends of one commit) and are cut at start. Segments written before
// commit frames existed have no commits=1 and are read as before.
// A batch is what the API sent (or will send) to realtime shard `shard` as
// POST /incr?source=SOURCE&seq=SEQ. Late-data frames use the batch form; their
// lines are the ones a shard refused with DAY_NOT_OPEN. A checkpoint opens
// every oplog segment, so the newest segment alone tells the next seq even
// after older segments were deleted. Header fields are space-separated
// name=value pairs; unknown names are ignored (room to grow).
//
// Files: oplog segments "oplog-<id, 16 digits>.log" (".log.gz" once closed and
// compressed); late data "late-<unix seconds>.open" / ".sealed".
//
// Thread-safety: pure functions of their arguments; any thread may call them.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "clickatron/status.h"

namespace clickatron {

struct OplogHeader {
  enum class Kind { kBatch, kCheckpoint, kCommit };
  Kind kind = Kind::kBatch;
  std::string source;
  int shard = -1;     // batch
  uint64_t seq = 0;   // batch
  std::vector<std::pair<int, uint64_t>> last_seq;  // checkpoint: shard -> last seq written so far
  bool commits = false;  // checkpoint: every commit in this segment ends in a commit frame
  int64_t unix = 0;      // commit: when it was written (system clock)
};

// One Idempotency-Key a commit frame records.
struct CommittedKey {
  std::string key;     // as the client sent it
  std::string digest;  // of its request (hex)
  uint64_t increments = 0;
};

struct OplogPayload {
  OplogHeader header;
  std::string_view lines;  // everything after the header line ("" for a checkpoint)
};

std::string FormatBatchHeader(std::string_view source, int shard, uint64_t seq);  // ends in '\n'
// `commits`: the segment it opens ends every commit in a commit frame.
std::string FormatCheckpointHeader(std::string_view source, const std::vector<std::pair<int, uint64_t>>& last_seq,
                                   bool commits = false);
// A whole commit-frame payload.
std::string FormatCommitFrame(std::string_view source, int64_t unix, const std::vector<CommittedKey>& keys);
// The keys of a commit frame's lines; CORRUPTION when one is malformed.
Result<std::vector<CommittedKey>> ParseCommittedKeys(std::string_view lines);
// Parses the header line; CORRUPTION when it is missing or malformed (a frame
// passed its checksum, so a bad header is a bug or foreign data, not a torn write).
Result<OplogPayload> ParseOplogPayload(std::string_view payload);

// Calls fn(line) for each non-empty line of `lines` (each ends in '\n').
template <typename Fn>
void ForEachPayloadLine(std::string_view lines, Fn&& fn) {
  size_t pos = 0;
  while (pos < lines.size()) {
    size_t nl = lines.find('\n', pos);
    if (nl == std::string_view::npos) nl = lines.size();
    if (nl > pos) fn(lines.substr(pos, nl - pos));
    pos = nl + 1;
  }
}

std::string OplogSegmentName(uint64_t id, bool compressed);  // "oplog-0000000000000007.log[.gz]"
// True for a segment name; sets *id and *compressed.
bool ParseOplogSegmentName(std::string_view name, uint64_t* id, bool* compressed);

std::string LateFileName(int64_t created_unix, bool sealed);  // "late-1333249200.open|.sealed"
bool ParseLateFileName(std::string_view name, int64_t* created_unix, bool* sealed);
// Exactly "late-<1 to 19 digits>.sealed": the only names the API's late-file
// endpoints take and the rebuild accepts from them (no path, no sign, nothing
// after the extension).
bool IsSealedLateFileName(std::string_view name);
// A late-data file closed whole: sealed, or sealed and then folded by the
// rebuild ("late-<digits>.done").
bool IsClosedLateFileName(std::string_view name);
// "late-N.done" for the sealed file "late-N.sealed": the name POST
// /late/done renames it to. REQUIRES: IsSealedLateFileName(sealed_name).
std::string DoneLateFileName(std::string_view sealed_name);

// The API's note that it stopped cleanly, its newest segment whole at
// `bytes` (DIR/clean-stop: {"segment": ID, "bytes": N}; api/ingest/oplog.h
// writes and reads it, `clickatron oplog verify` reads it).
struct OplogCleanStop {
  uint64_t segment = 0;
  uint64_t bytes = 0;
};
std::string OplogCleanStopPath(const std::string& oplog_dir);
std::string FormatOplogCleanStop(const OplogCleanStop& note);  // ends in '\n'
// nullopt when `oplog_dir` has no note; CORRUPTION for one that does not parse.
Result<std::optional<OplogCleanStop>> ReadOplogCleanStop(const std::string& oplog_dir);

}  // namespace clickatron
