// Oplog and late-data payloads and file names (see oplog_record.h).
#include "clickatron/oplog_record.h"

#include <charconv>

#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include "clickatron/file_util.h"
#include "clickatron/key_codec.h"
#include "clickatron/sha256.h"

namespace clickatron {
namespace {

template <typename T>
bool ParseNumber(std::string_view text, T* out) {
  if (text.empty()) return false;
  auto [ptr, ec] = std::from_chars(text.data(), text.data() + text.size(), *out);
  return ec == std::errc() && ptr == text.data() + text.size();
}

Status BadHeader(std::string_view line, std::string_view why) {
  return Status::Corruption(fmt::format("oplog record header {}: {}", QuoteForMessage(line), why));
}

Status ParseLastSeq(std::string_view line, std::string_view value, OplogHeader* out) {
  size_t pos = 0;
  while (pos < value.size()) {
    size_t comma = value.find(',', pos);
    if (comma == std::string_view::npos) comma = value.size();
    std::string_view item = value.substr(pos, comma - pos);
    size_t colon = item.find(':');
    int shard = 0;
    uint64_t seq = 0;
    if (colon == std::string_view::npos || !ParseNumber(item.substr(0, colon), &shard) ||
        !ParseNumber(item.substr(colon + 1), &seq) || shard < 0) {
      return BadHeader(line, "last_seq wants SHARD:SEQ,…");
    }
    out->last_seq.emplace_back(shard, seq);
    pos = comma + 1;
  }
  return Status::Ok();
}

}  // namespace

std::string FormatBatchHeader(std::string_view source, int shard, uint64_t seq) {
  return fmt::format("# source={} shard={} seq={}\n", source, shard, seq);
}

std::string FormatCheckpointHeader(std::string_view source, const std::vector<std::pair<int, uint64_t>>& last_seq,
                                   bool commits) {
  std::string out = fmt::format("# checkpoint source={} last_seq=", source);
  for (size_t i = 0; i < last_seq.size(); ++i) {
    if (i > 0) out += ',';
    fmt::format_to(std::back_inserter(out), "{}:{}", last_seq[i].first, last_seq[i].second);
  }
  if (commits) out += " commits=1";
  out += '\n';
  return out;
}

std::string FormatCommitFrame(std::string_view source, int64_t unix, const std::vector<CommittedKey>& keys) {
  std::string out = fmt::format("# commit source={} unix={}\n", source, unix);
  for (const CommittedKey& k : keys) {
    out += ToLowerHex(reinterpret_cast<const unsigned char*>(k.key.data()), k.key.size());
    fmt::format_to(std::back_inserter(out), " {} {}\n", k.digest, k.increments);
  }
  return out;
}

Result<std::vector<CommittedKey>> ParseCommittedKeys(std::string_view lines) {
  std::vector<CommittedKey> keys;
  Status bad = Status::Ok();
  ForEachPayloadLine(lines, [&](std::string_view line) {
    if (!bad.ok()) return;
    const size_t a = line.find(' ');
    const size_t b = a == std::string_view::npos ? a : line.find(' ', a + 1);
    CommittedKey k;
    std::string_view hex = line.substr(0, a);
    if (b == std::string_view::npos || hex.empty() || hex.size() % 2 != 0 ||
        !ParseNumber(line.substr(b + 1), &k.increments)) {
      bad = Status::Corruption(fmt::format("commit frame line {}: not KEYHEX DIGEST INCREMENTS", QuoteForMessage(line)));
      return;
    }
    for (size_t i = 0; i < hex.size(); i += 2) {
      unsigned value = 0;
      auto [p, ec] = std::from_chars(hex.data() + i, hex.data() + i + 2, value, 16);
      if (ec != std::errc() || p != hex.data() + i + 2) {
        bad = Status::Corruption(fmt::format("commit frame line {}: the key is not hex", QuoteForMessage(line)));
        return;
      }
      k.key.push_back(static_cast<char>(value));
    }
    k.digest = std::string(line.substr(a + 1, b - a - 1));
    keys.push_back(std::move(k));
  });
  if (!bad.ok()) return bad;
  return keys;
}

Result<OplogPayload> ParseOplogPayload(std::string_view payload) {
  size_t nl = payload.find('\n');
  if (nl == std::string_view::npos) return BadHeader(payload, "no header line");
  std::string_view line = payload.substr(0, nl);
  if (line.substr(0, 2) != "# ") return BadHeader(line, "does not start with \"# \"");
  OplogPayload out;
  out.lines = payload.substr(nl + 1);
  std::string_view rest = line.substr(2);
  bool first = true;
  bool have_shard = false, have_seq = false, have_last = false;
  size_t pos = 0;
  while (pos < rest.size()) {
    size_t sp = rest.find(' ', pos);
    if (sp == std::string_view::npos) sp = rest.size();
    std::string_view word = rest.substr(pos, sp - pos);
    pos = sp + 1;
    if (word.empty()) continue;
    if (first && word == "checkpoint") {
      out.header.kind = OplogHeader::Kind::kCheckpoint;
      first = false;
      continue;
    }
    if (first && word == "commit") {
      out.header.kind = OplogHeader::Kind::kCommit;
      first = false;
      continue;
    }
    first = false;
    size_t eq = word.find('=');
    if (eq == std::string_view::npos) return BadHeader(line, fmt::format("\"{}\" is not name=value", word));
    std::string_view name = word.substr(0, eq), value = word.substr(eq + 1);
    if (name == "source") {
      out.header.source = std::string(value);
    } else if (name == "shard") {
      if (!ParseNumber(value, &out.header.shard) || out.header.shard < 0) return BadHeader(line, "bad shard");
      have_shard = true;
    } else if (name == "seq") {
      if (!ParseNumber(value, &out.header.seq) || out.header.seq == 0) return BadHeader(line, "bad seq");
      have_seq = true;
    } else if (name == "last_seq") {
      CLICKATRON_RETURN_IF_ERROR(ParseLastSeq(line, value, &out.header));
      have_last = true;
    } else if (name == "commits") {
      out.header.commits = value == "1";
    } else if (name == "unix") {
      if (!ParseNumber(value, &out.header.unix)) return BadHeader(line, "bad unix");
    }
  }
  if (out.header.source.empty()) return BadHeader(line, "no source");
  if (out.header.kind == OplogHeader::Kind::kBatch && (!have_shard || !have_seq)) {
    return BadHeader(line, "a batch needs shard= and seq=");
  }
  if (out.header.kind == OplogHeader::Kind::kCheckpoint && !have_last) return BadHeader(line, "no last_seq");
  return out;
}

std::string OplogSegmentName(uint64_t id, bool compressed) {
  return fmt::format("oplog-{:016d}.log{}", id, compressed ? ".gz" : "");
}

bool ParseOplogSegmentName(std::string_view name, uint64_t* id, bool* compressed) {
  constexpr std::string_view kPrefix = "oplog-";
  if (name.substr(0, kPrefix.size()) != kPrefix) return false;
  name.remove_prefix(kPrefix.size());
  bool gz = false;
  if (name.size() > 7 && name.substr(name.size() - 7) == ".log.gz") {
    gz = true;
    name.remove_suffix(7);
  } else if (name.size() > 4 && name.substr(name.size() - 4) == ".log") {
    name.remove_suffix(4);
  } else {
    return false;
  }
  if (!ParseNumber(name, id)) return false;
  *compressed = gz;
  return true;
}

std::string LateFileName(int64_t created_unix, bool sealed) {
  return fmt::format("late-{}.{}", created_unix, sealed ? "sealed" : "open");
}

bool ParseLateFileName(std::string_view name, int64_t* created_unix, bool* sealed) {
  constexpr std::string_view kPrefix = "late-";
  if (name.substr(0, kPrefix.size()) != kPrefix) return false;
  name.remove_prefix(kPrefix.size());
  size_t dot = name.find('.');
  if (dot == std::string_view::npos) return false;
  std::string_view ext = name.substr(dot + 1);
  if (ext != "open" && ext != "sealed") return false;
  if (!ParseNumber(name.substr(0, dot), created_unix)) return false;
  *sealed = ext == "sealed";
  return true;
}

bool IsSealedLateFileName(std::string_view name) {
  constexpr std::string_view kPrefix = "late-", kSuffix = ".sealed";
  if (name.size() <= kPrefix.size() + kSuffix.size() || !name.starts_with(kPrefix) || !name.ends_with(kSuffix)) {
    return false;
  }
  const std::string_view digits = name.substr(kPrefix.size(), name.size() - kPrefix.size() - kSuffix.size());
  if (digits.size() > 19) return false;
  for (const char c : digits) {
    if (c < '0' || c > '9') return false;
  }
  return true;
}

bool IsClosedLateFileName(std::string_view name) {
  constexpr std::string_view kDone = ".done";
  if (!name.ends_with(kDone)) return IsSealedLateFileName(name);
  return IsSealedLateFileName(std::string(name.substr(0, name.size() - kDone.size())) + ".sealed");
}

std::string DoneLateFileName(std::string_view sealed_name) {
  constexpr std::string_view kSealed = ".sealed";
  return std::string(sealed_name.substr(0, sealed_name.size() - kSealed.size())) + ".done";
}

std::string OplogCleanStopPath(const std::string& oplog_dir) { return oplog_dir + "/clean-stop"; }

std::string FormatOplogCleanStop(const OplogCleanStop& note) {
  return nlohmann::json{{"segment", note.segment}, {"bytes", note.bytes}}.dump() + "\n";
}

Result<std::optional<OplogCleanStop>> ReadOplogCleanStop(const std::string& oplog_dir) {
  const std::string path = OplogCleanStopPath(oplog_dir);
  if (!FileExists(path)) return std::optional<OplogCleanStop>();
  Result<std::string> text = ReadFileToString(path);
  if (!text.ok()) return text.status();
  const nlohmann::json j = nlohmann::json::parse(*text, nullptr, /*allow_exceptions=*/false);
  const auto number = [&](const char* name) {
    return j.is_object() && j.contains(name) && j[name].is_number_unsigned();
  };
  if (!number("segment") || !number("bytes")) {
    return Status::Corruption(fmt::format("{} is not {{\"segment\": N, \"bytes\": N}}: remove it to start (a torn "
                                          "last frame is then cut as after a crash)",
                                          path));
  }
  return std::optional<OplogCleanStop>(OplogCleanStop{j["segment"].get<uint64_t>(), j["bytes"].get<uint64_t>()});
}

}  // namespace clickatron
