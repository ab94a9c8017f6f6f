// XXH3 for string-keyed tables; see text_hash.h.
#include "clickatron/text_hash.h"

#include <xxhash.h>

#include <fmt/format.h>

namespace clickatron {

size_t HashText(std::string_view text) { return static_cast<size_t>(XXH3_64bits(text.data(), text.size())); }

std::string Hash128HexOfParts(const std::vector<std::string_view>& parts) {
  XXH3_state_t* state = XXH3_createState();
  XXH3_128bits_reset(state);
  for (std::string_view part : parts) {
    // Each part's length first: ("ab", "c") and ("a", "bc") differ.
    const uint64_t n = part.size();
    XXH3_128bits_update(state, &n, sizeof n);
    XXH3_128bits_update(state, part.data(), part.size());
  }
  const XXH128_hash_t h = XXH3_128bits_digest(state);
  XXH3_freeState(state);
  return fmt::format("{:016x}{:016x}", h.high64, h.low64);
}

}  // namespace clickatron
