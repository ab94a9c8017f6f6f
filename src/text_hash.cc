// XXH3 for string-keyed tables; see text_hash.h.
#include "clickatron/text_hash.h"

#include <xxhash.h>

namespace clickatron {

size_t HashText(std::string_view text) { return static_cast<size_t>(XXH3_64bits(text.data(), text.size())); }

}  // namespace clickatron
