// XXH3 for string-keyed tables; see text_hash.h.
#include "clickatron/text_hash.h"

// XXH3_state_t on the stack (no allocation per digest) needs its definition.
#define XXH_STATIC_LINKING_ONLY
#include <xxhash.h>

#include <fmt/format.h>

namespace clickatron {

size_t HashText(std::string_view text) { return static_cast<size_t>(XXH3_64bits(text.data(), text.size())); }

uint64_t HashText(std::string_view text, uint64_t seed) { return XXH3_64bits_withSeed(text.data(), text.size(), seed); }

std::string Hash128HexOfParts(const std::vector<std::string_view>& parts) {
  XXH3_state_t stack_state;
  XXH3_INITSTATE(&stack_state);
  XXH3_state_t* state = &stack_state;
  XXH3_128bits_reset(state);
  for (std::string_view part : parts) {
    // Each part's length first: ("ab", "c") and ("a", "bc") differ.
    const uint64_t n = part.size();
    XXH3_128bits_update(state, &n, sizeof n);
    XXH3_128bits_update(state, part.data(), part.size());
  }
  const XXH128_hash_t h = XXH3_128bits_digest(state);
  return fmt::format("{:016x}{:016x}", h.high64, h.low64);
}

}  // namespace clickatron
