// The hash of the read path's string-keyed tables (LruMap, the API's archive
// answer cache): XXH3, which hashes the long keys some of them have (a
// realtime sketch's text, hundreds of bytes to kilobytes) several times
// faster than std::hash's, for every lookup of a busy key's hours.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

namespace clickatron {

// XXH3_64bits of the bytes, seed 0.
size_t HashText(std::string_view text);
// The same with a seed: keys of several namespaces (the API's read cache's
// kinds) hashed apart without copying a prefix in front of each key.
uint64_t HashText(std::string_view text, uint64_t seed);

// A 128-bit XXH3 of several byte strings, each length-prefixed (so their
// boundaries count), as 32 hex digits: tells two requests apart (an
// Idempotency-Key's request digest) at memory speed. Not a cryptographic
// hash: a client can only collide with its own keys.
std::string Hash128HexOfParts(const std::vector<std::string_view>& parts);

// For unordered containers keyed by std::string or std::string_view,
// looked up by either (transparent).
struct TextHash {
  using is_transparent = void;
  size_t operator()(std::string_view s) const { return HashText(s); }
};

}  // namespace clickatron
