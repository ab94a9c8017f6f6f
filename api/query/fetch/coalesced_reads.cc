// Read request targets and the split of batched answers; see coalesced_reads.h.
#include "query/fetch/coalesced_reads.h"

#include <fmt/format.h>

#include <algorithm>
#include <span>
#include <unordered_map>

#include "clickatron/key_codec.h"
#include "clickatron/query_string.h"
#include "query/merge/read_records.h"

namespace clickatron::api {
namespace {

std::string OneKeyTarget(std::string_view path, std::string_view key) {
  std::string target(path);
  target.reserve(path.size() + key.size() * 3);
  AppendPercentEncoded(&target, key);
  return target;
}

std::string KeysTarget(std::string_view path, const std::vector<std::string>& keys) {
  std::string target(path);
  for (size_t i = 0; i < keys.size(); ++i) {
    target += i == 0 ? "?key=" : "&key=";
    AppendPercentEncoded(&target, keys[i]);
  }
  return target;
}

// Calls f(key, line) for each non-empty "key,value" line (SplitKeyValueLines:
// CORRUPTION for a line without a comma); `line` is the whole line.
template <typename F>
Status ForEachLine(std::string_view body, std::string_view what, F f) {
  auto lines = SplitKeyValueLines(body);
  if (!lines.ok()) return lines.status().WithContext(fmt::format("{} answer", what));
  for (const auto& [key, value] : *lines) {
    // Both are views into `body`, one after the other around the comma.
    CLICKATRON_RETURN_IF_ERROR(f(key, std::string_view(key.data(), key.size() + 1 + value.size())));
  }
  return Status::Ok();
}

}  // namespace

std::string MGetTarget(const std::vector<std::string>& keys) { return KeysTarget("/mget", keys); }

std::string MFwmatchTarget(const std::vector<std::string>& prefixes) { return KeysTarget("/mfwmatch", prefixes); }

size_t TargetKeyCost(std::string_view key) { return PercentEncodedSize(key) + 5; }

std::string GetTarget(std::string_view key) { return OneKeyTarget("/get?key=", key); }

std::string FwmatchTarget(std::string_view prefix) { return OneKeyTarget("/fwmatch?key=", prefix); }

std::vector<MGetBatch> MGetTargets(const std::vector<std::string>& keys, size_t max_target_bytes, size_t max_keys) {
  std::vector<MGetBatch> batches;
  MGetBatch current;
  for (size_t i = 0; i < keys.size(); ++i) {
    const size_t added = TargetKeyCost(keys[i]);  // "?key=" or "&key=" and the key
    if (current.keys > 0 && (current.target.size() + added > max_target_bytes || current.keys >= max_keys)) {
      batches.push_back(std::move(current));
      current = MGetBatch{};
    }
    if (current.keys == 0) current.first_key = i;
    current.target += current.keys == 0 ? "/mget?key=" : "&key=";
    AppendPercentEncoded(&current.target, keys[i]);
    ++current.keys;
  }
  if (current.keys > 0) batches.push_back(std::move(current));
  return batches;
}

namespace {

// Calls fn(i, key, line) for each line of an archive mget answer, i the
// index in `keys` of the key it names; CORRUPTION for a key not asked, or
// one twice.
template <typename F>
Status ForEachAskedLine(std::string_view body, std::span<const std::string> keys, F fn) {
  std::unordered_map<std::string_view, size_t> index;
  index.reserve(keys.size());
  for (size_t i = 0; i < keys.size(); ++i) index.emplace(keys[i], i);
  std::vector<bool> seen(keys.size());
  return ForEachLine(body, "archive mget", [&](std::string_view key, std::string_view line) -> Status {
    auto it = index.find(key);
    if (it == index.end() || seen[it->second]) {
      return Status::Corruption(fmt::format("archive mget answered an unasked or repeated key {}",
                                            QuoteForMessage(key)));
    }
    seen[it->second] = true;
    fn(it->second, key, line);
    return Status::Ok();
  });
}

}  // namespace

Result<std::vector<ArchiveReply>> SplitArchiveMget(std::string_view body, const std::vector<std::string>& keys,
                                                   const ArchiveView& view, size_t replica) {
  std::vector<ArchiveReply> replies(keys.size());
  for (ArchiveReply& reply : replies) {
    reply.view = view;
    reply.replica = replica;
  }
  Status st = ForEachAskedLine(body, keys, [&](size_t i, std::string_view key, std::string_view line) {
    ArchiveReply& reply = replies[i];
    reply.found = true;
    // Sized once: the body may be kept, charged by its size.
    const std::string_view value = line.substr(key.size() + 1);
    reply.body.reserve(value.size() + 1);
    reply.body.assign(value);
    reply.body.push_back('\n');
  });
  if (!st.ok()) return st;
  return replies;
}

Status CheckArchiveMget(std::string_view body, std::span<const std::string> keys) {
  return ForEachAskedLine(body, keys, [](size_t, std::string_view, std::string_view) {});
}

Result<std::vector<std::string>> SplitFwmatchByPrefix(std::string_view body, const std::vector<std::string>& prefixes) {
  std::vector<std::string> out(prefixes.size());
  std::unordered_map<std::string_view, size_t> index;
  std::vector<size_t> lengths;  // the distinct prefix lengths: a key is looked up once per length
  for (size_t i = 0; i < prefixes.size(); ++i) {
    index.emplace(prefixes[i], i);
    lengths.push_back(prefixes[i].size());
  }
  std::sort(lengths.begin(), lengths.end());
  lengths.erase(std::unique(lengths.begin(), lengths.end()), lengths.end());
  Status st = ForEachLine(body, "realtime mfwmatch", [&](std::string_view key, std::string_view line) -> Status {
    bool matched = false;
    for (size_t length : lengths) {
      if (length > key.size()) break;
      auto it = index.find(key.substr(0, length));
      if (it == index.end()) continue;
      std::string& into = out[it->second];
      into.append(line);
      into.push_back('\n');
      matched = true;
    }
    if (!matched) {
      return Status::Corruption(
          fmt::format("realtime mfwmatch answered a line outside the asked prefixes: {}", QuoteForMessage(line)));
    }
    return Status::Ok();
  });
  if (!st.ok()) return st;
  return out;
}

}  // namespace clickatron::api
