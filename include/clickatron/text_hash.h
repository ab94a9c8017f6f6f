// The hash of the read path's string-keyed tables (LruMap, the API's archive
// answer cache): XXH3, which hashes the long keys some of them have (a
// realtime sketch's text, hundreds of bytes to kilobytes) several times
// faster than std::hash's, for every lookup of a busy key's hours.
#pragma once

#include <cstddef>
#include <string_view>

namespace clickatron {

// XXH3_64bits of the bytes, seed 0.
size_t HashText(std::string_view text);

// For unordered containers keyed by std::string or std::string_view,
// looked up by either (transparent).
struct TextHash {
  using is_transparent = void;
  size_t operator()(std::string_view s) const { return HashText(s); }
};

}  // namespace clickatron
