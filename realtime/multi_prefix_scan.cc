// See multi_prefix_scan.h.
#include "multi_prefix_scan.h"

#include <algorithm>

namespace clickatron::realtime {

std::vector<std::string> DisjointPrefixes(std::vector<std::string> prefixes) {
  std::sort(prefixes.begin(), prefixes.end());
  std::vector<std::string> out;
  for (std::string& p : prefixes) {
    // Sorted: every string extending a kept prefix follows it directly, so
    // comparing with the last kept one is enough (a duplicate extends it too).
    if (!out.empty() && p.starts_with(out.back())) continue;
    out.push_back(std::move(p));
  }
  return out;
}

}  // namespace clickatron::realtime
