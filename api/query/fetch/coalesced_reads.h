// Request targets for the sortdb-shaped read endpoints that the archive
// replicas and realtime shards both speak (get, fwmatch, mget), the requests
// a Coalescer (coalescer.h) sends for several lookups at once, and the exact
// split of their answers back to each lookup. Pure functions, thread-safe.
//
//   archive:  GET /mget?key=K1&key=K2…        "K,value" lines of the hits
//   realtime: GET /mfwmatch?key=P1&key=P2…    every record matching any prefix, once, sorted
#pragma once

#include <cstddef>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "clickatron/status.h"
#include "query/fetch/archive_reply.h"

namespace clickatron::api {

std::string GetTarget(std::string_view key);
std::string FwmatchTarget(std::string_view prefix);
// One /mget request of MGetTargets: its target and which of the keys it asks
// (keys[first_key] .. keys[first_key + keys - 1]).
struct MGetBatch {
  std::string target;
  size_t first_key = 0;
  size_t keys = 0;
};

// /mget requests covering `keys` in order, each at most max_target_bytes long
// (servers bound the request line) and holding at most max_keys keys. Empty
// for no keys.
std::vector<MGetBatch> MGetTargets(const std::vector<std::string>& keys, size_t max_target_bytes, size_t max_keys);

// One /mget (/mfwmatch) request for all of `keys`.
std::string MGetTarget(const std::vector<std::string>& keys);
std::string MFwmatchTarget(const std::vector<std::string>& prefixes);
// What one key adds to such a target ("&key=" + its encoding).
size_t TargetKeyCost(std::string_view key);

// An archive mget answer split per asked key (distinct): a key with a line is
// found with body "value\n" (as /get answers it), the others are not found;
// every reply carries `view` and `replica`. A line whose key was not asked
// (or comes twice, or has no comma) is CORRUPTION: the answer is not trusted.
Result<std::vector<ArchiveReply>> SplitArchiveMget(std::string_view body, const std::vector<std::string>& keys,
                                                   const ArchiveView& view, size_t replica);

// The same check alone, for an mget answer handed on whole: every line
// names a key of `keys`, each at most once (CORRUPTION otherwise).
Status CheckArchiveMget(std::string_view body, std::span<const std::string> keys);

// A realtime mfwmatch answer split per asked prefix (distinct): each prefix
// gets exactly the lines whose key starts with it, in answer order — what a
// /fwmatch of that prefix alone answers. A prefix may prefix another, so a
// line may go to several. A line no prefix matches (e.g. a "!ERROR" end of a
// failed stream) or without a comma is CORRUPTION.
Result<std::vector<std::string>> SplitFwmatchByPrefix(std::string_view body, const std::vector<std::string>& prefixes);

}  // namespace clickatron::api
